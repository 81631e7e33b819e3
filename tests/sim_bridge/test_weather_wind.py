"""Wind, weather and the Infrared / OpticalFlow image types through the real airsim client against a
real `dronecats sim` process: wind judged by the vehicle's pose and kinematics in the simulator,
weather by the pixels of the Scene image with both renderers."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from common.frames import rotation_from_quat
from sim_bridge.rpc.airsim_api import segmentation_colour
from sim_bridge.rpc.image_types import default_object_id
from sim_bridge.sim.wind import VELOCITY_GAIN_XY_1_S, drag_accel_ned
from tests.support.processes import sim_server

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

CV_POSE = (-12.0, 1.0, -3.0, 30.0)  # blocks: near blocks and the far end of the corridor in view


def _settings(tmp: Path, data: dict) -> str:
    path = tmp / "settings.json"
    path.write_text(json.dumps({"SettingsVersion": 1.2, **data}))
    return str(path)


# ------------------------------------------------------------------ wind
@pytest.fixture(scope="module")
def windy(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    vehicles = {"Drone1": {"VehicleType": "SimpleFlight", "X": -10.0, "Y": 2.0, "Z": 0.0}}
    settings = _settings(
        tmp_path_factory.mktemp("wind"),
        {
            "SimMode": "Multirotor",
            "ClockSpeed": 10.0,
            "Wind": {"X": 0.0, "Y": -3.0, "Z": 0.0},
            "Vehicles": vehicles,
        },
    )
    with sim_server("--scene", "blocks", "--settings", settings, "--renderer", "tiny") as port:
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        c.confirmConnection()
        c.enableApiControl(True)
        c.armDisarm(True)
        c.takeoffAsync().join()
        c.moveToZAsync(-8.0, 2.0).join()  # above the 6 m blocks
        c.hoverAsync().join()
        c.simPause(True)
        yield c


def _pose(c) -> tuple[np.ndarray, float, float]:
    """(position, pitch deg, roll deg) of the vehicle in the simulator."""
    p = c.simGetVehiclePose()
    pitch, roll, _ = airsim.to_eularian_angles(p.orientation)
    xyz = np.array([p.position.x_val, p.position.y_val, p.position.z_val])
    return xyz, math.degrees(pitch), math.degrees(roll)


def _velocity(c) -> np.ndarray:
    v = c.getMultirotorState().kinematics_estimated.linear_velocity
    return np.array([v.x_val, v.y_val, v.z_val])


def test_settings_wind_tilts_a_hovering_drone_into_it(windy) -> None:
    assert windy.client.call("dcGetWorldEffects")["wind"] == {"x_val": 0.0, "y_val": -3.0, "z_val": 0.0}
    windy.simContinueForTime(3.0)
    _, pitch, roll = _pose(windy)
    # the wind blows west (-y): the thrust leans east, right side down; the drag of 3 m/s on the
    # quadrotor's side (AirLib's faces) is about 0.064 m/s^2, a tilt of about 0.38 deg
    assert roll == pytest.approx(math.degrees(math.atan(0.0643 / 9.80665)), abs=0.1)
    assert abs(pitch) < 0.05


def test_a_hover_in_5_m_s_drifts_downwind_then_holds(windy) -> None:
    windy.simSetWind(airsim.Vector3r(5.0, 0.0, 0.0))
    start, _, _ = _pose(windy)
    windy.simContinueForTime(1.0)
    moved, pitch, _ = _pose(windy)
    assert moved[0] - start[0] > 0.01  # downwind, north
    assert pitch > 0.5  # nose up: the thrust pushes back south, into the wind
    windy.simContinueForTime(10.0)
    held, pitch, roll = _pose(windy)
    # the hold pulls back what the velocity loop lets through: a steady offset of centimetres
    assert 0.02 < held[0] - start[0] < 0.15
    assert np.linalg.norm(_velocity(windy)) < 0.01
    drag = drag_accel_ned(np.array([-5.0, 0.0, 0.0]), np.eye(3))[0]  # the wind's push north
    assert pitch == pytest.approx(math.degrees(math.atan(drag / 9.80665)), abs=0.1)
    assert abs(roll) < 0.05  # the west wind is gone


def test_a_velocity_command_across_the_wind_keeps_simpleflights_error(windy) -> None:
    future = windy.moveByVelocityAsync(0.0, 2.0, 0.0, 6.0)
    windy.simContinueForTime(5.0)
    v = _velocity(windy)
    # SimpleFlight's P-only velocity loop: the error is the wind's force over its gain
    level, v_cmd = np.eye(3), np.array([0.0, 2.0, 0.0])
    push = drag_accel_ned(v_cmd - np.array([5.0, 0.0, 0.0]), level) - drag_accel_ned(v_cmd, level)
    expected = push[0]
    assert v[0] == pytest.approx(expected / VELOCITY_GAIN_XY_1_S, rel=0.15)
    assert v[1] == pytest.approx(2.0, abs=0.01)
    windy.simSetWind(airsim.Vector3r(0.0, 0.0, 0.0))
    windy.simContinueForTime(1.5)
    assert future.get() is True
    windy.simContinueForTime(20.0)
    assert np.linalg.norm(_velocity(windy)) < 1e-3  # still air again: the wind's term decays away


def test_wind_must_be_finite_and_settings_wind_checked(windy, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="wind must be finite"):
        windy.simSetWind(airsim.Vector3r(math.nan, 0.0, 0.0))
    from common.errors import ConfigError
    from sim_bridge.settings import read_settings

    with pytest.raises(ConfigError, match="Wind: unknown keys"):
        read_settings(_settings(tmp_path, {"Wind": {"X": 1.0, "North": 2.0}}))
    assert read_settings(_settings(tmp_path, {"Wind": {"Z": 1.5}})).wind_ned_m_s == (0.0, 0.0, 1.5)


# ------------------------------------------------------------------ weather and image types
@pytest.fixture(scope="module", params=["gl", "tiny"])
def cv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    settings = _settings(tmp_path_factory.mktemp("cv"), {"SimMode": "ComputerVision"})
    with sim_server("--scene", "blocks", "--settings", settings, "--renderer", request.param) as port:
        c = airsim.VehicleClient(ip="127.0.0.1", port=port, timeout_value=60)
        _place(c, CV_POSE[3])
        yield c


def _place(c, yaw_deg: float) -> None:
    x, y, z, _ = CV_POSE
    turn = airsim.to_quaternion(0, 0, math.radians(yaw_deg))
    c.simSetVehiclePose(airsim.Pose(airsim.Vector3r(x, y, z), turn), True)


def _scene(c) -> np.ndarray:
    r = c.simGetImages([airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)])[0]
    return np.frombuffer(r.image_data_uint8, np.uint8).reshape(r.height, r.width, 3).astype(np.int16)


def _depth(c) -> np.ndarray:
    r = c.simGetImages([airsim.ImageRequest("0", airsim.ImageType.DepthPerspective, True)])[0]
    return np.array(r.image_data_float, np.float32).reshape(r.height, r.width)


def test_weather_needs_enabling_and_values_0_to_1(cv) -> None:
    cv.simEnableWeather(False)
    with pytest.raises(Exception, match=r"the weather is off; call simEnableWeather\(True\) first"):
        cv.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.5)
    cv.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.0)  # what it is already: honoured
    cv.simEnableWeather(True)
    with pytest.raises(Exception, match=r"AirSim's weather values are 0\.\.1"):
        cv.simSetWeatherParameter(airsim.WeatherParameter.Rain, 1.5)
    with pytest.raises(Exception, match="weather parameter 9"):
        cv.simSetWeatherParameter(9, 0.5)
    cv.simSetWeatherParameter(airsim.WeatherParameter.Enabled, 0.0)  # the switch, as a parameter
    assert cv.client.call("dcGetWorldEffects")["weather_enabled"] is False


def test_fog_changes_far_pixels_more_than_near_ones_and_0_changes_nothing(cv) -> None:
    cv.simEnableWeather(True)
    clear, depth = _scene(cv), _depth(cv)
    near, far = depth < 12.0, (depth > 40.0) & (depth < 250.0)
    assert near.mean() > 0.05 and far.mean() > 0.01  # the view has both
    cv.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.2)  # visibility 100 m
    foggy = _scene(cv)
    change = np.abs(foggy - clear).sum(axis=2)
    assert change[far].mean() > 2.5 * change[near].mean() > 0
    bins = [change[(depth >= a) & (depth < b)].mean() for a, b in ((0, 8), (8, 16), (16, 32), (32, 250))]
    assert bins == sorted(bins)  # the farther, the more
    fog = np.array([205, 205, 200])
    assert np.abs(foggy[far] - fog).mean() < np.abs(clear[far] - fog).mean() / 2  # towards the fog colour
    cv.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.0)
    assert np.array_equal(_scene(cv), clear)  # no weather: the frame is not touched
    cv.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.2)
    cv.simEnableWeather(False)
    assert np.array_equal(_scene(cv), clear)
    cv.simEnableWeather(True)
    cv.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.0)


def test_rain_darkens_and_draws_streaks_every_parameter_shows(cv) -> None:
    cv.simEnableWeather(True)
    clear = _scene(cv)
    cv.simSetWeatherParameter(airsim.WeatherParameter.Rain, 1.0)
    rainy = _scene(cv)
    assert rainy.mean() < 0.85 * clear.mean()
    brighter = (rainy - clear).sum(axis=2) > 30  # the streaks, over dark surfaces
    assert brighter.sum() > 200
    cv.simSetWeatherParameter(airsim.WeatherParameter.Rain, 0.0)
    for param in ("Roadwetness", "Snow", "RoadSnow", "MapleLeaf", "RoadLeaf", "Dust"):
        cv.simSetWeatherParameter(getattr(airsim.WeatherParameter, param), 1.0)
        changed = np.abs(_scene(cv) - clear).sum(axis=2) > 20
        assert changed.mean() > 0.004, param  # leaves fall sparsest: about 1% of the frame
        cv.simSetWeatherParameter(getattr(airsim.WeatherParameter, param), 0.0)
    assert np.array_equal(_scene(cv), clear)


def test_infrared_and_optical_flow_shapes_and_dtypes(cv) -> None:
    T = airsim.ImageType
    ir, flow, vis, flow_png = cv.simGetImages(
        [
            airsim.ImageRequest("0", T.Infrared, False, False),
            airsim.ImageRequest("0", T.OpticalFlow, True),
            airsim.ImageRequest("0", T.OpticalFlowVis, False, False),
            airsim.ImageRequest("0", T.OpticalFlow, False, True),
        ]
    )
    h, w = ir.height, ir.width
    grey = np.frombuffer(ir.image_data_uint8, np.uint8).reshape(h, w, 3)
    assert (grey[..., 0] == grey[..., 1]).all() and (grey[..., 1] == grey[..., 2]).all()
    assert len(flow.image_data_float) == h * w * 2 and flow.image_type == T.OpticalFlow
    assert len(vis.image_data_uint8) == h * w * 3
    assert flow_png.image_data_uint8[:8] == b"\x89PNG\r\n\x1a\n"


def test_infrared_is_the_object_id_as_grey(cv) -> None:
    assert cv.simSetSegmentationObjectID(".*", 42, True)
    seg, ir, as_float = cv.simGetImages(
        [
            airsim.ImageRequest("0", airsim.ImageType.Segmentation, False, False),
            airsim.ImageRequest("0", airsim.ImageType.Infrared, False, False),
            airsim.ImageRequest("0", airsim.ImageType.Infrared, True),
        ]
    )
    seg_img = np.frombuffer(seg.image_data_uint8, np.uint8).reshape(seg.height, seg.width, 3)
    grey = np.frombuffer(ir.image_data_uint8, np.uint8).reshape(ir.height, ir.width, 3)[..., 0]
    objects = (seg_img == segmentation_colour(42)).all(axis=2)
    assert objects.sum() > 1000 and (grey[objects] == 42).all()
    # the rest is sky (0) or ground (AirSim's starting ID of the name "ground")
    assert set(np.unique(grey[~objects]).tolist()) <= {0, default_object_id("ground")}
    values = np.array(as_float.image_data_float).reshape(ir.height, ir.width)
    assert np.allclose(values, grey / 255.0, atol=1e-6)


def _camera(r) -> tuple[np.ndarray, np.ndarray]:
    """An image response's camera position and rotation (FRD -> NED)."""
    p, q = r.camera_position, r.camera_orientation
    return np.array([p.x_val, p.y_val, p.z_val]), rotation_from_quat(q.w_val, q.x_val, q.y_val, q.z_val)


