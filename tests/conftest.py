"""Shared fixtures. Tests import the project from the checkout (pytest `pythonpath = ["."]`)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def dronecats_cmd(*args: str) -> list[str]:
    """The `dronecats` command as a subprocess argv, run from this checkout's sources."""
    return [sys.executable, "-m", "dronecats", *args]


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@contextlib.contextmanager
def sim_server(*args: str, timeout_s: float = 60.0) -> Iterator[int]:
    """`dronecats sim --port 0 ARGS` in a subprocess until the block ends; yields its port."""
    proc = subprocess.Popen(
        dronecats_cmd("sim", "--port", "0", *args),
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "listening on" in line or not line:
                break
        assert "listening on" in line, f"dronecats sim did not start: {line!r}"
        # Keep reading its output so a chatty server never blocks on a full pipe.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        yield int(line.rsplit(":", 1)[1])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
