"""The onboard runtime: flies one drone (camera -> pilot -> controller -> vehicle), safely, on a clock.

Two loops (docs/safety.md#two-loops): the actuation loop (onboard.actuation) streams the current
setpoint at a fixed rate in its own thread and applies the safety governor on every tick; the
decision loop here captures a stamped frame, asks the pilot, and hands the controller's plan over.

Loop modes:
- "tolerant" (default): the drone keeps executing the current plan while the model thinks; each
  new plan is re-expressed from the pose at the time it arrives and replaces what is left of the
  current one; replies older than their deadline are discarded and counted; misses hold.
- "naive": capture -> wait for the model -> execute the plan fully -> repeat (for comparison).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Protocol

import cv2
import msgspec

from common.actions import Action, Finished, Go, Think, action_name, action_to_dict
from common.camera import CameraProfile, camera_profile
from common.clock import Clock
from common.errors import SafetyError, VehicleError
from common.interfaces import Camera, Telemetry, Vehicle
from common.logformat import DeclarationLine, StepLine, TraceLine, pose_list
from common.pose import Frame, Pose
from models.pilot import Decision, Observation, Pilot
from onboard.actuation import ActuationThread, Actuator
from onboard.config_limits import check_limits
from onboard.controller import ControlPlan, hold_plan
from onboard.decision import DecisionCounters, StageLatencies, count_action, wall_timer
from onboard.jetson import JetsonMonitor
from onboard.latency_compensation import DEFAULT_LATENCY_GOAL, LATENCY_GOALS, make_plan
from onboard.profiles import flight_profile
from onboard.realtime import restore_thread_nice, set_thread_nice
from onboard.recorder import FlightRecorder, RecorderConfig
from onboard.safety import VIDEO, Clamp, Mode, SafetyConfig, SafetyGovernor, Transition
from onboard.setpoints import MotionSchedule, Setpoint
from onboard.truth import GroundTruth, TruthSample
from onboard.vehicles.video import FrameFreshness

log = logging.getLogger(__name__)

HISTORY_LENGTH = 5
# The pre-arm check's instruction when the drone starts without one (it waits for the ground
# station's): a pilot behind an HTTP server (serve-pilot, any OpenAI-compatible one) rejects a
# prompt with an empty "Instruction:" line, and the check would then refuse a healthy pilot.
PREARM_INSTRUCTION = "look around"
DEFAULT_TAKEOFF_ALTITUDE_M = 3.0
NO_TRUTH = TruthSample(None, None, None, None)


class RuntimeConfig(msgspec.Struct, forbid_unknown_fields=True):
    drone: str = "Drone1"
    instruction: str = ""
    rate_hz: float = 20.0
    # SCHED_FIFO priority of the actuation thread (0: normal scheduling). Best effort: without root
    # or CAP_SYS_NICE it is logged and recorded, and the loop runs normally (onboard.realtime).
    actuation_rt_priority: int = 10
    # Nice value of the runtime's own threads (decision loop, telemetry poller, logging) while flying;
    # they hold the interpreter lock the actuation tick needs, so they must not be starved by other
    # work on the board. 0 leaves them as they are. Best effort, like the priority above.
    nice: int = -5
    loop: str = "tolerant"  # "tolerant" or "naive"
    action_deadline_s: float = 3.0  # an action reply older than this (since capture) is discarded
    # A frame whose source stamp (Frame.capture_time_s: the simulator's or camera's own clock) has not
    # advanced while this runtime's clock advanced this long is stale: never sent to the pilot, and
    # the video failsafe (safety.frame_stale_hold_s) holds (onboard.vehicles.video.FrameFreshness).
    max_frame_age_s: float = 1.0
    plan_deadline_s: float = 12.0  # plan-schema replies (after a think) get longer
    compensate_latency: bool = True  # tolerant loop: re-express late plans from the current pose
    # What a late `go` flies toward from the current pose: "in-view" (the point the model aimed at,
    # fixed in the world at capture, the move cut where it would leave the image;
    # onboard.latency_compensation), "point" (that point, cap and bands applied again: f304ac5's
    # default) or "step" (the end of the capped step planned at capture). Kept for comparison.
    latency_goal: str = DEFAULT_LATENCY_GOAL
    flight_profile: str = "outdoor"
    camera: str | None = None  # camera profile for back-projection; default: the flight profile's
    canonical_focal_px: float | None = None  # from the model profile's depth convention
    takeoff_altitude_m: float | None = None  # None: the flight profile's (tello 1.5 m), else 3 m
    delta_m: float = 5.0  # arrival radius: the verdict's δ, and the baseline pilot's arrival rule
    think: bool = True
    # Decisions start at most this often (0: back to back, as fast as the pilot answers). A fast
    # pilot (the baseline) needs no 20 Hz of decisions, and lock-step runs render a frame for each.
    min_decision_period_s: float = 0.0
    t_max_s: float = 300.0
    max_steps: int | None = None
    stop_on_declaration: bool = True  # stop at the first declaration within δ and visible (needs truth)
    # Remote mode (one-context fleet, docs/protocol.md#several-drones): the ground station's model decides for
    # this drone; the decision loop only captures and publishes frames (every min_decision_period_s) and
    # executes the RemoteActions that come back. The local pilot is never called.
    remote: bool = False
    land_at_end: bool = True
    prearm_check: bool = True
    save_frames: bool = True
    safety: SafetyConfig = msgspec.field(default_factory=SafetyConfig)
    recorder: RecorderConfig = msgspec.field(default_factory=RecorderConfig)

    def __post_init__(self) -> None:
        check_limits(self)  # onboard.config_limits: every number's valid range
        if self.loop not in ("tolerant", "naive"):
            raise ValueError(f"loop={self.loop!r} must be 'tolerant' or 'naive'")
        if self.rate_hz <= 0:
            raise ValueError(f"rate_hz={self.rate_hz} must be > 0")
        if self.latency_goal not in LATENCY_GOALS:
            raise ValueError(f"latency_goal={self.latency_goal!r} must be one of {LATENCY_GOALS}")
        if not -20 <= self.nice <= 19:
            raise ValueError(f"nice={self.nice} must be in -20..19")
        if not 0 <= self.actuation_rt_priority <= 99:
            raise ValueError(f"actuation_rt_priority={self.actuation_rt_priority} must be 0 (off) or 1..99")


def _builtins(value: Any) -> Any:
    if value is None:
        return None
    try:
        return msgspec.to_builtins(value)
    except TypeError:
        return str(value)


def _canonical_focal_px(pilot: Pilot, camera: CameraProfile) -> float | None:
    """f_c at the controller camera's width when the model profile declares canonical depth."""
    depth = getattr(getattr(pilot, "profile", None), "depth", None)
    if depth is None or getattr(depth, "convention", "metric") != "canonical":
        return None
    return float(depth.canonical_focal_px * camera.width_px / depth.canonical_width_px)


