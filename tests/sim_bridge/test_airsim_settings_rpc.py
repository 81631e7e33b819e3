"""What settings.json gives a vehicle beyond its pose, through the real airsim and cosysairsim clients
against a real `dronecats sim --settings` process: lidars (Sensors), cameras (Cameras, the standard
five, simSetCameraPose / simSetCameraFov), the depth-derived image types, float pixels of any type,
and moveByRC / moveByManual. Shapes, frames (spawn-relative) and AirSim's errors."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from tests.support.processes import sim_server

airsim = pytest.importorskip("airsim")
cosys = pytest.importorskip("cosysairsim")
pytest.importorskip("pybullet")
cv2 = pytest.importorskip("cv2")

SPAWN = (-10.0, 2.0, 0.0)  # world NED: the blocks scene's south corridor
HEIGHT_M = 10.0
DOWN_LIDAR = {  # one channel straight down, 100 points per 10 Hz update, in its own frame
    "SensorType": 6,
    "Enabled": True,
    "NumberOfChannels": 1,
    "PointsPerSecond": 1000,
    "RotationsPerSecond": 10,
    "VerticalFOVUpper": -90,
    "VerticalFOVLower": -90,
    "Z": -1,
    "DataFrame": "SensorLocalFrame",
}
SETTINGS = {
    "SettingsVersion": 1.2,
    "SimMode": "Multirotor",
    "ExternalCameras": {"fixed1": {"X": -10, "Y": 2, "Z": -8, "Pitch": -90, "Roll": 0, "Yaw": 0}},
    "Vehicles": {
        "Drone1": {
            "VehicleType": "SimpleFlight",
            "X": SPAWN[0],
            "Y": SPAWN[1],
            "Z": SPAWN[2],
            "Sensors": {
                "A_down": DOWN_LIDAR,
                "B_default": {"SensorType": 6, "Enabled": True},  # LidarSimpleParams' VLP-16
                "C_off": {"SensorType": 6, "Enabled": False},
                "Range": {"SensorType": 5, "Enabled": True, "Pitch": -90, "MaxDistance": 30},  # down
                "MyImu": {"SensorType": 2, "Enabled": True},  # replaces the default "imu"
            },
            "Cameras": {
                "small": {
                    "CaptureSettings": [{"ImageType": 0, "Width": 160, "Height": 90, "FOV_Degrees": 60}]
                },
                "looking_down": {"Pitch": -90, "X": 0, "Y": 0, "Z": 0.1},
            },
        }
    },
}


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("settings") / "settings.json"
    path.write_text(json.dumps(SETTINGS))
    args = ("--scene", "blocks", "--settings", str(path), "--clock-speed", "4", "--sensor-noise", "off")
    with sim_server(*args) as p:  # ideal sensors: readings compared with the geometry
        yield p


@pytest.fixture(scope="module")
def client(port):
    c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
    c.confirmConnection()
    c.enableApiControl(True)
    c.armDisarm(True)
    return c


def hover_at(c, x: float, y: float, z: float, yaw_deg: float = 0.0) -> None:
    c.simSetVehiclePose(
        airsim.Pose(airsim.Vector3r(x, y, z), airsim.to_quaternion(0, 0, math.radians(yaw_deg))), True
    )


def rotation(w: float, x: float, y: float, z: float) -> np.ndarray:
    """The 3x3 rotation of a unit quaternion (body axes in the world's, as columns)."""
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def fresh_scan(c, name: str):
    """The next 10 Hz update's output (the sensor updates every 0.1 s of simulation time)."""
    first = c.getLidarData(name)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        data = c.getLidarData(name)
        if data.time_stamp != first.time_stamp:
            return data
        time.sleep(0.02)
    raise AssertionError("no new lidar update in 10 s")


def test_lidar_points_pose_and_frames(client) -> None:
    hover_at(client, 0.0, 0.0, -HEIGHT_M)
    down = fresh_scan(client, "A_down")
    pts = np.asarray(down.point_cloud, float).reshape(-1, 3)
    assert len(pts) == 100  # PointsPerSecond / 10 Hz over 1 channel, every ray hits the ground
    # SensorLocalFrame: the lidar is 1 m above the body origin, the ground 11 m below it
    assert pts == pytest.approx(np.tile([0.0, 0.0, HEIGHT_M + 1.0], (100, 1)), abs=1e-3)
    assert len(down.segmentation) == 100 and set(down.segmentation) == {-1}  # the ground is no object
    p = down.pose.position
    assert (p.x_val, p.y_val, p.z_val) == pytest.approx(
        (0.0, 0.0, -HEIGHT_M - 1.0), abs=1e-6
    )  # spawn-relative
    # "" is the first lidar in name order
    assert len(client.getLidarData("").point_cloud) == len(client.getLidarData("A_down").point_cloud)
    vlp = fresh_scan(client, "B_default")  # VehicleInertialFrame (AirSim's default): spawn-relative NED
    cloud = np.asarray(vlp.point_cloud, float).reshape(-1, 3)
    assert 0 < len(cloud) <= 10000  # 100,000 points/s at 10 Hz
    assert np.all(cloud[:, 2] > -HEIGHT_M)  # below the drone (FOV -15..-45 degrees)
    ground = cloud[np.abs(cloud[:, 2]) < 1e-3]
    horizontal = np.linalg.norm(ground[:, :2], axis=1)
    # on the ground the range is between the FOV's -15 and -45 degree rays
    assert horizontal.min() >= HEIGHT_M / math.tan(math.radians(45)) - 0.05
    assert horizontal.max() <= HEIGHT_M / math.tan(math.radians(15)) + 0.05


def test_lidar_hits_an_object_with_its_segmentation_id(client) -> None:
    hover_at(client, 0.0, 0.0, -HEIGHT_M)
    below = airsim.Pose(airsim.Vector3r(SPAWN[0], SPAWN[1], 0.0), airsim.to_quaternion(0, 0, 0))
    name = client.simSpawnObject("lidar_target", "van", below, airsim.Vector3r(1, 1, 1), False)
    try:
        assert client.simSetSegmentationObjectID(name, 77) is True
        data = fresh_scan(client, "A_down")
        z = np.asarray(data.point_cloud, float).reshape(-1, 3)[:, 2]
        assert np.all(z < HEIGHT_M + 1.0 - 1.0)  # the van's roof, not the ground
        assert set(data.segmentation) == {77}
    finally:
        client.simDestroyObject(name)


def test_lidar_errors_and_update_rate(client, port) -> None:
    for name in ("nope", "C_off"):  # unknown, and disabled (AirSim creates no such sensor)
        with pytest.raises(Exception, match=f"No lidar with name {name} exist on vehicle"):
            client.getLidarData(name)
    client.simPause(True)
    try:
        a, b = client.getLidarData("A_down"), client.getLidarData("A_down")
        assert a.time_stamp == b.time_stamp  # one output per 10 Hz update
        client.simContinueForTime(0.1)
        assert client.getLidarData("A_down").time_stamp > a.time_stamp
    finally:
        client.simPause(False)
    c = cosys.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
    data = c.getLidarData("A_down")
    assert len(data.point_cloud) % 3 == 0 and len(data.point_cloud) > 0


def test_standard_and_settings_cameras(client) -> None:
    hover_at(client, 0.0, 0.0, -HEIGHT_M)
    info = client.simGetCameraInfo("3")  # bottom_center looks down
    pitch, _, _ = airsim.to_eularian_angles(info.pose.orientation)
    assert math.degrees(pitch) == pytest.approx(-90.0, abs=1e-3)
    small = client.simGetImages([airsim.ImageRequest("small", airsim.ImageType.Scene, False, False)])[0]
    assert (small.width, small.height) == (160, 90)
    assert client.simGetCameraInfo("small").fov == pytest.approx(60.0)
    depth, normals, disparity = client.simGetImages(
        [
            airsim.ImageRequest("bottom_center", airsim.ImageType.DepthPlanar, True),
            airsim.ImageRequest("bottom_center", airsim.ImageType.SurfaceNormals, False, False),
            airsim.ImageRequest("bottom_center", airsim.ImageType.DisparityNormalized, True),
        ]
    )
    d = np.asarray(depth.image_data_float).reshape(depth.height, depth.width)
    assert d[depth.height // 2, depth.width // 2] == pytest.approx(HEIGHT_M - 0.1, abs=0.02)  # 0.1 m below
    n = np.frombuffer(normals.image_data_uint8, np.uint8).reshape(normals.height, normals.width, 3)
    centre = n[normals.height // 2, normals.width // 2].astype(int)
    assert abs(centre[0] - 255) <= 1 and abs(centre[1] - 128) <= 1 and abs(centre[2] - 128) <= 1  # up: B
    disp = np.asarray(disparity.image_data_float).reshape(d.shape)
    fx = depth.width / 2 / math.tan(math.radians(info.fov) / 2)
    centre_d = d[depth.height // 2, depth.width // 2]
    assert disp[depth.height // 2, depth.width // 2] == pytest.approx(
        fx * 0.25 / centre_d / depth.width, rel=1e-3
    )
    # a settings camera mounted like bottom_center sees bottom_center's frame
    a, b = client.simGetImages(
        [
            airsim.ImageRequest("looking_down", airsim.ImageType.Scene, False, False),
            airsim.ImageRequest("3", airsim.ImageType.Scene, False, False),
        ]
    )
    assert a.image_data_uint8 == b.image_data_uint8
    with pytest.raises(Exception, match="camera 'nope' is not available on vehicle Drone1"):
        client.simGetImages([airsim.ImageRequest("nope", airsim.ImageType.Scene)])


def test_camera_pose_and_fov(client, port) -> None:
    hover_at(client, 0.0, 0.0, -HEIGHT_M, 30.0)
    request = [airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)]
    level = client.simGetImages(request)[0].image_data_uint8
    down = client.simGetImages([airsim.ImageRequest("3", airsim.ImageType.Scene, False, False)])[0]
    try:
        # front_center turned and moved to bottom_center's mount draws bottom_center's frame
        client.simSetCameraPose(
            "0", airsim.Pose(airsim.Vector3r(0, 0, 0.1), airsim.to_quaternion(math.radians(-90), 0, 0))
        )
        turned = client.simGetImages(request)[0]
        assert turned.image_data_uint8 == down.image_data_uint8
        q = turned.camera_orientation  # world NED: looking down, its right axis the body's (yaw 30)
        r = rotation(q.w_val, q.x_val, q.y_val, q.z_val)
        assert r[:, 0] == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)
        assert r[:, 1] == pytest.approx(
            [-math.sin(math.radians(30)), math.cos(math.radians(30)), 0.0], abs=1e-6
        )
        info = client.simGetCameraInfo("0")
        assert info.pose.position.z_val == pytest.approx(-HEIGHT_M + 0.1, abs=1e-6)
        c = cosys.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)  # 3 arguments
        c.simSetCameraPose(
            "looking_down", cosys.Pose(cosys.Vector3r(0, 0, 0.1), cosys.Quaternionr(0, 0, 0, 1))
        )
        pitch, _, _ = airsim.to_eularian_angles(client.simGetCameraInfo("looking_down").pose.orientation)
        assert math.degrees(pitch) == pytest.approx(0.0, abs=1e-3)
        client.simSetCameraFov("small", 90.0)
        assert client.simGetCameraInfo("small").fov == pytest.approx(90.0)
        with pytest.raises(Exception, match=r"external camera '0' is not defined \(settings.json"):
            client.simSetCameraPose("0", airsim.Pose(), external=True)
    finally:
        default = airsim.Pose(airsim.Vector3r(0.5, 0, 0.1), airsim.to_quaternion(0, 0, 0))
        client.simSetCameraPose("0", default)
        client.simSetCameraPose(
            "looking_down",
            airsim.Pose(airsim.Vector3r(0, 0, 0.1), airsim.to_quaternion(math.radians(-90), 0, 0)),
        )
        client.simSetCameraFov("small", 60.0)
    # put back at its mount, the turned path draws the level path's frame
    assert client.simGetImages(request)[0].image_data_uint8 == level


def test_float_pixels_of_colour_images_are_the_red_channel(client) -> None:
    hover_at(client, 0.0, 0.0, -3.0)
    f, u = client.simGetImages(
        [
            airsim.ImageRequest("0", airsim.ImageType.Segmentation, True),
            airsim.ImageRequest("0", airsim.ImageType.Segmentation, False, False),
        ]
    )
    red = np.frombuffer(u.image_data_uint8, np.uint8).reshape(u.height, u.width, 3)[:, :, 2]
    assert np.asarray(f.image_data_float) == pytest.approx(red.ravel() / 255.0, abs=1e-6)


def test_move_by_rc_and_manual(client) -> None:
    hover_at(client, 0.0, 0.0, -HEIGHT_M)
    client.hoverAsync().join()
    z0 = client.simGetVehiclePose().position.z_val
    manual = client.moveByManualAsync(vx_max=1e6, vy_max=1e6, z_min=-1e6, duration=1e6)
    # full throttle: z target 1e6 / 10000 = 100 m above (AirLib's kMaxRCValue scale)
    client.moveByRC(airsim.RCData(throttle=1.0, is_initialized=True, is_valid=True))
    state = client.getMultirotorState()
    assert state.rc_data.throttle == pytest.approx(1.0) and state.rc_data.is_valid is True
    time.sleep(1.0)
    assert client.simGetVehiclePose().position.z_val < z0 - 1.0  # climbing
    client.moveByVelocityAsync(0, 0, 0, 0.5).join()  # another command ends the manual task
    assert manual.get() is False
    client.moveByRC(airsim.RCData())  # sticks released, not valid


def test_distance_sensor_and_named_sensors(client, port) -> None:
    hover_at(client, 0.0, 0.0, -HEIGHT_M)
    d = client.getDistanceSensorData("Range")
    assert d.distance == pytest.approx(HEIGHT_M, abs=1e-3)  # straight down from the body origin
    assert (d.min_distance, d.max_distance) == pytest.approx((0.2, 30.0))
    pitch, _, _ = airsim.to_eularian_angles(d.relative_pose.orientation)
    assert math.degrees(pitch) == pytest.approx(-90.0, abs=1e-3)
    hover_at(client, 0.0, 0.0, -40.0)
    assert client.getDistanceSensorData("").distance == pytest.approx(30.0)  # nothing within range
    with pytest.raises(Exception, match="No distance sensor with name nope exist on vehicle"):
        client.getDistanceSensorData("nope")
    assert client.getImuData("MyImu").time_stamp > 0
    with pytest.raises(Exception, match="No IMU with name imu exist on vehicle"):
        client.getImuData("imu")  # a vehicle whose Sensors name an IMU has no default one
    assert client.getGpsData("gps").is_valid is True  # no GPS in Sensors: AirSim's default stays
    c = cosys.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
    assert c.getDistanceSensorData("Range").distance == pytest.approx(30.0)


def test_external_camera_and_distortion(client) -> None:
    hover_at(client, 0.0, 0.0, -HEIGHT_M)  # world (-10, 2, -10): above the external camera
    info = client.simGetCameraInfo("fixed1", external=True)
    p = info.pose.position  # the global NED frame (AirSim's external cameras have no vehicle)
    assert (p.x_val, p.y_val, p.z_val) == pytest.approx((-10.0, 2.0, -8.0))
    assert info.fov == pytest.approx(90.0)
    depth, scene = client.simGetImages(
        [
            airsim.ImageRequest("fixed1", airsim.ImageType.DepthPlanar, True),
            airsim.ImageRequest("fixed1", airsim.ImageType.Scene, False, False),
        ],
        external=True,
    )
    assert (scene.width, scene.height) == (256, 144)  # AirSim's default capture size
    d = np.asarray(depth.image_data_float).reshape(depth.height, depth.width)
    assert d[72, 128] == pytest.approx(8.0, abs=0.02)  # looking down at the ground from 8 m
    assert depth.camera_position.z_val == pytest.approx(-8.0)
    up = airsim.Pose(airsim.Vector3r(-10, 2, -8), airsim.to_quaternion(math.radians(90), 0, 0))
    client.simSetCameraPose("fixed1", up, external=True)  # under the drone, looking up at it
    req = [airsim.ImageRequest("fixed1", airsim.ImageType.DepthPlanar, True)]
    d = np.asarray(client.simGetImages(req, external=True)[0].image_data_float).reshape(144, 256)
    assert d[72, 128] < 2.0  # the drone 2 m above: an external camera sees every vehicle
    client.simSetCameraFov("fixed1", 60.0, external=True)
    assert client.simGetCameraInfo("fixed1", external=True).fov == pytest.approx(60.0)
    with pytest.raises(Exception, match="external camera 'nope' is not defined"):
        client.simGetCameraInfo("nope", external=True)
    assert client.simGetDistortionParams("0") == [0.0] * 5
    client.simSetDistortionParams("0", {"K1": 0.1})  # the lens itself: tests/sim_bridge/test_car_rpc.py
    assert client.simGetDistortionParams("0") == pytest.approx([0.1, 0.0, 0.0, 0.0, 0.0])
    client.simSetDistortionParams("0", {"K1": 0.0})
    with pytest.raises(Exception, match="expected a finite number"):
        client.simSetDistortionParams("0", {"K1": float("nan")})


def test_mounts_turn_with_the_tilted_body(client) -> None:
    """Settings' cameras and sensors are body-fixed here (no Gimbal): their pose on the body, then the
    body's attitude (the attitude model tilts it while it holds a pitch)."""
    hover_at(client, 0.0, 0.0, -HEIGHT_M)
    normals = [airsim.ImageRequest("0", airsim.ImageType.SurfaceNormals, False, False)]
    below = [airsim.ImageRequest("looking_down", airsim.ImageType.SurfaceNormals, False, False)]
    level_ground = _bottom_colour(client.simGetImages(below)[0])  # the ground's normal, from above
    client.simPause(True)
    f = client.moveByRollPitchYawZAsync(0.1, 0.3, 0.0, -HEIGHT_M, 2.0)
    time.sleep(0.05)  # the command is applied before time moves
    client.simContinueForTime(1.5)
    try:
        q = client.simGetVehiclePose().orientation
        r_body = rotation(q.w_val, q.x_val, q.y_val, q.z_val)
        pitch, roll, _ = airsim.to_eularian_angles(q)
        assert (roll, pitch) == pytest.approx((0.1, -0.3), abs=0.02)  # really tilted
        o = client.simGetCameraInfo("looking_down").pose.orientation
        r_cam = rotation(o.w_val, o.x_val, o.y_val, o.z_val)
        down_mount = rotation(*airsim.to_quaternion(math.radians(-90), 0, 0).to_numpy_array()[[3, 0, 1, 2]])
        assert r_cam == pytest.approx(r_body @ down_mount, abs=1e-6)
        # the downward range sensor's ray is the body's z axis: longer than the height by 1 / cos(tilt)
        z_m = client.simGetVehiclePose().position.z_val
        distance = client.getDistanceSensorData("Range").distance
        assert distance == pytest.approx(-z_m / r_body[2, 2], abs=1e-3)
        assert distance > -z_m + 0.1
        # the forward camera tilts with the body; the ground's world normal (its colour) does not
        got = client.simGetImages(normals)[0]
        img = np.frombuffer(got.image_data_uint8, np.uint8).reshape(got.height, got.width, 3)
        ground = np.all(np.abs(img[got.height // 2 :].astype(int) - level_ground) <= 3, axis=2)
        assert ground.mean() > 0.2  # (a yaw-only rotation would turn these normals by the 0.3 rad)
    finally:
        client.cancelLastTask()
        f.join()
        client.simPause(False)


def _bottom_colour(response) -> np.ndarray:
    """The median colour of an image's bottom row."""
    img = np.frombuffer(response.image_data_uint8, np.uint8).reshape(response.height, response.width, 3)
    return np.median(img[-1], axis=0).astype(int)
