"""Child processes of this checkout's `dronecats` (its argv and environment), and stopping one:
SIGTERM, a grace period, then SIGKILL. Shared by the benchmarks and the tests that start processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

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


def start_and_read(
    argv: list[str], marker: str, log: IO[str], timeout_s: float, stderr: int | IO[str] = subprocess.STDOUT
) -> tuple[subprocess.Popen, str]:
    """Start `argv` and return it with its first stdout line containing `marker` (stripped). Its stdout
    keeps being drained into `log` (flushed line by line: a long run's log reads while it runs), so the
    child never blocks on a full pipe; its stderr goes to `stderr` (by default with stdout into `log`).

    Raises TimeoutError, the child stopped, when it exits or `timeout_s` passes before that line."""
    proc = subprocess.Popen(argv, env=subprocess_env(), stdout=subprocess.PIPE, stderr=stderr, text=True)
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not ready.is_set() and marker in line:
                found.append(line.strip())
                ready.set()
            log.write(line)
            log.flush()
        ready.set()  # the child exited before saying it

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(timeout_s) or not found:
        stop_process(proc)
        raise TimeoutError(f"{' '.join(argv[2:4])} did not print {marker!r} in {timeout_s:.0f} s")
    return proc, found[0]
