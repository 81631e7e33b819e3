"""Ground truth from crop renders (the target's projected region only) against full-frame renders, and
point-on-target for served frames from the simulator's frame ring (issue 9: fewer renders per step)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pybullet")

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.sim.truth import projected_region
from sim_bridge.sim.world import REGION_MARGIN_PX, World, crop_camera

# Assets of every kind, at heights where they live (plates, boards and drones in the air).
KINDS = ["car", "suv", "van", "truck", "person", "cyclist", "drone", "sign:STOP", "plate:AB123"]
KINDS += ["checkerboard:5x4:100"]
AIRBORNE = ("drone", "plate", "checkerboard")
POSES_PER_SCENE = 12
# A crop rasterises the same triangles on the same pixel grid, but the depth test of two surfaces
# that touch can round the other way in a pixel (measured: 1 pixel in 1 check of 1000). Visibility can
# only differ when the full render's count is that close to the threshold.
MAX_PIXEL_DIFF = 2


def _populate(world: World, rng: np.random.Generator, radius_m: float) -> list[str]:
    spawn = world.vehicle("Drone1").model.spawn
    names = []
    for i, kind in enumerate(KINDS):
        r, a = rng.uniform(1.5, radius_m), rng.uniform(0, 2 * math.pi)
        z = -1.5 if kind.split(":")[0] in AIRBORNE else 0.0
        pose = Pose(spawn.x_m + r * math.cos(a), spawn.y_m + r * math.sin(a), z, float(rng.uniform(0, 360)))
        names.append(world.spawn(f"crop_t{i}", kind, pose).name)
    return names


def _random_pose(world: World, rng: np.random.Generator) -> Pose:
    spawn = world.vehicle("Drone1").model.spawn
    return Pose(
        spawn.x_m + float(rng.uniform(-4, 4)),
        spawn.y_m + float(rng.uniform(-4, 4)),
        float(rng.uniform(-4.0, -0.3)),
        float(rng.uniform(0, 360)),
    )


@pytest.mark.parametrize("scene", ["residential", "blocks", "indoor"])
def test_crop_truth_equals_full_render_truth_over_random_poses(scene: str) -> None:
    rng = np.random.default_rng(11)
    with World(scene, vehicles=2) as w:
        w.pause(True)
        names = _populate(w, rng, 5.0 if scene == "indoor" else 12.0)
        checks = differing = visible = points = 0
        for _ in range(POSES_PER_SCENE):
            pose = _random_pose(w, rng)
            w.set_vehicle_pose("Drone1", pose)
            ahead = (math.cos(math.radians(pose.yaw_deg)), math.sin(math.radians(pose.yaw_deg)))
            # the other drone 2 m ahead: an occluder that moves with the camera
            w.set_vehicle_pose(
                "Drone2", Pose(pose.x_m + 2 * ahead[0], pose.y_m + 2 * ahead[1], pose.z_m, 0.0)
            )
            full = w.render("Drone1")
            for name in names:
                a = w.target_truth("Drone1", name, full)
                b = w.target_truth("Drone1", name)
                checks += 1
                visible += a.visible
                assert (b.distance_m, b.bbox_distance_m) == (a.distance_m, a.bbox_distance_m)
                diff = abs(a.pixel_count - b.pixel_count)
                assert diff <= MAX_PIXEL_DIFF, (name, pose, a.pixel_count, b.pixel_count)
                differing += diff > 0
                if a.visible != b.visible:
                    assert abs(a.pixel_count - a.min_pixels) <= MAX_PIXEL_DIFF, (name, pose)
                if diff == 0:
                    assert a.box2d_px == b.box2d_px
                # single pixels: on the target (inside its box) and anywhere
                for _ in range(3):
                    if a.box2d_px is not None and rng.random() < 0.7:
                        u0, v0, u1, v1 = a.box2d_px
                        col, row = int(rng.integers(u0, u1 + 1)), int(rng.integers(v0, v1 + 1))
                        u, v = (col + 0.5) * 1000 / 640, (row + 0.5) * 1000 / 360
                    else:
                        u, v = (float(x) for x in rng.uniform(0, 1000, 2))
                    on_full = w.point_on_target(full, name, u, v)
                    points += on_full
                    if diff == 0:
                        assert w.point_on_target_at("Drone1", name, u, v) == on_full, (name, pose, u, v)
        assert visible >= checks // 10  # the poses do see targets
        assert points >= 10  # and points on them
        assert differing <= max(1, checks // 100)


def test_crop_truth_at_a_given_pose_equals_the_full_rerender() -> None:
    rng = np.random.default_rng(5)
    with World("residential", vehicles=1) as w:
        w.pause(True)
        names = _populate(w, rng, 10.0)
        for _ in range(6):
            pose = _random_pose(w, rng)
            full = w.render("Drone1", vehicle_pose=pose)
            for name in names:
                a = w.target_truth("Drone1", name, full)
                b = w.target_truth("Drone1", name, vehicle_pose=pose)
                assert abs(a.pixel_count - b.pixel_count) <= MAX_PIXEL_DIFF
                assert b.distance_m == pytest.approx(a.distance_m)
        # the vehicle itself was not moved by the re-renders
        assert w.vehicle_pose("Drone1") == w.vehicle("Drone1").model.spawn


def test_crop_costs_only_the_region_and_a_target_out_of_view_costs_no_render() -> None:
    with World("residential", vehicles=1) as w:
        w.pause(True)
        w.set_vehicle_pose("Drone1", Pose(0.0, 0.0, -2.0, 0.0))
        ahead = w.spawn("ahead", "car@red", Pose(15.0, 0.0, 0.0, 90.0)).name
        behind = w.spawn("behind", "car@red", Pose(-15.0, 0.0, 0.0, 90.0)).name
        aside = w.spawn("aside", "car@red", Pose(0.0, 30.0, 0.0, 90.0)).name  # beside: outside the 90° HFOV
        stats = w.render_stats
        truth = w.target_truth("Drone1", ahead)
        assert truth.visible and stats.crop == 1 and stats.full == 0
        assert stats.crop_pixels < 640 * 360 // 10  # a car 15 m ahead: a small part of the frame
        u0, v0, u1, v1 = truth.box2d_px
        assert stats.crop_pixels >= (u1 - u0 + 1 + 2 * REGION_MARGIN_PX) * (v1 - v0 + 1)
        for name in (behind, aside):
            t = w.target_truth("Drone1", name)
            assert not t.visible and t.pixel_count == 0 and t.box2d_px is None
        assert stats.crop == 1 and stats.skipped == 2
        centre = ((u0 + u1) / 2 * 1000 / 640, (v0 + v1) / 2 * 1000 / 360)
        assert w.point_on_target_at("Drone1", ahead, *centre)
        assert stats.crop == 2 and stats.crop_pixels < 640 * 360 // 10 + 1
        assert not w.point_on_target_at("Drone1", ahead, 10.0, 10.0)  # far outside its region: no render
        assert stats.crop == 2 and stats.skipped == 3


def test_crop_camera_is_the_same_pixel_grid_and_refuses_bad_regions() -> None:
    with World("blocks", vehicles=1) as w:
        cam = w.vehicle("Drone1").camera
        crop = crop_camera(cam, (100, 50, 180, 90))
        assert (crop.width_px, crop.height_px) == (80, 40)
        assert (crop.fx_px, crop.fy_px) == (cam.fx_px, cam.fy_px)
        assert (crop.cx_px, crop.cy_px) == (cam.cx_px - 100, cam.cy_px - 50)
        w.set_vehicle_pose("Drone1", Pose(0.0, 0.0, -2.0, 0.0))
        full = w.render("Drone1")
        seg = w.render_segmentation("Drone1", (100, 50, 180, 90))
        objects = full.seg[50:90, 100:180] >= 0  # ground: -2 in a full render, -1 (empty) in a crop
        assert objects.any()
        assert np.array_equal(seg[objects], full.seg[50:90, 100:180][objects])
        for bad in ((0, 0, 0, 10), (600, 0, 700, 10), (-1, 0, 10, 10), (0, 10, 10, 5)):
            with pytest.raises(ConfigError, match="empty or outside"):
                crop_camera(cam, bad)


def test_targets_beside_and_under_the_camera_crossing_its_plane() -> None:
    """Boxes cut by the near plane (the drone beside or above a target, as at an arrival): the crop is
    the projection of the part in front, and counts as the full render does."""
    rng = np.random.default_rng(3)
    with World("residential", vehicles=1) as w:
        w.pause(True)
        kinds = ["car", "truck", "person", "sign:STOP", "van"]
        names = [
            w.spawn(f"near_t{i}", k, Pose(10.0 + 6 * i, 0.0, 0.0, float(rng.uniform(0, 360)))).name
            for i, k in enumerate(kinds)
        ]
        cam = w.vehicle("Drone1").camera
        crossing = whole_frame = 0
        for trial in range(60):
            obj = w.objects[names[trial % len(names)]]
            c = obj.bbox_centre_ned()
            pose = Pose(
                float(c[0] + rng.uniform(-3, 3)),
                float(c[1] + rng.uniform(-3, 3)),
                float(rng.uniform(-4.0, -0.5)),
                float(rng.uniform(0, 360)),
            )
            w.set_vehicle_pose("Drone1", pose)
            eye, yaw = w.camera_pose("Drone1")
            rel = (obj.bbox_centre_ned() - eye) @ np.asarray(
                [[math.cos(math.radians(yaw))], [math.sin(math.radians(yaw))], [0.0]]
            )
            if abs(float(rel[0])) > max(obj.bbox_half_m[:2]):
                continue  # the box surely does not reach the camera plane
            crossing += 1
            full = w.target_truth("Drone1", obj.name, w.render("Drone1"))
            crop = w.target_truth("Drone1", obj.name)
            assert abs(full.pixel_count - crop.pixel_count) <= MAX_PIXEL_DIFF, (obj.asset, pose)
            region = projected_region(obj, eye, yaw, cam)
            whole_frame += region == (0, 0, cam.width_px, cam.height_px)
        assert crossing >= 20
        assert whole_frame <= crossing // 2  # cut at the near plane, most such boxes do not fill the frame


def test_point_on_target_in_a_served_frame_comes_from_the_frame_ring() -> None:
    """dcPointOnTargetInFrame answers for the frame the model saw (its segmentation as served), without a
    render; a frame the ring does not hold is re-rendered at its pose; RemoteTruth asks by time stamp."""
    airsim = pytest.importorskip("airsim")
    from onboard.vehicles.airsim import AirSimVehicle, parse_airsim_url
    from onboard.vehicles.airsim_truth import RemoteTruth
    from tests.support.processes import sim_server

    with sim_server("--scene", "residential", "--vehicles", "1", "--paused") as port:
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        c.confirmConnection()
        east = airsim.to_quaternion(0, 0, math.pi / 2)
        c.simSetVehiclePose(
            airsim.Pose(airsim.Vector3r(5.0, 0.0, -2.0), airsim.to_quaternion(0, 0, 0)), True, "Drone1"
        )
        car = c.simSpawnObject(
            "ring_car",
            "car@blue",
            airsim.Pose(airsim.Vector3r(15.0, 0.0, 0.0), east),
            airsim.Vector3r(1, 1, 1),
        )
        call = c.client.call
        url = f"airsim://127.0.0.1:{port}/Drone1"
        frame = AirSimVehicle(parse_airsim_url(url)).camera().read()
        info = call("dcGroundTruth", "Drone1", car)
        assert info["visible"] is True
        u0, v0, u1, v1 = info["box2d"]
        centre = ((u0 + u1) / 2 * 1000 / 640, (v0 + v1) / 2 * 1000 / 360)
        stamp_ns = round(frame.capture_time_s * 1e9)
        pose = [float(x) for x in frame.pose.as_list()]
        call("dcRenderStats", True)
        # the car drives off after the frame: the frame still shows it, a re-render does not
        c.simSetObjectPose(car, airsim.Pose(airsim.Vector3r(15.0, 40.0, 0.0), east), True)
        assert call("dcPointOnTargetInFrame", "Drone1", car, *centre, stamp_ns, pose) is True
        assert call("dcPointOnTargetInFrame", "Drone1", car, 20.0, 20.0, stamp_ns, pose) is False
        stats = call("dcRenderStats", False)
        assert (stats["ring_hits"], stats["full"], stats["crop"]) == (2, 0, 0)
        assert call("dcPointOnTargetAt", "Drone1", car, *centre, pose) is False
        # unknown time stamp (a remote action's frame): re-rendered at the pose, a crop at most
        assert call("dcPointOnTargetInFrame", "Drone1", car, *centre, stamp_ns + 10**9, pose) is False
        stats = call("dcRenderStats", True)
        assert stats["ring_misses"] == 1 and stats["full"] == 0
        truth = RemoteTruth(url, car)
        assert truth.point_on_target(frame, (round(centre[0]), round(centre[1]))) is True
        assert call("dcRenderStats", False)["ring_hits"] == 1
        # "full" reproduces the old cost for comparisons: every answer a full-frame render
        call("dcSetTruthRender", "full")
        c.simSetObjectPose(car, airsim.Pose(airsim.Vector3r(15.0, 0.0, 0.0), east), True)
        call("dcRenderStats", True)
        assert call("dcGroundTruth", "Drone1", car)["visible"] is True
        assert call("dcPointOnTargetInFrame", "Drone1", car, *centre, stamp_ns, pose) is True
        stats = call("dcRenderStats", False)
        assert (stats["full"], stats["crop"], stats["ring_hits"], stats["truth_render"]) == (2, 0, 0, "full")
        with pytest.raises(Exception, match="truth render mode 'fast' is not one of"):
            call("dcSetTruthRender", "fast")
        call("dcSetTruthRender", "crop")
        assert call("dcGroundTruth", "Drone1", car)["pixel_count"] == info["pixel_count"]
        assert call("dcRenderStats", False)["crop"] == 1
