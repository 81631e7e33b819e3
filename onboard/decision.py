"""The decision loop's step: capture a stamped frame, ask the pilot, turn the action into a plan.

Rate-jitter tolerance (docs/safety.md#latency-compensation): every action carries its frame's pose, so a late
`go` is re-expressed from the current pose toward the point it fixed in the world at capture, and a
late `rotate` toward the heading it meant; a reply older than its deadline (plan replies get a longer
one) is discarded and counted; a missed or malformed decision holds rather than repeating stale motion.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import msgspec

from common.actions import Action, Go, Rotate, action_name
from common.camera import CameraProfile
from common.enums import StrEnum
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose, wrap_deg
from models.pilot import Decision, FailureKind, Observation
from onboard.controller import (
    ControlPlan,
    PlanKind,
    go_world_goal,
    go_world_point,
    hold_plan,
    plan_action,
    plan_toward,
    plan_toward_point,
    turn_plan,
)
from onboard.latency_compensation import InViewState, in_view_plan
from onboard.profiles import FlightProfile

log = logging.getLogger(__name__)


class StageLatencies(msgspec.Struct):
    """Seconds spent in each stage of one decision: capture (camera read), preprocess (the pilot
    building its request: frame encoding, prompt), model (the model call), parse (the reply into an
    action), plan (checks, controller plan, hand-over to the actuation loop). A pilot that does not
    report preprocess/parse (the baseline) has them inside model."""

    capture_s: float = 0.0
    preprocess_s: float = 0.0
    model_s: float = 0.0
    parse_s: float = 0.0
    plan_s: float = 0.0
    total_s: float = 0.0
    frame_age_s: float = 0.0  # capture -> plan handed to the actuation loop, on the runtime clock

    @property
    def pilot_s(self) -> float:
        """The whole pilot call: preprocess + model + parse."""
        return self.preprocess_s + self.model_s + self.parse_s


@dataclass
class DecisionCounters:
    decisions: int = 0
    executed: int = 0
    malformed: int = 0
    stale: int = 0
    backend_errors: int = 0
    capture_errors: int = 0
    by_action: dict[str, int] = field(default_factory=dict)

    def count_failure(self, discarded: DiscardReason) -> bool:
        """Count a discard that is the pilot's failure (backend, malformed, stale; superseded is none);
        True when it was one."""
        if discarded == DiscardReason.BACKEND:
            self.backend_errors += 1
        elif discarded == DiscardReason.MALFORMED:
            self.malformed += 1
        elif discarded == DiscardReason.STALE:
            self.stale += 1
        else:
            return False
        return True


@dataclass
class PendingDecision:
    """A pilot's reply with what it was asked on, not applied yet (lock-step charges its latency first)."""

    frame: Frame
    observation: Observation
    decision: Decision
    capture_clock_s: float
    stages: StageLatencies
    wall_start: float


@dataclass
class RunResult:
    """How a run ended (OnboardRuntime.result)."""

    reason: str  # why the run ended
    steps: int
    declarations: int
    qualifying_declaration_t: float | None
    counters: DecisionCounters
    served_rate_hz: float
    mode: str
    served_jitter_ms: float = 0.0  # spread of the served tick period (0 in lock-step: no wall clock)


class LatencyGoal(StrEnum):
    """What a late `go` flies toward (RuntimeConfig.latency_goal; the config's strings are the values)."""

    POINT = "point"  # the point it aimed at alone (the default before issue 25)
    # the default: that point, the move cut where it would leave the image, a far jump off the
    # target's track held (onboard.latency_compensation)
    IN_VIEW = "in-view"
    STEP = "step"  # the end of the capped step planned at capture (kept for comparison)


LATENCY_GOALS = LatencyGoal.values()
DEFAULT_LATENCY_GOAL = LatencyGoal.IN_VIEW  # bench_jitter, issue 25: never meaningfully worse than naive


class DiscardReason(StrEnum):
    """Why a reply is not executed: steps.jsonl's `discarded` and the `discarded` event's `why`."""

    BACKEND = "backend"  # no action: the backend failed (the pilot's FailureKind.BACKEND)
    MALFORMED = "malformed"  # no action: the reply (or the pilot) gave nothing usable
    SUPERSEDED = "superseded"  # asked before an operator's GoTo took over
    STALE = "stale"  # older than its deadline


def discard_reason(decision: Decision, superseded: bool, late: bool) -> DiscardReason | None:
    """Why a reply is not executed, or None: backend / malformed (no action, by the pilot's
    FailureKind), superseded (asked before an operator's GoTo), stale (older than its deadline)."""
    if decision.action is None:
        backend_failed = decision.failure_kind is FailureKind.BACKEND
        return DiscardReason.BACKEND if backend_failed else DiscardReason.MALFORMED
    if superseded:
        return DiscardReason.SUPERSEDED
    return DiscardReason.STALE if late else None


