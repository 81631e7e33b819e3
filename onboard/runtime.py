"""The onboard runtime: flies one drone (camera -> pilot -> controller -> vehicle), safely, on a clock.

Two loops (docs/safety.md#two-loops): the actuation loop (onboard.actuation) streams the current
setpoint at a fixed rate in its own thread and applies the safety governor on every tick; the
decision loop here captures a stamped frame, asks the pilot, and hands the controller's plan over.
The runtime keeps the life cycle and the decision step; onboard.operator obeys the commands,
onboard.reporter logs and publishes, onboard.decide_loop runs the loop (shared with lock-step).
The two loop modes, tolerant and naive, are RuntimeConfig.loop's (onboard.runtime_config).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any

from common.actions import Action, Finished, Think, action_to_dict
from common.camera import camera_profile
from common.clock import Clock
from common.errors import ConfigError, PrearmRefused
from common.interfaces import Camera, Vehicle
from common.pose import Frame, Pose
from common.truth import GroundTruth
from models.pilot import Decision, Observation, Pilot
from onboard.actuation import ActuationThread, Actuator
from onboard.capture import FrameCapture
from onboard.controller import ControlPlan, PlanKind, hold_plan
from onboard.decide_loop import RealTimePacer, loop_step, plan_duration_s, run_loop
from onboard.decision import (
    DecisionCounters,
    PendingDecision,
    RunResult,
    StageLatencies,
    count_action,
    discard_reason,
    make_plan,
    wall_timer,
)
from onboard.judgement import JudgementWait
from onboard.latency_compensation import InViewState
from onboard.operator import Operator
from onboard.pilot_call import PilotCallAbandoned, PilotCaller
from onboard.profiles import flight_profile
from onboard.realtime import ThreadNice
from onboard.recorder import FlightRecorder
from onboard.reporter import Publisher, RuntimeState, StepReporter
from onboard.runtime_config import RuntimeConfig
from onboard.safety import Mode, SafetyGovernor
from onboard.safety_config import SafetyConfig
from onboard.setpoints import MotionSchedule

__all__ = ["OnboardRuntime", "PendingDecision", "Publisher", "RunResult", "RuntimeConfig", "plan_duration_s"]

log = logging.getLogger(__name__)

HISTORY_LENGTH = 5
# The pre-arm check's instruction when the drone starts without one (it waits for the ground
# station's): a pilot behind an HTTP server (serve-pilot, any OpenAI-compatible one) rejects a
# prompt with an empty "Instruction:" line, and the check would then refuse a healthy pilot.
PREARM_INSTRUCTION = "look around"
DEFAULT_TAKEOFF_ALTITUDE_M = 3.0
COLLIDED_REASON = "collided"  # the end reason's start when the vehicle reported a collision
VEHICLE_LOST_REASON = "vehicle connection lost"  # the end reason's start (dronecats onboard exits 4)
ACCEPTED_REASON = "declared: accepted by the operator"
UNJUDGED_REASON = "declared: no judgement"  # a declaration's wait for the operator's verdict ran out


def check_takeoff_altitude(takeoff_altitude_m: float, safety: SafetyConfig) -> None:
    """The take-off altitude (the config's, the flight profile's or the default) inside the envelope's
    altitudes: the take-off goes to the vehicle directly, and nothing else may climb past the ceiling."""
    floor_m, ceiling_m = safety.altitude_floor_m, safety.altitude_ceiling_m
    if takeoff_altitude_m > ceiling_m:
        raise ConfigError(
            f"takeoff_altitude_m={takeoff_altitude_m:g} is above safety.altitude_ceiling_m={ceiling_m:g}: "
            "lower the take-off or raise the ceiling"
        )
    if takeoff_altitude_m < floor_m:
        raise ConfigError(
            f"takeoff_altitude_m={takeoff_altitude_m:g} is below safety.altitude_floor_m={floor_m:g}: "
            "raise the take-off or lower the floor"
        )


class OnboardRuntime:
    def __init__(
        self,
        config: RuntimeConfig,
        vehicle: Vehicle,
        camera: Camera,
        pilot: Pilot,
        clock: Clock,
        recorder: FlightRecorder,
        truth: GroundTruth | None = None,
        publisher: Publisher | None = None,
    ) -> None:
        self.config = config
        self.vehicle = vehicle
        self.pilot = pilot
        self.clock = clock
        self.recorder = recorder
        self.truth = truth
        self.profile = flight_profile(config.flight_profile)
        self.camera_profile = camera_profile(config.camera or self.profile.camera)
        self.canonical_focal_px = config.canonical_focal_px or pilot.canonical_focal_px(self.camera_profile)
        check_takeoff_altitude(self.takeoff_altitude_m, config.safety)  # before anything connects
        self.governor = SafetyGovernor(config.safety, home=Pose(0.0, 0.0, 0.0, 0.0), clock=clock.now)
        self.reporter = StepReporter(
            config.drone, clock, recorder, truth, publisher, self.governor, self._state, config.save_frames,
            config.rate_hz,
        )  # fmt: skip
        self.operator = Operator(self, config.instruction)
        self.actuator = Actuator(vehicle, self.governor, self.reporter.on_clamp, self.reporter.on_telemetry)
        self.actuator.on_goto = self.operator.on_goto
        self.actuation = ActuationThread(
            self.actuator,
            clock,
            config.rate_hz,
            rt_priority=config.actuation_rt_priority,
            stall_s=config.safety.stall_s,
        )
        self.actuation.on_stall = self._stalled
        self.counters = DecisionCounters()
        self.capture = FrameCapture(
            camera, config.max_frame_age_s, clock, self.governor, self.actuator, self.counters, self.reporter
        )
        self.history: list[Action] = []
        self.in_view = InViewState()  # latency goal "in-view": its release and its target track
        self.history_images: list[Any] = []
        self.steps = 0
        self.declarations = 0
        self.qualifying_t: float | None = None
        self._stop = threading.Event()
        self.last_stages = StageLatencies()
        self.thread_nice = ThreadNice()  # of the runtime's own threads (applied by start)
        # In real time the pilot thinks on a thread of its own, so a stuck model cannot hold the run.
        self.pilot_caller = PilotCaller(self._decide_guarded, self.stop_reason)
        self.judgement = JudgementWait(clock.now)  # a declaration without truth waits for a verdict

    @property
    def camera(self) -> Camera:
        return self.capture.camera

    @property
    def instruction(self) -> str:
        """What the pilot is asked to do (the operator's instruction or order; "" after a GoTo)."""
        return self.operator.instruction

    @property
    def takeoff_altitude_m(self) -> float:
        """The config's, else the flight profile's (tello 1.5 m), else 3 m."""
        return self.config.takeoff_altitude_m or self.profile.takeoff_altitude_m or DEFAULT_TAKEOFF_ALTITUDE_M

    def t(self) -> float:
        """Episode time: seconds since the runtime started, on its clock."""
        return self.reporter.t()

    def event(self, kind: str, **fields: Any) -> None:
        self.reporter.event(kind, **fields)

    def _state(self) -> RuntimeState:
        last = self.history[-1] if self.history else None
        actuation = self.actuation
        return RuntimeState(
            actuation.served_rate_hz(), actuation.served_jitter_ms(), self.last_stages, self.instruction, last
        )

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self, threaded: bool = True) -> None:
        """Connect, pre-arm check, arm, take off, start the actuation loop (unless a lock-step
        driver ticks it: threaded=False, and then takeoff only starts the climb)."""
        self.pilot_caller.threaded = threaded
        self.vehicle.connect()
        home = self.vehicle.telemetry().pose
        self.governor.home = home
        self.reporter.run_started(
            self.pilot, self.instruction, self.config, self.profile, self.camera_profile, home
        )
        if self.config.prearm_check and not self.config.remote:  # remote: the model is not aboard
            self.prearm_check()
        self.vehicle.arm()
        altitude = self.takeoff_altitude_m
        self.vehicle.takeoff(altitude)
        self.reporter.t0_s = self.clock.now()
        # Flying from here: the failsafes time the telemetry, and any source not heard yet, from now.
        self.governor.flight_started(self.clock.now())
        if threaded:
            # This thread (the decision loop's) and the threads it starts now inherit the nice value.
            self.thread_nice.apply(self.config.nice)
            self.reporter.start_threads()
            self.actuation.start()
            self.reporter.jetson.start()
        self.event(
            "started",
            takeoff_altitude_m=altitude,
            actuation_scheduling=self.actuation.scheduling,
            nice=self.thread_nice.label,
        )

    def prearm_check(self) -> None:
        """The pilot must be warm and return a valid action on a real frame before the motors arm."""
        frame = self.camera.read()
        observation = replace(self._observation(frame), prearm=True)
        if not observation.instruction.strip():
            observation = replace(observation, instruction=PREARM_INSTRUCTION)
        start = wall_timer()
        try:
            decision = self.pilot_caller.call(observation)
        except PilotCallAbandoned as exc:
            self.event("prearm_failed", error=f"stopped while the pilot thought ({exc.reason})")
            raise PrearmRefused(
                f"pre-arm check: the run was stopped ({exc.reason}) before the pilot answered"
            ) from None
        elapsed = wall_timer() - start
        if decision.action is None:
            self.event("prearm_failed", error=decision.error, raw=decision.logged_raw, latency_s=elapsed)
            raise PrearmRefused(f"pre-arm check: the pilot returned no valid action ({decision.error})")
        self.event("prearm_ok", action=action_to_dict(decision.action), latency_s=elapsed)

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> RunResult:
        """Decide until the instruction is done, T_max, max_steps, a stop, or a landing."""
        pacer = RealTimePacer(self)
        reason = run_loop(self.stop_reason, lambda: loop_step(self, pacer), self.finish)
        return self.result(reason)

    def stop_reason(self) -> str | None:
        """Why the run must end now, or None to go on deciding."""
        if self.judgement.accepted:
            return ACCEPTED_REASON
        if self._stop.is_set():
            return "stopped"
        lost = self.actuation.vehicle_lost()
        if lost is not None:
            return f"{VEHICLE_LOST_REASON}: {lost}"
        if self.t() - self.judgement.held_s() >= self.config.t_max_s:  # time held for a verdict excluded
            return "t_max"
        waited_s = self.judgement.waiting_s()
        if waited_s is not None and waited_s >= self.config.judgement_wait_s:
            return f"{UNJUDGED_REASON} after {self.config.judgement_wait_s:g} s"
        if self.config.max_steps is not None and self.steps >= self.config.max_steps:
            return "max_steps"
        if self.governor.collision is not None:  # the episode has failed: never fly on past it
            return f"{COLLIDED_REASON}: {self.governor.collision}"
        mode = self.governor.mode
        if mode in (Mode.LANDING, Mode.ESTOP):
            return f"{mode.value}: {self.governor.reason}"
        if self.qualifying_t is not None and self.config.stop_on_declaration:
            return "declared"
        return None

    def can_decide(self) -> bool:
        """Flying with an instruction; or holding for a failsafe that a fresh valid pilot action may
        lift (no ground station: the loop keeps reading frames and asking, nothing is executed)."""
        mode_ok = self.governor.mode == Mode.FLYING or self.governor.pilot_may_lift()
        return mode_ok and bool(self.instruction)

    def result(self, reason: str) -> RunResult:
        served, mode = self.actuation, self.governor.mode.value
        rate_hz, jitter_ms = served.served_rate_hz(), served.served_jitter_ms()
        return RunResult(
            reason, self.steps, self.declarations, self.qualifying_t, self.counters, rate_hz, mode, jitter_ms
        )

    def finish(self, reason: str, threaded: bool = True) -> None:
        self.actuator.set_schedule(None)
        self.event("finished_run", reason=reason, counters=self.counters.__dict__)
        if self.config.land_at_end and self.governor.mode not in (Mode.LANDING, Mode.ESTOP):
            self.governor.land(f"end of run ({reason})", planned=True)
        if threaded:
            # The end-of-run record first: a supervisor that kills the process while the vehicle
            # descends loses only the touchdown line. Then the actuation loop flies the landing down
            # (a lock-step driver ticks it itself).
            self._record_end(reason)
            touchdown = self._await_touchdown()
            if touchdown is not None:
                self.recorder.write_metadata(run={"touchdown": touchdown})
            self.actuation.stop()
            self.reporter.stop_threads()
            self.thread_nice.restore()
        self.reporter.final_telemetry(self.actuator.last_telemetry, self.actuator.last_sent)
        self._record_end(reason)

    def _stalled(self, now_s: float, gap_s: float) -> None:
        """The actuation loop found a gap of its own: the governor excuses it, the log names it."""
        self.governor.stalled(gap_s, now_s)
        self.event("stall", gap_s=round(gap_s, 3))

    def _record_end(self, reason: str) -> None:
        self.reporter.run_finished(
            self.result(reason), self.capture.stale_frames, self.actuation.scheduling, self.thread_nice.label
        )

    def _await_touchdown(self) -> dict[str, Any] | None:
        """A landing (or e-stop) was ordered: keep the actuation loop flying it until the vehicle
        says it is down (landed or disarmed), at most touchdown_wait_s; log and return what was seen."""
        if self.governor.mode not in (Mode.LANDING, Mode.ESTOP):
            return None  # holding at the end (land_at_end: false): nothing to wait for
        start_s = self.clock.now()
        deadline_s = start_s + self.config.touchdown_wait_s
        down = False
        while self.actuation.error is None:
            telemetry = self.actuator.last_telemetry
            down = telemetry is not None and (telemetry.landed or not telemetry.armed)
            if down or self.clock.now() >= deadline_s:
                break
            self.clock.sleep(0.05)
        telemetry = self.actuator.last_telemetry
        home_m = self.governor.home.altitude_m
        why = None if down else ("vehicle connection failed" if self.actuation.error else "not seen in time")
        seen = {
            "landed": down,
            "waited_s": round(self.clock.now() - start_s, 2),
            "altitude_m": None if telemetry is None else round(telemetry.pose.altitude_m - home_m, 2),
            "why": why,
        }
        self.event("touchdown", **seen)
        if not down:
            log.warning("touchdown not seen %.1f s after the landing order (%s)", seen["waited_s"], why)
        return seen

    # ---- the decision step --------------------------------------------------------------------
    def _observation(self, frame: Frame) -> Observation:
        return Observation(
            image=frame.image,
            instruction=self.instruction,
            history=tuple(self.history[-HISTORY_LENGTH:]),
            history_images=tuple(self.history_images[-HISTORY_LENGTH:]),
            camera=self.camera_profile.scaled_to(frame.width_px, frame.height_px),
            camera_attitude=frame.camera_attitude,
            delta_m=self.config.delta_m,
            think=self.config.think,
        )

    def capture_and_decide(self) -> PendingDecision:
        """Capture a stamped frame and ask the pilot (the slow part; nothing is executed yet)."""
        stages = StageLatencies()
        w0 = wall_timer()
        capture_clock_s = self.clock.now()
        plan_step = self.config.think and bool(self.history) and isinstance(self.history[-1], Think)
        # A valid action is due from here (the camera read included: a hung camera is silence too).
        self.governor.pilot_asked(
            capture_clock_s, self.config.plan_deadline_s if plan_step else self.config.action_deadline_s
        )
        frame = self.capture.read(capture_clock_s)
        # Sent at once, so the operator sees what the pilot sees while it decides.
        self.reporter.frame(frame)
        w1 = wall_timer()
        stages.capture_s = w1 - w0
        observation = self._observation(frame)
        decision = self.pilot_caller.call(observation)  # raises PilotCallAbandoned when the run ends first
        pilot_s = wall_timer() - w1
        stages.preprocess_s = decision.preprocess_s or 0.0
        stages.parse_s = decision.parse_s or 0.0
        stages.model_s = max(0.0, pilot_s - stages.preprocess_s - stages.parse_s)
        return PendingDecision(frame, observation, decision, capture_clock_s, stages, w0)

    def _decide_guarded(self, observation: Observation) -> Decision:
        try:
            return self.pilot.decide(observation)
        except Exception as exc:  # a pilot bug must not crash the drone: it is a failed decision
            log.exception("pilot raised")
            return Decision(action=None, raw="", error=f"pilot raised {type(exc).__name__}: {exc}")

    def apply_decision(self, pending: PendingDecision) -> ControlPlan | None:
        """Execute (or discard) a pilot's reply; returns the plan handed to the actuation loop."""
        w2 = wall_timer()
        stages, decision, frame = pending.stages, pending.decision, pending.frame
        self.counters.decisions += 1
        self.steps += 1
        age_s = self.clock.now() - pending.capture_clock_s
        deadline_s = (
            self.config.plan_deadline_s if pending.observation.plan_step else self.config.action_deadline_s
        )
        action = decision.action
        plan: ControlPlan | None = None
        superseded = pending.capture_clock_s < self.operator.goto_s  # captured before a GoTo took over
        discarded = discard_reason(decision, superseded, age_s > deadline_s)
        if discarded is not None and self.counters.count_failure(discarded):
            why = f"stale reply ({age_s:.2f} s > {deadline_s:.2f} s)" if discarded == "stale" else None
            self.governor.pilot_failed(why or f"{discarded}: {decision.error}")
        if discarded == "superseded":
            self.event("discarded", why=discarded, raw=decision.logged_raw, age_s=age_s)
        elif discarded is not None:
            # A missed decision holds: never keep flying a plan the pilot has not confirmed.
            self.actuator.set_schedule(MotionSchedule(hold_plan(PlanKind.MISSED), self.clock.now()))
            self.event("discarded", why=discarded, error=decision.error, raw=decision.logged_raw, age_s=age_s)
        else:
            assert action is not None
            # First: a valid action may lift a failsafe hold (no ground station), so it is executed.
            self.governor.pilot_ok(self.clock.now())
            plan = self.execute(action, frame)
            stages.plan_s = wall_timer() - w2
        stages.total_s = stages.capture_s + stages.pilot_s + (wall_timer() - w2)
        stages.frame_age_s = self.clock.now() - pending.capture_clock_s
        self.last_stages = stages
        self.reporter.step(
            frame, decision, discarded, stages, self.steps, self.config.loop, self.operator.step_order
        )
        return plan

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
        self.history.append(action)
        self.history_images.append(frame.image)
        del self.history[: -HISTORY_LENGTH * 4], self.history_images[:-HISTORY_LENGTH]
        self.counters.executed += 1
        count_action(self.counters, action)
        if isinstance(action, Finished):
            self._declare()
        self.operator.count_order_step()
        return plan

    def _declare(self) -> None:
        """A `finished` was executed: measure the declaration now (docs/verifier.md#declarations)."""
        self.declarations += 1
        telemetry = lambda: self.actuator.last_telemetry or self.vehicle.telemetry()  # noqa: E731
        t, qualifies = self.reporter.declaration(telemetry, self.config.delta_m)
        if qualifies and self.qualifying_t is None and t <= self.config.t_max_s:
            self.qualifying_t = t
        if self.truth is None:
            self._declared_without_truth()

    def _declared_without_truth(self) -> None:
        """Nothing on board can judge this declaration: the operator does (onboard.judgement)."""
        policy = self.config.on_declaration
        if policy == "continue":
            return
        if policy == "land":
            self.operator.land("declared (on_declaration: land)")
            return
        if self.judgement.begin():
            self.operator.hold("declared: waiting for the operator's judgement")
            self.event("awaiting_judgement", wait_s=self.config.judgement_wait_s)

    def judged(self, accept: bool, t: float) -> None:
        """The operator's verdict (Operator.judge): accept ends the run; reject flies on from a wait."""
        waited = self.judgement.end(accepted=accept)
        if accept:
            self.qualifying_t = t
        elif waited:
            self.governor.resume("declaration rejected: flying on")
