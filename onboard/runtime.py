"""The onboard runtime: flies one drone (camera -> pilot -> controller -> vehicle), safely, on a clock.

Two loops (docs/safety.md#two-loops): the actuation loop (onboard.actuation) streams the current
setpoint at a fixed rate in its own thread and applies the safety governor on every tick; the
decision loop here captures a stamped frame, asks the pilot, and hands the controller's plan over.
The runtime assembles the parts and keeps the life cycle; onboard.flight_state owns the flight's
state, onboard.decision_step takes one decision, onboard.operator obeys the commands,
onboard.reporter logs and publishes, onboard.decide_loop runs the loop (shared with lock-step).
The two loop modes, tolerant and naive, are RuntimeConfig.loop's (onboard.runtime_config).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from common.actions import action_to_dict
from common.camera import camera_profile
from common.clock import Clock
from common.errors import ConfigError, PrearmRefused
from common.interfaces import Camera, Telemetry, Vehicle
from common.pose import Pose
from common.truth import GroundTruth
from models.pilot import Pilot
from onboard.actuation import ActuationThread, Actuator
from onboard.capture import FrameCapture
from onboard.decide_loop import RealTimePacer, loop_step, run_loop
from onboard.decision import RunResult, wall_timer
from onboard.decision_step import DecisionStep, guarded, prearm_observation
from onboard.flight_state import FlightState
from onboard.operator import Operator
from onboard.pilot_call import PilotCallAbandoned, PilotCaller
from onboard.profiles import flight_profile
from onboard.realtime import ThreadNice
from onboard.recorder import FlightRecorder
from onboard.reporter import Publisher, ServedRate, StepReporter
from onboard.runtime_config import RuntimeConfig
from onboard.safety import Mode, SafetyGovernor
from onboard.safety_config import SafetyConfig

log = logging.getLogger(__name__)

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
    """One drone's runtime: assembles its parts (each with its collaborators, never this object) and
    runs the flight's life cycle; the flight's state is `state`'s (onboard.flight_state)."""

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
        self.state = FlightState(clock, config.instruction)  # the one owner of the flight's state
        self.reporter = StepReporter(
            config.drone,
            clock,
            recorder,
            truth,
            publisher,
            self.governor,
            self.state,
            self._served,
            config.save_frames,
            config.rate_hz,
        )
        self.actuator = Actuator(vehicle, self.governor, self.reporter.on_clamp, self.reporter.on_telemetry)
        telemetry = self.newest_telemetry
        self.operator = Operator(
            self.state,
            self.governor,
            self.actuator,
            self.reporter,
            self.profile,
            config.safety,
            clock.now,
            telemetry,
        )
        self.actuator.on_goto = self.operator.on_goto
        self.actuation = ActuationThread(
            self.actuator,
            clock,
            config.rate_hz,
            rt_priority=config.actuation_rt_priority,
            stall_s=config.safety.stall_s,
        )
        self.actuation.on_stall = self._stalled
        self.capture = FrameCapture(
            camera,
            config.max_frame_age_s,
            clock,
            self.governor,
            self.actuator,
            self.state.counters,
            self.reporter,
        )
        self._stop = threading.Event()
        self.thread_nice = ThreadNice()  # of the runtime's own threads (applied by start)
        # In real time the pilot thinks on a thread of its own, so a stuck model cannot hold the run.
        self.pilot_caller = PilotCaller(guarded(pilot), self.stop_reason)
        self.decisions = DecisionStep(
            config,
            clock,
            self.state,
            self.governor,
            self.actuator,
            self.capture,
            self.pilot_caller,
            self.reporter,
            self.operator,
            self.camera_profile,
            self.profile,
            self.canonical_focal_px,
            telemetry,
            has_truth=truth is not None,
        )

    @property
    def camera(self) -> Camera:
        return self.capture.camera

    @property
    def takeoff_altitude_m(self) -> float:
        """The config's, else the flight profile's (tello 1.5 m), else 3 m."""
        return self.config.takeoff_altitude_m or self.profile.takeoff_altitude_m or DEFAULT_TAKEOFF_ALTITUDE_M

    def t(self) -> float:
        """Episode time: seconds since the flight started (begin_flight), on the runtime's clock."""
        return self.reporter.t()

    def event(self, kind: str, **fields: Any) -> None:
        self.reporter.event(kind, **fields)

    def climbed(self) -> bool:
        """The take-off climb is (nearly) done: 95% of the take-off altitude above home, as the vehicle
        says now (a lock-step driver advances time until it is)."""
        altitude_m = self.vehicle.telemetry().pose.altitude_m - self.governor.home.altitude_m
        return altitude_m >= 0.95 * self.takeoff_altitude_m

    def newest_telemetry(self) -> Telemetry:
        """The actuation loop's last sample, else the vehicle's own (before the first tick)."""
        return self.actuator.last_telemetry or self.vehicle.telemetry()

    def _served(self) -> ServedRate:
        return ServedRate(self.actuation.served_rate_hz(), self.actuation.served_jitter_ms())

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self, threaded: bool = True) -> None:
        """Connect, pre-arm check, arm, take off, start the actuation loop (unless a lock-step
        driver ticks it: threaded=False, and then takeoff only starts the climb)."""
        self.pilot_caller.threaded = threaded
        self.vehicle.connect()
        home = self.vehicle.telemetry().pose
        self.governor.home = home
        self.reporter.run_started(
            self.pilot, self.state.instruction, self.config, self.profile, self.camera_profile, home
        )
        if self.config.prearm_check and not self.config.remote:  # remote: the model is not aboard
            self.prearm_check()
        self.vehicle.arm()
        altitude = self.takeoff_altitude_m
        self.vehicle.takeoff(altitude)
        if threaded:
            self.begin_flight(self.clock.now())  # the take-off has returned: flying from here
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

    def begin_flight(self, t0_s: float) -> None:
        """Episode time 0, once, by whoever owns time: start() in real time, after the take-off has
        returned; a lock-step driver after its climb. From here the failsafes time the telemetry, and
        any source not heard yet."""
        self.state.start_flight(t0_s)
        self.governor.flight_started(t0_s)

    def prearm_check(self) -> None:
        """The pilot must be warm and return a valid action on a real frame before the motors arm."""
        frame = self.camera.read()
        observation = prearm_observation(self.decisions, frame, PREARM_INSTRUCTION)
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
        pacer = RealTimePacer(self.clock, self.config)
        reason = run_loop(
            self.stop_reason, lambda: loop_step(self.decisions, self.can_decide, pacer), self.finish
        )
        return self.result(reason)

    def stop_reason(self) -> str | None:
        """Why the run must end now, or None to go on deciding."""
        judgement, state = self.state.judgement, self.state
        if judgement.accepted:
            return ACCEPTED_REASON
        if self._stop.is_set():
            return "stopped"
        lost = self.actuation.vehicle_lost()
        if lost is not None:
            return f"{VEHICLE_LOST_REASON}: {lost}"
        if self.t() - judgement.held_s() >= self.config.t_max_s:  # time held for a verdict excluded
            return "t_max"
        waited_s = judgement.waiting_s()
        if waited_s is not None and waited_s >= self.config.judgement_wait_s:
            return f"{UNJUDGED_REASON} after {self.config.judgement_wait_s:g} s"
        if self.config.max_steps is not None and state.steps >= self.config.max_steps:
            return "max_steps"
        if self.governor.collision is not None:  # the episode has failed: never fly on past it
            return f"{COLLIDED_REASON}: {self.governor.collision}"
        mode = self.governor.mode
        if mode in (Mode.LANDING, Mode.ESTOP):
            return f"{mode.value}: {self.governor.reason}"
        if state.qualifying_t is not None and self.config.stop_on_declaration:
            return "declared"
        return None

    def can_decide(self) -> bool:
        """Flying with an instruction; or holding for a failsafe that a fresh valid pilot action may
        lift (no ground station: the loop keeps reading frames and asking, nothing is executed)."""
        mode_ok = self.governor.mode == Mode.FLYING or self.governor.pilot_may_lift()
        return mode_ok and bool(self.state.instruction)

    def result(self, reason: str) -> RunResult:
        served, mode = self.actuation, self.governor.mode.value
        rate_hz, jitter_ms = served.served_rate_hz(), served.served_jitter_ms()
        flight = self.state.snapshot()
        return RunResult(
            reason,
            flight.steps,
            flight.declarations,
            flight.qualifying_t,
            self.state.counters,
            rate_hz,
            mode,
            jitter_ms,
        )

    def finish(self, reason: str, threaded: bool = True) -> None:
        self.actuator.set_schedule(None)
        self.event("finished_run", reason=reason, counters=self.state.counters.__dict__)
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
