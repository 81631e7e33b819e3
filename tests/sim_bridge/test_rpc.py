"""The real `airsim` client driving `dronecats sim` as a separate process (AirSim 1.8.1's RPC protocol)."""

from __future__ import annotations

import math
import socket
import time

import numpy as np
import pytest

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")
cv2 = pytest.importorskip("cv2")

from tests.support.airsim_clients import CLOCK_SPEED, arm_both, connect  # noqa: E402


@pytest.fixture
def client(sim_port):
    c = connect(airsim, sim_port)
    c.confirmConnection()
    return arm_both(c)


def local_xyz(c, name: str) -> np.ndarray:
    p = c.simGetVehiclePose(name).position
    return np.array([p.x_val, p.y_val, p.z_val])


def yaw_deg(c, name: str) -> float:
    return math.degrees(airsim.to_eularian_angles(c.simGetVehiclePose(name).orientation)[2])


def set_pose(c, name: str, x: float, y: float, z: float, yaw: float) -> None:
    c.simSetVehiclePose(
        airsim.Pose(
            airsim.Vector3r(float(x), float(y), float(z)), airsim.to_quaternion(0.0, 0.0, math.radians(yaw))
        ),
        True,
        name,
    )


def test_handshake_and_vehicles(client) -> None:
    assert client.ping() is True
    # version 4 (Cosys-AirSim's clients want >= 4) with AirSim 1.x clients still welcome (min 1)
    assert client.client.call("getServerVersion") == 4
    assert client.client.call("getMinRequiredClientVersion") == 1
    assert client.listVehicles() == ["Drone1", "Drone2"]
    assert client.isApiControlEnabled("Drone1") is True


def test_takeoff_velocity_and_yaw(client) -> None:
    client.takeoffAsync(vehicle_name="Drone1").join()
    start = local_xyz(client, "Drone1")
    assert start[2] == pytest.approx(-3.0, abs=0.2)
    assert client.getMultirotorState("Drone1").landed_state == 1
    yaw0 = yaw_deg(client, "Drone1")
    client.moveByVelocityBodyFrameAsync(1.0, 0.0, 0.0, 2.0, vehicle_name="Drone1").join()
    time.sleep(0.5 / CLOCK_SPEED * 4)  # let the hold brake
    moved = local_xyz(client, "Drone1") - start
    heading = np.array([math.cos(math.radians(yaw0)), math.sin(math.radians(yaw0))])
    assert float(moved[:2] @ heading) == pytest.approx(2.0, rel=0.2)
    assert abs(float(moved[2])) < 0.2
    f = client.rotateByYawRateAsync(45.0, 2.0, vehicle_name="Drone1")
    assert f.get() is True
    assert yaw_deg(client, "Drone1") - yaw0 == pytest.approx(90.0, abs=8.0)


def test_motion_is_concurrent_and_cancellable(client) -> None:
    set_pose(client, "Drone1", 0.0, 0.0, -3.0, 0.0)
    t0_s = client.client.call("dcGetSimTime")
    first = client.moveByVelocityBodyFrameAsync(0.5, 0.0, 0.0, 20.0, vehicle_name="Drone1")
    state = client.getMultirotorState("Drone1")  # served while the motion runs, not after it
    assert state.timestamp / 1e9 - t0_s < 19.0
    assert not first._set_flag  # the 20 s motion has not replied yet
    assert state.kinematics_estimated.position.z_val == pytest.approx(-3.0, abs=0.3)
    second = client.moveByVelocityBodyFrameAsync(0.0, 0.0, 0.0, 0.2, vehicle_name="Drone1")
    first.join()
    second.join()
    assert first.result is False and second.result is True


def test_images_decode_to_the_configured_size(client) -> None:
    set_pose(client, "Drone1", 0.0, 0.0, -2.0, 0.0)
    raw, png, seg = client.simGetImages(
        [
            airsim.ImageRequest("0", airsim.ImageType.Scene, False, False),
            airsim.ImageRequest("front_center", airsim.ImageType.Scene, False, True),
            airsim.ImageRequest("0", airsim.ImageType.Segmentation, False, False),
        ],
        "Drone1",
    )
    assert (raw.width, raw.height) == (640, 360)
    bgr = np.frombuffer(raw.image_data_uint8, np.uint8).reshape(raw.height, raw.width, 3)
    decoded = cv2.imdecode(np.frombuffer(png.image_data_uint8, np.uint8), cv2.IMREAD_COLOR)
    assert decoded.shape == (360, 640, 3)
    assert np.abs(decoded.astype(int) - bgr.astype(int)).mean() < 1.0  # same scene, same time
    assert bgr[300, 320, 0] < 100 and bgr[20, 320, 0] > 200  # road below, sky above (B of sky BGR)
    assert len(seg.image_data_uint8) == 640 * 360 * 3
    assert raw.time_stamp > 0
    with pytest.raises(Exception, match="camera 'belly' is not available on vehicle Drone1"):
        client.simGetImages([airsim.ImageRequest("belly", airsim.ImageType.Scene)], "Drone1")


