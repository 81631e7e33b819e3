"""Child processes of this checkout's `dronecats` (its argv and environment), and stopping one:
SIGTERM, a grace period, then SIGKILL. Shared by the benchmarks and the tests that start processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent  # the directory that holds the packages


def dronecats_cmd(*args: str) -> list[str]:
    """The `dronecats` command as a subprocess argv, run from this checkout's sources."""
    return [sys.executable, "-m", "dronecats", *args]


def subprocess_env(**extra: str) -> dict[str, str]:
    """This environment with the checkout's sources first on PYTHONPATH (and `extra` set)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SOURCE_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def stop_process(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Ask `proc` to stop; kill it if it has not exited within `timeout_s`. Reaped either way."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
