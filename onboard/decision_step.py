"""The decision step: capture a stamped frame, ask the pilot, apply its reply (docs/safety.md#two-loops).

`DecisionStep` is what a decide loop (onboard.decide_loop, real time or lock-step) runs once per
decision, and what a ground station's remote action goes through: the same tolerance rules for both
(a stale reply is discarded and counted, a late one re-expressed from the current pose), the same
flight state (onboard.flight_state), the same log lines. It holds its collaborators by name and
never the runtime.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from common.actions import Action, Finished, Think
from common.camera import CameraProfile
from common.clock import Clock
from common.interfaces import Telemetry
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose
from models.pilot import Decision, Observation, Pilot
from onboard.actuation import Actuator
from onboard.capture import FrameCapture
from onboard.controller import ControlPlan, PlanKind, hold_plan
from onboard.decision import (
    PendingDecision,
    StageLatencies,
    count_action,
    discard_reason,
    make_plan,
    wall_timer,
)
from onboard.flight_state import FlightState
from onboard.latency_compensation import InViewState
from onboard.operator import Operator
from onboard.pilot_call import PilotCaller
from onboard.profiles import FlightProfile
from onboard.reporter import StepReporter
from onboard.runtime_config import RuntimeConfig
from onboard.safety import Mode, SafetyGovernor
from onboard.setpoints import MotionSchedule

log = logging.getLogger(__name__)


def guarded(pilot: Pilot) -> Callable[[Observation], Decision]:
    """pilot.decide, with a pilot's exception turned into a failed decision: a pilot bug must not
    crash the drone."""

    def decide(observation: Observation) -> Decision:
        try:
            return pilot.decide(observation)
        except Exception as exc:
            log.exception("pilot raised")
            return Decision(action=None, raw="", error=f"pilot raised {type(exc).__name__}: {exc}")

    return decide


@dataclass(eq=False)
class DecisionStep:
    """One decision, from frame to plan, and the remote actions of the one-context fleet mode."""

    config: RuntimeConfig
    clock: Clock
    state: FlightState
    governor: SafetyGovernor
    actuator: Actuator
    capture: FrameCapture
    pilot_caller: PilotCaller
    reporter: StepReporter
    operator: Operator
    camera_profile: CameraProfile
    profile: FlightProfile
    canonical_focal_px: float | None
    telemetry: Callable[[], Telemetry]  # the newest sample, asked of the vehicle when none is cached
    has_truth: bool  # the runtime measures its declarations itself (a simulator's ground truth)

    def __post_init__(self) -> None:
        self.in_view = InViewState()  # latency goal "in-view": its release and its target track

    def observation(self, frame: Frame, prearm: bool = False) -> Observation:
        history, images = self.state.recent()
        return Observation(
            image=frame.image,
            instruction=self.state.instruction,
            history=history,
            history_images=images,
            camera=self.camera_profile.scaled_to(frame.width_px, frame.height_px),
            camera_attitude=frame.camera_attitude,
            delta_m=self.config.delta_m,
            think=self.config.think,
            prearm=prearm,
        )

    def capture_and_decide(self) -> PendingDecision:
        """Capture a stamped frame and ask the pilot (the slow part; nothing is executed yet)."""
        stages = StageLatencies()
        w0 = wall_timer()
        capture_clock_s = self.clock.now()
        plan_step = self.config.think and isinstance(self.state.last_action(), Think)
        # A valid action is due from here (the camera read included: a hung camera is silence too).
        self.governor.pilot_asked(
            capture_clock_s, self.config.plan_deadline_s if plan_step else self.config.action_deadline_s
        )
        frame = self.capture.read(capture_clock_s)
        # Sent at once, so the operator sees what the pilot sees while it decides.
        self.reporter.frame(frame)
        w1 = wall_timer()
        stages.capture_s = w1 - w0
        observation = self.observation(frame)
        decision = self.pilot_caller.call(observation)  # raises PilotCallAbandoned when the run ends first
        pilot_s = wall_timer() - w1
        stages.preprocess_s = decision.preprocess_s or 0.0
        stages.parse_s = decision.parse_s or 0.0
        stages.model_s = max(0.0, pilot_s - stages.preprocess_s - stages.parse_s)
        return PendingDecision(frame, observation, decision, capture_clock_s, stages, w0)

    def apply_decision(self, pending: PendingDecision) -> ControlPlan | None:
        """Execute (or discard) a pilot's reply; returns the plan handed to the actuation loop."""
        w2 = wall_timer()
        stages, decision, frame = pending.stages, pending.decision, pending.frame
        step = self.state.count_decision()
        age_s = self.clock.now() - pending.capture_clock_s
        deadline_s = (
            self.config.plan_deadline_s if pending.observation.plan_step else self.config.action_deadline_s
        )
        action = decision.action
        plan: ControlPlan | None = None
        superseded = pending.capture_clock_s < self.state.goto_s  # captured before a GoTo took over
        discarded = discard_reason(decision, superseded, age_s > deadline_s)
        if discarded is not None and self.state.counters.count_failure(discarded):
            why = f"stale reply ({age_s:.2f} s > {deadline_s:.2f} s)" if discarded == "stale" else None
            self.governor.pilot_failed(why or f"{discarded}: {decision.error}")
        if discarded == "superseded":
            self.reporter.event("discarded", why=discarded, raw=decision.logged_raw, age_s=age_s)
        elif discarded is not None:
            # A missed decision holds: never keep flying a plan the pilot has not confirmed.
            self.actuator.set_schedule(MotionSchedule(hold_plan(PlanKind.MISSED), self.clock.now()))
            self.reporter.event(
                "discarded", why=discarded, error=decision.error, raw=decision.logged_raw, age_s=age_s
            )
        else:
            assert action is not None
            # First: a valid action may lift a failsafe hold (no ground station), so it is executed.
            self.governor.pilot_ok(self.clock.now())
            plan = self.execute(action, frame)
            stages.plan_s = wall_timer() - w2
        stages.total_s = stages.capture_s + stages.pilot_s + (wall_timer() - w2)
        stages.frame_age_s = self.clock.now() - pending.capture_clock_s
        self.state.last_stages = stages
        self.reporter.step(frame, decision, discarded, stages, step, self.config.loop, self.state.step_order)
        return plan

    def apply_remote(
        self,
        action: Action,
        capture_pose: Pose,
        capture_age_s: float,
        call_id: str | None = None,
        raw: str = "",
        camera_attitude: CameraAttitude = LEVEL_CAMERA,
    ) -> bool:
        """An action chosen by the ground station (one-context fleet mode), with its frame's pose
        (and its camera's attitude, where the caller has the frame: lock-step).

        The same tolerance rules as the pilot's: stale -> discarded and counted, else re-expressed.
        Logged as a step (source "remote", the multi-drone call's call_id).
        """
        deadline_s = (
            self.config.plan_deadline_s if isinstance(action, Think) else self.config.action_deadline_s
        )
        if capture_age_s > deadline_s:
            self.state.counters.stale += 1
            self.governor.pilot_failed(f"stale remote action ({capture_age_s:.2f} s)")
            self.reporter.event("discarded", why="stale", source="remote", age_s=capture_age_s)
            return False
        frame = Frame(
            image=None,
            capture_time_s=self.clock.now() - capture_age_s,
            pose=capture_pose,
            camera_attitude=camera_attitude,
        )
        self.state.count_decision()
        self.execute(action, frame)
        self.governor.pilot_ok()
        self.reporter.remote_step(action, call_id, raw, self.config.loop, self.state.step_order)
        return True

    def execute(self, action: Action, frame: Frame) -> ControlPlan:
        """Plan `action` (re-expressed from the current pose when late), fly it, remember it."""
        current = self.actuator.last_telemetry
        compensate = self.config.loop == "tolerant" and self.config.compensate_latency
        plan = make_plan(
            action,
            frame.pose,
            current.pose if current is not None else None,
            self.camera_profile,
            self.profile,
            self.canonical_focal_px,
            compensate,
            self.config.latency_goal,
            self.governor.home.z_m - self.config.safety.altitude_floor_m,  # the floor, as NED z
            frame_attitude=frame.camera_attitude,
            in_view=self.in_view,
            now_s=self.clock.now(),
            seen_s=frame.meta.get("capture_clock_s"),
        )
        if self.governor.mode == Mode.FLYING:
            self.actuator.set_schedule(MotionSchedule(plan, self.clock.now()))
        self.state.remember(action, frame.image)
        self.state.counters.executed += 1
        count_action(self.state.counters, action)
        if isinstance(action, Finished):
            self._declare()
        self.operator.count_order_step()
        return plan

    def _declare(self) -> None:
        """A `finished` was executed: measure the declaration now (docs/verifier.md#declarations)."""
        t, qualifies = self.reporter.declaration(self.telemetry, self.config.delta_m)
        self.state.declared(t, qualifies, self.config.t_max_s)
        if not self.has_truth:
            self._declared_without_truth()

    def _declared_without_truth(self) -> None:
        """Nothing on board can judge this declaration: the operator does (onboard.judgement)."""
        policy = self.config.on_declaration
        if policy == "continue":
            return
        if policy == "land":
            self.operator.land("declared (on_declaration: land)")
            return
        if self.state.judgement.begin():
            self.operator.hold("declared: waiting for the operator's judgement")
            self.reporter.event("awaiting_judgement", wait_s=self.config.judgement_wait_s)


def prearm_observation(step: DecisionStep, frame: Frame, instruction: str) -> Observation:
    """The pre-arm check's question: a real frame, and `instruction` when the drone has none yet."""
    observation = step.observation(frame, prearm=True)
    if not observation.instruction.strip():
        observation = replace(observation, instruction=instruction)
    return observation
