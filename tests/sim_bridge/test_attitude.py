"""A multirotor with attitude: tilt while accelerating, full orientation in the kinematics, AirSim's
attitude- and rate-level calls, and body-fixed vs gimbal-stabilised cameras, through the real airsim
client against `dronecats sim` (and the World directly for the model itself)."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

from common.pose import Pose  # noqa: E402
from sim_bridge.sim.attitude import MAX_TILT_RAD, tilt_for_acceleration  # noqa: E402
from sim_bridge.sim.gimbal import BODY_FIXED, STABILISED, CameraMount, Gimbal, camera_rotation  # noqa: E402
from tests.support.processes import sim_server  # noqa: E402

CLOCK_SPEED = 5.0


def euler(q) -> tuple[float, float, float]:
    """(roll, pitch, yaw) in radians of an airsim Quaternionr."""
    pitch, roll, yaw = airsim.to_eularian_angles(q)
    return roll, pitch, yaw


@pytest.fixture(scope="module")
def sim_port():
    with sim_server("--scene", "blocks", "--clock-speed", str(CLOCK_SPEED), "--renderer", "tiny") as port:
        yield port


@pytest.fixture
def client(sim_port):
    c = airsim.MultirotorClient(ip="127.0.0.1", port=sim_port, timeout_value=60)
    c.confirmConnection()
    c.simPause(False)
    c.enableApiControl(True)
    c.armDisarm(True)
    c.simSetVehiclePose(airsim.Pose(airsim.Vector3r(0, 0, -3), airsim.to_quaternion(0, 0, 0)), True)
    c.hoverAsync().join()
    yield c
    c.cancelLastTask()
    c.simPause(False)


def run_paused(c, start, sim_s: float):
    """Start a motion while paused, run the world sim_s, stay paused; returns the motion's future."""
    c.simPause(True)
    f = start()
    time.sleep(0.05)  # the command is applied before time moves
    c.simContinueForTime(sim_s)
    return f


def finish(c, f) -> bool:
    """Let a timed motion run out (the world stays paused afterwards) and return its result."""
    t0 = c.client.call("dcGetSimTime")
    while not f._set_flag and c.client.call("dcGetSimTime") < t0 + 10.0:
        c.simContinueForTime(0.5)
    f.join()
    return bool(f.result)


def state(c):
    return c.getMultirotorState().kinematics_estimated


# ---------------------------------------------------------------- the model, in-process
def test_tilt_for_acceleration_signs_and_limit() -> None:
    roll, pitch = tilt_for_acceleration(np.array([4.0, 0.0, 0.0]), 0.0)
    assert pitch == pytest.approx(-math.atan2(4.0, 9.80665))  # nose down to go forward
    assert roll == pytest.approx(0.0, abs=1e-12)
    roll, pitch = tilt_for_acceleration(np.array([0.0, 4.0, 0.0]), 0.0)
    assert roll > 0.3 and abs(pitch) < 1e-12  # right wing down to go right
    roll, pitch = tilt_for_acceleration(np.array([0.0, 4.0, 0.0]), math.pi / 2)  # facing east
    assert pitch < -0.3 and abs(roll) < 1e-9
    assert tilt_for_acceleration(np.array([50.0, 0.0, 0.0]), 0.0)[1] == pytest.approx(-MAX_TILT_RAD)


def test_level_gimbal_holds_the_camera_level_and_body_fixed_tilts() -> None:
    r_fixed = camera_rotation(BODY_FIXED, 0.1, -0.3, 1.0)
    r_level = camera_rotation(STABILISED, 0.1, -0.3, 1.0)
    assert r_fixed[2, 0] == pytest.approx(math.sin(0.3))  # forward axis points down
    assert r_level[2, :] == pytest.approx([0.0, 0.0, 1.0])  # level: down is down
    assert math.atan2(r_level[1, 0], r_level[0, 0]) == pytest.approx(1.0)  # heading kept
    half = camera_rotation(CameraMount(gimbal=Gimbal(0.5, 0.0, math.nan)), 0.0, -0.4, 0.0)
    assert -math.asin(half[2, 0]) == pytest.approx(-0.2)  # Stabilization 0.5: halfway


# ---------------------------------------------------------------- through the real airsim client
def test_body_tilts_while_accelerating_and_kinematics_report_it(client) -> None:
    f = run_paused(client, lambda: client.moveByVelocityAsync(4.0, 0.0, 0.0, 5.0), 0.4)
    k = state(client)
    roll, pitch, _ = euler(k.orientation)
    assert pitch < math.radians(-15)  # accelerating north at 4 m/s^2: about -22 deg
    assert abs(roll) < 1e-6
    gt = client.simGetGroundTruthKinematics()
    pose = client.simGetVehiclePose()
    for q in (gt.orientation, pose.orientation):
        assert euler(q)[1] == pytest.approx(pitch, abs=1e-6)
    client.simContinueForTime(1.5)  # cruising: level again
    k = state(client)
    assert abs(euler(k.orientation)[1]) < math.radians(1.0)
    assert k.linear_velocity.x_val == pytest.approx(4.0, abs=0.05)
    client.cancelLastTask()  # braking: nose up, the body pitching up at first
    client.simContinueForTime(0.1)
    k = state(client)
    assert euler(k.orientation)[1] > math.radians(5)
    assert k.angular_velocity.y_val > 0.5  # rad/s, body frame
    assert finish(client, f) is False  # cancelled


