"""MAVProxy, typed at as a pilot would (its console on stdin), flies the ArduPilot emulator: it asks
for ArduPilot's streams (REQUEST_DATA_STREAM), fetches the parameters, then GUIDED, arm, take-off,
a body-frame position, mode RTL (home, loiter RTL_LOIT_TIME, land, disarm) and mode LAND, each judged
by the simulated vehicle's pose."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from sim_bridge.emulators.mavlink_emulator import MavlinkEmulator, MavlinkEmulatorConfig
from tests.support.ports import free_udp_port
from tests.support.vehicles import make_world

pytest.importorskip("MAVProxy")
pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

MAVPROXY = os.path.join(os.path.dirname(sys.executable), "mavproxy.py")


def wait_until(what: str, cond: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.1)


def test_mavproxy_guided_takeoff_rtl_and_land(tmp_path) -> None:
    if not os.path.exists(MAVPROXY):
        pytest.skip("mavproxy.py is not installed in this environment")
    world = make_world("outdoor", 160, 120)
    port = free_udp_port()
    params = {"RTL_ALT": 300, "RTL_LOIT_TIME": 500}  # 3 m, 0.5 s: a short return
    cfg = MavlinkEmulatorConfig(dialect="ardupilot", companion=("127.0.0.1", port), params=params)
    emu = MavlinkEmulator(world, "Drone1", cfg).start()
    console = open(tmp_path / "mavproxy.txt", "w")  # noqa: SIM115  (closed below)
    proxy = subprocess.Popen(
        [
            sys.executable,
            MAVPROXY,
            f"--master=udpin:127.0.0.1:{port}",
            "--state-basedir",
            str(tmp_path),
            "--logfile",
            str(tmp_path / "flight.tlog"),
            "--default-modules",
            "mode,arm,cmdlong,param",
        ],
        stdin=subprocess.PIPE,
        stdout=console,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    assert proxy.stdin is not None

    def type_(line: str) -> None:
        proxy.stdin.write(line + "\n")
        proxy.stdin.flush()

    def home_distance_m() -> float:
        return emu.distance_from_home_m()

    def guided_takeoff(what: str) -> None:
        """Typed as a pilot would: GUIDED, arm, take off to 2 m (`what` names the climb in a timeout)."""
        type_("mode GUIDED")
        wait_until("GUIDED", lambda: emu.mode_name == "GUIDED", 5)
        type_("arm throttle")
        wait_until("arming", lambda: emu.armed, 5)
        type_("takeoff 2")
        wait_until(what, lambda: emu.altitude_m() > 1.9, 10)

    try:

        def received() -> set[str]:
            return {k for _, k in emu.received}

        wait_until("MAVProxy to fetch the parameters", lambda: "PARAM_REQUEST_LIST" in received(), 20)
        # ArduPilot streams only on request: MAVProxy asks with REQUEST_DATA_STREAM (every 15 s, and
        # at once when its streamrate setting changes)
        type_("set streamrate 5")
        wait_until("MAVProxy's stream request", lambda: "REQUEST_DATA_STREAM" in received(), 10)
        wait_until("the requested attitude stream", lambda: 30 in emu.intervals_s, 5)
        guided_takeoff("the take-off to 2 m")
        time.sleep(0.5)
        type_("position 4 0 0")  # BODY_NED offset: 4 m ahead, same height
        wait_until("the position target", lambda: home_distance_m() > 3.8, 10)
        type_("mode RTL")
        wait_until("RTL", lambda: emu.mode_name == "RTL", 5)
        wait_until("RTL to land home and disarm", lambda: not emu.armed, 30)
        assert home_distance_m() < 0.5 and emu.altitude_m() < 0.05
        guided_takeoff("the take-off")
        type_("mode LAND")
        wait_until("LAND to touch down and disarm", lambda: not emu.armed, 20)
        assert emu.mode_name == "LAND" and emu.altitude_m() < 0.05
    finally:
        proxy.kill()
        proxy.wait(10)
        console.close()
        emu.close()
        world.close()
    said = (tmp_path / "mavproxy.txt").read_text()
    assert "Got COMMAND_ACK: NAV_TAKEOFF: ACCEPTED" in said and "Mode RTL" in said, said[-2000:]
