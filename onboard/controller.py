"""The rule-based geometric controller (docs/controller.md): one action in, one typed plan out.

A plan is at most one turn (yaw in place) followed by at most one move (a body-frame velocity held
for a duration). The maths is in (forward, right, up) with yaw positive clockwise seen from above;
conversion to a vehicle's own frame happens in its adapter. Nothing here talks to a vehicle.

Latency compensation: `go_world_point` fixes the point a `go` aimed at (the model's pixel at its
depth) in the world from the pose at frame capture, and `plan_toward_point` re-plans toward it from
a later pose with the same rules (turn outside the deadband, altitude hold, cap, depth bands, fixed
speed). The older reading, kept for comparison: `go_world_goal` fixes where the capped step planned
at capture would end, and `plan_toward` re-plans toward that end.
"""

from __future__ import annotations

import enum
import math

import msgspec

from common.actions import Action, Finished, Go, Rotate, Think
from common.camera import CameraProfile, undistort_pixels
from common.frames import heading_to_ned, ned_to_heading
from common.pose import LEVEL_CAMERA, CameraAttitude, Pose, wrap_deg
from onboard.profiles import FlightProfile


class PlanKind(enum.Enum):
    """What a plan is for: the action it executes, or why the drone holds without one."""

    GO = "go"
    ROTATE = "rotate"
    THINK = "think"  # holds
    FINISHED = "finished"  # holds
    NO_ACTION = "none"  # holds: the reply was discarded (no action to execute)
    REPLAN = "replan"  # a late `go` re-planned from the current pose (latency compensation)
    MISSED = "miss"  # holds: the pilot's reply was malformed, stale or a backend error
    NO_FRAME = "no frame"  # holds: the camera gave no (fresh) frame this step


class ControlPlan(msgspec.Struct, frozen=True, kw_only=True):
    """One turn, then one move. `hold` is true when nothing moves (no turn and no move).

    Keyword-only: ten floats in a row are too easy to pass in the wrong order."""

    kind: PlanKind
    yaw_deg: float  # turn in place first (positive = clockwise)
    yaw_rate_deg_s: float  # signed, so that yaw_rate_deg_s * yaw_duration_s == yaw_deg
    yaw_duration_s: float
    forward_m_s: float  # then this body-frame velocity (after the turn) ...
    right_m_s: float
    up_m_s: float
    duration_s: float  # ... held for this long
    step_m: float  # length of the move
    hold: bool
    # The move as a displacement in the body frame after the turn (step_m long); with the pose at
    # capture this fixes the move's end point in the world (go_world_goal).
    move_forward_m: float = 0.0
    move_right_m: float = 0.0
    move_up_m: float = 0.0

    def explain_dict(self) -> dict[str, float | bool]:
        """The keys `dronecats explain` prints (docs/controller.md#checking-it-by-hand)."""
        return {
            "yaw_deg": self.yaw_deg,
            "yaw_rate_deg_s": self.yaw_rate_deg_s,
            "yaw_duration_s": self.yaw_duration_s,
            "forward_m_s": self.forward_m_s,
            "right_m_s": self.right_m_s,
            "up_m_s": self.up_m_s,
            "duration_s": self.duration_s,
            "step_m": self.step_m,
            "hold": self.hold,
        }


def hold_plan(kind: PlanKind) -> ControlPlan:
    """Nothing moves: no turn, no move."""
    return turn_plan(kind, 0.0, 0.0, 0.0, hold=True)


def turn_plan(
    kind: PlanKind, yaw_deg: float, yaw_rate_deg_s: float, yaw_duration_s: float, hold: bool
) -> ControlPlan:
    """A turn in place and no move."""
    return ControlPlan(
        kind=kind,
        yaw_deg=yaw_deg,
        yaw_rate_deg_s=yaw_rate_deg_s,
        yaw_duration_s=yaw_duration_s,
        forward_m_s=0.0,
        right_m_s=0.0,
        up_m_s=0.0,
        duration_s=0.0,
        step_m=0.0,
        hold=hold,
    )


def undistort_pixel(px: float, py: float, camera: CameraProfile) -> tuple[float, float]:
    """The ideal-pinhole pixel of a pixel seen through the camera's lens distortion (P = K)."""
    if not camera.has_distortion:
        return px, py  # the common case skips numpy and OpenCV altogether
    ((x, y),) = undistort_pixels([(px, py)], camera)
    return float(x), float(y)