def test_target_ahead_visible_and_behind_wall_not(client) -> None:
    set_pose(client, "Drone2", 5.0, -2.0, -2.0, 90.0)  # Drone2 spawned at world (0, 2, 0): world (5, 0, -2)
    pose = client.simGetObjectPose("Drone2").position
    assert (pose.x_val, pose.y_val) == pytest.approx((5.0, 0.0), abs=0.05)
    ahead = client.simSpawnObject(
        "rpc_ahead", "car@red", airsim.Pose(airsim.Vector3r(5.0, 7.0, 0.0)), airsim.Vector3r(1, 1, 1)
    )
    behind = client.simSpawnObject(
        "rpc_behind", "car@red", airsim.Pose(airsim.Vector3r(5.0, 22.0, 0.0)), airsim.Vector3r(1, 1, 1)
    )
    try:
        truth_ahead = client.client.call("dcGroundTruth", "Drone2", ahead)
        truth_behind = client.client.call("dcGroundTruth", "Drone2", behind)
        assert truth_ahead["visible"] is True and truth_behind["visible"] is False
        assert truth_ahead["distance_m"] == pytest.approx(7.1, abs=0.2)
        client.simSetDetectionFilterRadius("0", airsim.ImageType.Scene, 100 * 100, "Drone2")
        client.simAddDetectionFilterMeshName("0", airsim.ImageType.Scene, "rpc_*", "Drone2")
        names = [d.name for d in client.simGetDetections("0", airsim.ImageType.Scene, "Drone2")]
        assert names == [ahead]
        client.simClearDetectionMeshNames("0", airsim.ImageType.Scene, "Drone2")
        assert client.simGetDetections("0", airsim.ImageType.Scene, "Drone2") == []
    finally:
        assert client.simDestroyObject(ahead) and client.simDestroyObject(behind)
    assert math.isnan(client.simGetObjectPose(ahead).position.x_val)


def test_two_vehicles_move_independently(client) -> None:
    set_pose(client, "Drone1", 0.0, 0.0, -3.0, 0.0)
    set_pose(client, "Drone2", 0.0, 0.0, -3.0, 0.0)
    a0, b0 = local_xyz(client, "Drone1"), local_xyz(client, "Drone2")
    fa = client.moveByVelocityBodyFrameAsync(1.0, 0.0, 0.0, 1.5, vehicle_name="Drone1")
    fb = client.moveByVelocityBodyFrameAsync(0.0, 0.0, -1.0, 1.5, vehicle_name="Drone2")
    fa.join()
    fb.join()
    assert fa.result is True and fb.result is True
    da, db = local_xyz(client, "Drone1") - a0, local_xyz(client, "Drone2") - b0
    assert da[0] > 1.0 and abs(da[2]) < 0.2
    assert db[2] < -1.0 and abs(db[0]) < 0.2
    # spawn-relative poses: both report x,y near 0 although they are 2 m apart in the world
    w1, w2 = client.simGetObjectPose("Drone1").position, client.simGetObjectPose("Drone2").position
    assert w2.y_val - w1.y_val == pytest.approx(2.0 + db[1] - da[1], abs=0.1)


def test_collision_is_reported(client) -> None:
    set_pose(client, "Drone2", 20.0, 5.0, -2.0, 90.0)  # world (20, 7, -2), the house wall at y = 10
    assert client.simGetCollisionInfo("Drone2").has_collided is False
    f = client.moveByVelocityBodyFrameAsync(2.0, 0.0, 0.0, 4.0, vehicle_name="Drone2")
    f.join()
    info = client.simGetCollisionInfo("Drone2")
    assert info.has_collided is True
    assert info.object_name.startswith("houses_east")
    # AirSim's rules (rpc/collisions.py): read once, has_collided clears, the rest stays; the state's
    # collision field is never filled
    again = client.simGetCollisionInfo("Drone2")
    assert again.has_collided is False and again.object_name == info.object_name
    assert again.time_stamp == info.time_stamp
    assert client.getMultirotorState("Drone2").collision.has_collided is False
    v = client.getMultirotorState("Drone2").kinematics_estimated.linear_velocity
    assert math.hypot(v.x_val, v.y_val) < 0.05


