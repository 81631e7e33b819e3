"""The built-in simulator in-process: kinematics, collisions, ground truth, assets, lock-step time."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pybullet")

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.sim.assets import ASSET_KINDS, build_asset, parse_checkerboard
from sim_bridge.sim.textures import TextureCache
from sim_bridge.sim.world import World


@pytest.fixture(scope="module")
def world():
    w = World("residential", vehicles=2)
    w.pause(True)
    yield w
    w.close()


def fly_to(world: World, name: str, pose: Pose) -> None:
    world.set_vehicle_pose(name, pose)
    world.advance(0.1)


def test_body_frame_velocity_moves_two_metres_in_the_commanded_direction(world: World) -> None:
    fly_to(world, "Drone1", Pose(0.0, 0.0, -3.0, 90.0))  # facing east, above the road
    start = world.vehicle_pose("Drone1")
    task = world.move_velocity_body("Drone1", (1.0, 0.0, 0.0), 2.0)
    world.advance(3.0)  # 2 s of command, then the hold brakes
    end = world.vehicle_pose("Drone1")
    assert task.done and task.result is True
    assert end.y_m - start.y_m == pytest.approx(2.0, rel=0.2)  # forward = east at yaw 90
    assert abs(end.x_m - start.x_m) < 0.05
    assert abs(end.z_m - start.z_m) < 0.05


def test_vz_is_world_down_and_hold_after_duration(world: World) -> None:
    fly_to(world, "Drone1", Pose(0.0, 0.0, -3.0, 0.0))
    world.move_velocity_body("Drone1", (0.0, 0.0, -0.5), 2.0)  # climb 0.5 m/s
    world.advance(2.0)
    mid = world.vehicle_pose("Drone1")
    world.advance(2.0)
    end = world.vehicle_pose("Drone1")
    assert mid.z_m == pytest.approx(-4.0, abs=0.2)
    assert abs(end.z_m - mid.z_m) < 0.15  # holds (after braking) once the command expired


def test_yaw_rate_turns_the_vehicle(world: World) -> None:
    fly_to(world, "Drone1", Pose(0.0, 0.0, -3.0, 0.0))
    world.rotate_rate("Drone1", 60.0, 1.5)
    world.advance(2.0)
    assert world.vehicle_pose("Drone1").yaw_deg == pytest.approx(90.0, abs=5.0)


def test_new_motion_cancels_the_running_one(world: World) -> None:
    fly_to(world, "Drone1", Pose(0.0, 0.0, -3.0, 0.0))
    first = world.move_velocity_body("Drone1", (1.0, 0.0, 0.0), 5.0)
    world.advance(0.5)
    second = world.move_velocity_body("Drone1", (0.0, 1.0, 0.0), 0.5)
    assert first.done and first.result is False
    world.advance(1.5)
    assert second.result is True


def test_takeoff_and_land(world: World) -> None:
    world.set_vehicle_pose("Drone2", Pose(-3.0, 2.0, 0.0, 0.0))
    task = world.takeoff("Drone2", 3.0)
    world.advance(6.0)
    assert task.result is True
    assert world.vehicle_pose("Drone2").z_m == pytest.approx(-3.0, abs=0.15)
    land = world.land("Drone2", timeout_s=30.0)
    world.advance(8.0)
    assert land.result is True and world.vehicle("Drone2").model.landed


def test_collision_is_reported_and_the_drone_stops(world: World) -> None:
    fly_to(world, "Drone2", Pose(20.0, 7.0, -2.0, 90.0))  # a house wall at y = 10 m ahead
    task = world.move_velocity_body("Drone2", (2.0, 0.0, 0.0), 4.0)
    world.advance(4.0)
    info = world.vehicle("Drone2").model.collision
    assert info is not None and info["object_name"].startswith("houses_east")
    assert task.result is False
    y = world.vehicle_pose("Drone2").y_m
    assert 9.0 < y < 10.0
    world.advance(0.5)
    assert world.vehicle_pose("Drone2").y_m == pytest.approx(y, abs=0.05)  # stopped, not pushing through
    world.set_vehicle_pose("Drone2", Pose(-3.0, 2.0, 0.0, 0.0))  # teleport clears the latch
    assert world.vehicle("Drone2").model.collision is None


def test_visibility_ahead_and_behind_a_wall(world: World) -> None:
    fly_to(world, "Drone1", Pose(5.0, 0.0, -2.0, 90.0))  # facing the east houses
    world.spawn("t_front", "car@red", Pose(5.0, 7.0, 0.0, 0.0))
    world.spawn("t_behind", "car@red", Pose(5.0, 22.0, 0.0, 0.0))
    world.spawn("t_back", "van@blue", Pose(5.0, -3.0, 0.0, 0.0))  # behind the camera
    try:
        render = world.render("Drone1")
        front = world.target_truth("Drone1", "t_front", render)
        behind = world.target_truth("Drone1", "t_behind", render)
        back = world.target_truth("Drone1", "t_back", render)
        assert front.visible and front.pixel_count > 1000
        assert not behind.visible and behind.pixel_count == 0
        assert not back.visible
        # distances: from the drone to the bbox centre and to the nearest bbox face
        assert front.distance_m == pytest.approx(math.dist((5, 0, -2), (5, 7, -0.725)), abs=0.1)
        assert front.bbox_distance_m == pytest.approx(math.dist((5, 0, -2), (5, 6.1, -1.5)), abs=0.1)
        assert front.box2d_px is not None
        u0, v0, u1, v1 = front.box2d_px
        cu, cv = (u0 + u1) / 2 * 1000 / 640, (v0 + v1) / 2 * 1000 / 360
        assert world.point_on_target(render, "t_front", cu, cv)
        assert not world.point_on_target(render, "t_front", 10, 10)
    finally:
        for name in ("t_front", "t_behind", "t_back"):
            world.destroy(name)


def test_visibility_threshold_scales_with_frame_area(world: World) -> None:
    cam = world.camera
    assert world.min_visible_pixels(cam) == 20
    assert world.min_visible_pixels(cam.scaled_to(1280, 720)) == 80


def test_moving_target_follows_its_path_in_sim_time(world: World) -> None:
    obj = world.spawn("walker", "person@green", Pose(40.0, 5.5, 0.0, 0.0))
    try:
        world.set_path(obj.name, [(40.0, 5.5, 0.0), (50.0, 5.5, 0.0), (50.0, 5.5, -4.0)], 1.0)
        world.advance(5.0)
        p = world.object_pose(obj.name)
        assert (p.x_m, p.y_m) == pytest.approx((45.0, 5.5), abs=0.05)
        assert p.yaw_deg == pytest.approx(0.0, abs=1e-6)
        world.advance(7.0)  # 10 m along x, then 2 m up the 3-D leg
        assert world.object_pose(obj.name).z_m == pytest.approx(-2.0, abs=0.05)
    finally:
        world.destroy(obj.name)


def test_lock_step_is_deterministic() -> None:
    def run() -> list[float]:
        with World("blocks", vehicles=1) as w:
            w.takeoff("Drone1", 2.0)
            w.advance(3.0)
            w.move_velocity_body("Drone1", (1.2, 0.3, 0.0), 2.5)
            w.advance(1.234)
            w.rotate_rate("Drone1", -60.0, 1.0)
            w.advance(2.0)
            return [w.clock.now(), *w.vehicle_pose("Drone1").as_list()]

    assert run() == run()


def test_assets_have_classes_colours_and_distinct_sizes() -> None:
    textures = TextureCache()
    try:
        sizes = {}
        for kind in ("car", "suv", "van", "truck", "person", "cyclist", "drone"):
            spec = build_asset(f"{kind}@blue", textures)
            assert spec.cls == kind and spec.colour == "blue"
            sizes[kind] = tuple(round(2 * h, 2) for h in spec.local_bbox()[1])
        lengths = [sizes[k][0] for k in ("car", "suv", "van", "truck")]
        heights = [sizes[k][2] for k in ("car", "suv", "van", "truck")]
        assert lengths == sorted(lengths) and len(set(lengths)) == 4
        assert heights == sorted(heights) and len(set(heights)) == 4
        assert build_asset("plate:AB123", textures).arg == "AB123"
        assert build_asset("sign:MAIN ST@green", textures).colour == "green"
        assert set(ASSET_KINDS) >= {
            "car",
            "suv",
            "van",
            "truck",
            "person",
            "cyclist",
            "drone",
            "sign",
            "plate",
            "checkerboard",
        }
        with pytest.raises(ConfigError, match="unknown asset kind"):
            build_asset("tank", textures)
        with pytest.raises(ConfigError, match="unknown colour"):
            build_asset("car@octarine", textures)
    finally:
        textures.close()


def test_checkerboard_spec() -> None:
    assert parse_checkerboard("9x6:40") == (9, 6, 0.04)
    with pytest.raises(ConfigError):
        parse_checkerboard("9by6")


def test_scenes_build_and_render() -> None:
    for scene in ("blocks", "indoor"):
        with World(scene, vehicles=2) as w:
            w.set_vehicle_pose("Drone1", Pose(w.vehicle("Drone1").model.spawn.x_m, 0.0, -1.5, 0.0))
            r = w.render("Drone1")
            assert r.image_bgr.shape == (360, 640, 3)
            assert np.unique(r.image_bgr.reshape(-1, 3), axis=0).shape[0] > 5
    with pytest.raises(ConfigError, match="unknown scene"):
        World("moon")


def test_scene_layout_follows_the_seed() -> None:
    def layout(seed: int) -> tuple[list[tuple[str, str, str]], np.ndarray]:
        with World("residential", vehicles=1, seed=seed) as w:
            w.set_vehicle_pose("Drone1", Pose(10.0, 0.0, -3.0, 0.0))
            return sorted((o.name, o.colour, o.arg) for o in w.objects.values()), w.render("Drone1").image_bgr

    a_objects, a_image = layout(1)
    b_objects, b_image = layout(1)
    c_objects, _ = layout(2)
    assert a_objects == b_objects and np.array_equal(a_image, b_image)
    assert a_objects != c_objects
