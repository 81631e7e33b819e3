"""The maintained fork's client (`cosysairsim` 3.5, Cosys-AirSim's argument counts) against
`dronecats sim`. The airsim:// adapter in Cosys mode is tests/onboard/vehicles/test_airsim.py."""

from __future__ import annotations

import contextlib
import io
import math
import time

import numpy as np
import pytest

from tests.support.airsim_clients import CLOCK_SPEED, arm_both, connect

cosys = pytest.importorskip("cosysairsim")
airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")


@pytest.fixture
def client(sim_port):
    return arm_both(connect(cosys, sim_port))


def set_pose(c, name: str, x: float, y: float, z: float, yaw_deg: float) -> None:
    half = math.radians(yaw_deg) / 2
    c.simSetVehiclePose(
        cosys.Pose(cosys.Vector3r(x, y, z), cosys.Quaternionr(0.0, 0.0, math.sin(half), math.cos(half))),
        True,
        name,
    )


@pytest.mark.parametrize("package", ["cosysairsim", "airsim"])
def test_both_client_generations_connect_without_a_version_warning(sim_port, package: str) -> None:
    mod = cosys if package == "cosysairsim" else airsim
    c = mod.MultirotorClient(ip="127.0.0.1", port=sim_port, timeout_value=30)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        c.confirmConnection()
    text = out.getvalue() + err.getvalue()
    assert "Connected!" in text
    assert "older version" not in text and "not supported" not in text, text
    assert "Server Ver:4" in text


def test_images_camera_info_and_object_poses_in_cosys_arity(client) -> None:
    set_pose(client, "Drone2", 1.0, 1.0, -2.0, 0.0)  # Drone2 spawned at world (0, 2, 0)
    scene, seg, depth = client.simGetImages(  # sent with 2 arguments (AirSim 1.x sends 3)
        [
            cosys.ImageRequest("0", cosys.ImageType.Scene, False, False),
            cosys.ImageRequest("0", cosys.ImageType.Segmentation, False, False),
            cosys.ImageRequest("0", cosys.ImageType.DepthPlanar, True, False),
        ],
        "Drone2",
    )
    assert (scene.width, scene.height) == (640, 360)
    bgr = np.frombuffer(scene.image_data_uint8, np.uint8).reshape(360, 640, 3)
    assert bgr[300, 320, 0] < 100 and bgr[20, 320, 0] > 200  # road below, sky above
    assert len(seg.image_data_uint8) == 640 * 360 * 3
    assert len(depth.image_data_float) == 640 * 360 and 1.0 < depth.image_data_float[300 * 640 + 320] < 30.0
    p = scene.camera_position  # spawn-relative, as AirSim reports camera poses
    assert (p.x_val, p.y_val, p.z_val) == pytest.approx((1.5, 1.0, -1.9), abs=1e-6)
    info = client.simGetCameraInfo("0", "Drone2")  # 2 arguments (AirSim 1.x: 3)
    assert info.fov == pytest.approx(90.0, abs=15.0)
    assert info.pose.position.x_val == pytest.approx(1.5, abs=1e-6)
    world = client.simGetObjectPose("Drone2")  # (name, ned=True): 2 arguments (AirSim 1.x: 1)
    assert (world.position.x_val, world.position.y_val) == pytest.approx((1.0, 3.0), abs=1e-6)
    with pytest.raises(Exception, match="only NED poses"):
        client.simGetObjectPose("Drone2", False)
    assert math.isnan(client.simGetObjectPose("no_such_object").position.x_val)


def test_detections_with_annotation_argument(client) -> None:
    set_pose(client, "Drone1", 5.0, 0.0, -2.0, 90.0)  # facing east along y
    name = client.simSpawnObject(
        "cz_car", "BP_Car", cosys.Pose(cosys.Vector3r(5.0, 7.0, 0.0)), cosys.Vector3r(1, 1, 1)
    )
    try:
        client.simSetDetectionFilterRadius("0", cosys.ImageType.Scene, 100 * 100, "Drone1")
        client.simAddDetectionFilterMeshName("0", cosys.ImageType.Scene, "cz_*", "Drone1")
        found = client.simGetDetections("0", cosys.ImageType.Scene, "Drone1")
        assert [d.name for d in found] == [name]
        d = found[0]
        assert d.box2D.max.x_val > d.box2D.min.x_val and 5.0 < d.relative_pose.position.x_val < 9.0
        client.simClearDetectionMeshNames("0", cosys.ImageType.Scene, "Drone1")
        assert client.simGetDetections("0", cosys.ImageType.Scene, "Drone1") == []
    finally:
        client.simDestroyObject(name)


def test_motion_with_the_cosys_client(client) -> None:
    set_pose(client, "Drone1", 0.0, 0.0, 0.0, 0.0)
    client.takeoffAsync(vehicle_name="Drone1").join()
    state = client.getMultirotorState("Drone1")
    assert state.landed_state == 1 and state.kinematics_estimated.position.z_val == pytest.approx(
        -3.0, abs=0.2
    )
    before = client.simGetVehiclePose("Drone1").position
    assert client.moveByVelocityBodyFrameAsync(1.0, 0.0, 0.0, 2.0, vehicle_name="Drone1").join() is None
    time.sleep(0.5 / CLOCK_SPEED * 4)
    after = client.simGetVehiclePose("Drone1").position
    assert after.x_val - before.x_val == pytest.approx(2.0, rel=0.25)
