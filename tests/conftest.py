"""Shared fixtures. Tests import the project from the checkout (pytest `pythonpath = ["."]`)."""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Under pytest-xdist (scripts/test.sh), each test file runs whole on one worker, in its order: several
# files fly one module-scoped flight that their tests inspect in turn. djitellopy binds UDP 8889/8890
# for its whole process, so every file that drives it shares one group, and so one worker.
DJITELLOPY_TEST_FILES = ("test_vehicles_cli.py",)


def pytest_itemcollected(item: pytest.Item) -> None:
    # Here rather than in pytest_collection_modifyitems, which pytest-xdist's worker may run first.
    if item.get_closest_marker("xdist_group") is not None:
        return
    name = item.path.name
    if "tello" in name or name in DJITELLOPY_TEST_FILES:
        item.add_marker(pytest.mark.xdist_group("djitellopy"))
    else:
        item.add_marker(pytest.mark.xdist_group(str(item.path.relative_to(ROOT))))


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
def sim_server(
    *args: str, timeout_s: float = 60.0, wait_for: tuple[str, ...] = (), startup: list[str] | None = None
) -> Iterator[int]:
    """`dronecats sim --port 0 ARGS` in a subprocess until the block ends; yields its port.

    `wait_for`: line prefixes printed after "listening on" (emulator URLs such as "mavlink Drone1:")
    to wait for as well; every line read until then is appended to `startup`."""
    proc = subprocess.Popen(
        dronecats_cmd("sim", "--port", "0", *args),
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines_read: queue.Queue[str | None] = queue.Queue()
    started = threading.Event()

    def read_output() -> None:
        # Keeps reading after startup too, so a chatty server never blocks on a full pipe.
        assert proc.stdout is not None
        for line in proc.stdout:
            if not started.is_set():
                lines_read.put(line.rstrip("\n"))
        lines_read.put(None)  # end of output: the server exited

    threading.Thread(target=read_output, daemon=True).start()
    try:
        deadline = time.monotonic() + timeout_s
        lines: list[str] = []
        missing = ["listening on", *wait_for]
        while missing:
            try:
                line = lines_read.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            lines.append(line)
            missing = [prefix for prefix in missing if not line.startswith(prefix)]
        started.set()
        assert not missing, f"dronecats sim did not print {missing} in {timeout_s} s: " + "\n".join(
            lines[-20:]
        )
        if startup is not None:
            startup.extend(lines)
        listening = next(line for line in lines if line.startswith("listening on"))
        yield int(listening.rsplit(":", 1)[1])
    finally:
        stop_process(proc)


def stop_process(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Terminate a process a test started; kill it when it does not exit within timeout_s."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for(predicate: Callable[[], object], timeout_s: float = 5.0, interval_s: float = 0.01) -> bool:
    """Poll `predicate` until it holds or `timeout_s` passes; its value after the deadline."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


def free_port() -> int:
    """A TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_base_port() -> int:
    """A port P with P, P+1 and P+2 free (a drone's telemetry, frames, commands)."""
    for _ in range(50):
        base = free_port()
        if base + 2 < 65536 and all(_port_free(base + i) for i in (1, 2)):
            return base
    raise RuntimeError("no three consecutive free ports")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
