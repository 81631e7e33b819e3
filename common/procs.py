"""Stopping a child process: SIGTERM, a grace period, then SIGKILL."""

from __future__ import annotations

import subprocess


def stop_process(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Ask `proc` to stop; kill it if it has not exited within `timeout_s`. Reaped either way."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
