"""Keeps the simulator alive until the drones are down, even when the ground station dies outright.

    python -m ground_station.fleet.reaper --watch LOG_DIR --grace-s 15 -- dronecats sim ...

`SimFleet` starts the simulator through this small process. When the ground station ends in order,
it stops the drones itself, then this process, which stops the simulator at once. When the ground
station dies without running any code (SIGKILL, a segfault, an abort inside Qt), every child gets
SIGTERM from the kernel (PR_SET_PDEATHSIG): the drones start landing, and this process waits until
no drone process of this fleet (an argv naming LOG_DIR) is left, at most `grace_s`, before it stops
the simulator: the drones need it to land.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from common.procs import stop_process
from ground_station.fleet.pdeathsig import die_with_parent


def fleet_processes(watch: str, exclude: set[int]) -> list[int]:
    """Process ids whose command line names `watch` (the fleet's log folder), others than exclude."""
    found = []
    marker = watch.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ground_station.fleet.reaper")
    parser.add_argument(
        "--watch", required=True, help="a string in every drone's command line (its log folder)"
    )
    parser.add_argument("--grace-s", type=float, default=15.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or not 0.0 <= args.grace_s <= 600.0:
        print("reaper: give -- COMMAND, and --grace-s within 0-600", file=sys.stderr)
        return 2
    parent = os.getppid()
    # stdout/stderr inherited: the ground station reads them; the simulator dies with this process
    child = subprocess.Popen(command, preexec_fn=die_with_parent)
    # A plain list, not an Event: a handler runs between two bytecodes of the main thread, which
    # may be holding the very lock Event.set takes (and SIGTERM can come more than once).
    signals: list[int] = []

    def on_term(signum: int, frame: object) -> None:
        signals.append(signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.signal(signal.SIGHUP, on_term)
    while not signals:
        time.sleep(0.2)
        if child.poll() is not None:
            return child.returncode
        if os.getppid() != parent:  # orphaned without a signal (no PR_SET_PDEATHSIG here)
            break
    if os.getppid() != parent:
        # The ground station died: give its drones (also told to stop) time to land first.
        deadline = time.monotonic() + args.grace_s
        mine = {os.getpid(), child.pid}
        while time.monotonic() < deadline and fleet_processes(args.watch, mine):
            time.sleep(0.2)
    if child.poll() is None:
        stop_process(child, 5.0)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