def _pilot_identity(pilot: Pilot) -> Any:
    """A model pilot's prompt identity (prompt file hashes + profile), None for the baseline."""
    profile, switches = getattr(pilot, "profile", None), getattr(pilot, "switches", None)
    if profile is None:
        return None
    from models.identity import prompt_identity

    return prompt_identity(profile, switches)


def _prompt_hashes(identity: Any) -> dict[str, str]:
    """{prompt file: sha256} from a model pilot's prompt identity (empty for a pilot without prompts)."""
    data = _builtins(identity)
    if isinstance(data, dict):
        for key in ("prompt_hashes", "prompt_files", "files"):
            if isinstance(data.get(key), dict):
                return {str(k): str(v) for k, v in data[key].items()}
    return {}


class StepExtras(StepLine):
    """steps.jsonl line with this runtime's additions (the fields of docs/logs.md are never renamed)."""

    # "malformed", "stale", "backend" or "superseded" (asked before an operator's GoTo): not executed
    discarded: str | None = None
    error: str | None = None
    stages: StageLatencies | None = None
    loop: str | None = None
    source: str = "pilot"  # "pilot", or "remote" for an action sent by the ground station
    # the commander's order this step executed under (docs/protocol.md#several-drones)
    order_id: str | None = None
    order_steps_left: int | None = None  # steps left on that order after this one (0: expired)


class Publisher(Protocol):
    """Where the runtime publishes what it does (the ground-station link); every method is optional."""

    def publish_step(self, step: dict[str, Any]) -> None: ...

    def publish_frame(self, frame: Frame) -> None: ...

    def publish_telemetry(self, telemetry: dict[str, Any]) -> None: ...

    def publish_declaration(self, declaration: dict[str, Any]) -> None: ...


@dataclass
class PendingDecision:
    frame: Frame
    observation: Observation
    decision: Decision
    capture_clock_s: float
    stages: StageLatencies
    wall_start: float


def plan_duration_s(plan: ControlPlan) -> float:
    return 0.0 if plan.hold else plan.yaw_duration_s + plan.duration_s


