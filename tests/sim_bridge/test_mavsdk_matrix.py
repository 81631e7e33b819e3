"""MAVSDK (its gRPC Python API with the bundled mavsdk_server) drives the PX4 and ArduPilot emulators
as it would drive the real autopilots: every call a MAVSDK user makes for a companion flight, each
judged by what the simulated vehicle did (its pose in the simulator), not by MAVSDK's return value
alone. The setpoint-loss cases kill the mavsdk_server process mid-flight (the real fault: the
offboard stream stops) and check what PX4's failsafe rules make the vehicle do, with and without RC."""

from __future__ import annotations

import asyncio
import math
import os
import socket
import subprocess
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sim_bridge.emulators.mavlink_emulator import (
    HOME_ALT_M,
    HOME_LAT_DEG,
    HOME_LON_DEG,
    MavlinkEmulator,
    MavlinkEmulatorConfig,
)
from tests.support.async_wait import wait_until
from tests.support.vehicles import make_world

with warnings.catch_warnings():  # mavsdk 3.x announces its rename to mavsdk-grpc
    warnings.simplefilter("ignore", FutureWarning)
    mavsdk = pytest.importorskip("mavsdk")
    from mavsdk import System
    from mavsdk.offboard import PositionNedYaw, VelocityBodyYawspeed, VelocityNedYaw

pytestmark = [pytest.mark.timeout(150), pytest.mark.slow]