def test_move_by_roll_pitch_yaw_z_holds_attitude_and_height(client) -> None:
    # the client sends -pitch (AirSim's client.py): pitch 0.2 here is nose down on the wire: forward
    f = run_paused(client, lambda: client.moveByRollPitchYawZAsync(0.0, 0.2, 0.0, -3.0, 2.0), 1.9)
    k = state(client)
    roll, pitch, yaw = euler(k.orientation)
    assert pitch == pytest.approx(-0.2, abs=0.01)
    assert roll == pytest.approx(0.0, abs=0.01) and yaw == pytest.approx(0.0, abs=0.01)
    assert k.position.z_val == pytest.approx(-3.0, abs=0.15)
    assert k.linear_velocity.x_val > 2.5  # g tan(0.2) = 2 m/s^2 for about 2 s, minus drag
    assert finish(client, f) is True  # AirSim: True when the duration has run out


def test_move_by_roll_pitch_yaw_throttle_flies_by_thrust(client) -> None:
    hover = 9.80665 / (4 * 4.179446268)  # AirSim's default quadrotor: 1 kg, 4 x 4.18 N
    f = run_paused(client, lambda: client.moveByRollPitchYawThrottleAsync(0.15, 0.0, 0.0, 0.9, 1.0), 0.9)
    k = state(client)
    assert euler(k.orientation)[0] == pytest.approx(0.15, abs=0.01)
    assert k.linear_velocity.y_val > 0.5  # rolled right: east
    assert k.linear_velocity.z_val < -1.0  # throttle 0.9 > hover: climbing
    assert 0.55 < hover < 0.6
    assert finish(client, f) is True
    # from rest, level, at the hover throttle: thrust equals weight, the height stays
    client.simSetVehiclePose(airsim.Pose(airsim.Vector3r(0, 0, -3), airsim.to_quaternion(0, 0, 0)), True)
    f = run_paused(client, lambda: client.moveByRollPitchYawThrottleAsync(0.0, 0.0, 0.0, hover, 1.0), 0.9)
    k = state(client)
    assert k.position.z_val == pytest.approx(-3.0, abs=0.02)
    assert abs(k.linear_velocity.z_val) < 0.05
    finish(client, f)


def test_move_by_roll_pitch_yawrate_z_and_throttle_turn(client) -> None:
    f = run_paused(client, lambda: client.moveByRollPitchYawrateZAsync(0.0, 0.0, 0.5, -3.0, 2.0), 1.9)
    k = state(client)
    yaw = euler(k.orientation)[2]
    assert yaw == pytest.approx(-0.5 * 1.9, abs=0.1)  # the client sends -yaw_rate: NED yaw decreases
    assert k.angular_velocity.z_val == pytest.approx(-0.5, abs=0.05)
    assert k.position.z_val == pytest.approx(-3.0, abs=0.15)
    finish(client, f)
    f = run_paused(client, lambda: client.moveByRollPitchYawrateThrottleAsync(0.0, 0.0, -0.5, 0.6, 1.0), 0.9)
    assert state(client).angular_velocity.z_val == pytest.approx(0.5, abs=0.05)
    finish(client, f)


def test_move_by_angle_rates_z_and_throttle(client) -> None:
    f = run_paused(client, lambda: client.moveByAngleRatesZAsync(0.4, 0.0, 0.0, -3.0, 0.5), 0.45)
    k = state(client)
    assert k.angular_velocity.x_val == pytest.approx(0.4, abs=0.03)
    assert euler(k.orientation)[0] == pytest.approx(0.4 * 0.45, abs=0.05)  # minus the rate loop's lag
    finish(client, f)
    f = run_paused(client, lambda: client.moveByAngleRatesThrottleAsync(0.0, 0.4, 0.0, 0.6, 0.5), 0.45)
    k = state(client)
    assert k.angular_velocity.y_val == pytest.approx(-0.4, abs=0.03)  # the client sends -pitch_rate
    finish(client, f)