def replan_from_current(
    action: Action,
    plan: ControlPlan,
    capture_pose: Pose,
    current_pose: Pose,
    profile: FlightProfile,
    goal: LatencyGoal = LatencyGoal.POINT,
    camera: CameraProfile | None = None,
    canonical_focal_px: float | None = None,
    capture_attitude: CameraAttitude = LEVEL_CAMERA,
) -> ControlPlan:
    """Re-express a plan made at `capture_pose` (camera at `capture_attitude`) from `current_pose`
    (latency compensation).

    A late `go` flies from here toward what it meant, fixed in the world at capture: goal "point"
    (default) is the point the model aimed at, with the cap and bands applied again from here (a
    reply that arrives after the drone flew part of a step still gets a full step toward a far
    target); goal "step" is the end of the capped step planned at capture (last session's reading:
    under jitter the drone reaches that end early and hovers until the next reply).
    """
    if plan.hold:
        return plan  # a brake or a hold stays one: never fly back to where the frame was taken
    if isinstance(action, Go) and goal == LatencyGoal.POINT:
        if camera is None:
            raise ValueError("latency goal 'point' needs the camera profile to back-project the point")
        point = go_world_point(action, capture_pose, camera, canonical_focal_px, capture_attitude)
        return plan_toward_point(point, current_pose, profile)
    if isinstance(action, Go):
        return plan_toward(go_world_goal(plan, capture_pose), current_pose, profile)
    if isinstance(action, Rotate):
        remaining_deg = wrap_deg(capture_pose.yaw_deg + plan.yaw_deg - current_pose.yaw_deg)
        if abs(remaining_deg) < 0.5:
            return hold_plan(PlanKind.ROTATE)
        limit = profile.rotate_limit_deg
        remaining_deg = max(-limit, min(limit, remaining_deg))
        rate = profile.yaw_rate_deg_s if remaining_deg > 0 else -profile.yaw_rate_deg_s
        return turn_plan(
            PlanKind.ROTATE, remaining_deg, rate, abs(remaining_deg) / profile.yaw_rate_deg_s, hold=False
        )
    return plan


def make_plan(
    action: Action,
    frame_pose: Pose,
    current_pose: Pose | None,
    camera: CameraProfile,
    profile: FlightProfile,
    canonical_focal_px: float | None,
    compensate: bool,
    latency_goal: LatencyGoal = DEFAULT_LATENCY_GOAL,
    floor_z_m: float | None = None,
    *,
    frame_attitude: CameraAttitude = LEVEL_CAMERA,
    in_view: InViewState | None = None,
    now_s: float = 0.0,
    seen_s: float | None = None,
) -> ControlPlan:
    """The plan for `action`; when compensating a late reply, re-expressed from current_pose toward
    the latency goal. frame_attitude: the camera's at capture (Frame.camera_attitude), with which a
    `go` is projected. For "in-view": floor_z_m, the altitude floor as world NED z (the governor's);
    `in_view`, the run's InViewState (None: the cut alone), with the runtime clock's now_s and the
    frame's capture time seen_s (None: now_s)."""
    plan = plan_action(action, camera, profile, canonical_focal_px, frame_attitude)
    if in_view is not None and not isinstance(action, Go):
        in_view.other_action(isinstance(action, Rotate))
    if not (compensate and current_pose is not None):
        return plan
    goal = LatencyGoal.POINT if latency_goal == LatencyGoal.IN_VIEW else latency_goal
    plan = replan_from_current(
        action, plan, frame_pose, current_pose, profile, goal, camera, canonical_focal_px, frame_attitude
    )
    if latency_goal == LatencyGoal.IN_VIEW and isinstance(action, Go):
        point = go_world_point(action, frame_pose, camera, canonical_focal_px, frame_attitude)
        seen = now_s if seen_s is None else seen_s
        row = action.point[1] / 1000.0  # where the model saw it in its frame
        plan = in_view_plan(
            plan,
            point,
            current_pose,
            camera,
            floor_z_m,
            in_view,
            now_s,
            seen,
            row,
            profile=profile,
            attitude=frame_attitude,
        )
    return plan


def count_action(counters: DecisionCounters, action: Action) -> None:
    name = action_name(action)
    counters.by_action[name] = counters.by_action.get(name, 0) + 1


def wall_timer() -> float:
    return time.perf_counter()
