"""AirSim's semantics of the detection, object, collision, reset and drivetrain calls, through the real
airsim 1.8.1 and cosysairsim clients against `dronecats sim` (one server for the file; Drone1 spawned at
the world origin, Drone2 at world (0, 2, 0)). Each rule cites the AirSim source it follows in
sim_bridge/rpc/detections.py, collisions.py, motion_rules.py and airsim_api.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

airsim = pytest.importorskip("airsim")
cosys = pytest.importorskip("cosysairsim")
pytest.importorskip("pybullet")

from common.frames import rotation_from_unit_quat  # noqa: E402
from onboard.vehicles.airsim import wxyz  # noqa: E402
from onboard.vehicles.airsim_truth import extent_from_detection, xyz  # noqa: E402
from tests.support.airsim_clients import arm_both, connect  # noqa: E402

SCENE = airsim.ImageType.Scene
DRONE2_SPAWN = np.array([0.0, 2.0, 0.0])


@pytest.fixture
def client(sim_port):
    c = connect(airsim, sim_port)
    c.confirmConnection()
    return arm_both(c)


@pytest.fixture
def cz(sim_port):
    return connect(cosys, sim_port)


def place(c, name: str, world_xyz, yaw_deg: float) -> None:
    """Put a vehicle at a world NED position (simSetVehiclePose takes its spawn-relative frame)."""
    spawn = DRONE2_SPAWN if name == "Drone2" else np.zeros(3)
    x, y, z = np.asarray(world_xyz, float) - spawn
    q = airsim.to_quaternion(0.0, 0.0, math.radians(yaw_deg))
    c.simSetVehiclePose(airsim.Pose(airsim.Vector3r(x, y, z), q), True, name)


def spawn(c, name: str, asset: str, world_xyz, yaw_deg: float = 0.0) -> str:
    pose = airsim.Pose(
        airsim.Vector3r(*map(float, world_xyz)), airsim.to_quaternion(0, 0, math.radians(yaw_deg))
    )
    return c.simSpawnObject(name, asset, pose, airsim.Vector3r(1, 1, 1))


def detected(c, vehicle: str, *patterns: str, radius_cm: float | None = None) -> list:
    c.simClearDetectionMeshNames("0", SCENE, vehicle)
    if radius_cm is not None:
        c.simSetDetectionFilterRadius("0", SCENE, radius_cm, vehicle)
    for p in patterns:
        c.simAddDetectionFilterMeshName("0", SCENE, p, vehicle)
    return c.simGetDetections("0", SCENE, vehicle)


def test_detection_filter_wildcards_ignore_case_and_match_mesh_names(client) -> None:
    place(client, "Drone1", (5.0, 0.0, -2.0), 90.0)  # facing east, the car 7 m ahead
    name = spawn(client, "Sem_Car_A", "car@red", (5.0, 7.0, 0.0))
    try:
        assert [d.name for d in detected(client, "Drone1", "sem_car_?")] == [name]  # ?, any case
        assert detected(client, "Drone1", "sem_car_[a]") == []  # no character classes in Unreal's
        assert name in [d.name for d in detected(client, "Drone1", "CAR")]  # its mesh: a car
        assert detected(client, "Drone1", "van") == []
    finally:
        client.simClearDetectionMeshNames("0", SCENE, "Drone1")
        client.simDestroyObject(name)


def test_detection_radius_defaults_to_200_m_from_the_actor(client) -> None:
    place(client, "Drone1", (0.0, 0.0, -40.0), 0.0)  # high above the houses, facing north
    name = spawn(client, "sem_far_truck", "truck", (150.0, 0.0, -40.0), 90.0)  # broadside, 150 m ahead
    try:
        assert [d.name for d in detected(client, "Drone1", "sem_far_*")] == [name]  # AirSim: 20000 cm
        assert detected(client, "Drone1", "sem_far_*", radius_cm=14000.0) == []  # 140 m: too far
        assert [d.name for d in detected(client, "Drone1", "sem_far_*", radius_cm=15100.0)] == [name]
    finally:
        client.simSetDetectionFilterRadius("0", SCENE, 20000.0, "Drone1")
        client.simClearDetectionMeshNames("0", SCENE, "Drone1")
        client.simDestroyObject(name)


def test_detection_boxes_and_poses_as_airsim_computes_them(client, cz) -> None:
    """box3D / relative_pose: camera frame less the vehicle's local NED origin (Drone2's spawn), as
    WorldSimApi::getDetections' toLocalNed makes them; relative orientation: the camera in the object's
    frame; geo_point: the actor's location; box2D: the world box's corners projected."""
    place(client, "Drone2", (5.0, 0.0, -2.0), 90.0)
    name = spawn(client, "sem_box_car", "car@blue", (5.0, 8.0, 0.0), 30.0)
    try:
        (d,) = detected(client, "Drone2", "sem_box_car")
        info = client.simGetCameraInfo("0", "Drone2")
        cam = xyz(info.pose.position) + DRONE2_SPAWN  # spawn-relative -> world
        rot = rotation_from_unit_quat(*wxyz(info.pose.orientation))
        obj = client.client.call("dcGetObjectInfo", name)
        location = np.array(obj["pose"][:3])
        expected = rot.T @ (location - cam) - DRONE2_SPAWN
        assert xyz(d.relative_pose.position) == pytest.approx(expected, abs=1e-3)
        rel_yaw = math.degrees(airsim.to_eularian_angles(d.relative_pose.orientation)[2])
        assert rel_yaw == pytest.approx(90.0 - 30.0, abs=0.5)  # camera yaw - object yaw
        centre, half = np.array(obj["bbox_centre"]), np.array(obj["bbox_half_m"])
        c, s = abs(math.cos(math.radians(30))), abs(math.sin(math.radians(30)))
        world_half = np.array([c * half[0] + s * half[1], s * half[0] + c * half[1], half[2]])
        lowest = centre + world_half * np.array([-1, -1, 1])  # Unreal's Min: the box's bottom corner
        assert xyz(d.box3D.min) == pytest.approx(rot.T @ (lowest - cam) - DRONE2_SPAWN, abs=1e-3)
        extent = extent_from_detection(d, rot, 30.0)  # the HIL reader recovers the car's own box
        assert extent.half_m == pytest.approx(tuple(half), abs=1e-3)
        yaw = math.radians(30.0)
        own = np.array([[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0], [0, 0, 1]])
        assert extent.centre_frd_m == pytest.approx(tuple(own.T @ (centre - location)), abs=1e-3)
        home = client.getHomeGeoPoint("Drone1")  # Drone1's spawn is the world origin
        assert d.geo_point.latitude == pytest.approx(home.latitude + math.degrees(5.0 / 6378137.0), abs=1e-9)
        assert d.geo_point.altitude == pytest.approx(home.altitude, abs=1e-3)  # actor at z = 0
        b = d.box2D
        assert 0.0 <= b.min.x_val < 320.0 < b.max.x_val <= 640.0 and b.max.y_val > b.min.y_val
        found = cz.simGetDetections("0", cosys.ImageType.Scene, "Drone2")  # Cosys' argument list
        assert [f.name for f in found] == [name]
        assert xyz(found[0].box3D.max) == pytest.approx(xyz(d.box3D.max), abs=1e-6)
    finally:
        client.simClearDetectionMeshNames("0", SCENE, "Drone2")
        client.simDestroyObject(name)


def test_spawn_object_renames_as_airsim(client, cz) -> None:
    """WorldSimApi::spawnObject: any actor matching .*NAME.* -> NAME + (greatest trailing number + 1)."""
    names = []
    try:
        names.append(spawn(client, "semspawn", "van", (30.0, -30.0, 0.0)))
        names.append(spawn(client, "semspawn", "van", (30.0, -35.0, 0.0)))
        names.append(spawn(client, "mspawn", "van", (30.0, -40.0, 0.0)))  # inside "semspawn1"
        assert names == ["semspawn", "semspawn1", "mspawn2"]
        names.append(
            cz.simSpawnObject(
                "semspawn", "van", cosys.Pose(cosys.Vector3r(30, -45, 0)), cosys.Vector3r(1, 1, 1)
            )
        )
        assert names[-1] == "semspawn2"  # "mspawn2" does not contain "semspawn"
    finally:
        for n in names:
            client.simDestroyObject(n)


def test_set_object_pose_rules(client) -> None:
    name = spawn(client, "sem_moved", "van", (40.0, -30.0, 0.0))
    try:
        pose = airsim.Pose(airsim.Vector3r(41.0, -30.0, 0.0), airsim.to_quaternion(0, 0, 0))
        assert client.simSetObjectPose(name, pose, True) is True
        assert client.simGetObjectPose(name).position.x_val == pytest.approx(41.0)
        nan = airsim.Pose(airsim.Vector3r(math.nan, -30.0, 0.0), airsim.to_quaternion(0, 0, 0))
        with pytest.raises(Exception, match="NaN"):
            client.simSetObjectPose(name, nan, True)
        assert client.simSetObjectPose("no_such_actor", pose, True) is False
        assert client.simSetObjectPose("no_such_actor", nan, True) is False  # the lookup comes first
        # a vehicle's pawn is put back by its physics: True, and it stays where it was
        before = client.simGetObjectPose("Drone1").position
        far = airsim.Pose(
            airsim.Vector3r(before.x_val + 30, before.y_val, before.z_val), airsim.to_quaternion(0, 0, 0)
        )
        assert client.simSetObjectPose("Drone1", far, True) is True
        assert client.simGetObjectPose("Drone1").position.x_val == pytest.approx(before.x_val, abs=0.2)
    finally:
        client.simDestroyObject(name)


def test_collision_info_is_cleared_on_read_kept_over_moves_and_reset_clears_it(client) -> None:
    place(client, "Drone2", (20.0, 7.0, -2.0), 90.0)  # the house wall at y = 10
    client.simGetCollisionInfo("Drone2")  # read: whatever was there is no longer new
    client.moveByVelocityBodyFrameAsync(2.0, 0.0, 0.0, 4.0, vehicle_name="Drone2").join()
    place(client, "Drone2", (20.0, 0.0, -2.0), 90.0)  # teleported before anyone read it
    info = client.simGetCollisionInfo("Drone2")
    assert info.has_collided is True  # PawnSimApi::setPose keeps it
    # impact point and position in the vehicle's local frame (toLocalNed): world less the spawn
    assert info.position.y_val == pytest.approx(10.0 - 2.0 - 0.3, abs=0.35)
    assert info.impact_point.y_val == pytest.approx(10.0 - 2.0, abs=0.3)
    assert client.simGetCollisionInfo("Drone2").has_collided is False
    # a sweep (ignore_collision=False) stops at the wall with a collision; a teleport passes
    pose = airsim.Pose(airsim.Vector3r(20.0, 20.0 - 2.0, -2.0), airsim.to_quaternion(0, 0, math.radians(90)))
    client.simSetVehiclePose(pose, False, "Drone2")
    blocked = client.simGetCollisionInfo("Drone2")
    assert blocked.has_collided is True and blocked.object_name.startswith("houses_east")
    assert client.simGetVehiclePose("Drone2").position.y_val < 10.0 - 2.0
    client.simSetVehiclePose(pose, True, "Drone2")
    assert client.simGetVehiclePose("Drone2").position.y_val == pytest.approx(18.0)
    assert client.simGetCollisionInfo("Drone2").has_collided is False


def test_forward_only_turns_the_nose_along_the_travel(client) -> None:
    place(client, "Drone1", (0.0, 0.0, -5.0), 0.0)
    fwd = airsim.DrivetrainType.ForwardOnly
    client.moveByVelocityAsync(0.0, 2.0, 0.0, 2.0, fwd, airsim.YawMode(False, 0.0), "Drone1").join()
    yaw = math.degrees(airsim.to_eularian_angles(client.simGetVehiclePose("Drone1").orientation)[2])
    assert yaw == pytest.approx(90.0, abs=3.0)  # facing east, the way it flew
    place(client, "Drone1", (0.0, 0.0, -5.0), 90.0)  # at rest, facing east
    mode = airsim.YawMode(False, 0.0)
    client.moveToPositionAsync(-10.0, 0.0, -5.0, 3.0, 30, fwd, mode, -1, 1, "Drone1").join()
    yaw = math.degrees(airsim.to_eularian_angles(client.simGetVehiclePose("Drone1").orientation)[2])
    assert abs(abs(yaw) - 180.0) < 5.0  # turned to face south while flying south
    with pytest.raises(Exception, match="Yaw cannot be specified as rate if drivetrain is ForwardOnly"):
        client.moveToPositionAsync(0, 0, -5, 2, 10, fwd, airsim.YawMode(True, 0), vehicle_name="Drone1").get()
    with pytest.raises(Exception, match="lookahead distance cannot be 0"):
        client.moveOnPathAsync([airsim.Vector3r(0, 0, -5)], 2.0, 10, lookahead=0, vehicle_name="Drone1").get()
    with pytest.raises(Exception, match="smaller than drone's distance accuracy"):
        client.moveToPositionAsync(0, 0, -5, 2, 10, lookahead=0.3, vehicle_name="Drone1").get()
    assert client.moveOnPathAsync([], 2.0, vehicle_name="Drone1").get() is True  # nothing to fly
    assert client.moveByVelocityZAsync(1, 0, -5, 0, vehicle_name="Drone1").get() is False  # AirLib's quirk
    assert client.moveByVelocityAsync(1, 0, 0, 0, vehicle_name="Drone1").get() is True


def test_reset_and_arming_as_simpleflight(client) -> None:
    assert client.armDisarm(False, "Drone1") is True
    assert client.armDisarm(False, "Drone1") is False  # not Armed: OffboardApi::disarm refuses
    assert client.armDisarm(True, "Drone1") is True
    assert client.armDisarm(True, "Drone1") is True  # "already armed"
    place(client, "Drone2", (20.0, 7.0, -2.0), 90.0)
    client.moveByVelocityBodyFrameAsync(2.0, 0.0, 0.0, 4.0, vehicle_name="Drone2").join()
    client.reset()
    for name in ("Drone1", "Drone2"):
        assert client.isApiControlEnabled(name) is False
        p = client.simGetVehiclePose(name).position
        assert (p.x_val, p.y_val, p.z_val) == pytest.approx((0.0, 0.0, 0.0), abs=1e-6)
        state = client.getMultirotorState(name)
        assert state.landed_state == airsim.LandedState.Landed
        assert state.kinematics_estimated.linear_velocity.get_length() == pytest.approx(0.0)
    info = client.simGetCollisionInfo("Drone2")
    assert info.has_collided is False and info.object_name == "" and info.time_stamp == 0
    assert client.armDisarm(True, "Drone1") is False  # API control is off after a reset
    arm_both(client)  # DefaultVehicleState Armed: arming succeeds (already armed)
