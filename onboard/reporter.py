"""The one place where what the runtime does becomes log lines and messages (docs/logs.md).

`StepReporter` writes every step, declaration, trace sample and event through the FlightRecorder and
hands the same typed records to the Publisher (the ground-station link, onboard.link), so a field is
added in one struct and reaches both. Ground truth (when the run has it) is sampled here, next to
the line it measures.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import cv2
import msgspec

from common.actions import Action, Go
from common.camera import CameraProfile
from common.clock import Clock
from common.declarations import qualifies
from common.interfaces import Telemetry
from common.logformat import DeclarationLine, StepLine, TraceLine, pose_list
from common.messages import JetsonHealth
from common.pose import Frame, Pose
from common.truth import GroundTruth, TruthSample
from models.pilot import Decision, Pilot
from onboard.decision import RunResult, StageLatencies
from onboard.flight_state import FlightState
from onboard.jetson import JetsonMonitor
from onboard.profiles import FlightProfile
from onboard.recorder import FlightRecorder
from onboard.safety import Clamp, SafetyGovernor, Transition
from onboard.setpoints import Setpoint

log = logging.getLogger(__name__)

NO_TRUTH = TruthSample(None, None, None, None)
TELEMETRY_HZ = 5.0  # telemetry messages per second (every rate_hz / 5-th actuation tick)


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


@dataclass(frozen=True)
class TelemetrySnapshot:
    """What the runtime publishes a few times a second: the vehicle's sample and the runtime's state."""

    t: float  # episode time
    telemetry: Telemetry
    sent: Setpoint  # the setpoint the governor last sent
    mode: str
    mode_reason: str
    served_rate_hz: float
    served_jitter_ms: float  # spread of the served tick period (ActuationThread.served_jitter_ms)
    stages: StageLatencies  # of the last decision
    instruction: str
    last_action: Action | None
    jetson: JetsonHealth | None  # None off a Jetson


@dataclass(frozen=True)
class ServedRate:
    """The actuation loop's side of a TelemetrySnapshot, read when one is due."""

    served_rate_hz: float
    served_jitter_ms: float


class Publisher(Protocol):
    """Where the runtime publishes what it does (the ground-station link), as typed records."""

    def publish_step(self, step: StepExtras) -> None: ...

    def publish_frame(self, frame: Frame) -> None: ...

    def publish_telemetry(self, telemetry: TelemetrySnapshot) -> None: ...

    def publish_declaration(self, declaration: DeclarationLine) -> None: ...


@dataclass(frozen=True)
class Publishers:
    """Several sinks behind one Publisher (the ground-station link, a live viewer), each handed every
    record in turn. Each sink must return at once: publish_telemetry runs on the actuation thread."""

    sinks: tuple[Publisher, ...]

    def publish_step(self, step: StepExtras) -> None:
        for sink in self.sinks:
            sink.publish_step(step)

    def publish_frame(self, frame: Frame) -> None:
        for sink in self.sinks:
            sink.publish_frame(frame)

    def publish_telemetry(self, telemetry: TelemetrySnapshot) -> None:
        for sink in self.sinks:
            sink.publish_telemetry(telemetry)

    def publish_declaration(self, declaration: DeclarationLine) -> None:
        for sink in self.sinks:
            sink.publish_declaration(declaration)


