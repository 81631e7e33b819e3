"""The mavlink:// vehicle through unmodified pymavlink against the PX4/ArduPilot emulator (real MAVLink
over UDP on loopback, camera as H.264 datagrams), flying the built-in simulator: approach episodes
accepted by the verifier on both autopilots (PX4 with NAV_DLL_ACT = 2, so arming needs a GCS
heartbeat; ArduPilot with its default stream rates, so landed state comes only on request), the
parameter checks before arming, PX4's offboard rules, and the faults (setpoint gap -> failsafe, RC
takeover, command refused, link lost, ground-station link down -> PX4's data-link failsafe), each
logged with why."""

from __future__ import annotations

import threading
import time

import pytest

from common.errors import ConfigError, VehicleError
from onboard.vehicles.px4 import GCS_SYSID, MavlinkVehicle, parse_mavlink_url
from sim_bridge.emulators.mavlink_emulator import MavlinkEmulator, MavlinkEmulatorConfig
from tests.support.ports import free_udp_port
from tests.support.vehicles import events, make_runtime, make_world, spawn_query, verdict

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def rig(request):
    """(world, emulator, vehicle); the emulator's settings come from the test's indirect parameter."""
    kwargs = dict(getattr(request, "param", {}))
    query = kwargs.pop("query", "")
    world = make_world("outdoor", 480, 270, target_x_m=kwargs.pop("target_x_m", 14.0))
    mav_port, video_port = free_udp_port(), free_udp_port()
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


def hover_in_background(world, vehicle, out):
    """A started runtime taking off to 1 m and flying on after a declaration, run in a thread."""
    rt = make_runtime(world, vehicle, out, "outdoor", takeoff_altitude_m=1.0, stop_on_declaration=False)
    rt.start()
    return (rt, *fly_in_background(rt))


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
    assert parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?gcs_heartbeat=1").gcs_heartbeat
    assert not parse_mavlink_url("mavlink://udpin:0.0.0.0:14540").gcs_heartbeat
    with pytest.raises(ConfigError, match="gcs_heartbeat='yes' must be 0 or 1"):
        parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?gcs_heartbeat=yes")


APM_TIMEOUT_1S = {"GUID_TIMEOUT": 1.0}  # the adapter wants GUIDED to stop within 1 s (default 3 s)