def test_optical_flow_of_a_camera_yawing_right_points_left(cv) -> None:
    T = airsim.ImageType
    _place(cv, CV_POSE[3])
    then = cv.simGetImages([airsim.ImageRequest("0", T.Scene)])[0]  # the frame the flow is from
    _place(cv, CV_POSE[3] + 5.0)  # turn right
    requests = [airsim.ImageRequest("0", T.OpticalFlow, True), airsim.ImageRequest("0", T.DepthPlanar, True)]
    r, planar = cv.simGetImages(requests)
    flow = np.array(r.image_data_float, np.float32).reshape(r.height, r.width, 2)
    fx = cx = r.width / 2  # the 90 deg camera, principal point at the centre
    rows, cols = slice(r.height // 2 - 5, r.height // 2 + 5), slice(r.width // 2 - 5, r.width // 2 + 5)
    assert np.median(flow[rows, cols, 0]) < -0.8 * fx * math.tan(math.radians(5.0))  # the scene moves left
    assert abs(np.median(flow[rows, cols, 1])) < 0.5
    # exactly: the centre pixel's surface point seen from the previous camera (which sat 0.5 m ahead
    # of the turning body's centre, so near things add a little parallax)
    depth = float(np.array(planar.image_data_float).reshape(r.height, r.width)[r.height // 2, r.width // 2])
    (eye_now, rot_now), (eye_then, rot_then) = _camera(r), _camera(then)
    q = rot_then.T @ (eye_now + rot_now @ np.array([depth, 0.0, 0.0]) - eye_then)
    expected = (r.width // 2 - cx) - fx * q[1] / q[0]
    assert flow[r.height // 2, r.width // 2, 0] == pytest.approx(expected, abs=0.05)
    again = cv.simGetImages([airsim.ImageRequest("0", T.OpticalFlow, True)])[0]
    assert np.abs(np.array(again.image_data_float)).max() < 1e-3  # still: no flow
    _place(cv, CV_POSE[3])


def test_render_workers_draw_the_same_weather() -> None:
    from common.pose import Pose
    from sim_bridge.sim.weather import Weather
    from sim_bridge.sim.world import World

    with World("blocks", vehicles=1) as local, World("blocks", vehicles=1, render_workers=1) as pooled:
        frames = []
        for w in (local, pooled):
            w.pause(True)
            w.set_vehicle_pose("Drone1", Pose(-12.0, 1.0, -3.0, 30.0))
            w.cameras.weather = Weather(fog=0.3, rain=0.5)
            frames.append(w.render("Drone1"))
        a, b = frames
        assert np.array_equal(a.image_bgr, b.image_bgr)
        assert a.depth_planar_m is None and b.depth_planar_m is None  # read for the fog, not returned
        local.cameras.weather = None
        assert not np.array_equal(local.render("Drone1").image_bgr, a.image_bgr)