@dataclass
class RunResult:
    reason: str  # why the run ended
    steps: int
    declarations: int
    qualifying_declaration_t: float | None
    counters: DecisionCounters
    served_rate_hz: float
    mode: str


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
        self.camera = camera
        self.pilot = pilot
        self.clock = clock
        self.recorder = recorder
        self.truth = truth
        self.publisher = publisher
        self.profile = flight_profile(config.flight_profile)
        self.camera_profile = camera_profile(config.camera or self.profile.camera)
        self.canonical_focal_px = config.canonical_focal_px or _canonical_focal_px(pilot, self.camera_profile)
        self.governor = SafetyGovernor(config.safety, home=Pose(0.0, 0.0, 0.0, 0.0), clock=clock.now)
        self.governor.on_transition = self._on_transition  # every mode change into events.jsonl, at once
        recorder.on_disk_error = self._on_disk_error
        # The one staleness rule for every camera, on this runtime's clock (simulated in lock-step);
        # a camera that knows better (a stream's own max age) brings its own limit.
        self.freshness = FrameFreshness(float(getattr(camera, "max_frame_age_s", config.max_frame_age_s)))
        self.actuator = Actuator(vehicle, self.governor, self._on_clamp, self._on_telemetry)
        self.actuator.on_goto = self._on_goto
        self.actuation = ActuationThread(
            self.actuator, clock, config.rate_hz, rt_priority=config.actuation_rt_priority
        )
        self.counters = DecisionCounters()
        self.history: list[Action] = []
        self.history_images: list[Any] = []
        self.instruction = config.instruction
        self.t0_s = clock.now()
        self.steps = 0
        self.stale_frames = 0  # frames refused as stale (never sent to the pilot)
        self.declarations = 0
        self.qualifying_t: float | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._telemetry_every = 0
        self.last_stages = StageLatencies()
        self.jetson = JetsonMonitor()  # Jetson health for the telemetry; inert off a Jetson
        self._trace_worker: ThreadPoolExecutor | None = None
        self.order_id: str | None = None
        self._operator_goto_s = -float("inf")  # when the last GoTo was accepted (runtime clock)
        self.order_steps_left: int | None = None  # executed steps left on the current order
        self._pending_declaration: dict[str, Any] | None = None
        self._step_order: tuple[str | None, int | None] = (None, None)  # of the step being recorded
        self.nice: str | None = None  # what the runtime's own threads run with (set by start)
        self._nice_restore: int | None = None
        self._nice_thread: int | None = None

    @property
    def takeoff_altitude_m(self) -> float:
        """The config's, else the flight profile's (tello 1.5 m), else 3 m."""
        return self.config.takeoff_altitude_m or self.profile.takeoff_altitude_m or DEFAULT_TAKEOFF_ALTITUDE_M

    # ---- time ---------------------------------------------------------------------------------
    def t(self) -> float:
        """Episode time: seconds since the runtime started, on its clock."""
        return self.clock.now() - self.t0_s

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self, threaded: bool = True) -> None:
        """Connect, pre-arm check, arm, take off, start the actuation loop (unless a lock-step
        driver ticks it: threaded=False, and then takeoff only starts the climb)."""
        self.vehicle.connect()
        home = self.vehicle.telemetry().pose
        self.governor.home = home
        identity = _pilot_identity(self.pilot)
        # episode.json holds the episode record (written by whoever set the episode up) plus run
        # metadata under "run"; the onboard runtime only ever writes under "run".
        self.recorder.write_metadata(
            run={
                "pilot": getattr(self.pilot, "name", type(self.pilot).__name__),
                "model_profile": getattr(getattr(self.pilot, "profile", None), "name", None),
                "prompt_hashes": _prompt_hashes(identity),
                "identity": _builtins(identity),
                "drone": self.config.drone,
                "instruction": self.instruction,
                "onboard": msgspec.to_builtins(self.config),
                "flight_profile": msgspec.to_builtins(self.profile),
                "camera_profile": msgspec.to_builtins(self.camera_profile),
                "home": home.as_list(),
            }
        )
        if self.config.prearm_check and not self.config.remote:  # remote: the model is not aboard
            self.prearm_check()
        self.vehicle.arm()
        altitude = self.takeoff_altitude_m
        self.vehicle.takeoff(altitude)
        self.t0_s = self.clock.now()
        # Flying from here: the failsafes time the telemetry, and any source not heard yet, from now.
        self.governor.flight_started(self.clock.now())
        if threaded:
            # This thread (the decision loop's) and the threads it starts now inherit the nice value.
            self.nice, self._nice_restore = set_thread_nice(self.config.nice)
            self._nice_thread = threading.get_ident()
            self._trace_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace")
            # Its thread is made here, not on the first submit from the actuation thread, whose
            # SCHED_FIFO policy a new thread would inherit.
            self._trace_worker.submit(lambda: None).result()
            self.actuation.start()
            self.jetson.start()
        self.event(
            "started",
            takeoff_altitude_m=altitude,
            actuation_scheduling=self.actuation.scheduling,
            nice=self.nice,
        )

    def prearm_check(self) -> None:
        """The pilot must be warm and return a valid action on a real frame before the motors arm."""
        frame = self.camera.read()
        observation = self._observation(frame)
        if not observation.instruction.strip():
            observation = replace(observation, instruction=PREARM_INSTRUCTION)
        start = wall_timer()
        decision = self.pilot.decide(observation)
        elapsed = wall_timer() - start
        if decision.action is None:
            self.event("prearm_failed", error=decision.error, raw=decision.raw[:500], latency_s=elapsed)
            raise SafetyError(f"pre-arm check: the pilot returned no valid action ({decision.error})")
        self.event("prearm_ok", action=action_to_dict(decision.action), latency_s=elapsed)

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> RunResult:
        """Decide until the instruction is done, T_max, max_steps, a stop, or a landing."""
        reason = "stopped"
        try:
            while True:
                why = self.stop_reason()
                if why is not None:
                    reason = why
                    break
                if self.config.remote and self.governor.mode == Mode.FLYING:
                    started_s = self.clock.now()
                    try:
                        self.stream_once()
                    except Exception as exc:  # video lost: nothing to send, and no motion on old frames
                        self.capture_failed(exc)
                    self.clock.sleep_until(started_s + max(self.config.min_decision_period_s, 0.05))
                    continue
                if not self.can_decide():
                    self.clock.sleep(0.1)  # hold and wait for an operator (new instruction or resume)
                    continue
                self.decide_once()
        finally:
            self.finish(reason)
        return self.result(reason)

    def stop_reason(self) -> str | None:
        """Why the run must end now, or None to go on deciding."""
        if self._stop.is_set():
            return "stopped"
        if self.t() >= self.config.t_max_s:
            return "t_max"
        if self.config.max_steps is not None and self.steps >= self.config.max_steps:
            return "max_steps"
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
        return RunResult(
            reason,
            self.steps,
            self.declarations,
            self.qualifying_t,
            self.counters,
            self.actuation.served_rate_hz(),
            self.governor.mode.value,
        )

    def finish(self, reason: str, threaded: bool = True) -> None:
        self.actuator.set_schedule(None)
        self.event("finished_run", reason=reason, counters=self.counters.__dict__)
        if self.config.land_at_end and self.governor.mode not in (Mode.LANDING, Mode.ESTOP):
            self.governor.land(f"end of run ({reason})", planned=True)
            if threaded:  # let the actuation loop see the landing (a lock-step driver ticks it itself)
                deadline = self.clock.now() + 1.0
                while self.clock.now() < deadline and self.actuation.error is None:
                    self.clock.sleep(0.05)
        if threaded:
            self.actuation.stop()
            self.jetson.stop()
            if self._trace_worker is not None:
                self._trace_worker.shutdown(wait=True)
            if self._nice_restore is not None and self._nice_thread == threading.get_ident():
                restore_thread_nice(self._nice_restore)
                self._nice_restore = None
        last = self.actuator.last_telemetry
        if self.publisher is not None and last is not None:
            # The final state (e.g. estop, landing) reaches the operator even when the run ends
            # between two periodic telemetry messages.
            self.publisher.publish_telemetry(self._telemetry_payload(self.t(), last, self.actuator.last_sent))
        self.recorder.write_metadata(
            run={
                "end_reason": reason,
                "steps": self.steps,
                "declarations": self.declarations,
                "served_control_rate_hz": round(self.actuation.served_rate_hz(), 3) or None,
                "served_control_jitter_ms": round(self.actuation.served_jitter_ms(), 3) or None,
                "actuation_scheduling": self.actuation.scheduling,  # None when a lock-step driver ticks
                "nice": self.nice,  # of the decision loop's and helper threads; None in lock-step
                "counters": self.counters.__dict__,
                "stale_frames": self.stale_frames,
                "safety_events": self.governor.status().events,
            }
        )

    # ---- the decision step --------------------------------------------------------------------
    def _observation(self, frame: Frame) -> Observation:
        return Observation(
            image=frame.image,
            instruction=self.instruction,
            history=tuple(self.history[-HISTORY_LENGTH:]),
            history_images=tuple(self.history_images[-HISTORY_LENGTH:]),
            camera=self.camera_profile.scaled_to(frame.width_px, frame.height_px),
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
        frame = self._read_fresh_frame(capture_clock_s)
        if self.publisher is not None:
            # Sent at once, so the operator sees what the pilot sees while it decides (its step
            # follows, naming this frame).
            self.publisher.publish_frame(frame)
        w1 = wall_timer()
        stages.capture_s = w1 - w0
        observation = self._observation(frame)
        try:
            decision = self.pilot.decide(observation)
        except Exception as exc:  # a pilot bug must not crash the drone: it is a failed decision
            log.exception("pilot raised")
            decision = Decision(action=None, raw="", error=f"pilot raised {type(exc).__name__}: {exc}")
        pilot_s = wall_timer() - w1
        stages.preprocess_s = decision.preprocess_s or 0.0
        stages.parse_s = decision.parse_s or 0.0
        stages.model_s = max(0.0, pilot_s - stages.preprocess_s - stages.parse_s)
        return PendingDecision(frame, observation, decision, capture_clock_s, stages, w0)

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
        discarded: str | None = None
        plan: ControlPlan | None = None
        if action is None:
            discarded = "backend" if (decision.error or "").startswith("backend") else "malformed"
            if discarded == "backend":
                self.counters.backend_errors += 1
            else:
                self.counters.malformed += 1
            self.governor.pilot_failed(f"{discarded}: {decision.error}")
        elif pending.capture_clock_s < self._operator_goto_s:
            # Asked before the operator's GoTo (a model call in flight when it came): not flown, or
            # it would replace the GoTo the drone just acked. Not a pilot failure.
            discarded = "superseded"
        elif age_s > deadline_s:
            discarded = "stale"
            self.counters.stale += 1
            self.governor.pilot_failed(f"stale reply ({age_s:.2f} s > {deadline_s:.2f} s)")
        if discarded == "superseded":
            self.event("discarded", why=discarded, raw=decision.raw[:500], age_s=age_s)
        elif discarded is not None:
            # A missed decision holds: never keep flying a plan the pilot has not confirmed.
            self.actuator.set_schedule(MotionSchedule(hold_plan("miss"), self.clock.now()))
            self.event("discarded", why=discarded, error=decision.error, raw=decision.raw[:500], age_s=age_s)
        else:
            assert action is not None
            # First: a valid action may lift a failsafe hold (no ground station), so it is executed.
            self.governor.pilot_ok(self.clock.now())
            plan = self._execute(action, frame)
            stages.plan_s = wall_timer() - w2
        stages.total_s = stages.capture_s + stages.pilot_s + (wall_timer() - w2)
        stages.frame_age_s = self.clock.now() - pending.capture_clock_s
        self.last_stages = stages
        self._record_step(frame, decision, discarded, stages)
        return plan

    def decide_once(self) -> ControlPlan | None:
        """One decision on the runtime's clock; the naive loop also waits for the plan to finish."""
        started_s = self.clock.now()
        try:
            pending = self.capture_and_decide()
        except Exception as exc:  # the camera failed (video lost, stale frame refused)
            self.capture_failed(exc)
            self.clock.sleep_until(started_s + max(self.config.min_decision_period_s, 0.1))
            return None
        plan = self.apply_decision(pending)
        if plan is not None and self.config.loop == "naive":
            self.clock.sleep_until(self.clock.now() + plan_duration_s(plan))
        self.clock.sleep_until(started_s + self.config.min_decision_period_s)
        return plan

    def _read_fresh_frame(self, capture_clock_s: float) -> Frame:
        """camera.read(), refused (VehicleError) when stale by the one rule (FrameFreshness) on this
        runtime's clock; a fresh frame is the video failsafe's heartbeat."""
        frame = self.camera.read()
        frame.meta["capture_clock_s"] = capture_clock_s  # the camera may stamp on its own clock
        now_s = self.clock.now()
        age_s = self.freshness.age_s(float(frame.capture_time_s), now_s)
        if age_s > self.freshness.max_frame_age_s:
            self.stale_frames += 1
            raise VehicleError(
                f"video stale: the source's stamp ({frame.capture_time_s:.3f}) has not advanced in "
                f"{age_s:.2f} s (max_frame_age_s={self.freshness.max_frame_age_s})"
            )
        self.governor.heard(VIDEO, now_s)
        return frame

    def capture_failed(self, exc: Exception) -> None:
        """No (fresh) frame: hold this step (never keep flying a plan made on an older one), count it,
        say why. The video failsafe holds the drone frame_stale_hold_s after the last fresh frame."""
        self.counters.capture_errors += 1
        self.actuator.set_schedule(MotionSchedule(hold_plan("no frame"), self.clock.now()))
        self.governor.video_stale(self.clock.now())
        self.event("capture_failed", error=f"{type(exc).__name__}: {exc}")
        log.warning("camera read failed (%s): holding", exc)

    def stream_once(self) -> Frame:
        """Remote mode: capture a stamped frame and publish it for the ground station's model."""
        capture_clock_s = self.clock.now()
        frame = self._read_fresh_frame(capture_clock_s)
        if self.publisher is not None:
            self.publisher.publish_frame(frame)
        return frame

    def _execute(self, action: Action, frame: Frame, source: str = "pilot") -> ControlPlan:
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
        self._count_order_step()
        return plan

    def _count_order_step(self) -> None:
        """A sub-agent's order lives for a number of executed steps, then it holds.

        See docs/protocol.md#several-drones."""
        with self._lock:
            if self.order_steps_left is None:
                self._step_order = (None, None)
                return
            self.order_steps_left -= 1
            self._step_order = (self.order_id, self.order_steps_left)
            expired = self.order_steps_left <= 0
            if expired:
                self.order_steps_left = None
                self.instruction = ""
        if expired:
            self.governor.hold("order expired")
            self.actuator.set_schedule(None)
            self.event("order_expired", order_id=self.order_id)

    def _declare(self) -> None:
        """A `finished` was executed: measure the declaration now (docs/verifier.md#declarations)."""
        self.declarations += 1
        t = self.t()
        telemetry = self.actuator.last_telemetry or self.vehicle.telemetry()
        sample = self.truth.sample(self.config.drone) if self.truth is not None else NO_TRUTH
        line = DeclarationLine(
            t=t,
            drone=self.config.drone,
            distance_m=sample.distance_m,
            bbox_distance_m=sample.bbox_distance_m,
            visible=sample.visible,
            pose=pose_list(telemetry.pose),
        )
        self.recorder.declaration(line)
        qualifies = (
            sample.distance_m is not None
            and sample.distance_m <= self.config.delta_m
            and bool(sample.visible)
        )
        if qualifies and self.qualifying_t is None and t <= self.config.t_max_s:
            self.qualifying_t = t
        log.info("declaration at t=%.1f s: distance=%s visible=%s", t, sample.distance_m, sample.visible)
        # Published after the step's frame (see _publish_step), so the ground station can show it.
        self._pending_declaration = {**msgspec.to_builtins(line), "qualifies": qualifies}

    def _record_step(
        self, frame: Frame, decision: Decision, discarded: str | None, stages: StageLatencies
    ) -> None:
        t = self.t()
        sample = self.truth.sample(self.config.drone) if self.truth is not None else NO_TRUTH
        on_target: bool | None = None
        action = decision.action if discarded is None else None
        if isinstance(action, Go) and self.truth is not None:
            on_target = self.truth.point_on_target(frame, action.point)
        frame_name = None
        jpeg = b""
        if self.config.save_frames:
            ok, buf = cv2.imencode(".jpg", frame.image, [cv2.IMWRITE_JPEG_QUALITY, 85])
            jpeg = buf.tobytes() if ok else b""
        if self.config.save_frames and jpeg:
            frame_name = self.recorder.save_frame(jpeg, f"{self.config.drone}_{self.steps:05d}.jpg", t_s=t)
        latency = decision.stats.latency_s if decision.stats is not None else stages.model_s
        line = StepExtras(
            t=t,
            drone=self.config.drone,
            call_id=self.steps,
            action=action,
            raw=decision.raw,
            latency_s=latency,
            distance_m=sample.distance_m,
            visible=sample.visible,
            point_on_target=on_target,
            frame=frame_name,
            discarded=discarded,
            error=decision.error,
            stages=stages,
            loop=self.config.loop,
            order_id=self._step_order[0] if discarded is None else None,
            order_steps_left=self._step_order[1] if discarded is None else None,
        )
        self.recorder.step(line)
        self._publish_step(line)

    def _publish_step(self, line: StepLine) -> None:
        """The step (its frame went out at capture), then any declaration that step made."""
        declaration, self._pending_declaration = self._pending_declaration, None
        if self.publisher is None:
            return
        self.publisher.publish_step(msgspec.to_builtins(line))
        if declaration is not None:
            self.publisher.publish_declaration(declaration)

    # ---- commands (from the ground station or a script) ----------------------------------------
    def set_instruction(self, text: str) -> None:
        with self._lock:
            self.instruction = text
            self.order_id = None
            self.order_steps_left = None
            self.history.clear()
            self.history_images.clear()
        self.governor.resume(f"new instruction: {text!r}")
        self.event("instruction", text=text)

    def set_order(self, order_id: str, text: str, expires_after_steps: int) -> None:
        """A commander's order (docs/protocol.md#several-drones): the sub-agent is the single-drone agent
        with the order as its instruction, for `expires_after_steps` executed steps; then it holds until
        the next order."""
        if expires_after_steps < 1:
            raise ValueError(f"expires_after_steps={expires_after_steps} must be >= 1")
        with self._lock:
            self.instruction = text
            self.order_id = order_id
            self.order_steps_left = expires_after_steps
            self.history.clear()
            self.history_images.clear()
        self.governor.resume(f"order {order_id}: {text!r}")
        self.event("order", order_id=order_id, text=text, expires_after_steps=expires_after_steps)

    def hold(self, reason: str = "operator hold") -> None:
        self.governor.hold(reason)
        self.actuator.set_schedule(None)
        self.event("hold", reason=reason)

    def land(self, reason: str = "operator land") -> None:
        self.governor.land(reason)
        self.event("land", reason=reason)

    def estop(self, reason: str = "operator e-stop") -> None:
        self.governor.estop(reason)
        self.actuator.set_schedule(None)
        self.event("estop", reason=reason)

    def return_home(self) -> None:
        """Fly back over home at the current altitude, then hold (no pilot decisions meanwhile)."""
        from onboard.controller import plan_toward

        self.governor.hold("returning home")
        telemetry = self.actuator.last_telemetry or self.vehicle.telemetry()
        home = self.governor.home
        goal = Pose(home.x_m, home.y_m, telemetry.pose.z_m, telemetry.pose.yaw_deg)
        self.governor.resume("return home")
        self.instruction = ""
        self.actuator.set_schedule(
            MotionSchedule(plan_toward(goal, telemetry.pose, self.profile), self.clock.now())
        )
        self.event("return_home", goal=goal.as_list())

    def goto(self, goto_id: str, target_ned_m: tuple[float, float, float]) -> str:
        """An operator's GoTo: "" when accepted (flown from the next tick, then a hold), else why not.

        Checked here, before the ack: the target against the geofence around home and the altitude
        limits, and that the drone is flying (not landing or e-stopped, telemetry heard). Like a
        return home, it stops the pilot's decisions (the instruction and any order are dropped) and
        lifts a hold: the operator chose where the drone goes."""
        from onboard.goto import GoToFlight, goto_refusal

        refusal = goto_refusal(target_ned_m, self.governor.home, self.config.safety)
        mode = self.governor.mode
        telemetry = self.actuator.last_telemetry
        if not refusal and mode in (Mode.LANDING, Mode.ESTOP):
            refusal = f"not flying: {mode.value} ({self.governor.reason})"
        if not refusal and telemetry is None:
            refusal = "not flying yet: no vehicle telemetry"
        if refusal:
            self.event("goto", goto_id=goto_id, state="rejected", target=list(target_ned_m), reason=refusal)
            return refusal
        assert telemetry is not None
        with self._lock:
            self.instruction = ""
            self.order_id = None
            self.order_steps_left = None
            self._operator_goto_s = self.clock.now()
        self.governor.hold(f"operator goto {goto_id}")
        self.governor.resume(f"operator goto {goto_id}")
        flight = GoToFlight.start(goto_id, target_ned_m, telemetry.pose, self.profile, self.clock.now())
        self.actuator.set_goto(flight)
        self.event(
            "goto",
            goto_id=goto_id,
            state="accepted",
            target=list(target_ned_m),
            pose=pose_list(telemetry.pose),
            distance_m=round(flight.distance_m(telemetry.pose), 3),
            timeout_s=round(flight.deadline_s - flight.started_s, 1),
        )
        return ""

    def _on_goto(self, flight: Any, how: str, telemetry: Telemetry | None) -> None:
        """The actuation loop ended a GoTo: arrived -> hold there (the operator decides what next)."""
        pose = telemetry.pose if telemetry is not None else None
        self.event(
            "goto",
            goto_id=flight.goto_id,
            state=how,
            target=pose_list(flight.target)[:3],
            pose=pose_list(pose) if pose is not None else None,
            error_m=round(flight.distance_m(pose), 3) if pose is not None else None,
            plans=flight.plans,
            elapsed_s=round(self.clock.now() - flight.started_s, 2),
        )
        if how == "arrived" or how == "timed out":
            self.governor.hold(f"operator goto {flight.goto_id}: {how}")

    def remote_action(
        self,
        action: Action,
        capture_pose: Pose,
        capture_age_s: float,
        call_id: str | None = None,
        raw: str = "",
    ) -> bool:
        """An action chosen by the ground station (one-context fleet mode), with its frame's pose.

        The same tolerance rules as the pilot's: stale -> discarded and counted, else re-expressed.
        Logged as a step (source "remote", the multi-drone call's call_id).
        """
        deadline_s = (
            self.config.plan_deadline_s if isinstance(action, Think) else self.config.action_deadline_s
        )
        if capture_age_s > deadline_s:
            self.counters.stale += 1
            self.governor.pilot_failed(f"stale remote action ({capture_age_s:.2f} s)")
            self.event("discarded", why="stale", source="remote", age_s=capture_age_s)
            return False
        frame = Frame(image=None, capture_time_s=self.clock.now() - capture_age_s, pose=capture_pose)
        self.counters.decisions += 1
        self.steps += 1
        self._execute(action, frame, source="remote")
        self.governor.pilot_ok()
        sample = self.truth.sample(self.config.drone) if self.truth is not None else NO_TRUTH
        line = StepExtras(
            t=self.t(),
            drone=self.config.drone,
            call_id=call_id,
            action=action,
            raw=raw,
            distance_m=sample.distance_m,
            visible=sample.visible,
            loop=self.config.loop,
            source="remote",
            order_id=self._step_order[0],
            order_steps_left=self._step_order[1],
        )
        self.recorder.step(line)
        self._publish_step(line)
        return True

    def judge(self, accept: bool, declaration_t: float | None = None) -> None:
        """The operator's verdict on a declaration (docs/safety.md#real-flight); accept ends the run."""
        t = self.t()
        telemetry = self.actuator.last_telemetry
        line = DeclarationLine(
            t=declaration_t if declaration_t is not None else t,
            drone=self.config.drone,
            pose=pose_list(telemetry.pose) if telemetry else None,
            judged="accept" if accept else "reject",
        )
        self.recorder.declaration(line)
        self.event("judged", accept=accept, declaration_t=declaration_t)
        if accept:
            self.qualifying_t = line.t
            self.stop()

    # ---- sinks ----------------------------------------------------------------------------------
    def event(self, kind: str, **fields: Any) -> None:
        self.recorder.event(kind, self.t(), self.config.drone, **fields)

    def _on_transition(self, transition: Transition) -> None:
        """A safety mode change (the governor's), written and flushed when it happens."""
        last = transition.last_heard_s
        self.recorder.event(
            "safety",
            transition.now_s - self.t0_s,
            self.config.drone,
            mode=transition.mode.value,
            previous=transition.previous.value,
            reason=transition.reason,
            source=transition.source,
            last_heard_t=None if last is None else last - self.t0_s,
        )

    def _on_disk_error(self, what: str, error: str) -> None:
        """The recorder lost frames or log lines: a `disk` safety event. Without frames the flight goes
        on; when the logs themselves cannot be written the drone holds (nothing it does is recorded)."""
        action = "frames off; flying on" if what == "frames" else "hold: the logs cannot be written"
        self.event("disk", what=what, error=error, action=action)
        if what != "frames":
            self.governor.hold(f"disk: {error}")

    def _on_clamp(self, now_s: float, clamp: Clamp) -> None:
        self.recorder.event(
            "clamp",
            now_s - self.t0_s,
            self.config.drone,
            rule=clamp.rule,
            asked=list(clamp.asked),
            sent=list(clamp.sent),
            detail=clamp.detail,
        )

    def _write_trace(self, line: TraceLine, collided: bool) -> None:
        sample = self.truth.sample(self.config.drone) if self.truth is not None else NO_TRUTH
        self.recorder.trace(
            TraceLine(
                t=line.t,
                drone=line.drone,
                pose=line.pose,
                target_pose=pose_list(sample.target_pose) if sample.target_pose else None,
                distance_m=sample.distance_m,
                bbox_distance_m=sample.bbox_distance_m,
                visible=sample.visible,
                collided=collided,
            ),
            force=True,
        )

    def _on_telemetry(self, now_s: float, telemetry: Telemetry, sent: Setpoint) -> None:
        t = now_s - self.t0_s
        line = TraceLine(t=t, drone=self.config.drone, pose=pose_list(telemetry.pose))
        if self.recorder.trace_due(line):
            self.recorder.mark_trace(line)
            if self._trace_worker is not None:
                # Ground truth may be an RPC to a busy simulator: never inside an actuation tick.
                self._trace_worker.submit(lambda: self._write_trace(line, telemetry.collided))
            else:
                self._write_trace(line, telemetry.collided)
        self._telemetry_every += 1
        if self.publisher is not None and self._telemetry_every % max(1, round(self.config.rate_hz / 5)) == 0:
            self.publisher.publish_telemetry(self._telemetry_payload(t, telemetry, sent))

    def _telemetry_payload(self, t: float, telemetry: Telemetry, sent: Setpoint) -> dict[str, Any]:
        status = self.governor.status()
        return {
            "t": t,
            "pose": telemetry.pose.as_list(),
            "velocity_ned_m_s": list(telemetry.velocity_ned_m_s),
            "battery_fraction": telemetry.battery_fraction,
            "armed": telemetry.armed,
            "landed": telemetry.landed,
            "collided": telemetry.collided,
            "mode": status.mode.value,
            "mode_reason": status.reason,
            "sent": list(sent),
            "served_rate_hz": self.actuation.served_rate_hz(),
            "served_jitter_ms": self.actuation.served_jitter_ms(),
            "stages": msgspec.to_builtins(self.last_stages),
            "instruction": self.instruction,
            "last_action": action_to_dict(self.history[-1]) if self.history else None,
            "last_action_name": action_name(self.history[-1]) if self.history else None,
            "jetson": self.jetson.snapshot(),  # None off a Jetson
        }