def test_gains_setters_and_the_unsupported(client) -> None:
    # a stiffer angle-level loop reaches the same attitude sooner
    def pitch_after(seconds: float) -> float:
        client.simSetVehiclePose(airsim.Pose(airsim.Vector3r(0, 0, -3), airsim.to_quaternion(0, 0, 0)), True)
        f = run_paused(client, lambda: client.moveByRollPitchYawZAsync(0.0, 0.3, 0.0, -3.0, 1.0), seconds)
        pitch = euler(state(client).orientation)[1]
        finish(client, f)
        return pitch

    soft = pitch_after(0.1)
    g = airsim.AngleLevelControllerGains(
        roll_gains=airsim.PIDGains(6.0, 0, 0), pitch_gains=airsim.PIDGains(6.0, 0, 0)
    )
    client.setAngleLevelControllerGains(g)
    try:
        assert pitch_after(0.1) < soft - 0.02
    finally:
        client.setAngleLevelControllerGains(airsim.AngleLevelControllerGains())
    client.setAngleRateControllerGains(airsim.AngleRateControllerGains())
    with pytest.raises(Exception, match="setVelocityControllerGains is not supported"):
        client.setVelocityControllerGains(airsim.VelocityControllerGains())
    with pytest.raises(Exception, match="setPositionControllerGains is not supported"):
        client.setPositionControllerGains(airsim.PositionControllerGains())
    with pytest.raises(Exception, match="moveByMotorPWMs is not supported"):
        client.client.call("moveByMotorPWMs", 0.6, 0.6, 0.6, 0.6, 1.0, "")
    with pytest.raises(Exception, match="kp must be 3 numbers"):
        client.client.call("setAngleRateControllerGains", [1.0], [0, 0, 0], [0, 0, 0], "")
    with pytest.raises(Exception, match=r"throttle 1\.5 must be within 0-1"):
        client.client.call("moveByRollPitchYawThrottle", 0.0, 0.0, 0.0, 1.5, 1.0, "")


def _sky_rows(response) -> float:
    img = np.frombuffer(response.image_data_uint8, np.uint8).reshape(response.height, response.width, 3)
    sky = np.all(img == (235, 206, 170), axis=2)  # SKY_BGR: no geometry, no ground
    return float(sky.mean())


def test_body_fixed_camera_pitches_with_the_body(client) -> None:
    request = [airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)]
    level = client.simGetImages(request)[0]
    assert abs(euler(level.camera_orientation)[1]) < 1e-6
    f = run_paused(client, lambda: client.moveByRollPitchYawZAsync(0.0, 0.3, 0.0, -3.0, 2.0), 1.5)
    tilted = client.simGetImages(request)[0]
    assert euler(tilted.camera_orientation)[1] == pytest.approx(-0.3, abs=0.02)
    assert _sky_rows(tilted) < _sky_rows(level) - 0.05  # nose down: less sky in the frame
    info = client.simGetCameraInfo("0")
    assert euler(info.pose.orientation)[1] == pytest.approx(-0.3, abs=0.02)
    client.cancelLastTask()
    finish(client, f)


@pytest.mark.parametrize("how", ["settings", "flag"])
def test_gimbal_keeps_the_camera_level(tmp_path, how: str) -> None:
    cam = {"CaptureSettings": [{"ImageType": 0, "Width": 256, "Height": 144, "FOV_Degrees": 90}]}
    if how == "settings":
        cam["Gimbal"] = {"Stabilization": 1, "Pitch": 0, "Roll": 0}
    settings = {
        "SettingsVersion": 1.2,
        "SimMode": "Multirotor",
        "Vehicles": {"Drone1": {"VehicleType": "SimpleFlight", "Cameras": {"front_center": cam}}},
    }
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    args = ["--scene", "blocks", "--renderer", "tiny", "--settings", str(path), "--clock-speed", "5"]
    if how == "flag":
        args += ["--camera-gimbal", "level"]
    with sim_server(*args) as port:
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        c.confirmConnection()
        c.enableApiControl(True)
        c.simSetVehiclePose(airsim.Pose(airsim.Vector3r(0, 0, -3), airsim.to_quaternion(0, 0, 0)), True)
        request = [airsim.ImageRequest("front_center", airsim.ImageType.Scene, False, False)]
        level = c.simGetImages(request)[0]
        f = run_paused(c, lambda: c.moveByRollPitchYawrateZAsync(0.1, 0.3, 0.4, -3.0, 2.0), 1.5)
        body = euler(c.simGetVehiclePose().orientation)
        assert body[1] == pytest.approx(-0.3, abs=0.02) and body[0] == pytest.approx(0.1, abs=0.02)
        stabilised = c.simGetImages(request)[0]
        roll, pitch, yaw = euler(stabilised.camera_orientation)
        assert abs(roll) < 1e-6 and abs(pitch) < 1e-6  # level while the body is pitched and rolled
        assert yaw == pytest.approx(body[2], abs=1e-6)  # heading with the body
        assert _sky_rows(stabilised) == pytest.approx(_sky_rows(level), abs=0.08)
        c.cancelLastTask()
        finish(c, f)