def test_pause_and_continue_for_time(client) -> None:
    set_pose(client, "Drone1", 0.0, 0.0, -3.0, 0.0)
    client.simPause(True)
    try:
        assert client.simIsPause() is True
        t0 = client.client.call("dcGetSimTime")
        f = client.moveByVelocityBodyFrameAsync(1.0, 0.0, 0.0, 10.0, vehicle_name="Drone1")
        time.sleep(0.3)
        assert client.client.call("dcGetSimTime") == t0  # nothing moves while paused
        client.simContinueForTime(1.0)
        assert client.client.call("dcGetSimTime") == pytest.approx(t0 + 1.0, abs=1e-6)
        assert client.simIsPause() is True
        x = local_xyz(client, "Drone1")[0]
        assert 0.6 < x < 1.0  # 1 s at 1 m/s minus the 0.25 s acceleration ramp
        client.cancelLastTask("Drone1")
        f.join()
        assert f.result is False
    finally:
        client.simPause(False)


def test_malformed_requests_get_errors_and_the_server_keeps_serving(client, sim_port) -> None:
    with pytest.raises(Exception, match="could not find function 'noSuchMethod' with argument count 2"):
        client.client.call("noSuchMethod", 1, 2)
    with pytest.raises(Exception, match=r"invalid number of arguments\. Expected: 1, got: 0"):
        client.client.call("simGetVehiclePose")
    with pytest.raises(Exception, match=r"threw an exception.*Vehicle API for 'Nobody' is not available"):
        client.simGetVehiclePose("Nobody")
    with pytest.raises(Exception, match="threw an exception"):
        client.client.call("simSetVehiclePose", "not a pose", True, "Drone1")
    with socket.create_connection(("127.0.0.1", sim_port), timeout=5) as s:
        s.sendall(b"\xc1\xc1 this is not msgpack-rpc \xff\x00")
        s.settimeout(5)
        assert s.recv(100) == b""  # the server drops that session, like rpclib
    with socket.create_connection(("127.0.0.1", sim_port), timeout=5) as s:
        s.sendall(b"\x93\x01\x02\x03")  # a msgpack array that is no request
        s.settimeout(5)
        assert s.recv(100) == b""
    assert client.ping() is True
    fresh = airsim.MultirotorClient(ip="127.0.0.1", port=sim_port, timeout_value=30)
    assert fresh.ping() is True and fresh.listVehicles() == ["Drone1", "Drone2"]


def test_line_of_sight_and_materials(client) -> None:
    home = client.getHomeGeoPoint("Drone1")  # Drone1's spawn: world origin

    def geo(x: float, y: float, z: float) -> airsim.GeoPoint:
        point = airsim.GeoPoint()
        point.latitude = home.latitude + math.degrees(x / 6378137.0)
        point.longitude = home.longitude + math.degrees(
            y / (6378137.0 * math.cos(math.radians(home.latitude)))
        )
        point.altitude = home.altitude - z
        return point

    # along the street: clear; across it into the houses at y = 10 (east): blocked
    assert client.simTestLineOfSightBetweenPoints(geo(0, 0, -2), geo(30, 0, -2)) is True
    assert client.simTestLineOfSightBetweenPoints(geo(20, 0, -2), geo(20, 20, -2)) is False
    name = client.simSpawnObject(
        "mat_van", "BP_Van", airsim.Pose(airsim.Vector3r(30.0, 0.0, 0.0)), airsim.Vector3r(1, 1, 1)
    )
    try:
        assert "BP_Van" in client.simListAssets() and "M_Paint_Pink" in client.simListAssets()
        assert client.simSetObjectMaterial(name, "M_Paint_Pink") is True
        assert client.simSetObjectMaterial(name, "M_No_Such_Paint") is False
        info = client.client.call("dcGetObjectInfo", name)
        assert (info["cls"], info["colour"]) == ("van", "pink")
        assert info["pose"][:2] == pytest.approx([30.0, 0.0])
    finally:
        client.simDestroyObject(name)
