"""Processes a test starts: the `dronecats` command from this checkout, the simulator server, stopping
and waiting."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

# Re-exported: tests stop their processes the way the library does (SIGTERM, grace, SIGKILL).
from common.procs import dronecats_cmd as dronecats_cmd
from common.procs import stop_process as stop_process
from common.procs import subprocess_env as subprocess_env


@contextlib.contextmanager
def sim_server(
    *args: str,
    timeout_s: float = 60.0,
    wait_for: tuple[str, ...] = (),
    startup: list[str] | None = None,
    process: list[subprocess.Popen] | None = None,
) -> Iterator[int]:
    """`dronecats sim --port 0 ARGS` in a subprocess until the block ends; yields its port.

    `wait_for`: line prefixes printed after "listening on" (emulator URLs such as "mavlink Drone1:")
    to wait for as well; every line read until then is appended to `startup`, and the server's
    process to `process` (for a test that kills it)."""
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
        if process is not None:
            process.append(proc)
        listening = next(line for line in lines if line.startswith("listening on"))
        yield int(listening.rsplit(":", 1)[1])
    finally:
        stop_process(proc)


def wait_for(predicate: Callable[[], object], timeout_s: float = 5.0, interval_s: float = 0.01) -> bool:
    """Poll `predicate` until it holds or `timeout_s` passes; its value after the deadline."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


def run_dronecats(
    *args: str, timeout_s: float = 60.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`dronecats ARGS` from this checkout, run to its end; stdout and stderr captured as text."""
    return subprocess.run(
        dronecats_cmd(*args),
        env=subprocess_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def baseline_onboard_args(vehicle_url: str, log_dir: object, *more: str) -> list[str]:
    """`dronecats onboard` arguments that fly `vehicle_url` with the baseline pilot to the red car."""
    return [
        "onboard",
        "--vehicle",
        vehicle_url,
        "--pilot",
        "baseline",
        "--instruction",
        "go to the red car",
        "--log-dir",
        str(log_dir),
        *more,
    ]


def emulator_url(startup: list[str], name: str = "mavlink Drone1") -> str:
    """The vehicle URL `dronecats sim` printed as `NAME: URL` among its startup lines."""
    return next(line for line in startup if line.startswith(f"{name}:")).split(": ", 1)[1]


def kill_if_running(proc: subprocess.Popen) -> None:
    """Kill `proc` if it still runs (an assertion or a timeout ended the test's wait for it early)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def mavlink_sim(*args: str) -> Iterator[tuple[int, str]]:
    """`dronecats sim --scene residential --mavlink ARGS` (Drone1 served as a PX4 autopilot) until the
    block ends; yields its RPC port and Drone1's mavlink:// vehicle URL."""
    startup: list[str] = []
    with sim_server(
        "--scene",
        "residential",
        "--mavlink",
        "--mavlink-port",
        "0",
        *args,
        wait_for=("mavlink Drone1:",),
        startup=startup,
    ) as port:
        yield port, emulator_url(startup)
