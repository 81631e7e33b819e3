"""The mavlink:// vehicle through unmodified pymavlink against the PX4/ArduPilot emulator (real MAVLink
over UDP on loopback, camera as H.264 datagrams), flying the built-in simulator: an approach episode
accepted by the verifier, the ArduPilot GUIDED dialect, PX4's offboard rules, and the faults
(setpoint gap -> failsafe, RC takeover, command refused, link lost), each logged with why."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from vehicles_support import events, make_runtime, make_world, spawn_query, verdict

from common.errors import ConfigError, VehicleError
from onboard.vehicles.px4 import MavlinkVehicle, parse_mavlink_url
from sim_bridge.emulators.mavlink_emulator import MavlinkEmulator, MavlinkEmulatorConfig

pytestmark = pytest.mark.timeout(120)


def _free_udp_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.fixture
def rig(request):
    """(world, emulator, vehicle); the emulator's settings come from the test's indirect parameter."""
    kwargs = dict(getattr(request, "param", {}))
    query = kwargs.pop("query", "")
    world = make_world("outdoor", 480, 270, target_x_m=kwargs.pop("target_x_m", 14.0))
    mav_port, video_port = _free_udp_port(), _free_udp_port()
    emulator = MavlinkEmulator(
        world,
        "Drone1",
        MavlinkEmulatorConfig(
            companion=("127.0.0.1", mav_port), video_dest=("127.0.0.1", video_port), **kwargs
        ),
    ).start()
    url = (
        f"mavlink://udpin:127.0.0.1:{mav_port}?dialect={emulator.config.dialect}&{spawn_query(world)}"
        f"&camera=h264udp://127.0.0.1:{video_port}" + (f"&{query}" if query else "")
    )
    vehicle = MavlinkVehicle(parse_mavlink_url(url))
    yield world, emulator, vehicle
    vehicle.close()
    emulator.close()
    world.close()


def fly_in_background(rt):
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = rt.run()
        except Exception as exc:  # the test inspects it
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def vehicle_faults(out) -> list[dict]:
    return [e for e in events(out) if e.get("event") == "vehicle_fault"]


def test_url_parsing() -> None:
    t = parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?dialect=ardupilot&camera=0&spawn=1,2,0")
    assert (t.connection, t.dialect, t.camera, t.spawn.y_m) == ("udpin:0.0.0.0:14540", "ardupilot", "0", 2.0)
    assert parse_mavlink_url("mavlink:///dev/ttyTHS1,921600").connection == "/dev/ttyTHS1,921600"
    with pytest.raises(ConfigError, match="dialect"):
        parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?dialect=inav")
    assert parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?spawn=1,2,0,45").spawn.yaw_deg == 45
    with pytest.raises(ConfigError, match="spawn needs 3 or 4 numbers, got 2"):
        parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?spawn=1,2")


def test_px4_approach_episode_is_accepted(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    rt = make_runtime(world, vehicle, tmp_path, "outdoor", takeoff_altitude_m=3.0, save_frames=True)
    rt.start()
    assert vehicle.mode_name == "OFFBOARD" and vehicle.armed
    result = rt.run()
    assert result.reason == "declared", result
    v = verdict(tmp_path)
    assert v.success and v.ne_m <= 5.0 and not v.problems, v
    # setpoints: BODY_NED velocity + yaw rate, streamed without a 1 s gap; no frame/mask complaints
    assert emulator.setpoints > 100 and max(emulator.setpoint_intervals_s) < 1.0
    assert not emulator.failsafes and not any("unsupported" in t for t in emulator.statustexts)
    # telemetry from LOCAL_POSITION_NED (+ spawn) agrees with the simulator
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not vehicle.telemetry().landed:
        time.sleep(0.1)
    truth, seen = world.vehicle_pose("Drone1"), vehicle.telemetry().pose
    assert abs(truth.x_m - seen.x_m) < 0.3 and abs(truth.y_m - seen.y_m) < 0.3
    assert emulator.mode_name == "AUTO.LAND" and not emulator.armed


@pytest.mark.parametrize("rig", [{"dialect": "ardupilot"}], indirect=True)
def test_ardupilot_guided_takeoff_velocity_and_land(rig) -> None:
    world, emulator, vehicle = rig
    vehicle.connect()
    vehicle.arm()
    assert vehicle.mode_name == "GUIDED"
    vehicle.takeoff(1.0)
    assert world.vehicle_pose("Drone1").altitude_m == pytest.approx(1.0, abs=0.3)
    x0 = world.vehicle_pose("Drone1").x_m
    for _ in range(20):
        vehicle.send_velocity_body(1.0, 0.0, 0.0, 0.0)
        time.sleep(0.05)
    vehicle.land()
    assert world.vehicle_pose("Drone1").x_m - x0 > 0.5
    assert vehicle.telemetry().landed and emulator.mode_name == "LAND"


@pytest.mark.parametrize("rig", [{"query": "prestream_s=0"}], indirect=True)
def test_px4_refuses_offboard_without_a_setpoint_stream(rig) -> None:
    _world, _emulator, vehicle = rig
    vehicle.connect()
    with pytest.raises(VehicleError, match=r"DENIED.*no offboard signal"):
        vehicle.arm()
    assert vehicle.faults.kinds() == ["refused"]
    # and a frame PX4 does not take (BODY_OFFSET_NED, ArduPilot habit) is refused with a STATUSTEXT
    vehicle.conn.mav.set_position_target_local_ned_send(0, 1, 1, 9, 1479, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not any(
        "frame 9 unsupported" in t for _, _, t in vehicle.statustexts
    ):
        time.sleep(0.05)
    assert any("frame 9 unsupported" in t for _, _, t in vehicle.statustexts)


def test_setpoint_gap_fires_the_failsafe_and_the_runtime_reports_it(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    rt = make_runtime(world, vehicle, tmp_path, "outdoor", takeoff_altitude_m=1.0, stop_on_declaration=False)
    rt.start()
    thread, box = fly_in_background(rt)
    time.sleep(1.0)
    rt.actuation.stop()  # the onboard actuation loop dies: no setpoints any more
    thread.join(30)
    assert emulator.failsafes and "offboard signal lost" in emulator.failsafes[0]
    assert emulator.mode_name == "POSCTL"
    faults = vehicle_faults(tmp_path)
    assert faults and faults[0]["fault"] == "failsafe" and "POSCTL" in faults[0]["why"], faults
    assert "failsafe" in rt.governor.reason
    assert "result" in box or "error" in box


def test_rc_takeover_stops_commanding(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    rt = make_runtime(world, vehicle, tmp_path, "outdoor", takeoff_altitude_m=1.0, stop_on_declaration=False)
    rt.start()
    thread, _box = fly_in_background(rt)
    time.sleep(1.5)
    emulator.rc_takeover()
    thread.join(30)
    faults = vehicle_faults(tmp_path)
    assert faults and faults[0]["fault"] == "control_lost" and "RC override" in faults[0]["why"], faults
    n = emulator.setpoints
    time.sleep(1.0)
    assert emulator.setpoints == n, "setpoints kept coming after the RC pilot took over"
    assert emulator.mode_name == "POSCTL"  # our landing was not commanded over the pilot


@pytest.mark.parametrize(
    "rig", [{"refused": {400: (2, "Arming denied: preflight checks failed")}}], indirect=True
)
def test_refused_arming_is_an_error_with_the_autopilots_reason(rig, tmp_path) -> None:
    world, _emulator, vehicle = rig
    rt = make_runtime(world, vehicle, tmp_path, "outdoor", takeoff_altitude_m=1.0)
    with pytest.raises(VehicleError, match=r"DENIED.*preflight checks failed"):
        rt.start()


def test_link_lost_is_reported_and_lands(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    rt = make_runtime(world, vehicle, tmp_path, "outdoor", takeoff_altitude_m=1.0, stop_on_declaration=False)
    rt.start()
    thread, _box = fly_in_background(rt)
    time.sleep(1.0)
    emulator.link_down.set()
    thread.join(30)
    faults = vehicle_faults(tmp_path)
    assert faults and faults[0]["fault"] == "link_lost" and "HEARTBEAT" in faults[0]["why"], faults
    assert rt.governor.mode.value == "landing" and "link_lost" in rt.governor.reason
    # the emulator lost the stream too: PX4's own failsafe acts on its side
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not emulator.failsafes:
        time.sleep(0.1)
    assert emulator.failsafes
