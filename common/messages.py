"""Typed bodies of every message on the drone ⇄ ground-station link (docs/architecture.md#the-link).

Each body is a msgspec Struct with a class-level `TYPE` (the name carried in the envelope, see
common.wire). Bodies never hold image bytes: a frame's JPEG travels as its own ZeroMQ message part
next to `FrameMeta`. Times are seconds on the sender's clock; the receiver converts them with the
clock offset estimated from heartbeats (common.link.clock_sync).

Direction:
- drone → ground (PUB): TelemetryMessage, FrameMeta, Step, Declaration, Heartbeat
- ground → drone (DEALER → ROUTER, acked): Instruction, Order, RemoteAction, Judgement, EStop, Hold,
  Land, ReturnHome, GoTo; HeartbeatRequest (not acked, answered by HeartbeatReply); Traffic (not acked,
  not answered)
- drone → ground (ROUTER → DEALER): Ack, HeartbeatReply

Validation: every number on the link is finite and inside a range, every text and list has a
length limit. The limits are msgspec constraints on the field types (checked while decoding, so a
bad message is a decode error that the links count) and `Body.__post_init__` checks the rules that
a type cannot express (every float finite, poses within MAX_POSITION_M) on decode and on
construction alike, so a sender cannot build an invalid message either.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal, Union

import msgspec

from common.actions import Action
from common.pose import Pose

MAX_ID_CHARS = 64  # drone ids, call ids, order ids, declaration ids, modes
MAX_REASON_CHARS = 500  # reasons, operator names, safety states
MAX_TEXT_CHARS = 4000  # instructions and orders
MAX_RAW_CHARS = 16_000  # a model's raw reply, as logged
MAX_POSITION_M = 100_000.0  # from the world origin: far beyond any field a drone flies
MAX_SPEED_M_S = 1_000.0
MAX_YAW_DEG = 720.0
MAX_STAMP_S = 1e12  # clock stamps (monotonic or epoch seconds)
MAX_DURATION_S = 1e6  # latencies, ages
MAX_SEQ = 2**53
MAX_ENTRIES = 64  # dict and list fields (latencies, traffic entries, sensors)

Id = Annotated[str, msgspec.Meta(max_length=MAX_ID_CHARS)]
Reason = Annotated[str, msgspec.Meta(max_length=MAX_REASON_CHARS)]
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT_CHARS)]
RawText = Annotated[str, msgspec.Meta(max_length=MAX_RAW_CHARS)]
Stamp = Annotated[float, msgspec.Meta(ge=-MAX_STAMP_S, le=MAX_STAMP_S)]
Duration = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_DURATION_S)]
Seq = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQ)]
FrameSeq = Annotated[int, msgspec.Meta(ge=-1, le=MAX_SEQ)]  # -1: none yet
Position = Annotated[float, msgspec.Meta(ge=-MAX_POSITION_M, le=MAX_POSITION_M)]
Speed = Annotated[float, msgspec.Meta(ge=-MAX_SPEED_M_S, le=MAX_SPEED_M_S)]
Distance = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_POSITION_M)]
Pixels = Annotated[int, msgspec.Meta(ge=1, le=16_384)]
Latencies = Annotated[dict[Id, Duration], msgspec.Meta(max_length=MAX_ENTRIES)]
Vector = tuple[Speed, Speed, Speed]


def check_numbers(value: Any, where: str = "") -> None:
    """Raise ValueError unless every float in `value` (recursively) is finite and every Pose is within
    MAX_POSITION_M and MAX_YAW_DEG. msgspec's range constraints already refuse NaN while decoding;
    this holds for fields without a range and for messages built in code (a NaN in a constructor)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where or 'value'}={value} is not finite")
    elif isinstance(value, Pose):
        limits = (("x_m", MAX_POSITION_M), ("y_m", MAX_POSITION_M), ("z_m", MAX_POSITION_M))
        for name, limit in (*limits, ("yaw_deg", MAX_YAW_DEG)):
            number = getattr(value, name)
            if not (isinstance(number, (int, float)) and math.isfinite(number) and abs(number) <= limit):
                raise ValueError(f"{where}.{name}={number} must be finite and within ±{limit:g}")
    elif isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            check_numbers(getattr(value, name), f"{where}.{name}" if where else name)
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            check_numbers(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_numbers(item, f"{where}[{key!r}]")


LinkStateName = Literal["connecting", "up", "lost"]
# "stale", "replayed", "unbound": refused by the drone's link before anything ran (common.link.admission).
AckResult = Literal["ok", "rejected", "error", "stale", "replayed", "unbound"]
JudgementVerdict = Literal["accept", "reject"]


class Body(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Base of every message body; `TYPE` is its name in the envelope."""

    TYPE: ClassVar[str] = ""

    def __post_init__(self) -> None:
        check_numbers(self)


# --- drone → ground, published -------------------------------------------------------------------


TempC = Annotated[float, msgspec.Meta(ge=-273.15, le=1000.0)]
Percent = Annotated[float, msgspec.Meta(ge=0.0, le=1000.0)]  # a load summed over cores may pass 100
Megabytes = Annotated[float, msgspec.Meta(ge=0.0, le=1e9)]


class JetsonHealth(msgspec.Struct, frozen=True, omit_defaults=True):
    """The companion computer's health (onboard.jetson: tegrastats or jtop), sampled on the drone.

    Unknown fields are ignored (no forbid_unknown_fields) so that a later sensor added here never makes
    an older ground station drop the whole telemetry message."""

    source: Id  # "tegrastats" or "jtop"
    max_temp_c: TempC | None = None  # hottest sensor
    cpu_temp_c: TempC | None = None
    gpu_temp_c: TempC | None = None
    temps_c: Annotated[dict[Id, TempC], msgspec.Meta(max_length=MAX_ENTRIES)] = {}  # name -> °C
    cpu_load_pct: Percent | None = None  # mean over online cores
    gpu_load_pct: Percent | None = None
    ram_used_mb: Megabytes | None = None
    ram_total_mb: Megabytes | None = None
    swap_used_mb: Megabytes | None = None
    power_mw: Annotated[float, msgspec.Meta(ge=0.0, le=1e7)] | None = None  # whole module input power
    power_mode: Id | None = None  # nvpmodel mode name, e.g. "MAXN" or "25W"
    throttled: bool = False
    # e.g. "thermal: 96.0 C >= 95 C"
    throttle_reasons: Annotated[tuple[Reason, ...], msgspec.Meta(max_length=MAX_ENTRIES)] = ()

    def __post_init__(self) -> None:
        check_numbers(self)


# omit_defaults: a field at its default is not sent, so a drone without Jetson health (jetson=None)
# sends exactly what peers from before the field decode; a peer from before the field still rejects
# telemetry that carries `jetson` (forbid_unknown_fields), so update ground stations first.
class TelemetryMessage(Body, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    TYPE: ClassVar[str] = "telemetry"

    time_s: Stamp  # drone clock, when the state was sampled
    pose_ned: Pose
    velocity_ned_m_s: Vector
    battery_pct: Annotated[float, msgspec.Meta(ge=0.0, le=100.0)] | None  # None: not reported
    mode: Id  # e.g. "hover", "segment", "landing", "landed"
    armed: bool
    link_state: LinkStateName  # the drone's view of the ground link
    control_rate_hz: Annotated[float, msgspec.Meta(ge=0.0, le=100_000.0)]  # the actuation rate served
    latencies_s: Latencies = {}  # per-stage latency of the last step, e.g. {"model": 0.41}
    safety_state: Reason = "ok"  # e.g. "ok", "geofence", "estop", "link_lost_hold"
    pose_source: Id = "vehicle"  # "vehicle", or "dead_reckoning" (Tello, docs/safety.md#real-flight)
    jetson: JetsonHealth | None = None  # None off a Jetson, or when its health sample is stale
    # The drone's own link: "curve", or "insecure" when it runs without CURVE (chosen with --insecure).
    link_security: Literal["", "curve", "insecure"] = ""
    # The drone's command socket so far: messages accepted (valid, handed on) and those thrown
    # away: malformed or out of range (rejected), refused by the runtime (e.g. a remote action
    # outside remote mode; these were accepted first), unauthenticated connections; and the
    # frames and publications it could not send at a socket's high-water mark; commands refused as
    # stale, replayed or bound to another drone run (link_stale, not in link_rejected).
    link_accepted: Seq = 0
    link_rejected: Seq = 0
    link_refused: Seq = 0
    link_unauthenticated: Seq = 0
    link_dropped: Seq = 0
    link_stale: Seq = 0
    # The standard deviation of the served actuation period (ms): the control rate's jitter.
    control_jitter_ms: Annotated[float, msgspec.Meta(ge=0.0, le=100_000.0)] = 0.0


class FrameMeta(Body, frozen=True, forbid_unknown_fields=True):
    """Describes the JPEG in the next message part."""

    TYPE: ClassVar[str] = "frame"

    frame_seq: Seq
    capture_time_s: Stamp
    pose_ned: Pose  # the vehicle pose at capture
    width_px: Pixels
    height_px: Pixels
    jpeg_quality: Annotated[int, msgspec.Meta(ge=1, le=100)]
    camera: Id = "front"


class Step(Body, frozen=True, forbid_unknown_fields=True):
    """One decision of the pilot: what the model said and what it was parsed into."""

    TYPE: ClassVar[str] = "step"

    t_s: Stamp
    call_id: Id  # shared by the N actions of one multi-drone call
    frame_seq: FrameSeq
    action: Action | None  # None when the reply was malformed (then executed as a hold)
    raw: RawText
    latencies_s: Latencies = {}
    malformed_reason: Reason | None = None
    executed: bool = True  # False when discarded as stale
    # commander + sub-agents: the order this step executed under (docs/protocol.md#several-drones)
    order_id: Id = ""
    order_steps_left: Seq | None = None  # steps left on that order after this one (0: it expired)


class Declaration(Body, frozen=True, forbid_unknown_fields=True):
    """An arrival declaration (`finished` executed), waiting for an operator's judgement in real flight."""

    TYPE: ClassVar[str] = "declaration"

    declaration_id: Id
    t_s: Stamp
    pose_ned: Pose
    frame_seq: FrameSeq
    call_id: Id = ""
    # Measured by the simulator when the drone has ground truth (docs/verifier.md#declarations); None in
    # real flight.
    distance_m: Distance | None = None
    bbox_distance_m: Distance | None = None
    visible: bool | None = None


class Heartbeat(Body, frozen=True, forbid_unknown_fields=True):
    """Published by a drone at a fixed interval, so that a listener knows the drone is alive."""

    TYPE: ClassVar[str] = "heartbeat"

    time_s: Stamp
    ground_link: LinkStateName
    last_frame_seq: FrameSeq = -1


# --- ground → drone, commands (acked) ------------------------------------------------------------


class Instruction(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "instruction"

    text: Text
    episode_id: Id = ""


class Order(Body, frozen=True, forbid_unknown_fields=True):
    """A commander's text order to one sub-agent; it expires after `expires_after_steps` steps
    (docs/protocol.md#several-drones)."""

    TYPE: ClassVar[str] = "order"

    order_id: Id
    text: Text
    expires_after_steps: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 6


class RemoteAction(Body, frozen=True, forbid_unknown_fields=True):
    """An action decided at the ground station (pilot model served there), with its frame's context so
    the drone can re-express or reject it when late (docs/safety.md#latency-compensation)."""

    TYPE: ClassVar[str] = "remote_action"

    action: Action
    call_id: Id
    frame_seq: FrameSeq
    frame_pose_ned: Pose
    capture_time_s: Stamp  # on the drone's clock (the frame's own stamp)
    raw: RawText = ""


class Judgement(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "judgement"

    declaration_id: Id
    verdict: JudgementVerdict
    operator: Reason = ""


class SafetyCommand(Body, frozen=True, forbid_unknown_fields=True):
    """The operator's safety commands carry a reason only; each subclass is one of them on the wire
    (its own TYPE; this base is in no list of message types, so it is never sent or decoded)."""

    reason: Reason = ""


class EStop(SafetyCommand, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "estop"


class Hold(SafetyCommand, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "hold"


class Land(SafetyCommand, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "land"


class ReturnHome(SafetyCommand, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "return_home"


class GoTo(Body, frozen=True, forbid_unknown_fields=True):
    """The operator's point to fly to (picked on the map): the drone checks it against its own
    geofence and altitude limits before it acks, flies there under the safety governor, then holds.

    The point is in the drone's world NED frame only (the frame of its telemetry and its geofence's
    home), never latitude/longitude: the ground station converts a geographic point with the geo
    origin of that frame, which it already needs for its map, while a vehicle adapter need not know
    one (a Tello has none). One conversion, in one place, and the drone checks what it will fly."""

    TYPE: ClassVar[str] = "goto"

    goto_id: Id
    target_ned_m: tuple[Position, Position, Position]  # north, east, down (m)


Command = Union[Instruction, Order, RemoteAction, Judgement, EStop, Hold, Land, ReturnHome, GoTo]  # noqa: UP007


# --- link control ---------------------------------------------------------------------------------


class HeartbeatRequest(Body, frozen=True, forbid_unknown_fields=True):
    """Ground → drone. `t1_s` on the ground clock (NTP origin timestamp). `last_frame_seq` is the newest
    frame this ground station received: the drone's frame budget counts frames in flight from it."""

    TYPE: ClassVar[str] = "heartbeat_request"

    hb_seq: Seq
    t1_s: Stamp
    last_frame_seq: FrameSeq = -1


class TrafficEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One fleet mate as the ground station last heard it (its telemetry), world NED."""

    drone_id: Id
    position_ned_m: tuple[Position, Position, Position]
    velocity_ned_m_s: Vector
    age_s: Duration  # how old that telemetry was when this message left the ground station

    def __post_init__(self) -> None:
        check_numbers(self)


class Traffic(Body, frozen=True, forbid_unknown_fields=True):
    """Ground → drone, not acknowledged: the other drones' latest positions, relayed from their
    telemetry a few times a second, so each drone's safety governor keeps its separation from
    drones flown by other processes (docs/safety.md#the-safety-governor). Positions are in the world
    frame every drone reports (the built-in sim's, or each vehicle's `spawn=`)."""

    TYPE: ClassVar[str] = "traffic"

    entries: Annotated[tuple[TrafficEntry, ...], msgspec.Meta(max_length=MAX_ENTRIES)]


class HeartbeatReply(Body, frozen=True, forbid_unknown_fields=True):
    """Drone → ground: the request's t1 echoed, with t2 (received) and t3 (sent) on the drone clock."""

    TYPE: ClassVar[str] = "heartbeat_reply"

    hb_seq: Seq
    t1_s: Stamp
    t2_s: Stamp
    t3_s: Stamp


class Ack(Body, frozen=True, forbid_unknown_fields=True):
    """The drone's answer to a command (matched by the command's envelope seq). A duplicate command
    gets the cached Ack again with `duplicate=True`; it is not executed twice."""

    TYPE: ClassVar[str] = "ack"

    command_seq: Seq
    command_type: Id
    result: AckResult
    reason: Reason = ""
    duplicate: bool = False


PUBLISHED_TYPES: tuple[type[Body], ...] = (TelemetryMessage, FrameMeta, Step, Declaration, Heartbeat)
COMMAND_TYPES: tuple[type[Body], ...] = (
    Instruction,
    Order,
    RemoteAction,
    Judgement,
    EStop,
    Hold,
    Land,
    ReturnHome,
    GoTo,
)
REPLY_TYPES: tuple[type[Body], ...] = (Ack, HeartbeatReply)
ALL_TYPES: tuple[type[Body], ...] = (
    *PUBLISHED_TYPES,
    *COMMAND_TYPES,
    HeartbeatRequest,
    Traffic,
    *REPLY_TYPES,
)
BODY_TYPES: dict[str, type[Body]] = {cls.TYPE: cls for cls in ALL_TYPES}