def back_project(
    point: tuple[float, float],
    depth_m: float,
    camera: CameraProfile,
    attitude: CameraAttitude = LEVEL_CAMERA,
) -> tuple[float, float, float]:
    """(right, forward, up) in metres of an image point (x, y in 0–1000) at planar depth depth_m
    (along the camera's optical axis), in the level frame at the frame pose's heading.

    The ray through the pixel is d·((p_x − cx)/fx, 1, (cy − p_y)/fy) in the camera's own (right,
    forward, up); a camera that was pitched or rolled at capture (`attitude`: a body-fixed camera on
    a tilted body) turns it into the level frame. A level camera's ray is used as it is."""
    px = point[0] * camera.width_px / 1000.0
    py = point[1] * camera.height_px / 1000.0
    px, py = undistort_pixel(px, py, camera)
    right = depth_m * (px - camera.cx_px) / camera.fx_px
    up = depth_m * (camera.cy_px - py) / camera.fy_px
    if attitude.level:
        return right, depth_m, up
    forward, right, down = attitude.to_heading_frame(depth_m, right, -up)
    return right, forward, -down


def metric_depth_m(depth_m: float, camera: CameraProfile, canonical_focal_px: float | None) -> float:
    """A model's depth in metres for this camera: d·fx/f_c when the model speaks canonical depth."""
    if canonical_focal_px is None:
        return depth_m
    if not canonical_focal_px > 0:
        raise ValueError(f"canonical_focal_px={canonical_focal_px} must be > 0")
    return depth_m * camera.fx_px / canonical_focal_px


def _turn(yaw_deg: float, profile: FlightProfile) -> tuple[float, float, float]:
    if yaw_deg == 0:
        return 0.0, 0.0, 0.0
    rate = math.copysign(profile.yaw_rate_deg_s, yaw_deg)
    return yaw_deg, rate, abs(yaw_deg) / profile.yaw_rate_deg_s


def _shape_move(
    right: float, forward: float, up: float, profile: FlightProfile
) -> tuple[float, float, float, float]:
    """Steps 3–5: (yaw_deg, right, forward, up) after the deadband turn and the altitude hold."""
    bearing_deg = math.degrees(math.atan2(right, forward))
    h = math.hypot(right, forward)
    yaw_deg = 0.0
    if abs(bearing_deg) > profile.deadband_deg:
        # Turn to face the point, then fly straight ahead at the new heading.
        yaw_deg, right, forward = bearing_deg, 0.0, h
    if abs(up) < profile.altitude_hold_ratio * h:
        up = 0.0
    return yaw_deg, right, forward, up


def _assemble(
    kind: PlanKind,
    yaw_deg: float,
    right: float,
    forward: float,
    up: float,
    step_m: float,
    profile: FlightProfile,
) -> ControlPlan:
    yaw, rate, yaw_duration_s = _turn(yaw_deg, profile)
    dist = math.sqrt(right * right + forward * forward + up * up)
    if step_m <= 0 or dist == 0:
        return turn_plan(kind, yaw, rate, yaw_duration_s, hold=yaw == 0)
    speed = profile.speed_m_s
    unit = (forward / dist, right / dist, up / dist)
    return ControlPlan(
        kind=kind,
        yaw_deg=yaw,
        yaw_rate_deg_s=rate,
        yaw_duration_s=yaw_duration_s,
        forward_m_s=speed * unit[0],
        right_m_s=speed * unit[1],
        up_m_s=speed * unit[2],
        duration_s=step_m / speed,
        step_m=step_m,
        hold=False,
        move_forward_m=step_m * unit[0],
        move_right_m=step_m * unit[1],
        move_up_m=step_m * unit[2],
    )


def plan_go(
    go: Go,
    camera: CameraProfile,
    profile: FlightProfile,
    canonical_focal_px: float | None = None,
    attitude: CameraAttitude = LEVEL_CAMERA,
) -> ControlPlan:
    """Steps 1–7 of docs/controller.md#go, from a camera at `attitude` at capture.

    With a canonical-depth model the rescaled depth is the metric depth, so it also feeds the
    depth bands (the bands are in metres). In the stop band the turn is still flown: the band
    sets the step, the turn precedes it (step 3 before step 6), so the drone faces the point.
    """
    depth_m = metric_depth_m(go.depth_m, camera, canonical_focal_px)
    right, forward, up = back_project(go.point, depth_m, camera, attitude)
    yaw_deg, right, forward, up = _shape_move(right, forward, up, profile)
    dist = math.sqrt(right * right + forward * forward + up * up)
    # Cap first, then the bands, on the model's depth (not on dist).
    return _assemble(
        PlanKind.GO, yaw_deg, right, forward, up, _banded_step_m(dist, depth_m, profile), profile
    )


def _banded_step_m(dist_m: float, band_depth_m: float, profile: FlightProfile) -> float:
    """step = min(dist, cap), then the depth bands on `band_depth_m` (docs/controller.md#go steps 5–6)."""
    if band_depth_m < profile.stop_band_m:
        return 0.0
    step_m = min(dist_m, profile.cap_m)
    return step_m * profile.slow_factor if band_depth_m < profile.slow_band_m else step_m


