"""A body-fixed camera's frames carry its attitude, and a `go` projected with it lands where the
simulator drew the point: ground pixels of a frame taken while the drone pitches and rolls
(accelerating), back-projected at the simulator's own planar depth, land on the ground.

Both camera adapters: the in-process one over a World, and the `airsim://` one through the real
airsim client against `dronecats sim` (its default camera is AirSim's: body-fixed)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

pytest.importorskip("pybullet")

from common.actions import Go
from common.camera import CameraProfile
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose
from onboard.controller import go_world_point

GROUND_Z_M = 0.0  # the blocks scene's ground plane (world NED)
HEADING_DEG = 30.0
MOVE_DIRECTION_DEG = 90.0  # accelerating 60° off the heading: the body pitches and rolls


def depth_at(depth_m: np.ndarray, px: float, py: float) -> float:
    """Planar depth at an image point (pixel centres at +0.5), interpolating 1/depth, which is
    affine in the image over a plane (so exact on the flat ground)."""
    x, y = px - 0.5, py - 0.5
    i, j = math.floor(x), math.floor(y)
    fx, fy = x - i, y - j
    inv = 1.0 / depth_m[j : j + 2, i : i + 2].astype(float)
    mix = inv[0, 0] * (1 - fx) * (1 - fy) + inv[0, 1] * fx * (1 - fy)
    return 1.0 / (mix + inv[1, 0] * (1 - fx) * fy + inv[1, 1] * fx * fy)


def ground_heights_m(
    frame: Frame, depth_m: np.ndarray, camera: CameraProfile, eye_z_m: float, attitude: CameraAttitude
) -> list[float]:
    """World z of the bottom fifth of the image's points, projected as the controller projects a `go`
    (from the frame's pose; the camera's 0.1 m drop and 0.5 m arm, which the controller ignores, put
    back through the camera's height `eye_z_m`)."""
    heights = []
    for v in range(800, 1000, 25):
        for u in range(50, 1000, 100):
            d = depth_at(depth_m, u * camera.width_px / 1000, v * camera.height_px / 1000)
            point = go_world_point(Go((u, v), d), frame.pose, camera, None, attitude)
            heights.append(point[2] - frame.pose.z_m + eye_z_m)
    return heights


def assert_on_the_ground(frame: Frame, depth_m: np.ndarray, camera: CameraProfile, eye_z_m: float) -> None:
    att = frame.camera_attitude
    assert att.pitch_deg < -10.0 and att.roll_deg > 5.0, att  # nose down, right side down
    tilted = ground_heights_m(frame, depth_m, camera, eye_z_m, att)
    assert max(abs(z - GROUND_Z_M) for z in tilted) < 0.05, tilted
    # The heading alone (a level camera's projection) puts the same points off the ground by about
    # a metre (the pitch lifts them, the roll tips the row).
    level = ground_heights_m(frame, depth_m, camera, eye_z_m, LEVEL_CAMERA)
    assert float(np.median([abs(z - GROUND_Z_M) for z in level])) > 0.5, level


def test_in_process_camera_frame_attitude_projects_onto_the_ground() -> None:
    from sim_bridge.local import LocalCamera
    from sim_bridge.sim.gimbal import BODY_FIXED
    from sim_bridge.sim.world import World

    with World("blocks", vehicles=1, renderer="tiny", camera_mount=BODY_FIXED) as world:
        world.pause(True)
        world.set_vehicle_pose("Drone1", Pose(0.0, 0.0, -3.0, HEADING_DEG))
        a = math.radians(MOVE_DIRECTION_DEG)
        world.move_velocity("Drone1", np.array([4.0 * math.cos(a), 4.0 * math.sin(a), 0.0]), 3.0)
        world.advance(0.3)
        frame = LocalCamera(world, "Drone1").read()
        render = world.render("Drone1", depth=True)  # the same instant (paused), with depth
        assert render.depth_planar_m is not None
        assert_on_the_ground(frame, render.depth_planar_m, render.camera, render.camera_position_ned[2])


def test_airsim_camera_frame_attitude_projects_onto_the_ground() -> None:
    airsim = pytest.importorskip("airsim")
    from onboard.vehicles.airsim import AirSimVehicle, parse_airsim_url
    from tests.support.processes import sim_server

    with sim_server("--scene", "blocks", "--renderer", "tiny", "--clock-speed", "5") as port:
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        c.confirmConnection()
        c.enableApiControl(True)
        c.armDisarm(True)
        start = airsim.Pose(airsim.Vector3r(0, 0, -3), airsim.to_quaternion(0, 0, math.radians(HEADING_DEG)))
        c.simSetVehiclePose(start, True)
        c.simPause(True)
        a = math.radians(MOVE_DIRECTION_DEG)
        c.moveByVelocityZAsync(4.0 * math.cos(a), 4.0 * math.sin(a), -3.0, 3.0)
        time.sleep(0.05)  # the command is applied before time moves
        c.simContinueForTime(0.3)  # ... and the world stays paused: the frame and the depth agree
        vehicle = AirSimVehicle(parse_airsim_url(f"airsim://127.0.0.1:{port}/Drone1"))
        vehicle.connect()
        try:
            frame = vehicle.camera().read()
            request = airsim.ImageRequest("0", airsim.ImageType.DepthPlanar, True, False)
            response = c.simGetImages([request])[0]
            depth = np.asarray(response.image_data_float, np.float32).reshape(response.height, response.width)
            camera = CameraProfile.from_hfov("sim", response.width, response.height, 90.0)
            eye = response.camera_position
            eye_z_m = float(eye.z_val) + vehicle.spawn.z_m
            assert_on_the_ground(frame, depth, camera, eye_z_m)
        finally:
            vehicle.close()
            c.simPause(False)
