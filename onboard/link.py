"""The onboard side of the ground-station link: publishes what the runtime does, obeys commands.

Commands arrive on the link's I/O thread; each handler only updates the runtime's state (mode,
instruction, schedule) and returns at once, so acks stay fast. The safety governor reads the link's
last-heard time on every actuation tick and holds, then lands (RuntimeConfig.safety.link_lost_*).

Every command was range-checked while decoding (common.messages); `handle` adds the rules that
need the runtime's state: a GoTo inside the geofence and altitude limits; a RemoteAction only in
remote mode, with a capture time that is not in the future (beyond a small clock skew) and not
older than its deadline. A refused command is acked "rejected" with the reason, counted by the
link (`refused`) and reported in every TelemetryMessage.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from common.capabilities import GroundLinkVehicle
from common.clock import Clock
from common.errors import ConfigError
from common.link.admission import AdmissionConfig
from common.link.drone import CommandOutcome, DroneLink, DroneLinkConfig, ReceivedCommand
from common.link.liveness import LinkEvent
from common.link.security import CurveServer, Insecure
from common.logformat import DeclarationLine
from common.messages import (
    MAX_ID_CHARS,
    MAX_RAW_CHARS,
    MAX_REASON_CHARS,
    Declaration,
    EStop,
    GoTo,
    Hold,
    Instruction,
    Judgement,
    Land,
    Order,
    RemoteAction,
    ReturnHome,
    Step,
    TelemetryMessage,
    Traffic,
)
from common.pose import Frame, Pose, wrap_deg
from onboard.decision import StageLatencies
from onboard.decision_step import DecisionStep
from onboard.operator import Operator
from onboard.reporter import StepExtras, StepReporter, TelemetrySnapshot
from onboard.runtime import OnboardRuntime
from onboard.safety import LINK, SafetyGovernor

log = logging.getLogger(__name__)

# A remote action's capture time may be this far ahead of the drone's clock (the ground station
# converts it with an offset estimated from heartbeats, good to a few milliseconds on a LAN).
MAX_CLOCK_SKEW_S = 0.5
SESSION_MEMORY_S = 60.0  # how long a ground-station session's last seq is remembered, at least


def endpoints(base: str) -> tuple[str, str, str]:
    """tcp://HOST:PORT -> telemetry PORT, frames PORT+1, commands PORT+2."""
    parts = urlsplit(base)
    if parts.scheme != "tcp" or parts.port is None:
        raise ValueError(f"ground-station address {base!r} must look like tcp://HOST:PORT")
    host = parts.hostname
    return (f"tcp://{host}:{parts.port}", f"tcp://{host}:{parts.port + 1}", f"tcp://{host}:{parts.port + 2}")


@dataclass(frozen=True)
class LinkedDrone:
    """What the link reaches of one drone's runtime: its name and clock, its command surface, the
    remote steps of the one-context fleet mode, its safety governor and its events."""

    drone: str
    clock: Clock
    remote: bool  # the ground station's model decides (RuntimeConfig.remote)
    operator: Operator
    decisions: DecisionStep
    governor: SafetyGovernor
    reporter: StepReporter
    ground_link: GroundLinkVehicle | None  # a vehicle told whether the ground station is up

    @classmethod
    def of(cls, runtime: OnboardRuntime) -> LinkedDrone:
        vehicle = runtime.vehicle
        return cls(
            runtime.config.drone,
            runtime.clock,
            runtime.config.remote,
            runtime.operator,
            runtime.decisions,
            runtime.governor,
            runtime.reporter,
            vehicle if isinstance(vehicle, GroundLinkVehicle) else None,
        )


