"""Stock AirSim methods beyond the project's own calls, through the real airsim client against a real
`dronecats sim` process: shapes, frames (poses relative to the vehicle's spawn) and AirSim's errors.
Also the server's log of refused calls and the example-script runner that reads it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support import ROOT
from tests.support.processes import sim_server

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

CLOCK_SPEED = 4.0
SPAWN = (-10.0, 2.0, 0.0)  # world NED (settings.json X, Y, Z): in the blocks scene's south corridor


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    settings = tmp_path_factory.mktemp("settings") / "settings.json"
    x, y, z = SPAWN
    settings.write_text(
        json.dumps(
            {
                "SettingsVersion": 1.2,
                "SimMode": "Multirotor",
                "ClockSpeed": CLOCK_SPEED,
                "Vehicles": {"Drone1": {"VehicleType": "SimpleFlight", "X": x, "Y": y, "Z": z}},
            }
        )
    )
    # ideal sensors: these tests compare readings with the state (noise: test_sensor_noise.py)
    with sim_server("--scene", "blocks", "--settings", str(settings), "--sensor-noise", "off") as port:
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        c.confirmConnection()
        c.enableApiControl(True)
        c.armDisarm(True)
        c.takeoffAsync().join()
        yield c


def local_xyz(c) -> np.ndarray:
    p = c.simGetVehiclePose().position
    return np.array([p.x_val, p.y_val, p.z_val])


def settle(seconds_sim: float = 1.0) -> None:
    time.sleep(seconds_sim / CLOCK_SPEED)


def test_move_by_velocity_z_holds_local_height(client) -> None:
    start = local_xyz(client)
    assert client.moveByVelocityZAsync(2.0, 0.0, -8.0, 3.0).get() is True
    moved = local_xyz(client) - start
    # z is the vehicle's local NED height: -8 m, above the 6 m blocks
    assert moved[2] + start[2] == pytest.approx(-8.0, abs=0.2)
    # 2 m/s for 3 s, less the acceleration ramp (shared with the climb under the 4 m/s^2 limit)
    assert 4.8 < moved[0] < 6.0
    assert abs(moved[1]) < 0.1
    assert client.moveByVelocityZAsync(0.0, 1.0, -8.0, 1.0).get() is True
    world = client.simGetObjectPose("Drone1").position
    here = local_xyz(client)
    assert (world.x_val - here[0], world.y_val - here[1]) == pytest.approx(SPAWN[:2], abs=0.05)


def test_move_on_path_passes_waypoints_and_stops_at_the_last(client) -> None:
    here = local_xyz(client)
    path = [
        airsim.Vector3r(here[0] + 6.0, here[1], -8.0),
        airsim.Vector3r(here[0] + 6.0, here[1] + 6.0, -8.0),
    ]
    seen = []
    f = client.moveOnPathAsync(path, 3.0, 60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen.append(local_xyz(client))
        speed = client.getMultirotorState().kinematics_estimated.linear_velocity.get_length()
        if speed < 0.05 and len(seen) > 10:
            break
        time.sleep(0.05)
    assert f.get() is True
    end = local_xyz(client)
    assert end == pytest.approx([here[0] + 6.0, here[1] + 6.0, -8.0], abs=0.15)
    corner = np.array([here[0] + 6.0, here[1], -8.0])
    assert min(np.linalg.norm(p - corner) for p in seen) < 1.5  # went by the first waypoint
    # AirLib: "moveOnPath terminated because path has no points", returning True
    assert client.moveOnPathAsync([], 3.0).get() is True


def test_imu_barometer_gps_from_the_state(client) -> None:
    client.hoverAsync().join()
    settle(1.0)
    imu = client.getImuData()
    pose = client.simGetVehiclePose()
    assert imu.linear_acceleration.z_val == pytest.approx(-9.80665, abs=0.05)  # specific force at rest
    assert abs(imu.linear_acceleration.x_val) < 0.05 and abs(imu.linear_acceleration.y_val) < 0.05
    q = imu.orientation
    assert (q.w_val, q.z_val) == pytest.approx((pose.orientation.w_val, pose.orientation.z_val), abs=1e-3)
    assert imu.time_stamp > 0
    home = client.getHomeGeoPoint()
    baro = client.getBarometerData()
    true_altitude = home.altitude - pose.position.z_val
    # the standard atmosphere (the usual barometric formula) at that altitude
    assert baro.pressure == pytest.approx(101325.0 * (1 - 2.25577e-5 * true_altitude) ** 5.25588, rel=1e-4)
    # the altitude is BarometerSimple's altimeter formula of that pressure: AirSim's, ~5 cm low here
    altimeter = (1 - (baro.pressure / 101325.0) ** 0.190284) * 145366.45 * 0.3048
    assert baro.altitude == pytest.approx(altimeter, abs=1e-6)
    assert baro.altitude == pytest.approx(true_altitude, abs=0.1)
    assert baro.qnh == pytest.approx(1013.25)
    gps = client.getGpsData()
    assert gps.is_valid is True and gps.gnss.fix_type == 3
    state_geo = client.getMultirotorState().gps_location
    assert gps.gnss.geo_point.latitude == pytest.approx(state_geo.latitude, abs=1e-6)
    assert gps.gnss.geo_point.altitude == pytest.approx(true_altitude, abs=1e-3)
    # the spawn is 10 m south of the world origin: the vehicle's local x plus 10 m, in latitude
    north_m = math.radians(gps.gnss.geo_point.latitude - 47.641468) * 6378137.0
    assert north_m == pytest.approx(SPAWN[0] + pose.position.x_val, abs=0.1)


def test_magnetometer_rotates_with_the_body(client) -> None:
    client.rotateToYawAsync(0.0, 20, 1).join()
    settle(0.5)
    north = client.getMagnetometerData().magnetic_field_body
    assert client.getMagnetometerData().magnetic_field_covariance == []
    client.rotateToYawAsync(90.0, 20, 1).join()
    settle(0.5)
    east = client.getMagnetometerData().magnetic_field_body
    assert 0.2 < north.get_length() < 0.7  # gauss, the dipole model at Seattle's latitude
    assert north.z_val > 0.3  # northern hemisphere: pointing down
    # facing east, the body x axis is the world's east: the field's east part, its north part to the left
    assert east.x_val == pytest.approx(north.y_val, abs=0.01)
    assert east.y_val == pytest.approx(-north.x_val, abs=0.01)
    assert east.z_val == pytest.approx(north.z_val, abs=1e-6)


def test_unknown_sensors_and_distance_sensor_answer_airsims_errors(client) -> None:
    with pytest.raises(Exception, match="No IMU with name Imu2 exist on vehicle"):
        client.getImuData("Imu2")
    with pytest.raises(Exception, match="No distance sensor with name  exist on vehicle"):
        client.getDistanceSensorData()
    assert client.getBarometerData("barometer").altitude > 0  # AirSim's default sensor names


def test_world_extents_hold_the_home_point(client) -> None:
    lo, hi = client.simGetWorldExtents()
    home = client.getHomeGeoPoint()
    assert lo.latitude < home.latitude < hi.latitude
    assert lo.longitude < home.longitude < hi.longitude
    assert lo.altitude <= hi.altitude


def test_runner_passes_a_clean_script_and_names_a_refused_call(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text(
        "import setup_path\nimport airsim\nimport numpy as np\n"
        "c = airsim.MultirotorClient()\nc.confirmConnection()\n"
        "airsim.wait_key('Press any key')\nassert np.fromstring(b'ab', dtype=np.uint8).tolist() == [97, 98]\n"
        "c.enableApiControl(True)\nprint(c.getImuData().linear_acceleration)\n"
    )
    (tmp_path / "refused.py").write_text(
        "import setup_path\nimport airsim\nc = airsim.MultirotorClient()\n"
        "c.enableApiControl(True)\nc.client.call('noSuchMethod', 1)\n"
    )
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "airsim_examples.py"), str(tmp_path), "--timeout-s", "30"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {
        line.split()[0]: line for line in out.stdout.splitlines() if line.endswith(".py") or ".py " in line
    }
    assert " pass " in rows["clean.py"], out.stdout
    assert (
        " FAIL " in rows["refused.py"] and "noSuchMethod: rpclib: server could not find" in rows["refused.py"]
    )
    assert "1 of 2 pass" in out.stdout


def test_wind_is_a_force_the_controller_rejects_up_to_its_limit(client) -> None:
    client.moveToZAsync(-8.0, 2.0).join()
    client.hoverAsync().join()
    settle(1.0)
    start = local_xyz(client)
    client.simSetWind(airsim.Vector3r(10.0, 0.0, 0.0))  # ~0.7 m/s^2 of drag: held
    settle(2.0)
    assert np.linalg.norm(local_xyz(client) - start) < 0.3
    client.simSetWind(airsim.Vector3r(0.0, 40.0, 0.0))  # ~11 m/s^2, beyond the 4 m/s^2 the controller has
    settle(2.0)
    blown = local_xyz(client) - start
    client.simSetWind(airsim.Vector3r(0.0, 0.0, 0.0))
    # downwind, in the world frame (north: what the 10 m/s wind's push left, decaying meanwhile)
    assert blown[1] > 2.0 and abs(blown[0]) < 1.0
    effects = client.client.call("dcGetWorldEffects")
    assert effects["wind"] == {"x_val": 0.0, "y_val": 0.0, "z_val": 0.0}
    client.moveToPositionAsync(*start, 3.0).join()


def test_weather_and_trace_line_are_stored_and_checked(client) -> None:
    # what the weather draws: tests/sim_bridge/test_weather_wind.py
    client.simEnableWeather(True)
    client.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.25)
    client.simSetTraceLine([1.0, 0.0, 0.0, 1.0], 5.0)
    effects = client.client.call("dcGetWorldEffects")
    assert effects["weather_enabled"] is True and effects["weather"] == {"Fog": 0.25}
    client.simSetWeatherParameter(airsim.WeatherParameter.Fog, 0.0)
    client.simEnableWeather(False)
    assert effects["trace_lines"] == {"Drone1": {"color_rgba": [1.0, 0.0, 0.0, 1.0], "thickness": 5.0}}
    with pytest.raises(Exception, match="weather parameter 9"):
        client.simSetWeatherParameter(9, 0.5)
    with pytest.raises(Exception, match="color_rgba must be 4 numbers"):
        client.simSetTraceLine([1.0, 0.0], 5.0)


def test_computer_vision_mode_cameras_and_depth_vis(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"SettingsVersion": 1.2, "SimMode": "ComputerVision"}))
    with sim_server("--scene", "blocks", "--settings", str(settings), "--camera", "sim") as port:
        c = airsim.VehicleClient(ip="127.0.0.1", port=port, timeout_value=60)
        assert c.listVehicles() == ["ComputerVision"]  # AirSim's default vehicle of the mode
        yaw = 30.0
        c.simSetVehiclePose(
            airsim.Pose(airsim.Vector3r(-12.0, 1.0, -3.0), airsim.to_quaternion(0, 0, math.radians(yaw))),
            True,
        )
        time.sleep(0.5)
        p = c.simGetVehiclePose().position
        assert (p.x_val, p.y_val, p.z_val) == pytest.approx((-12.0, 1.0, -3.0), abs=1e-6)  # nothing moves it
        reqs = [
            airsim.ImageRequest("0", airsim.ImageType.DepthPlanar, True),
            airsim.ImageRequest("0", airsim.ImageType.DepthVis, False, False),
            airsim.ImageRequest("1", airsim.ImageType.Scene, False, False),
            airsim.ImageRequest("back_center", airsim.ImageType.Scene, False, False),
        ]
        planar, vis, right, back = c.simGetImages(reqs)
        depth = np.array(planar.image_data_float, np.float32).reshape(planar.height, planar.width)
        grey = np.frombuffer(vis.image_data_uint8, np.uint8).reshape(vis.height, vis.width, 3)[..., 0]
        expected = np.clip(depth * 255.0 / 100.0, 0, 255).astype(np.uint8)
        assert np.abs(grey.astype(int) - expected.astype(int)).max() <= 1  # black 0 m, white 100 m
        front = np.array([planar.camera_position.x_val, planar.camera_position.y_val])
        side = np.array([right.camera_position.x_val, right.camera_position.y_val])
        right_axis = np.array([-math.sin(math.radians(yaw)), math.cos(math.radians(yaw))])
        assert side - front == pytest.approx(0.25 * right_axis, abs=1e-6)  # front_right: 0.25 m right
        back_yaw = math.degrees(airsim.to_eularian_angles(back.camera_orientation)[2])
        assert (back_yaw - yaw) % 360.0 == pytest.approx(180.0, abs=1e-3)
        assert len(right.image_data_uint8) == right.width * right.height * 3
        info = c.simGetCameraInfo("front_right")
        assert info.pose.position.x_val == pytest.approx(right.camera_position.x_val, abs=1e-6)
        down = c.simGetImages([airsim.ImageRequest("3", airsim.ImageType.Scene)])[0]  # bottom_center
        pitch, _, _ = airsim.to_eularian_angles(down.camera_orientation)
        assert math.degrees(pitch) == pytest.approx(-90.0, abs=1e-3)
        with pytest.raises(Exception, match="image_type 10 is not rendered"):
            c.simGetImages([airsim.ImageRequest("0", 10)])  # airsim 1.8's types end at 9


def test_add_vehicle_at_a_world_pose(client) -> None:
    pose = airsim.Pose(airsim.Vector3r(-14.0, 2.0, 0.0), airsim.to_quaternion(0, 0, 0))
    assert client.simAddVehicle("Drone2", "simpleflight", pose) is True
    assert client.listVehicles() == ["Drone1", "Drone2"]
    world = client.simGetObjectPose("Drone2").position
    assert (world.x_val, world.y_val, world.z_val) == pytest.approx((-14.0, 2.0, 0.0), abs=1e-6)
    local = client.simGetVehiclePose("Drone2").position  # its own spawn is its origin
    assert (local.x_val, local.y_val, local.z_val) == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)
    client.enableApiControl(True, "Drone2")
    assert client.takeoffAsync(vehicle_name="Drone2").get() is True
    assert client.simAddVehicle("Drone2", "simpleflight", pose) is False  # the name is taken
    assert client.simAddVehicle("Car1", "PhysXCar", pose) is False  # not a multirotor


def test_camera_fov_environment_and_no_lidar(client) -> None:
    before = client.simGetCameraInfo("0")
    image = client.simGetImages([airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)])[0]
    client.simSetCameraFov("front_center", 60.0)
    try:
        after = client.simGetCameraInfo("0")
        assert after.fov == pytest.approx(60.0, abs=1e-3)
        narrow = client.simGetImages([airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)])[0]
        assert (narrow.width, narrow.height) == (image.width, image.height)  # the resolution is kept
        # a narrower lens: larger focal length, so a larger x scale in the projection matrix
        ratio = math.tan(math.radians(before.fov) / 2) / math.tan(math.radians(30.0))
        assert after.proj_mat.matrix[0][0] == pytest.approx(before.proj_mat.matrix[0][0] * ratio, rel=1e-3)
        with pytest.raises(Exception, match="shares the forward camera's lens"):
            client.simSetCameraFov("1", 60.0)
    finally:
        client.simSetCameraFov("0", before.fov)
    env = client.simGetGroundTruthEnvironment()
    pose = client.simGetVehiclePose()
    assert env.position.z_val == pytest.approx(pose.position.z_val, abs=0.05)  # local, like the pose
    assert env.gravity.z_val == pytest.approx(9.80665)
    baro = client.getBarometerData()
    assert env.air_pressure == pytest.approx(baro.pressure, rel=1e-3)
    assert env.temperature == pytest.approx(288.15 - 6.5 * env.geo_point.altitude / 1000.0, abs=0.01)
    assert env.air_density == pytest.approx(1.21, abs=0.02)  # ~1.225 at sea level, less at 130 m
    with pytest.raises(Exception, match="No lidar with name  exist on vehicle"):
        client.getLidarData()