@pytest.mark.parametrize(
    "rig",
    [
        {"params": {"NAV_DLL_ACT": 2}, "query": "gcs_heartbeat=1"},
        {"dialect": "ardupilot", "params": APM_TIMEOUT_1S},
    ],
    indirect=True,
    ids=["px4_nav_dll_act_2", "ardupilot_default_streams"],
)
def test_approach_episode_is_accepted(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    vehicle.set_ground_link(True)  # what the runtime's ground-station link reports
    rt = make_runtime(world, vehicle, tmp_path, "outdoor", takeoff_altitude_m=3.0, save_frames=True)
    rt.start()
    assert vehicle.state.mode_name == ("OFFBOARD" if vehicle.px4 else "GUIDED") and vehicle.state.armed
    if vehicle.px4:  # PX4 armed only because GCS-typed heartbeats came, from our own link
        assert vehicle.link.gcs_heartbeats_sent >= 1 and not emulator.gcs_lost
    else:  # ArduPilot: every stream the adapter uses is one it asked for
        assert {32, 30, 245, 147} <= set(emulator.intervals_s)
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
    assert vehicle.telemetry().landed  # EXTENDED_SYS_STATE, requested
    truth, seen = world.vehicle_pose("Drone1"), vehicle.telemetry().pose
    assert abs(truth.x_m - seen.x_m) < 0.3 and abs(truth.y_m - seen.y_m) < 0.3
    deadline = time.monotonic() + 5  # PX4 disarms COM_DISARM_LAND (2 s) after touching down
    while time.monotonic() < deadline and emulator.armed:
        time.sleep(0.1)
    assert emulator.mode_name == ("AUTO.LAND" if vehicle.px4 else "LAND") and not emulator.armed


@pytest.mark.parametrize("rig", [{"dialect": "ardupilot", "params": APM_TIMEOUT_1S}], indirect=True)
def test_ardupilot_guided_takeoff_velocity_and_land(rig) -> None:
    world, emulator, vehicle = rig
    vehicle.connect()
    vehicle.arm()
    assert vehicle.state.mode_name == "GUIDED"
    vehicle.takeoff(1.0)
    assert world.vehicle_pose("Drone1").altitude_m == pytest.approx(1.0, abs=0.3)
    x0 = world.vehicle_pose("Drone1").x_m
    for _ in range(20):
        vehicle.send_velocity_body(1.0, 0.0, 0.0, 0.0)
        time.sleep(0.05)
    vehicle.land()
    assert world.vehicle_pose("Drone1").x_m - x0 > 0.5
    assert vehicle.telemetry().landed and emulator.mode_name == "LAND"


@pytest.mark.parametrize(
    "rig", [{}, {"dialect": "ardupilot", "params": APM_TIMEOUT_1S}], indirect=True, ids=["px4", "ardupilot"]
)
def test_emergency_stop_is_a_forced_disarm_in_the_air(rig) -> None:
    """The e-stop's kill on a flying vehicle: COMPONENT_ARM_DISARM 0 with the force magic, accepted in
    the air; the motors stop (the drone is on its floor, disarmed) and nothing commands it after."""
    world, emulator, vehicle = rig
    with vehicle as v:
        assert v.is_connected
        v.arm()
        v.takeoff(1.5)
        assert world.vehicle_pose("Drone1").altitude_m == pytest.approx(1.5, abs=0.3)
        v.emergency_stop()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (v.state.armed or emulator.armed):
            time.sleep(0.05)
        assert not emulator.armed and not v.state.armed
        model = world.vehicle("Drone1").model
        assert world.vehicle_pose("Drone1").z_m == pytest.approx(model.floor_z_m, abs=0.01)
        sent = v.setpoints.setpoints_sent
        v.send_velocity_body(1.0, 0.0, 0.0, 0.0)
        assert v.setpoints.setpoints_sent == sent  # not in control any more
    assert not vehicle.is_connected


def test_px4_refuses_offboard_without_a_recent_setpoint(rig) -> None:
    _world, _emulator, vehicle = rig
    vehicle.connect()
    with pytest.raises(VehicleError, match=r"TEMPORARILY_REJECTED.*Offboard is currently not available"):
        vehicle._set_mode(6)  # no setpoint yet: offboardCheck.cpp finds no offboard signal
    assert vehicle.faults.kinds() == ["refused"]
    vehicle.setpoints.send(0.0, 0.0, 0.0, 0.0)  # one setpoint younger than COM_OF_LOSS_T is enough
    vehicle._set_mode(6)
    assert vehicle.state.mode_name == "OFFBOARD"
    # and a frame PX4 does not take (BODY_OFFSET_NED, ArduPilot habit) is refused with a STATUSTEXT
    mav = vehicle.link.conn.mav
    mav.set_position_target_local_ned_send(0, 1, 1, 9, 1479, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not any(
        "frame 9 unsupported" in t for _, _, t in vehicle.link.statustexts
    ):
        time.sleep(0.05)
    assert any("frame 9 unsupported" in t for _, _, t in vehicle.link.statustexts)


def test_setpoint_gap_fires_the_failsafe_and_the_runtime_reports_it(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    rt, thread, box = hover_in_background(world, vehicle, tmp_path)
    time.sleep(1.0)
    rt.actuation.stop()  # the onboard actuation loop dies: no setpoints any more
    thread.join(30)
    assert emulator.failsafes and "offboard signal lost" in emulator.failsafes[0]
    # COM_OBL_RC_ACT = 4 as the adapter set it: Hold for COM_FAIL_ACT_T, then Land
    assert emulator.mode_name in ("AUTO.LOITER", "AUTO.LAND")
    faults = vehicle_faults(tmp_path)
    assert faults and faults[0]["fault"] == "failsafe" and "AUTO." in faults[0]["why"], faults
    assert "failsafe" in rt.governor.reason
    assert "result" in box or "error" in box


def test_rc_takeover_stops_commanding(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    _rt, thread, _box = hover_in_background(world, vehicle, tmp_path)
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
    rt, thread, _box = hover_in_background(world, vehicle, tmp_path)
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


@pytest.mark.parametrize(
    ("rig", "refusal"),
    [
        ({"params": {"GF_ACTION": 0}}, r"GF_ACTION = 0: accepted 2 Hold"),
        ({"params": {"NAV_DLL_ACT": 2}}, r"NAV_DLL_ACT = 2 \(Return\).*gcs_heartbeat=1"),
        ({"params": {"NAV_DLL_ACT": 2}, "query": "gcs_heartbeat=1"}, r"NAV_DLL_ACT = 2.*link is down"),
        ({"dialect": "ardupilot", "params": {**APM_TIMEOUT_1S, "FS_GCS_ENABLE": 2}}, r"FS_GCS_ENABLE = 2"),
    ],
    indirect=["rig"],
    ids=["gf_action", "dll_no_gcs", "dll_link_down", "fs_gcs"],
)
def test_arming_refused_on_parameters(rig, refusal) -> None:
    _world, emulator, vehicle = rig
    vehicle.connect()
    with pytest.raises(VehicleError, match=refusal):
        vehicle.arm()
    assert vehicle.faults.kinds()[-1] == "refused" and not emulator.armed


@pytest.mark.parametrize(
    ("rig", "wanted"),
    [
        (
            {"params": {"COM_OF_LOSS_T": 3.0, "COM_OBL_RC_ACT": 7}},
            {"COM_OF_LOSS_T": 1.0, "COM_OBL_RC_ACT": 4},
        ),
        ({"query": "command_loss_s=0.5&loss_action=return"}, {"COM_OF_LOSS_T": 0.5, "COM_OBL_RC_ACT": 3}),
        ({"dialect": "ardupilot"}, {"GUID_TIMEOUT": 1.0}),
    ],
    indirect=["rig"],
    ids=["px4_defaults_replaced", "px4_from_url", "ardupilot_guid_timeout"],
)
def test_last_resort_parameters_are_set_before_arming(rig, wanted) -> None:
    """What the autopilot does by itself if onboard dies is set with PARAM_SET before arming, and the
    autopilot's own store holds it (not just the adapter's belief)."""
    _world, emulator, vehicle = rig
    vehicle.connect()
    vehicle.arm()
    assert {name: emulator.params.get(name) for name in wanted} == wanted
    assert {name: vehicle.link.params[name] for name in wanted} == wanted  # as PARAM_VALUE said


def test_an_autopilot_without_the_loss_action_is_refused(rig) -> None:
    """PX4 before v1.10 had COM_OBL_ACT, not COM_OBL_RC_ACT: an autopilot that never answers the
    PARAM_SET (the emulator's store without it) is not armed, and the refusal names the parameter."""
    _world, emulator, vehicle = rig
    del emulator.params.params["COM_OBL_RC_ACT"]
    vehicle.connect()
    with pytest.raises(VehicleError, match="no PARAM_VALUE for COM_OBL_RC_ACT"):
        vehicle.arm()
    assert vehicle.faults.kinds()[-1] == "refused" and not emulator.armed


def test_loss_action_is_validated() -> None:
    with pytest.raises(ConfigError, match="loss_action='drop' must be one of land, hold, return"):
        parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?loss_action=drop")
    with pytest.raises(ConfigError, match=r"command_loss_s=3 outside 0\.1-1"):
        parse_mavlink_url("mavlink://udpin:0.0.0.0:14540?command_loss_s=3")


@pytest.mark.parametrize("rig", [{"params": {"NAV_DLL_ACT": 2}}], indirect=True)
def test_px4_emulator_clears_the_datalink_check_only_on_gcs_heartbeats(rig) -> None:
    """A companion's own heartbeat (MAV_TYPE_ONBOARD_CONTROLLER) does not let PX4 arm; a GCS's does."""
    _world, emulator, vehicle = rig
    vehicle.connect()  # it sends ONBOARD_CONTROLLER heartbeats at 1 Hz
    time.sleep(1.2)
    with pytest.raises(VehicleError, match=r"TEMPORARILY_REJECTED.*No connection to the ground"):
        vehicle.link.command_long(400, 1)
    gcs = vehicle.link.mavlink.MAVLink(vehicle.link.conn, srcSystem=GCS_SYSID, srcComponent=190)
    gcs.heartbeat_send(6, 8, 0, 0, 4)  # MAV_TYPE_GCS
    time.sleep(0.2)
    vehicle.link.command_long(400, 1)
    assert emulator.armed


@pytest.mark.parametrize(
    "rig",
    [{"params": {"NAV_DLL_ACT": 3, "COM_DL_LOSS_T": 2, "COM_FAIL_ACT_T": 0.0}, "query": "gcs_heartbeat=1"}],
    indirect=True,
)
def test_px4_datalink_failsafe_follows_the_ground_station_link(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    vehicle.set_ground_link(True)
    _rt, thread, _box = hover_in_background(world, vehicle, tmp_path)
    time.sleep(1.0)
    vehicle.set_ground_link(False)  # the ground station's link drops: no more GCS heartbeats
    dropped_s = time.monotonic()
    sent_at_drop = vehicle.link.gcs_heartbeats_sent
    while "data link lost" not in emulator.failsafes and time.monotonic() - dropped_s < 15.0:
        time.sleep(0.05)
    detected_s = time.monotonic()
    assert "data link lost" in emulator.failsafes, emulator.failsafes
    # No GCS heartbeat after the drop (one in flight may still arrive), and the failsafe no sooner than
    # COM_DL_LOSS_T (2 s) after the last one the autopilot heard. How late it is seen depends on the
    # load on this machine (the emulator checks at its telemetry rate), so the upper bound only catches
    # a failsafe that did not come from the heartbeats' absence.
    assert vehicle.link.gcs_heartbeats_sent == sent_at_drop
    last_heartbeat_s = emulator.autopilot.last_gcs_heartbeat_s
    assert last_heartbeat_s is not None and last_heartbeat_s <= dropped_s + 1.0, last_heartbeat_s - dropped_s
    assert 2.0 <= detected_s - last_heartbeat_s <= 8.0, (detected_s - last_heartbeat_s, emulator.failsafes)
    thread.join(120)
    assert not thread.is_alive()
    assert emulator.mode_name == "AUTO.LAND"  # NAV_DLL_ACT = 3
    faults = vehicle_faults(tmp_path)
    assert faults and faults[0]["fault"] == "failsafe" and "AUTO.LAND" in faults[0]["why"], faults