@dataclass(eq=False)
class StepReporter:
    """Turns the runtime's steps, declarations, telemetry and events into lines and messages."""

    drone: str
    clock: Clock
    recorder: FlightRecorder
    truth: GroundTruth | None
    publisher: Publisher | None
    governor: SafetyGovernor
    flight: FlightState  # its start is episode time 0; its tasking is in each TelemetrySnapshot
    served: Callable[[], ServedRate]  # the actuation loop's side of each TelemetrySnapshot
    save_frames: bool = True
    rate_hz: float = 20.0
    jetson: JetsonMonitor = field(default_factory=JetsonMonitor)  # Jetson health; inert off a Jetson

    def __post_init__(self) -> None:
        self.telemetry_every = max(1, round(self.rate_hz / TELEMETRY_HZ))
        self._trace_worker: ThreadPoolExecutor | None = None
        self._ticks = 0
        self._pending_declaration: DeclarationLine | None = None
        self.governor.on_transition = self.on_transition  # every mode change into events.jsonl, at once
        self.recorder.on_disk_error = self.on_disk_error

    @property
    def t0_s(self) -> float:
        """Episode time 0 on the runtime's clock (the flight's start; until then, the runtime's creation)."""
        return self.flight.t0_s

    def t(self) -> float:
        """Episode time: seconds since the flight started, on the runtime's clock."""
        return self.clock.now() - self.t0_s

    def sample(self) -> TruthSample:
        return self.truth.sample(self.drone) if self.truth is not None else NO_TRUTH

    def add_publisher(self, publisher: Publisher) -> None:
        """Another sink beside those attached (the link, a live viewer): each gets every record."""
        current = self.publisher
        if current is None:
            self.publisher = publisher
        elif isinstance(current, Publishers):
            self.publisher = Publishers((*current.sinks, publisher))
        else:
            self.publisher = Publishers((current, publisher))

    # ---- threads (a real-time flight; a lock-step driver writes everything from its one thread) ----
    def start_threads(self) -> None:
        self._trace_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace")
        # Its thread is made here, not on the first submit from the actuation thread, whose
        # SCHED_FIFO policy a new thread would inherit.
        self._trace_worker.submit(lambda: None).result()

    def stop_threads(self) -> None:
        self.jetson.stop()
        if self._trace_worker is not None:
            self._trace_worker.shutdown(wait=True)

    # ---- episode.json: the runtime writes only under "run" (the episode record is its author's) ----
    def run_started(
        self,
        pilot: Pilot,
        instruction: str,
        config: Any,
        profile: FlightProfile,
        camera: CameraProfile,
        home: Pose,
    ) -> None:
        identity = pilot.identity()
        self.recorder.write_metadata(
            run={
                "pilot": pilot.name,
                "model_profile": identity.profile if identity is not None else None,
                "prompt_hashes": dict(identity.prompt_hashes) if identity is not None else {},
                "identity": msgspec.to_builtins(identity) if identity is not None else None,
                "drone": self.drone,
                "instruction": instruction,
                "onboard": msgspec.to_builtins(config),
                "flight_profile": msgspec.to_builtins(profile),
                "camera_profile": msgspec.to_builtins(camera),
                "home": home.as_list(),
            }
        )

    def run_finished(
        self, result: RunResult, stale_frames: int, scheduling: str | None, nice: str | None
    ) -> None:
        self.recorder.write_metadata(
            run={
                "end_reason": result.reason,
                "steps": result.steps,
                "declarations": result.declarations,
                "served_control_rate_hz": round(result.served_rate_hz, 3) or None,
                "served_control_jitter_ms": round(result.served_jitter_ms, 3) or None,
                "actuation_scheduling": scheduling,  # None when a lock-step driver ticks
                "nice": nice,  # of the decision loop's and helper threads; None in lock-step
                "counters": result.counters.__dict__,
                "stale_frames": stale_frames,
                "safety_events": self.governor.status().events,
            }
        )

    # ---- steps and declarations -----------------------------------------------------------------
    def frame(self, frame: Frame) -> None:
        """A captured frame, sent at once (its step follows, naming it)."""
        if self.publisher is not None:
            self.publisher.publish_frame(frame)

    def step(
        self,
        frame: Frame,
        decision: Decision,
        discarded: str | None,
        stages: StageLatencies,
        call_id: int,
        loop: str,
        order: tuple[str | None, int | None],
    ) -> None:
        """A pilot's decision (executed, or discarded and why) as a steps.jsonl line and a message."""
        t = self.t()
        sample = self.sample()
        on_target: bool | None = None
        action = decision.action if discarded is None else None
        if isinstance(action, Go) and self.truth is not None:
            on_target = self.truth.point_on_target(frame, action.point)
        frame_name = None
        jpeg = b""
        if self.save_frames:
            ok, buf = cv2.imencode(".jpg", frame.image, [cv2.IMWRITE_JPEG_QUALITY, 85])
            jpeg = buf.tobytes() if ok else b""
        if self.save_frames and jpeg:
            frame_name = self.recorder.save_frame(jpeg, f"{self.drone}_{call_id:05d}.jpg", t_s=t)
        latency = decision.stats.latency_s if decision.stats is not None else stages.model_s
        self._step(
            StepExtras(
                t=t,
                drone=self.drone,
                call_id=call_id,
                action=action,
                raw=decision.logged_raw,
                latency_s=latency,
                distance_m=sample.distance_m,
                visible=sample.visible,
                point_on_target=on_target,
                frame=frame_name,
                discarded=discarded,
                error=decision.error,
                stages=stages,
                loop=loop,
                order_id=order[0] if discarded is None else None,
                order_steps_left=order[1] if discarded is None else None,
            )
        )

    def remote_step(
        self, action: Action, call_id: str | None, raw: str, loop: str, order: tuple[str | None, int | None]
    ) -> None:
        """An action the ground station chose (one-context fleet mode), executed."""
        sample = self.sample()
        self._step(
            StepExtras(
                t=self.t(),
                drone=self.drone,
                call_id=call_id,
                action=action,
                raw=raw,
                distance_m=sample.distance_m,
                visible=sample.visible,
                loop=loop,
                source="remote",
                order_id=order[0],
                order_steps_left=order[1],
            )
        )

    def _step(self, line: StepExtras) -> None:
        """Logged, then published: the step (its frame went out at capture), then any declaration
        that step made."""
        self.recorder.step(line)
        declaration, self._pending_declaration = self._pending_declaration, None
        if self.publisher is None:
            return
        self.publisher.publish_step(line)
        if declaration is not None:
            self.publisher.publish_declaration(declaration)

    def declaration(self, telemetry: Callable[[], Telemetry], delta_m: float) -> tuple[float, bool]:
        """A `finished` was executed: measure it now (docs/verifier.md#declarations); returns its
        episode time and whether it qualifies."""
        t = self.t()
        pose = telemetry().pose
        sample = self.sample()
        line = DeclarationLine(
            t=t,
            drone=self.drone,
            distance_m=sample.distance_m,
            bbox_distance_m=sample.bbox_distance_m,
            visible=sample.visible,
            pose=pose_list(pose),
        )
        self.recorder.declaration(line)
        ok = qualifies(sample.distance_m, sample.visible, delta_m)
        log.info("declaration at t=%.1f s: distance=%s visible=%s", t, sample.distance_m, sample.visible)
        # Published after the step's frame (see _step), so the ground station can show it.
        self._pending_declaration = line
        return t, ok

    def judgement(self, accept: bool, declaration_t: float | None, telemetry: Telemetry | None) -> float:
        """The operator's verdict on a declaration as its declarations.jsonl line; returns its time."""
        t = self.t()
        line = DeclarationLine(
            t=declaration_t if declaration_t is not None else t,
            drone=self.drone,
            pose=pose_list(telemetry.pose) if telemetry else None,
            judged="accept" if accept else "reject",
        )
        self.recorder.declaration(line)
        self.event("judged", accept=accept, declaration_t=declaration_t)
        return line.t

    # ---- events -----------------------------------------------------------------------------------
    def event(self, kind: str, **fields: Any) -> None:
        self.recorder.event(kind, self.t(), self.drone, **fields)

    def on_transition(self, transition: Transition) -> None:
        """A safety mode change (the governor's), written and flushed when it happens."""
        last = transition.last_heard_s
        self.recorder.event(
            "safety",
            transition.now_s - self.t0_s,
            self.drone,
            mode=transition.mode.value,
            previous=transition.previous.value,
            reason=transition.reason,
            source=transition.source,
            last_heard_t=None if last is None else last - self.t0_s,
        )

    def on_disk_error(self, what: str, error: str) -> None:
        """The recorder lost frames or log lines: a `disk` safety event. Without frames the flight goes
        on; when the logs themselves cannot be written the drone holds (nothing it does is recorded)."""
        actions = {"frames": "frames off; flying on", "log_dir": "logs re-opened; flying on"}
        action = actions.get(what, "hold: the logs cannot be written")
        self.event("disk", what=what, error=error, action=action)
        if what not in actions:
            self.governor.hold(f"disk: {error}")

    def on_clamp(self, now_s: float, clamp: Clamp) -> None:
        self.recorder.event(
            "clamp",
            now_s - self.t0_s,
            self.drone,
            rule=clamp.rule,
            asked=list(clamp.asked),
            sent=list(clamp.sent),
            detail=clamp.detail,
        )

    # ---- trace and telemetry (every actuation tick) ----------------------------------------------
    def _write_trace(self, line: TraceLine, collided: bool) -> None:
        sample = self.sample()
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

    def on_telemetry(self, now_s: float, telemetry: Telemetry, sent: Setpoint) -> None:
        t = now_s - self.t0_s
        line = TraceLine(t=t, drone=self.drone, pose=pose_list(telemetry.pose))
        if self.recorder.trace_due(line):
            self.recorder.mark_trace(line)
            if self._trace_worker is not None:
                # Ground truth may be an RPC to a busy simulator: never inside an actuation tick.
                self._trace_worker.submit(lambda: self._write_trace(line, telemetry.collided))
            else:
                self._write_trace(line, telemetry.collided)
        self._ticks += 1
        if self.publisher is not None and self._ticks % self.telemetry_every == 0:
            self.publisher.publish_telemetry(self.snapshot(t, telemetry, sent))

    def final_telemetry(self, telemetry: Telemetry | None, sent: Setpoint) -> None:
        """The final state (e.g. estop, landing) reaches the operator even when the run ends between
        two periodic telemetry messages."""
        if self.publisher is not None and telemetry is not None:
            self.publisher.publish_telemetry(self.snapshot(self.t(), telemetry, sent))

    def snapshot(self, t: float, telemetry: Telemetry, sent: Setpoint) -> TelemetrySnapshot:
        status, served, flight = self.governor.status(), self.served(), self.flight
        return TelemetrySnapshot(
            t=t,
            telemetry=telemetry,
            sent=sent,
            mode=status.mode.value,
            mode_reason=status.reason,
            served_rate_hz=served.served_rate_hz,
            served_jitter_ms=served.served_jitter_ms,
            stages=flight.last_stages,
            instruction=flight.instruction,
            last_action=flight.last_action(),
            jetson=self.jetson.snapshot(),
        )
