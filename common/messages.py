"""Typed bodies of every message on the drone ⇄ ground-station link (ARCHITECTURE.md "Wire protocol").

Each body is a msgspec Struct with a class-level `TYPE` (the name carried in the envelope, see
common.wire). Bodies never hold image bytes: a frame's JPEG travels as its own ZeroMQ message part
next to `FrameMeta`. Times are seconds on the sender's clock; the receiver converts them with the
clock offset estimated from heartbeats (common.link.clock_sync).

Direction:
- drone → ground (PUB): Telemetry, FrameMeta, Step, Declaration, Heartbeat
- ground → drone (DEALER → ROUTER, acked): Instruction, Order, RemoteAction, Judgement, EStop, Hold,
  Land, ReturnHome; HeartbeatRequest (not acked, answered by HeartbeatReply); Traffic (not acked,
  not answered)
- drone → ground (ROUTER → DEALER): Ack, HeartbeatReply
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal, Union

import msgspec

from common.actions import Action
from common.pose import Pose

LinkStateName = Literal["connecting", "up", "lost"]
AckResult = Literal["ok", "rejected", "error", "stale"]
JudgementVerdict = Literal["accept", "reject"]


class Body(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Base of every message body; `TYPE` is its name in the envelope."""

    TYPE: ClassVar[str] = ""


# --- drone → ground, published -------------------------------------------------------------------


class JetsonHealth(msgspec.Struct, frozen=True, omit_defaults=True):
    """The companion computer's health (onboard.jetson: tegrastats or jtop), sampled on the drone.

    Unknown fields are ignored (no forbid_unknown_fields) so that a later sensor added here never makes
    an older ground station drop the whole telemetry message."""

    source: str  # "tegrastats" or "jtop"
    max_temp_c: float | None = None  # hottest sensor
    cpu_temp_c: float | None = None
    gpu_temp_c: float | None = None
    temps_c: dict[str, float] = {}  # every sensor, lower-case name -> °C
    cpu_load_pct: float | None = None  # mean over online cores
    gpu_load_pct: float | None = None
    ram_used_mb: float | None = None
    ram_total_mb: float | None = None
    swap_used_mb: float | None = None
    power_mw: float | None = None  # whole module input power
    power_mode: str | None = None  # nvpmodel mode name, e.g. "MAXN" or "25W"
    throttled: bool = False
    throttle_reasons: tuple[str, ...] = ()  # e.g. "thermal: 96.0 C >= 95 C"