def test_settings_gimbal_and_mount(tmp_path) -> None:
    from common.camera import BUILTIN_CAMERAS
    from common.errors import ConfigError
    from common.pose import Pose
    from sim_bridge.settings import read_settings, settings_for

    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings_for([("Drone1", Pose(0, 0, 0, 0))], BUILTIN_CAMERAS["sim"])))
    assert read_settings(path).camera_mount.level  # what the project writes for AirSim: a level gimbal

    def mount(camera: dict):
        vehicle = {"VehicleType": "SimpleFlight", "Cameras": {"front_center": camera}}
        path.write_text(json.dumps({"SimMode": "Multirotor", "Vehicles": {"Drone1": vehicle}}))
        return read_settings(path).camera_mount

    assert mount({}) == BODY_FIXED  # AirSim's default: no gimbal
    m = mount({"Pitch": -20, "Gimbal": {"Stabilization": 0.5, "Pitch": 0}})
    assert m.pitch_deg == -20 and m.gimbal.stabilization == 0.5 and m.gimbal.pitch_deg == 0
    assert math.isnan(m.gimbal.roll_deg) and not m.level
    with pytest.raises(ConfigError, match=r"Gimbal\.Stabilization 2\.0 must be within 0-1"):
        mount({"Gimbal": {"Stabilization": 2}})
    with pytest.raises(ConfigError, match=r"Gimbal: unknown keys \['Pich'\]"):
        mount({"Gimbal": {"Stabilization": 1, "Pich": 0}})


def test_project_world_keeps_a_level_camera_and_workers_render_tilted_cameras() -> None:
    from sim_bridge.sim.world import World

    with (
        World("blocks", vehicles=1, renderer="tiny") as level,
        World("blocks", vehicles=1, renderer="tiny", camera_mount=BODY_FIXED) as local,
        World("blocks", vehicles=1, renderer="tiny", camera_mount=BODY_FIXED, render_workers=1) as pooled,
    ):
        for w in (level, local, pooled):
            w.pause(True)
            w.spawn("target", "car@red", Pose(12.0, 0.0, 0.0, 90.0))
            w.set_vehicle_pose("Drone1", Pose(0.0, 0.0, -3.0, 0.0))
            w.move_velocity("Drone1", np.array([4.0, 2.0, 0.0]), 3.0)
            w.advance(0.3)
        m = level.vehicle("Drone1").model
        assert m.attitude.pitch_rad < -0.2 and m.attitude.roll_rad > 0.05  # the body tilts...
        r = level.render("Drone1")
        assert r.camera_rotation_ned is None  # ...the project's camera stays level
        a, b = local.render("Drone1", depth=True), pooled.render("Drone1", depth=True)
        assert a.camera_rotation_ned is not None and a.camera_rotation_ned[2, 0] > 0.2  # looking down
        assert np.array_equal(a.image_bgr, b.image_bgr) and np.array_equal(a.seg, b.seg)
        assert not np.array_equal(a.image_bgr, r.image_bgr)
        ta, tb = local.target_truth("Drone1", "target"), pooled.target_truth("Drone1", "target")
        full = local.target_truth("Drone1", "target", local.render("Drone1"))
        assert ta.visible and (ta.pixel_count, ta.box2d_px) == (tb.pixel_count, tb.box2d_px)
        assert (full.pixel_count, full.box2d_px) == (ta.pixel_count, ta.box2d_px)  # crop = full frame


def test_rotated_ground_fill_matches_the_level_fill_for_a_level_camera() -> None:
    from common.camera import BUILTIN_CAMERAS
    from common.frames import yaw_rotation_ned
    from sim_bridge.sim.ground import GroundMap, fill_background
    from sim_bridge.sim.tilted import TiltedView, fill_background_rotated

    cam = BUILTIN_CAMERAS["sim"]
    h, w = cam.height_px, cam.width_px
    ground = GroundMap((90, 128, 77))
    out = []
    for rotated in (False, True):
        rgba = np.zeros((h, w, 4), np.uint8)
        seg = np.full((h, w), -1, np.int32)
        seg[:40, :40] = 7  # a body: left alone
        depth = np.zeros((h, w), np.float32)
        eye, yaw = (3.0, -2.0, -4.0), 30.0
        if rotated:
            fill_background_rotated(rgba, seg, depth, ground, TiltedView(eye, yaw_rotation_ned(yaw), cam))
        else:
            fill_background(
                rgba, seg, depth, ground, eye, math.radians(yaw), cam.fx_px, cam.fy_px, cam.cx_px, cam.cy_px
            )
        out.append((rgba, seg, depth))
    (a, sa, da), (b, sb, db) = out
    assert np.array_equal(sa, sb)
    assert np.allclose(da, db, rtol=1e-5)
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 3  # the haze in steps
