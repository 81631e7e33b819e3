"""Two MAVSDK flights, one after the other, against one running `dronecats sim --mavlink` (PX4): each
with its own mavsdk_server process (a new client), arm, take off, fly offboard, land, disarm. The
second flight takes off from the spawn the server printed, not from where the first one landed;
judged by the simulator's own pose of the drone (the stock `airsim` client on the same server)."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import threading
import time
import warnings
from typing import Any

import pytest

from tests.support.async_wait import wait_until
from tests.support.ports import free_port
from tests.support.processes import kill_if_running, mavlink_sim

with warnings.catch_warnings():  # mavsdk 3.x announces its rename to mavsdk-grpc
    warnings.simplefilter("ignore", FutureWarning)
    mavsdk = pytest.importorskip("mavsdk")
    from mavsdk import System
    from mavsdk.offboard import PositionNedYaw

pytestmark = [pytest.mark.timeout(90)]

SERVER = os.path.join(os.path.dirname(mavsdk.__file__), "bin", "mavsdk_server")
OUT_M = 3.0  # the first flight lands this far north of the spawn


class SimPoses:
    """Polls the simulator's pose of Drone1 over the AirSim RPC in its own thread (the airsim client's
    tornado loop cannot run inside MAVSDK's asyncio loop)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.latest: tuple[float, float, float] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10.0
        while self.latest is None and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.latest is not None, "no pose over the AirSim RPC"

    def _run(self) -> None:
        import airsim

        asyncio.set_event_loop(asyncio.new_event_loop())  # the client's tornado loop, this thread's own
        client = airsim.MultirotorClient(port=self.port)
        client.confirmConnection()
        while True:
            p = client.simGetVehiclePose("Drone1").position
            self.latest = (p.x_val, p.y_val, p.z_val)
            if self._stop.wait(0.05):
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)


def test_second_mavsdk_flight_takes_off_from_the_printed_spawn() -> None:
    with mavlink_sim() as (port, url):
        assert "dialect=px4" in url and "spawn=0,0,0,0" in url, url
        mav_port = int(url.split("udpin:127.0.0.1:")[1].split("?")[0])
        poses = SimPoses(port)

        def xyz() -> tuple[float, float, float]:
            """The drone in its spawn frame (NED metres), as the simulator had it at most 50 ms ago."""
            assert poses.latest is not None
            return poses.latest

        async def flight(drone: Any) -> tuple[float, float, float]:
            """Arm, take off, fly OUT_M north offboard, land; where it was between arming and take-off."""
            async for health in drone.telemetry.health():  # as MAVSDK's takeoff_and_land example waits
                if health.is_global_position_ok and health.is_home_position_ok:
                    break
            await drone.action.set_takeoff_altitude(2.0)
            await drone.action.arm()
            await asyncio.sleep(0.2)  # a fresh pose from the poller
            at_arm = xyz()
            await drone.action.takeoff()
            await wait_until("the take-off", lambda: xyz()[2] < -1.8, 15.0)
            await drone.offboard.set_position_ned(PositionNedYaw(OUT_M, 0.0, -2.0, 0.0))
            await drone.offboard.start()
            await wait_until("the offboard leg", lambda: abs(xyz()[0] - at_arm[0] - OUT_M) < 0.15, 15.0)
            await drone.offboard.stop()
            await drone.action.land()
            await wait_until("landing", lambda: xyz()[2] > -0.05, 20.0)
            async for armed in drone.telemetry.armed():
                if not armed:
                    break  # PX4 disarms after COM_DISARM_LAND on the ground
            return at_arm

        def with_new_mavsdk_server() -> tuple[float, float, float]:
            grpc_port = free_port()
            server = subprocess.Popen(
                [SERVER, "-p", str(grpc_port), f"udpin://127.0.0.1:{mav_port}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

            async def main() -> tuple[float, float, float]:
                drone = System(mavsdk_server_address="127.0.0.1", port=grpc_port)
                await drone.connect()
                async for state in drone.core.connection_state():
                    if state.is_connected:
                        break
                return await flight(drone)

            try:
                return asyncio.run(asyncio.wait_for(main(), 40.0))
            finally:
                kill_if_running(server)

        try:
            first_arm = with_new_mavsdk_server()
            landed = xyz()
            second_arm = with_new_mavsdk_server()  # a new client on the same server
            second_landed = xyz()
        finally:
            poses.close()
        print(f"second take-off from x={second_arm[0]:.2f} y={second_arm[1]:.2f} z={second_arm[2]:.2f}")
        assert math.hypot(*first_arm[:2]) < 0.05, first_arm
        assert landed[0] == pytest.approx(OUT_M, abs=0.3), landed
        assert math.hypot(*second_arm[:2]) < 0.05 and abs(second_arm[2]) < 0.05, (second_arm, landed)
        assert second_landed[0] == pytest.approx(OUT_M, abs=0.3), second_landed  # its leg flown from there
