"""Latency compensation toward the point a `go` aimed at (RuntimeConfig.latency_goal "point"), against
the previous reading (the end of the capped step planned at capture, "step")."""

from __future__ import annotations

import math

import pytest

from common.actions import Go, Rotate
from common.camera import BUILTIN_CAMERAS
from common.pose import Pose
from onboard.controller import go_world_point, plan_go, plan_toward_point
from onboard.decision import make_plan
from onboard.profiles import BUILTIN_FLIGHT_PROFILES
from onboard.runtime_config import RuntimeConfig

OUTDOOR = BUILTIN_FLIGHT_PROFILES["outdoor"]  # cap 3 m, 1.2 m/s, slow band 5 m (x0.6), stop band 2 m
CAMERA = BUILTIN_CAMERAS["outdoor"]  # 1280x720, fx = fy = 640, cx 640, cy 360


def test_the_point_is_the_pixel_at_its_depth_in_the_world() -> None:
    capture = Pose(10.0, 5.0, -3.0, 90.0)  # facing east
    # u = 750 -> p_x = 960: right = 12 * 320/640 = 6 m; v = 500 -> on the optical axis.
    n, e, d = go_world_point(Go((750, 500), 12.0), capture, CAMERA)
    assert (n, e, d) == pytest.approx((10.0 - 6.0, 5.0 + 12.0, -3.0))  # right of east is south
    # A canonical-depth model's depth is rescaled first (d * fx / f_c).
    n2, e2, _ = go_world_point(Go((500, 500), 10.0), capture, CAMERA, canonical_focal_px=1280.0)
    assert (n2, e2) == pytest.approx((10.0, 5.0 + 5.0))


def test_from_the_capture_pose_it_is_the_plan_itself() -> None:
    capture = Pose(0.0, 0.0, -3.0, 30.0)
    for go in (Go((900, 500), 12.0), Go((520, 480), 20.0), Go((500, 500), 4.0), Go((900, 500), 1.0)):
        plan = plan_go(go, CAMERA, OUTDOOR)
        again = plan_toward_point(go_world_point(go, capture, CAMERA), capture, OUTDOOR)
        assert (
            again.yaw_deg,
            again.step_m,
            again.forward_m_s,
            again.right_m_s,
            again.up_m_s,
        ) == pytest.approx(
            (plan.yaw_deg, plan.step_m, plan.forward_m_s, plan.right_m_s, plan.up_m_s), abs=1e-9
        ), go


def test_a_late_reply_still_gets_a_full_step_toward_a_far_point() -> None:
    capture = Pose(0.0, 0.0, -3.0, 0.0)
    go = Go((500, 500), 15.0)  # straight ahead, 15 m: a capped 3 m step at 1.2 m/s (2.5 s)
    later = Pose(2.0, 0.0, -3.0, 0.0)  # the reply arrives after the drone flew 2 m of the last step
    point = make_plan(go, capture, later, CAMERA, OUTDOOR, None, compensate=True, latency_goal="point")
    step = make_plan(go, capture, later, CAMERA, OUTDOOR, None, compensate=True, latency_goal="step")
    assert point.step_m == pytest.approx(3.0) and point.duration_s == pytest.approx(2.5)
    assert step.step_m == pytest.approx(1.0)  # only the rest of the step planned at capture
    assert point.forward_m_s == step.forward_m_s == pytest.approx(1.2)


def test_bands_apply_to_the_point_as_seen_from_here() -> None:
    capture = Pose(0.0, 0.0, -3.0, 0.0)
    go = Go((500, 500), 7.0)  # outside the slow band at capture: a full 3 m step
    assert plan_go(go, CAMERA, OUTDOOR).step_m == pytest.approx(3.0)
    nearer = make_plan(go, capture, Pose(3.0, 0.0, -3.0, 0.0), CAMERA, OUTDOOR, None, True, "point")
    assert nearer.step_m == pytest.approx(3.0 * 0.6)  # 4 m from the point: slow band
    close = make_plan(go, capture, Pose(5.5, 0.0, -3.0, 0.0), CAMERA, OUTDOOR, None, True, "point")
    assert close.hold  # 1.5 m from the point: the stop band brakes
    # A brake decided at capture stays a brake (never fly back to where the frame was taken).
    brake = make_plan(Go((500, 500), 1.5), capture, Pose(-2.0, 0.0, -3.0, 0.0), CAMERA, OUTDOOR, None, True)
    assert brake.hold


def test_a_turn_is_recomputed_from_the_current_heading() -> None:
    capture = Pose(0.0, 0.0, -3.0, 0.0)
    go = Go((900, 500), 12.0)  # 38.66° right at capture
    turned = Pose(0.0, 0.0, -3.0, 20.0)  # already turned 20° of it
    plan = make_plan(go, capture, turned, CAMERA, OUTDOOR, None, True, "point")
    bearing = math.degrees(math.atan2(12.0 * 512 / 640, 12.0))  # p_x = 1152: right = 9.6 m
    assert plan.yaw_deg == pytest.approx(bearing - 20.0)
    # rotate is unaffected by the goal reading
    r_point = make_plan(Rotate(45.0), capture, turned, CAMERA, OUTDOOR, None, True, "point")
    r_step = make_plan(Rotate(45.0), capture, turned, CAMERA, OUTDOOR, None, True, "step")
    assert r_point.yaw_deg == r_step.yaw_deg == pytest.approx(25.0)


def test_the_naive_loop_and_no_compensation_fly_the_plan_as_made() -> None:
    capture, later = Pose(0.0, 0.0, -3.0, 0.0), Pose(2.0, 0.0, -3.0, 0.0)
    plan = make_plan(Go((500, 500), 15.0), capture, later, CAMERA, OUTDOOR, None, compensate=False)
    assert plan == plan_go(Go((500, 500), 15.0), CAMERA, OUTDOOR)


def test_runtime_config_names_the_goal() -> None:
    assert RuntimeConfig().latency_goal == "in-view"  # onboard.latency_compensation (issue 25)
    assert RuntimeConfig(latency_goal="point").latency_goal == "point"
    assert RuntimeConfig(latency_goal="step").latency_goal == "step"
    with pytest.raises(ValueError, match="latency_goal='ray'"):
        RuntimeConfig(latency_goal="ray")
