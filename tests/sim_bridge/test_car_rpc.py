"""settings.json's SimMode "Car" through the real airsim client's CarClient against a real
`dronecats sim --settings` process: the car drives, turns, brakes, collides and resets; getCarState /
getCarControls shapes; a multirotor-only call is rpclib's unknown-function error, as on AirSim's car
server; external_camera.py's camera calls on an external camera. Motion runs in lock-step
(simPause + simContinueForTime), so the figures are exact for the model (sim_bridge.sim.car)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from common.errors import ConfigError
from sim_bridge.settings import read_settings
from sim_bridge.settings_sections import read_sections
from tests.support.processes import sim_server

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

SPAWN_X = -20.0  # world NED: the blocks scene's south corridor (8 m wide, along x), facing north
SETTINGS = {
    "SettingsVersion": 1.2,
    "SimMode": "Car",
    "ExternalCameras": {"fixed1": {"X": 0, "Y": 0, "Z": -5, "Pitch": -90, "Roll": 0, "Yaw": 0}},
    "Vehicles": {"Car1": {"VehicleType": "PhysXCar", "X": SPAWN_X, "Y": 0, "Z": -2}},  # drops to the ground
}


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("car") / "settings.json"
    path.write_text(json.dumps(SETTINGS))
    with sim_server("--scene", "blocks", "--settings", str(path), "--paused") as p:
        yield p


@pytest.fixture
def car(port: int):
    client = airsim.CarClient(port=port, timeout_value=30)
    client.reset()
    client.enableApiControl(True)
    yield client
    client.reset()


def drive(client, seconds: float, **controls: float) -> object:
    c = airsim.CarControls()
    for key, value in controls.items():
        setattr(c, key, value)
    client.setCarControls(c)
    client.simContinueForTime(seconds)
    return client.getCarState()


def yaw_of(state) -> float:
    return airsim.to_eularian_angles(state.kinematics_estimated.orientation)[2]


def test_car_state_shapes_at_rest(car) -> None:
    assert car.listVehicles()[0] == "Car1"  # (test_sim_add_vehicle_adds_a_car adds another)
    s = car.getCarState()
    assert (s.speed, s.gear, s.handbrake) == (0.0, 0, False)
    assert s.maxrpm > s.rpm > 0  # idling
    assert s.timestamp >= 0  # the simulation clock (paused at the start)
    p = s.kinematics_estimated.position
    assert (p.x_val, p.y_val, p.z_val) == (0.0, 0.0, 2.0)  # spawn-relative: on the ground, 2 m down
    assert car.armDisarm(True) is True  # PhysXCarApi: arming is a no-op
    c = car.getCarControls()
    assert (c.throttle, c.steering, c.brake, c.is_manual_gear, c.manual_gear) == (0.0, 0.0, 0.0, False, 0)


def test_throttle_drives_forward_and_brake_stops(car) -> None:
    t0 = car.getCarState().timestamp
    s = drive(car, 2.0, throttle=0.5)
    assert s.timestamp - t0 == pytest.approx(2e9, abs=1e6)
    x = s.kinematics_estimated.position.x_val
    assert 3.0 < s.speed < 4.0 and s.gear >= 1 and s.rpm > 1000  # 2 m/s^2 less rolling and drag
    assert 3.0 < x < 4.0  # forward is north, the spawn's heading
    assert abs(s.kinematics_estimated.position.y_val) < 1e-9
    assert s.kinematics_estimated.position.z_val == 2.0  # on the ground
    assert s.kinematics_estimated.linear_velocity.x_val == pytest.approx(s.speed)
    assert car.getCarControls().throttle == 0.5
    s = drive(car, 2.0, brake=1.0)
    assert s.speed == 0.0 and s.gear == 0
    stopped_x = s.kinematics_estimated.position.x_val
    assert x + 0.5 < stopped_x < x + 1.2  # ~v^2 / (2 * 8 m/s^2)
    s = drive(car, 1.0, brake=1.0)
    assert s.kinematics_estimated.position.x_val == stopped_x  # it stays put, never backs up
    assert not car.simGetCollisionInfo().has_collided


def test_steering_right_turns_right(car) -> None:
    s = drive(car, 2.0, throttle=0.3, steering=0.5)
    yaw = yaw_of(s)
    assert 0.15 < yaw < 0.5  # NED yaw grows clockwise: a right turn (~0.28 rad on a 2.7 m wheelbase)
    assert s.kinematics_estimated.position.y_val > 0.2  # east of the start line
    assert s.kinematics_estimated.angular_velocity.z_val > 0
    car.reset()
    car.enableApiControl(True)
    s = drive(car, 2.0, throttle=0.3, steering=-0.5)
    assert yaw_of(s) == pytest.approx(-yaw)  # mirror image


def test_reverse_gear_and_negative_throttle_back_up(car) -> None:
    s = drive(car, 1.0, throttle=0.5, is_manual_gear=True, manual_gear=-1)
    assert s.speed < -1.0 and s.gear == -1
    assert s.kinematics_estimated.position.x_val < -0.5
    car.reset()
    car.enableApiControl(True)
    s = drive(car, 1.0, throttle=-0.5)  # automatic gears: negative throttle reverses (hello_car)
    assert s.speed < -1.0 and s.gear == -1


def test_controls_need_api_control_and_reset_clears_them(car) -> None:
    car.enableApiControl(False)
    s = drive(car, 1.0, throttle=1.0)
    assert s.speed == 0.0  # ignored: CarPawnSimApi drives by the API only under API control
    car.enableApiControl(True)
    drive(car, 1.0, throttle=1.0)
    car.reset()
    assert car.isApiControlEnabled()  # PhysXCarApi's reset keeps API control (SimpleFlight's drops it)
    assert car.getCarControls().throttle == 0.0
    s = car.getCarState()
    assert s.speed == 0.0 and s.kinematics_estimated.position.x_val == 0.0


def test_a_wall_stops_the_car_with_a_collision(car) -> None:
    car.simSetVehiclePose(
        airsim.Pose(airsim.Vector3r(0, 0, 0), airsim.to_quaternion(0, 0, math.pi / 2)), True
    )
    s = drive(car, 3.0, throttle=0.5)  # east, into the corridor's wall at y = 4 m
    info = car.simGetCollisionInfo()
    assert info.has_collided and info.object_name == "blocks"
    assert s.speed == 0.0
    assert 1.0 < s.kinematics_estimated.position.y_val < 4.0


def test_multirotor_calls_are_unknown_on_a_car_server(car) -> None:
    for method, args in (("takeoff", (10.0, "")), ("getMultirotorState", ("",))):
        with pytest.raises(Exception, match=f"could not find function '{method}'"):
            car.client.call(method, *args)
    assert car.simAddVehicle("Drone2", "SimpleFlight", airsim.Pose()) is False  # not a car
    with pytest.raises(Exception, match="manual_gear"):
        car.client.call("setCarControls", {"throttle": 0.5, "manual_gear": 9}, "")
    with pytest.raises(Exception, match="throttle"):
        car.client.call("setCarControls", {"throttle": "fast"}, "")


def test_sim_add_vehicle_adds_a_car(port: int) -> None:
    client = airsim.CarClient(port=port, timeout_value=30)
    pose = airsim.Pose(airsim.Vector3r(-30, 0, 0), airsim.Quaternionr(0, 0, 0, 0))  # runtime_car.py's
    assert client.simAddVehicle("Car_2", "Physxcar", pose) is True
    assert client.simAddVehicle("Car_2", "PhysXCar", pose) is False  # the name is in use
    client.enableApiControl(True, "Car_2")
    c = airsim.CarControls()
    c.throttle = 0.5
    client.setCarControls(c, "Car_2")
    client.simContinueForTime(1.0)
    s = client.getCarState("Car_2")
    assert s.speed > 1.0 and s.kinematics_estimated.position.x_val > 0.5
    assert client.getCarState("Car1").speed == 0.0  # the other car is not driven
    client.reset()


def test_external_camera_calls_of_external_camera_py(port: int) -> None:
    client = airsim.VehicleClient(port=port, timeout_value=30)
    info = client.simGetCameraInfo("fixed1", external=True)
    assert info.pose.position.z_val == pytest.approx(-5.0)
    kinds = [airsim.ImageType.Scene, airsim.ImageType.DepthPlanar, airsim.ImageType.DepthVis]
    kinds += [airsim.ImageType.Segmentation, airsim.ImageType.SurfaceNormals]
    requests = [airsim.ImageRequest("fixed1", k) for k in kinds]
    responses = client.simGetImages(requests, external=True)
    assert [r.image_type for r in responses] == kinds
    assert all(len(r.image_data_uint8) > 0 for r in responses)
    client.simSetCameraFov("fixed1", 120, external=True)
    assert client.simGetCameraInfo("fixed1", external=True).fov == pytest.approx(120.0)
    pose = airsim.Pose(airsim.Vector3r(-10, -5, -5), airsim.to_quaternion(0.1, 0, 0.1))
    client.simSetCameraPose("fixed1", pose, external=True)
    assert client.simGetCameraInfo("fixed1", external=True).pose.position.x_val == pytest.approx(-10.0)
    assert client.simGetDistortionParams("fixed1", external=True) == [0.0] * 5  # a pinhole
    scene = [airsim.ImageRequest("fixed1", airsim.ImageType.Scene, False, False)]
    pinhole = client.simGetImages(scene, external=True)[0]
    params = {"K1": 0.1, "K2": 0.01, "K3": 0.0, "P1": 0.0, "P2": 0.0}  # external_camera.py's
    client.simSetDistortionParams("fixed1", params, external=True)
    assert client.simGetDistortionParams("fixed1", external=True) == pytest.approx(list(params.values()))
    barrel = client.simGetImages(scene, external=True)[0]
    a = np.frombuffer(pinhole.image_data_uint8, np.uint8).reshape(pinhole.height, pinhole.width, 3)
    b = np.frombuffer(barrel.image_data_uint8, np.uint8).reshape(barrel.height, barrel.width, 3)
    assert a.shape == b.shape and a[0, 0].any() and not b[0, 0].any()  # the corners look past the render
    assert np.array_equal(a[72, 128], b[72, 128])  # the centre does not move
    client.simSetDistortionParams("fixed1", dict.fromkeys(params, 0.0), external=True)
    again = client.simGetImages(scene, external=True)[0]
    assert again.image_data_uint8 == pinhole.image_data_uint8


def test_settings_car_mode(tmp_path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"SettingsVersion": 1.2, "SimMode": "Car"}))
    s = read_settings(path)
    assert s.sim_mode == "Car" and [name for name, _ in s.vehicles] == ["PhysXCar"]  # AirSim's default
    sections = read_sections(path, "PhysXCar")
    assert sections["PhysXCar"].sensors == {"gps": "gps"}  # a car's one default sensor
    path.write_text(json.dumps({"SimMode": "Car", "Vehicles": {"Drone1": {"VehicleType": "SimpleFlight"}}}))
    with pytest.raises(ConfigError, match="does not belong in SimMode Car"):
        read_settings(path)
    path.write_text(json.dumps({"SimMode": "Car", "Vehicles": {"Rover": {}}}))
    assert read_settings(path).vehicles[0][0] == "Rover"  # VehicleType defaults to PhysXCar