SERVER = os.path.join(os.path.dirname(mavsdk.__file__), "bin", "mavsdk_server")


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Rig:
    """The simulator, an emulated autopilot and a mavsdk_server process listening for it."""

    def __init__(self, dialect: str, params: dict[str, float] | None = None, rc_present: bool = True):
        self.world = make_world("outdoor", 160, 120)
        self.mav_port, self.grpc_port = _free_port(socket.SOCK_DGRAM), _free_port(socket.SOCK_STREAM)
        companion = ("127.0.0.1", self.mav_port)
        cfg = MavlinkEmulatorConfig(dialect, companion, params=params or {}, rc_present=rc_present)
        self.emu = MavlinkEmulator(self.world, "Drone1", cfg).start()
        self.server = subprocess.Popen(
            [SERVER, "-p", str(self.grpc_port), f"udpin://127.0.0.1:{self.mav_port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill_server(self) -> None:
        if self.server.poll() is None:
            self.server.kill()
            self.server.wait(5)

    def close(self) -> None:
        self.kill_server()
        self.emu.close()
        self.world.close()

    def run(self, body: Callable[[Any], Awaitable[None]], timeout_s: float = 120.0) -> None:
        async def main() -> None:
            drone = System(mavsdk_server_address="127.0.0.1", port=self.grpc_port)
            await drone.connect()
            async for state in drone.core.connection_state():
                if state.is_connected:
                    break
            await body(drone)

        asyncio.run(asyncio.wait_for(main(), timeout_s))

    # what the simulated vehicle did
    def altitude_m(self) -> float:
        return self.emu.altitude_m()

    def xy(self) -> tuple[float, float]:
        p, h = self.emu.pose(), self.emu.home
        return p.x_m - h.x_m, p.y_m - h.y_m


@pytest.fixture
def rig(request):
    kwargs = dict(getattr(request, "param", {}))
    r = Rig(kwargs.pop("dialect", "px4"), **kwargs)
    yield r
    r.close()


async def first(stream: Any) -> Any:
    async for item in stream:
        return item
    raise AssertionError("stream ended")


async def ready_health(drone: Any, timeout_s: float = 15.0) -> Any:
    """The first health report that says armable with a global and a home position, as MAVSDK's own
    examples wait for it: the first reports can come before the home position has been received."""

    async def ready() -> Any:
        async for health in drone.telemetry.health():
            if health.is_armable and health.is_global_position_ok and health.is_home_position_ok:
                return health
        raise AssertionError("health stream ended")

    return await asyncio.wait_for(ready(), timeout_s)


async def check_geo(drone: Any) -> None:
    pos, home, gps = (
        await first(drone.telemetry.position()),
        await first(drone.telemetry.home()),
        await first(drone.telemetry.gps_info()),
    )
    for p in (pos, home):
        assert p.latitude_deg == pytest.approx(HOME_LAT_DEG, abs=1e-6)
        assert p.longitude_deg == pytest.approx(HOME_LON_DEG, abs=1e-6)
        assert p.absolute_altitude_m == pytest.approx(HOME_ALT_M, abs=0.05)
    assert gps.num_satellites >= 6 and str(gps.fix_type) == "FIX_3D"


async def fly_offboard(rig: Rig, drone: Any) -> None:
    """MAVSDK's order: one setpoint, start at once; then body velocity, NED velocity, NED position."""
    await drone.offboard.set_velocity_body(VelocityBodyYawspeed(0.0, 0.0, 0.0, 0.0))
    await drone.offboard.start()
    assert rig.emu.in_offboard()
    x0, y0 = rig.xy()
    await drone.offboard.set_velocity_body(VelocityBodyYawspeed(1.5, 0.0, 0.0, 0.0))
    await asyncio.sleep(1.5)
    x1, y1 = rig.xy()
    assert x1 - x0 > 1.0 and abs(y1 - y0) < 0.3, (x0, x1, y0, y1)  # spawn heading is north
    await drone.offboard.set_velocity_ned(VelocityNedYaw(0.0, 1.5, 0.0, 90.0))
    await asyncio.sleep(1.5)
    _, y2 = rig.xy()
    assert y2 - y1 > 1.0 and abs(rig.emu.heading_deg - 90.0) < 10.0, (y1, y2, rig.emu.heading_deg)
    await drone.offboard.set_position_ned(PositionNedYaw(2.0, -1.0, -2.5, 0.0))

    def arrived() -> bool:
        x, y = rig.xy()
        return math.hypot(x - 2.0, y + 1.0) < 0.3 and abs(rig.altitude_m() - 2.5) < 0.3

    await wait_until("the position setpoint", arrived, 15.0)
    assert not any("unsupported" in t for t in rig.emu.statustexts), rig.emu.statustexts
    await drone.offboard.stop()


async def rtl_lands_home(rig: Rig, drone: Any) -> None:
    await drone.action.return_to_launch()
    await wait_until("RTL to land and disarm", lambda: not rig.emu.armed, 40.0)
    x, y = rig.xy()
    assert math.hypot(x, y) < 0.5 and rig.altitude_m() < 0.05, (x, y, rig.altitude_m())


async def take_off_and_land(rig: Rig, drone: Any, altitude_m: float) -> None:
    await drone.action.arm()
    await drone.action.takeoff()
    await wait_until("the take-off", lambda: rig.altitude_m() > altitude_m - 0.2, 15.0)
    await drone.action.land()
    await wait_until("landing and disarming", lambda: not rig.emu.armed, 30.0)
    assert rig.altitude_m() < 0.05
    assert str(await first(drone.telemetry.landed_state())) == "ON_GROUND"


def test_px4_matrix(rig: Rig) -> None:
    async def body(drone: Any) -> None:
        health = await ready_health(drone)
        assert health.is_gyrometer_calibration_ok and health.is_accelerometer_calibration_ok
        # the simulated pack as MAVSDK reads it (BATTERY_STATUS): full, 4 cells, idle draw only
        battery = await first(drone.telemetry.battery())
        assert battery.remaining_percent == pytest.approx(rig.emu.battery_pct, abs=1.0), battery
        assert 16.5 < battery.voltage_v <= 16.8 and battery.id == 0, battery
        version = await drone.info.get_version()
        assert (version.flight_sw_major, version.flight_sw_minor) == (1, 15)
        await check_geo(drone)
        # the firmware's defaults for what a companion depends on, then a set that sticks
        assert await drone.param.get_param_float("COM_OF_LOSS_T") == 1.0
        assert await drone.param.get_param_int("COM_OBL_RC_ACT") == 0
        assert await drone.param.get_param_int("NAV_DLL_ACT") == 0
        assert await drone.param.get_param_int("GF_ACTION") == 2
        await drone.action.set_takeoff_altitude(2.0)  # MIS_TAKEOFF_ALT
        assert await drone.param.get_param_float("MIS_TAKEOFF_ALT") == 2.0
        await drone.param.set_param_int("COM_DLL_EXCEPT", 4)
        assert await drone.param.get_param_int("COM_DLL_EXCEPT") == 4
        await drone.action.arm()
        await drone.action.takeoff()  # MAV_CMD_NAV_TAKEOFF: AUTO.TAKEOFF, then AUTO.LOITER
        await wait_until("AUTO.TAKEOFF to 2 m", lambda: rig.emu.mode_name == "AUTO.LOITER", 15.0)
        assert rig.altitude_m() == pytest.approx(2.0, abs=0.2)
        await fly_offboard(rig, drone)
        assert rig.emu.mode_name == "AUTO.LOITER"  # MAVSDK's offboard stop asks for Hold
        await drone.action.set_return_to_launch_altitude(3.0)  # RTL_RETURN_ALT
        await rtl_lands_home(rig, drone)
        await take_off_and_land(rig, drone, 2.0)

    rig.run(body)


@pytest.mark.parametrize(
    ("rig", "expected_mode"),
    [
        ({"rc_present": True}, "POSCTL"),  # COM_OBL_RC_ACT=0: Position mode, the RC pilot has it
        ({"rc_present": False}, "AUTO.LOITER"),  # Position needs RC: the fallback chain's Hold
    ],
    indirect=["rig"],
    ids=["with_rc", "without_rc"],
)
def test_px4_setpoint_loss(rig: Rig, expected_mode: str) -> None:
    async def body(drone: Any) -> None:
        await drone.action.arm()
        await drone.offboard.set_velocity_ned(VelocityNedYaw(0.0, 0.0, -1.0, 0.0))
        await drone.offboard.start()  # climbs from the ground in OFFBOARD
        await wait_until("the offboard climb", lambda: rig.altitude_m() > 1.5, 10.0)
        await drone.offboard.set_velocity_ned(VelocityNedYaw(1.0, 0.0, 0.0, 0.0))
        await asyncio.sleep(1.0)

    rig.run(body)
    rig.kill_server()  # the companion dies: its setpoint stream stops mid-flight
    killed_s = time.monotonic()
    deadline = killed_s + 15.0
    while rig.emu.mode_name == "OFFBOARD" and time.monotonic() < deadline:
        time.sleep(0.05)
    reacted_s = time.monotonic()
    assert rig.emu.mode_name == expected_mode, rig.emu.statustexts
    # COM_OF_LOSS_T = 1 s after the last setpoint the autopilot heard: never sooner; how much later it
    # is seen depends on the load on this machine, so the upper bound only catches a failsafe that did
    # not come from the setpoints' absence
    last_setpoint_s = rig.emu.autopilot.last_setpoint_s
    assert last_setpoint_s is not None and last_setpoint_s <= killed_s + 0.5
    assert 1.0 <= reacted_s - last_setpoint_s < 6.0, reacted_s - last_setpoint_s
    assert rig.emu.failsafes and "offboard signal lost" in rig.emu.failsafes[0]
    x0, _ = rig.xy()
    time.sleep(2.0)
    x1, _ = rig.xy()
    assert abs(x1 - x0) < 0.8 and rig.altitude_m() > 1.0 and rig.emu.armed  # it brakes and holds


@pytest.mark.parametrize(
    "rig", [{"rc_present": False, "params": {"COM_OBL_RC_ACT": 3, "COM_FAIL_ACT_T": 1.0}}], indirect=True
)
def test_px4_setpoint_loss_return_holds_then_returns_home(rig: Rig) -> None:
    async def body(drone: Any) -> None:
        await drone.action.set_return_to_launch_altitude(3.0)
        await drone.action.arm()
        await drone.offboard.set_position_ned(PositionNedYaw(3.0, 0.0, -2.0, 0.0))
        await drone.offboard.start()
        await wait_until("the offboard flight", lambda: rig.xy()[0] > 2.7, 15.0)

    rig.run(body)
    rig.kill_server()
    deadline = time.monotonic() + 3.0
    while rig.emu.mode_name == "OFFBOARD" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rig.emu.mode_name == "AUTO.LOITER"  # COM_FAIL_ACT_T: hold first
    deadline = time.monotonic() + 40.0
    while rig.emu.armed and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not rig.emu.armed and math.hypot(*rig.xy()) < 0.5 and rig.altitude_m() < 0.05


@pytest.mark.parametrize("rig", [{"dialect": "ardupilot"}], indirect=True)
def test_ardupilot_matrix(rig: Rig) -> None:
    async def body(drone: Any) -> None:
        # ArduPilot streams nothing it was not asked for: MAVSDK's set_rate_* ask with SET_MESSAGE_INTERVAL
        assert not rig.emu.intervals_s
        for stream in ("position", "home", "gps_info", "battery", "landed_state", "attitude_euler"):
            await getattr(drone.telemetry, f"set_rate_{stream}")(10.0)
        assert 245 in rig.emu.intervals_s  # EXTENDED_SYS_STATE only on request
        version = await drone.info.get_version()
        assert (version.flight_sw_major, version.flight_sw_minor) == (4, 5)
        assert (await first(drone.telemetry.health())).is_home_position_ok
        await check_geo(drone)
        assert await drone.param.get_param_float("GUID_TIMEOUT") == 3.0
        assert await drone.param.get_param_int("FS_GCS_ENABLE") == 0
        await drone.param.set_param_int("RTL_ALT", 300)  # cm
        await drone.param.set_param_int("RTL_LOIT_TIME", 500)  # ms
        assert await drone.param.get_param_int("RTL_ALT") == 300
        await drone.action.set_takeoff_altitude(2.0)  # MAVSDK keeps it for NAV_TAKEOFF's param7
        await drone.action.arm()
        await drone.action.takeoff()  # MAVSDK switches to GUIDED, then MAV_CMD_NAV_TAKEOFF
        await wait_until("the take-off to 2 m", lambda: rig.altitude_m() > 1.85, 15.0)
        assert rig.emu.mode_name == "GUIDED"
        await asyncio.sleep(0.5)
        await fly_offboard(rig, drone)
        await rtl_lands_home(rig, drone)
        assert rig.emu.mode_name == "RTL"
        await take_off_and_land(rig, drone, 2.0)
        assert rig.emu.mode_name == "LAND"

    rig.run(body)


@pytest.mark.parametrize(
    "rig",
    [{"dialect": "px4"}, {"dialect": "ardupilot"}],
    indirect=["rig"],
    ids=["px4", "ardupilot"],
)
def test_rtl_near_home_returns_through_the_cone_and_lands(rig: Rig) -> None:
    """With the firmwares' default return altitudes (PX4 1.15 RTL_RETURN_ALT 60 m, ArduCopter 4.5
    RTL_ALT 15 m), an RTL 4 m from home climbs only as the return cone asks: PX4, inside NAV_ACC_RAD
    (10 m), to twice the distance; ArduCopter to RTL_CONE_SLOPE (3) times it. Then it lands at home."""

    async def body(drone: Any) -> None:
        for stream in ("position", "home", "landed_state"):  # ArduPilot streams only what is asked
            await getattr(drone.telemetry, f"set_rate_{stream}")(10.0)
        await drone.action.set_takeoff_altitude(4.0)
        await drone.action.arm()
        await drone.action.takeoff()
        await wait_until("the take-off to 4 m", lambda: rig.altitude_m() > 3.85, 20.0)
        await asyncio.sleep(0.5)
        await drone.offboard.set_position_ned(PositionNedYaw(4.0, 0.0, -4.0, 0.0))
        await drone.offboard.start()

        def there() -> bool:
            x, y = rig.xy()
            return math.hypot(x - 4.0, y) < 0.3 and abs(rig.altitude_m() - 4.0) < 0.3

        await wait_until("4 m north of home at 4 m", there, 20.0)
        await asyncio.sleep(1.0)  # settled
        distance_m = math.hypot(*rig.xy())
        expected_m = (2.0 if rig.emu.px4 else 3.0) * distance_m
        started = time.monotonic()
        await drone.action.return_to_launch()
        peak = 0.0
        while rig.emu.armed and time.monotonic() - started < 45.0:
            peak = max(peak, rig.altitude_m())
            await asyncio.sleep(0.05)
        landed_s = time.monotonic() - started
        x, y = rig.xy()
        assert not rig.emu.armed and math.hypot(x, y) < 0.5 and rig.altitude_m() < 0.05, (landed_s, x, y)
        assert peak == pytest.approx(expected_m, abs=0.3), (peak, expected_m, distance_m)
        print(f"RTL from {distance_m:.2f} m out: peak {peak:.2f} m, landed and disarmed in {landed_s:.1f} s")

    rig.run(body)