class RuntimeLink:
    """Implements the runtime's Publisher over a DroneLink and routes commands to the runtime."""

    def __init__(self, drone: LinkedDrone, link: DroneLink) -> None:
        self.drone = drone
        self.link = link
        self.frame_seq = -1  # the seq of the newest frame sent (DroneLink numbers the frames it queues)
        self.declaration_times: dict[str, float] = {}  # declaration_id -> t, for judgements
        self._traffic_ids: list[str] = []
        self._heard_link_s: float | None = None  # the link's last-heard time (monotonic) ...
        self._heard_runtime_s = 0.0  # ... on the runtime's clock
        self.security = "curve" if isinstance(link.security, CurveServer) else "insecure"
        self._refusals: Counter[str] = Counter()  # by who refused: a flood of one kind hides no other

    # ---- Publisher ------------------------------------------------------------------------------
    def publish_telemetry(self, snapshot: TelemetrySnapshot) -> None:
        vehicle = snapshot.telemetry
        battery = vehicle.battery_fraction
        battery_pct = None if battery is None or not math.isfinite(battery) else 100.0 * battery
        counts = self.link.stats.telemetry_counts()
        try:
            telemetry = TelemetryMessage(
                time_s=self.drone.clock.now(),
                pose_ned=_wire_pose(vehicle.pose.as_list()),
                velocity_ned_m_s=vehicle.velocity_ned_m_s,
                battery_pct=None if battery_pct is None else min(max(battery_pct, 0.0), 100.0),
                mode=snapshot.mode[:MAX_ID_CHARS],
                armed=vehicle.armed,
                link_state=self.link.ground_link_state,  # type: ignore[arg-type]
                control_rate_hz=float(snapshot.served_rate_hz or 0.0),
                control_jitter_ms=min(max(float(snapshot.served_jitter_ms or 0.0), 0.0), 100_000.0),
                latencies_s=_latencies(snapshot.stages),
                safety_state=(snapshot.mode_reason or "ok")[:MAX_REASON_CHARS],
                jetson=snapshot.jetson,  # validated when it was read (onboard.jetson)
                link_security=self.security,  # type: ignore[arg-type]
                **counts,  # type: ignore[arg-type]
            )
        except ValueError as exc:  # e.g. a vehicle that reported a NaN pose: not sent, counted
            self.link.stats.add("telemetry_invalid")
            self.link.stats.log_limited("telemetry_invalid", f"telemetry not sent: {exc}")
            return
        self.link.publish_telemetry(telemetry)

    def publish_frame(self, frame: Frame) -> None:
        # Stamped on the runtime's clock (the link's clock): RemoteActions come back with this stamp
        # and the ground station converts it with the heartbeat clock offset.
        capture_s = float(frame.meta.get("capture_clock_s", frame.capture_time_s))
        decision = self.link.publish_frame(frame.image, capture_s, _wire_pose(frame.pose.as_list()))
        if decision.send:
            self.frame_seq += 1  # the runtime publishes a step's frame before the step itself

    def publish_step(self, step: StepExtras) -> None:
        error = step.error if step.discarded == "malformed" else None
        try:
            body = Step(
                t_s=step.t,
                call_id=str(step.call_id)[:MAX_ID_CHARS],
                frame_seq=self.frame_seq,
                action=step.action,
                raw=(step.raw or "")[:MAX_RAW_CHARS],
                latencies_s=_latencies(step.stages),
                malformed_reason=None if error is None else str(error)[:MAX_REASON_CHARS],
                executed=step.discarded is None,
                order_id=(step.order_id or "")[:MAX_ID_CHARS],
                order_steps_left=step.order_steps_left,
            )
        except (ValueError, msgspec.ValidationError) as exc:
            self.link.stats.add("step_invalid")
            self.link.stats.log_limited("step_invalid", f"step not sent: {exc}")
            return
        self.link.publish_step(body)

    def publish_declaration(self, declaration: DeclarationLine) -> None:
        declaration_id = f"{self.drone.drone}-{declaration.t:.3f}"[-MAX_ID_CHARS:]
        self.declaration_times[declaration_id] = float(declaration.t)
        try:
            body = Declaration(
                declaration_id=declaration_id,
                t_s=declaration.t,
                pose_ned=_wire_pose(declaration.pose or []),  # a measured declaration has its pose
                frame_seq=self.frame_seq,
                distance_m=_measure(declaration.distance_m),
                bbox_distance_m=_measure(declaration.bbox_distance_m),
                visible=declaration.visible,
            )
        except ValueError as exc:
            self.link.stats.add("declaration_invalid")
            self.link.stats.log_limited("declaration_invalid", f"declaration not sent: {exc}")
            return
        self.link.publish_declaration(body)

    # ---- commands -------------------------------------------------------------------------------
    def handle(self, command: ReceivedCommand) -> CommandOutcome:
        outcome = self._handle(command)
        if not outcome.ok:
            self.refused(command.body.TYPE, "runtime", outcome.reason)
        return outcome

    def refused(self, command: str, by: str, reason: str) -> None:
        """A command not run: `by` the runtime (its refusal), or by the link's admission ("stale",
        "replayed", "unbound": never reached the runtime). In events.jsonl while few, then one line in
        a hundred of each kind (a flood must not fill the disk)."""
        self._refusals[by] += 1
        count = self._refusals[by]
        if count <= 5 or count % 100 == 0:
            self.drone.reporter.event("refused", command=command, by=by, reason=reason, count=count)

    def _handle(self, command: ReceivedCommand) -> CommandOutcome:
        drone, operator, body = self.drone, self.drone.operator, command.body
        if isinstance(body, Instruction):
            operator.set_instruction(body.text)
        elif isinstance(body, Order):
            if body.expires_after_steps < 1:
                return CommandOutcome(False, f"expires_after_steps={body.expires_after_steps} must be >= 1")
            operator.set_order(body.order_id, body.text, body.expires_after_steps)
        elif isinstance(body, EStop):
            operator.estop(body.reason or "ground-station e-stop")
        elif isinstance(body, Hold):
            operator.hold(body.reason or "ground-station hold")
        elif isinstance(body, Land):
            operator.land(body.reason or "ground-station land")
        elif isinstance(body, ReturnHome):
            operator.return_home()
        elif isinstance(body, GoTo):
            refusal = operator.goto(body.goto_id, body.target_ned_m)
            if refusal:
                return CommandOutcome(False, refusal)
        elif isinstance(body, Judgement):
            if body.declaration_id not in self.declaration_times:
                return CommandOutcome(False, f"unknown declaration {body.declaration_id!r}")
            operator.judge(body.verdict == "accept", self.declaration_times[body.declaration_id])
        elif isinstance(body, RemoteAction):
            refusal = self._remote_refusal(body)
            if refusal:
                return CommandOutcome(False, refusal)
            age_s = max(0.0, drone.clock.now() - body.capture_time_s)
            if not drone.decisions.apply_remote(
                body.action, body.frame_pose_ned, age_s, body.call_id, body.raw
            ):
                return CommandOutcome(False, f"stale: frame {age_s:.2f} s old")
        else:
            return CommandOutcome(False, f"unsupported command {type(body).__name__}")
        return CommandOutcome(True)

    def _remote_refusal(self, body: RemoteAction) -> str:
        """Why a RemoteAction must not be executed ("" when it may); its numbers are already in range."""
        if not self.drone.remote:
            return "not in remote mode: this drone's own pilot decides (remote actions are refused)"
        ahead_s = body.capture_time_s - self.drone.clock.now()
        if ahead_s > MAX_CLOCK_SKEW_S:
            return f"capture_time_s={body.capture_time_s:.3f} is {ahead_s:.2f} s in the future"
        return ""

    def on_traffic(self, traffic: Traffic) -> None:
        """Fleet mates' positions relayed by the ground station: into the safety governor, which keeps
        this drone's separation from them on every tick (the link has checked the numbers are finite)."""
        entries = [e for e in traffic.entries if e.drone_id != self.drone.drone]
        self.drone.governor.set_traffic(
            [e.position_ned_m for e in entries],
            [e.velocity_ned_m_s for e in entries],
            [e.age_s for e in entries],
        )
        ids = sorted(e.drone_id for e in entries)
        if ids != self._traffic_ids:  # logged when the set of fleet mates changes, not per message
            self._traffic_ids = ids
            self.drone.reporter.event("traffic", drones=ids)

    def last_heard_s(self) -> float | None:
        """When the ground station was last heard, on the runtime's clock (the link times it on its
        own monotonic clock): the safety governor reads it on every actuation tick."""
        heard = self.link.ground_last_heard_s
        if heard is None:
            return None
        if heard != self._heard_link_s:  # converted once per heartbeat, so that it stays one number
            self._heard_link_s = heard
            self._heard_runtime_s = self.drone.clock.now() - max(0.0, time.monotonic() - heard)
        return self._heard_runtime_s

    def on_link(self, event: LinkEvent) -> None:
        """Logged with the last-heard time. The hold and the landing need no event: the governor times
        the silence on every tick (a link that never came up is silent since it was bound)."""
        drone = self.drone
        # a MAVLink vehicle sends GCS heartbeats on the ground station's behalf only while it is up
        if drone.ground_link is not None:
            drone.ground_link.set_ground_link(event.state == "up")
        heard = self.last_heard_s()
        drone.reporter.event(
            "link",
            state=event.state,
            silence_s=event.silence_s,
            last_heard_t=None if heard is None else heard - drone.reporter.t0_s,
            mode=drone.governor.mode.value,
        )

    def close(self) -> None:
        self.link.close()