# omit_defaults: a field at its default is not sent, so a drone without Jetson health (jetson=None)
# sends exactly what peers from before the field decode; a peer from before the field still rejects
# telemetry that carries `jetson` (forbid_unknown_fields), so update ground stations first.
class Telemetry(Body, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    TYPE: ClassVar[str] = "telemetry"

    time_s: float  # drone clock, when the state was sampled
    pose_ned: Pose
    velocity_ned_m_s: tuple[float, float, float]
    battery_pct: float | None  # None when the vehicle does not report it
    mode: str  # e.g. "hover", "segment", "landing", "landed"
    armed: bool
    link_state: LinkStateName  # the drone's view of the ground link
    control_rate_hz: float  # the actuation rate actually served
    latencies_s: dict[str, float] = {}  # per-stage latency of the last step, e.g. {"model": 0.41}
    safety_state: str = "ok"  # e.g. "ok", "geofence", "estop", "link_lost_hold"
    pose_source: str = "vehicle"  # "vehicle", or "dead_reckoning" (Tello, AGENT.md §7)
    jetson: JetsonHealth | None = None  # None off a Jetson, or when its health sample is stale


class FrameMeta(Body, frozen=True, forbid_unknown_fields=True):
    """Describes the JPEG in the next message part."""

    TYPE: ClassVar[str] = "frame"

    frame_seq: int
    capture_time_s: float
    pose_ned: Pose  # the vehicle pose at capture
    width_px: int
    height_px: int
    jpeg_quality: int
    camera: str = "front"


class Step(Body, frozen=True, forbid_unknown_fields=True):
    """One decision of the pilot: what the model said and what it was parsed into."""

    TYPE: ClassVar[str] = "step"

    t_s: float
    call_id: str  # shared by the N actions of one multi-drone call
    frame_seq: int
    action: Action | None  # None when the reply was malformed (then executed as a hold)
    raw: str
    latencies_s: dict[str, float] = {}
    malformed_reason: str | None = None
    executed: bool = True  # False when discarded as stale
    order_id: str = ""  # commander + sub-agents: the order this step executed under (AGENT.md §5)
    order_steps_left: int | None = None  # steps left on that order after this one (0: it expired)


class Declaration(Body, frozen=True, forbid_unknown_fields=True):
    """An arrival declaration (`finished` executed), waiting for an operator's judgement in real flight."""

    TYPE: ClassVar[str] = "declaration"

    declaration_id: str
    t_s: float
    pose_ned: Pose
    frame_seq: int
    call_id: str = ""
    # Measured by the simulator when the drone has ground truth (AGENT.md §6); None in real flight.
    distance_m: float | None = None
    bbox_distance_m: float | None = None
    visible: bool | None = None


class Heartbeat(Body, frozen=True, forbid_unknown_fields=True):
    """Published by a drone at a fixed interval, so that a listener knows the drone is alive."""

    TYPE: ClassVar[str] = "heartbeat"

    time_s: float
    ground_link: LinkStateName
    last_frame_seq: int = -1


# --- ground → drone, commands (acked) ------------------------------------------------------------


class Instruction(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "instruction"

    text: str
    episode_id: str = ""


class Order(Body, frozen=True, forbid_unknown_fields=True):
    """A commander's text order to one sub-agent; it expires after `expires_after_steps` steps (§5)."""

    TYPE: ClassVar[str] = "order"

    order_id: str
    text: str
    expires_after_steps: int = 6


class RemoteAction(Body, frozen=True, forbid_unknown_fields=True):
    """An action decided at the ground station (pilot model served there), with its frame's context so
    the drone can re-express or reject it when late (ARCHITECTURE.md "Timing")."""

    TYPE: ClassVar[str] = "remote_action"

    action: Action
    call_id: str
    frame_seq: int
    frame_pose_ned: Pose
    capture_time_s: float  # on the drone's clock (the frame's own stamp)
    raw: str = ""


class Judgement(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "judgement"

    declaration_id: str
    verdict: JudgementVerdict
    operator: str = ""


class EStop(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "estop"

    reason: str = ""


class Hold(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "hold"

    reason: str = ""


class Land(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "land"

    reason: str = ""


class ReturnHome(Body, frozen=True, forbid_unknown_fields=True):
    TYPE: ClassVar[str] = "return_home"

    reason: str = ""


Command = Union[Instruction, Order, RemoteAction, Judgement, EStop, Hold, Land, ReturnHome]  # noqa: UP007


# --- link control ---------------------------------------------------------------------------------


class HeartbeatRequest(Body, frozen=True, forbid_unknown_fields=True):
    """Ground → drone. `t1_s` on the ground clock (NTP origin timestamp). `last_frame_seq` is the newest
    frame this ground station received: the drone's frame budget counts frames in flight from it."""

    TYPE: ClassVar[str] = "heartbeat_request"

    hb_seq: int
    t1_s: float
    last_frame_seq: int = -1


class TrafficEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One fleet mate as the ground station last heard it (its telemetry), world NED."""

    drone_id: str
    position_ned_m: tuple[float, float, float]
    velocity_ned_m_s: tuple[float, float, float]
    age_s: float  # how old that telemetry was when this message left the ground station


class Traffic(Body, frozen=True, forbid_unknown_fields=True):
    """Ground → drone, not acknowledged: the other drones' latest positions, relayed from their
    telemetry a few times a second, so each drone's safety governor keeps its separation from
    drones flown by other processes (AGENT.md: limits below the model). Positions are in the world
    frame every drone reports (the built-in sim's, or each vehicle's `spawn=`)."""

    TYPE: ClassVar[str] = "traffic"

    entries: tuple[TrafficEntry, ...]

    def finite(self) -> bool:
        return all(
            math.isfinite(v) for e in self.entries for v in (*e.position_ned_m, *e.velocity_ned_m_s, e.age_s)
        ) and all(e.age_s >= 0 for e in self.entries)


class HeartbeatReply(Body, frozen=True, forbid_unknown_fields=True):
    """Drone → ground: the request's t1 echoed, with t2 (received) and t3 (sent) on the drone clock."""

    TYPE: ClassVar[str] = "heartbeat_reply"

    hb_seq: int
    t1_s: float
    t2_s: float
    t3_s: float


class Ack(Body, frozen=True, forbid_unknown_fields=True):
    """The drone's answer to a command (matched by the command's envelope seq). A duplicate command
    gets the cached Ack again with `duplicate=True`; it is not executed twice."""

    TYPE: ClassVar[str] = "ack"

    command_seq: int
    command_type: str
    result: AckResult
    reason: str = ""
    duplicate: bool = False


PUBLISHED_TYPES: tuple[type[Body], ...] = (Telemetry, FrameMeta, Step, Declaration, Heartbeat)
COMMAND_TYPES: tuple[type[Body], ...] = (
    Instruction,
    Order,
    RemoteAction,
    Judgement,
    EStop,
    Hold,
    Land,
    ReturnHome,
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