def plan_rotate(rotate: Rotate, profile: FlightProfile) -> ControlPlan:
    limit = profile.rotate_limit_deg
    angle = max(-limit, min(limit, rotate.angle_deg))
    yaw, rate, duration = _turn(angle, profile)
    return turn_plan(PlanKind.ROTATE, yaw, rate, duration, hold=yaw == 0)


def plan_action(
    action: Action | None,
    camera: CameraProfile,
    profile: FlightProfile,
    canonical_focal_px: float | None = None,
    attitude: CameraAttitude = LEVEL_CAMERA,
) -> ControlPlan:
    """Any action (None = a discarded reply) to its plan; think and finished hold position.
    `attitude`: the camera's at the frame's capture (a `go` is projected with it)."""
    if isinstance(action, Go):
        return plan_go(action, camera, profile, canonical_focal_px, attitude)
    if isinstance(action, Rotate):
        return plan_rotate(action, profile)
    if isinstance(action, Think):
        return hold_plan(PlanKind.THINK)
    if isinstance(action, Finished):
        return hold_plan(PlanKind.FINISHED)
    return hold_plan(PlanKind.NO_ACTION)


def go_world_goal(plan: ControlPlan, capture_pose: Pose) -> Pose:
    """Where a plan made from the pose at capture ends, in the world: position and final heading."""
    heading = wrap_deg(capture_pose.yaw_deg + plan.yaw_deg)
    dn, de, dd = heading_to_ned(plan.move_forward_m, plan.move_right_m, plan.move_up_m, heading)
    return Pose(capture_pose.x_m + dn, capture_pose.y_m + de, capture_pose.z_m + dd, heading)


def plan_toward(
    goal: Pose,
    pose: Pose,
    profile: FlightProfile,
    arrive_tolerance_m: float = 0.05,
) -> ControlPlan:
    """Re-plan a move toward a fixed world point from the current pose (latency compensation).

    Same rules as `go`: turn first when the bearing leaves the deadband, altitude hold, cap,
    fixed speed. The depth bands are not applied again: they were decided on the model's depth
    when the goal was made, and the goal's distance already reflects them. Within
    arrive_tolerance_m of the goal the plan holds. If the goal is directly above or below (no
    horizontal component), the plan keeps the heading.
    """
    dn, de, dd = goal.x_m - pose.x_m, goal.y_m - pose.y_m, goal.z_m - pose.z_m
    if math.sqrt(dn * dn + de * de + dd * dd) < arrive_tolerance_m:
        return hold_plan(PlanKind.REPLAN)
    forward, right, up = ned_to_heading(dn, de, dd, pose.yaw_deg)
    yaw_deg, right, forward, up = _shape_move(right, forward, up, profile)
    dist = math.sqrt(right * right + forward * forward + up * up)
    return _assemble(PlanKind.REPLAN, yaw_deg, right, forward, up, min(dist, profile.cap_m), profile)


def go_world_point(
    go: Go,
    capture_pose: Pose,
    camera: CameraProfile,
    canonical_focal_px: float | None = None,
    attitude: CameraAttitude = LEVEL_CAMERA,
) -> tuple[float, float, float]:
    """The point a `go` aimed at, in world NED: the pixel back-projected at the model's (metric)
    depth from the pose (and camera attitude) at capture (docs/controller.md#go steps 1–2, before
    any turn, cap or band)."""
    depth_m = metric_depth_m(go.depth_m, camera, canonical_focal_px)
    right, forward, up = back_project(go.point, depth_m, camera, attitude)
    dn, de, dd = heading_to_ned(forward, right, up, capture_pose.yaw_deg)
    return capture_pose.x_m + dn, capture_pose.y_m + de, capture_pose.z_m + dd


def plan_toward_point(
    point_ned: tuple[float, float, float], pose: Pose, profile: FlightProfile
) -> ControlPlan:
    """A late `go` re-expressed from the current pose toward the point it aimed at (fixed in the world).

    Steps 3–7 of docs/controller.md#go from here: the displacement to the point, the deadband turn,
    the altitude hold, step = min(dist, cap), then the depth bands on the point's depth as seen from here (its
    forward distance after the turn), so a late reply still gets a full capped step toward a far
    point and still brakes near one.
    """
    dn, dd_e, dd = point_ned[0] - pose.x_m, point_ned[1] - pose.y_m, point_ned[2] - pose.z_m
    forward, right, up = ned_to_heading(dn, dd_e, dd, pose.yaw_deg)
    yaw_deg, right, forward, up = _shape_move(right, forward, up, profile)
    dist = math.sqrt(right * right + forward * forward + up * up)
    return _assemble(
        PlanKind.REPLAN, yaw_deg, right, forward, up, _banded_step_m(dist, forward, profile), profile
    )