def _latencies(stages: StageLatencies | None) -> dict[str, float]:
    """Stage latencies that fit the message: finite, non-negative numbers."""
    if stages is None:
        return {}
    out = {}
    for key in stages.__struct_fields__:
        value = getattr(stages, key)
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value >= 0
        ):
            out[key[:MAX_ID_CHARS]] = float(value)
    return out


def _wire_pose(values: Sequence[float]) -> Pose:
    """A pose as messages carry it: yaw wrapped to (-180, 180] (an adapter may count whole turns)."""
    x, y, z, yaw = (float(v) for v in values)
    return Pose(x, y, z, wrap_deg(yaw) if math.isfinite(yaw) else yaw)


def _measure(value: Any) -> float | None:
    """A ground-truth distance for a Declaration: None unless finite and non-negative."""
    if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def attach_link(
    runtime: OnboardRuntime,
    gs_address: str,
    secret_file: str | None = None,
    allowed_keys: list[str] | None = None,
    *,
    insecure: bool = False,
) -> RuntimeLink:
    """Bind the drone's link at gs_address and wire it in: CURVE with this drone's secret key and the
    allowed ground-station keys, or without security only when `insecure` says so explicitly."""
    telemetry, frames, commands = endpoints(gs_address)
    security: CurveServer | Insecure
    if secret_file and insecure:
        raise ConfigError("--insecure and --link-secret contradict each other: give one of them")
    if secret_file:
        security = CurveServer.from_files(secret_file, allowed_keys or [])
    elif insecure:
        log.warning("ground-station link WITHOUT CURVE (--insecure): any host that reaches it can command")
        security = Insecure()
    else:
        raise ConfigError(
            "--gs needs CURVE keys: --link-secret DRONE.key_secret and --link-allow GS.key "
            "(make them with `dronecats keys generate`), or --insecure to run the link without them"
        )
    max_age_s, skew_s = runtime.config.command_max_age_s, runtime.config.command_clock_skew_s
    # Sessions are remembered until everything they sent is stale (at least a minute).
    memory_s = max(SESSION_MEMORY_S, max_age_s + 2 * skew_s)
    admission = AdmissionConfig(max_age_s, skew_s, memory_s)
    config = DroneLinkConfig(runtime.config.drone, telemetry, frames, commands, admission=admission)
    holder: dict[str, RuntimeLink] = {}
    link = DroneLink(
        config,
        security,
        handler=lambda cmd: holder["link"].handle(cmd),
        on_link=lambda ev: holder["link"].on_link(ev),
        clock=runtime.clock,
        on_traffic=lambda traffic: holder["link"].on_traffic(traffic),
        on_refused=lambda envelope, kind, reason: holder["link"].refused(envelope.type, kind, reason),
    )
    bridge = RuntimeLink(LinkedDrone.of(runtime), link)
    holder["link"] = bridge
    # Timed from now: a ground station that never connects holds, then lands, the drone just the same.
    runtime.governor.watch(LINK, runtime.clock.now(), poll=bridge.last_heard_s)
    link.start()
    runtime.reporter.add_publisher(bridge)
    # In the episode record and events.jsonl, so an insecure flight is never mistaken for a secure one.
    runtime.recorder.write_metadata(run={"link_security": bridge.security, "link_address": gs_address})
    runtime.event("link", state="listening", address=gs_address)
    runtime.event("link_security", security=bridge.security, address=gs_address)
    return bridge
