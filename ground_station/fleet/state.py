"""What the ground station knows of each drone, updated from the link's I/O thread.

Every update goes through `FleetState` under one lock and is then announced to listeners as a
`FleetEvent` (kind, drone, record). Listeners run on the thread that made the update and must return
quickly (the GUI turns them into queued Qt signals). Every event is also appended to the session log.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.actions import Action, Finished
from common.messages import TelemetryMessage
from common.pose import Pose

log = logging.getLogger(__name__)

FRAMES_KEPT = 30  # per drone: enough to find the frame a step or a declaration names
STEPS_KEPT = 50
TRAIL_POINTS = 600
UNLOGGED_KINDS = frozenset({"telemetry", "frame"})


@dataclass(frozen=True)
class FrameRecord:
    seq: int
    capture_time_s: float  # the drone's clock (as sent: RemoteActions carry it back)
    pose: Pose  # the vehicle pose at capture
    jpeg: bytes
    width_px: int
    height_px: int
    received_s: float  # ground clock (monotonic) when it arrived
    capture_ground_s: float  # the capture time converted to the ground clock (clock-offset estimate)


@dataclass(frozen=True)
class StepRecord:
    t_s: float
    frame_seq: int
    action: Action | None
    raw: str
    call_id: str
    executed: bool
    model_latency_s: float | None
    malformed_reason: str | None
    received_s: float
    order_id: str = ""
    order_steps_left: int | None = None


@dataclass
class DeclarationRecord:
    declaration_id: str
    drone: str
    t_s: float
    pose: Pose
    frame_seq: int
    distance_m: float | None
    bbox_distance_m: float | None
    visible: bool | None
    thumbnail_jpeg: bytes | None
    received_wall_s: float  # time.time(), for the operator's log
    judged: str | None = None  # "accept" / "reject" once the operator judged it


@dataclass
class OrderRecord:
    order_id: str
    drone: str
    text: str
    expires_after_steps: int
    sent_wall_s: float
    steps_used: int = 0
    state: str = "sent"  # sent, active, expired, finished, replaced, rejected, skipped (not sent)

    @property
    def steps_left(self) -> int:
        return max(0, self.expires_after_steps - self.steps_used)


@dataclass(frozen=True)
class AckRecord:
    drone: str
    command: str
    # "ok", "rejected", "error"; "stale", "replayed", "unbound" (refused unrun by the drone's link,
    # common.link.admission); or "no ack" when the link gave up
    result: str
    reason: str
    latency_s: float


@dataclass
class DroneState:
    drone_id: str
    link_state: str = "connecting"
    telemetry: TelemetryMessage | None = None
    telemetry_received_s: float | None = None
    frames: deque[FrameRecord] = field(default_factory=lambda: deque(maxlen=FRAMES_KEPT))
    steps: deque[StepRecord] = field(default_factory=lambda: deque(maxlen=STEPS_KEPT))
    trail: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=TRAIL_POINTS))
    history: list[Action] = field(default_factory=list)  # executed actions (for one-context prompts)
    order: OrderRecord | None = None
    acks: dict[str, AckRecord] = field(default_factory=dict)  # newest ack per command type
    step_count: int = 0
    home: tuple[float, float, float] | None = None  # where it first reported from (its take-off spot)

    @property
    def latest_frame(self) -> FrameRecord | None:
        return self.frames[-1] if self.frames else None

    def frame(self, seq: int) -> FrameRecord | None:
        for record in reversed(self.frames):
            if record.seq == seq:
                return record
        return None

    def is_stale(self, now_s: float, stale_after_s: float) -> bool:
        """No telemetry for stale_after_s, or the link is lost: what is shown is old."""
        if self.link_state == "lost" or self.telemetry_received_s is None:
            return True
        return now_s - self.telemetry_received_s > stale_after_s

    @property
    def last_step(self) -> StepRecord | None:
        return self.steps[-1] if self.steps else None


@dataclass(frozen=True)
class FleetEvent:
    kind: str  # telemetry, frame, step, declaration, link, ack, order, judgement, instruction, note
    drone: str | None
    record: Any = None


Listener = Callable[[FleetEvent], None]


class FleetState:
    def __init__(self, drone_ids: list[str]) -> None:
        self.drones: dict[str, DroneState] = {d: DroneState(d) for d in drone_ids}
        self.declarations: list[DeclarationRecord] = []
        self.orders: list[OrderRecord] = []
        self.session_log: list[dict[str, Any]] = []
        self.lock = threading.RLock()
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        with self.lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with self.lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def emit(self, kind: str, drone: str | None, record: Any = None, **log_fields: Any) -> None:
        """Log the event in the session log and tell the listeners (outside the lock)."""
        with self.lock:
            if kind not in UNLOGGED_KINDS:  # telemetry and frames are the logs' job on the drone
                self.session_log.append(
                    {"wall_s": round(time.time(), 3), "kind": kind, "drone": drone, **log_fields}
                )
            listeners = list(self._listeners)
        event = FleetEvent(kind, drone, record)
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # a broken view must not break the link thread
                log.exception("fleet listener failed on %s", kind)

    # ---- queries (copies, safe to use outside the lock) -----------------------------------------
    def snapshot(self, drone_id: str) -> DroneState:
        with self.lock:
            d = self.drones[drone_id]
            return DroneState(
                d.drone_id,
                d.link_state,
                d.telemetry,
                d.telemetry_received_s,
                deque(d.frames, maxlen=FRAMES_KEPT),
                deque(d.steps, maxlen=STEPS_KEPT),
                deque(d.trail, maxlen=TRAIL_POINTS),
                list(d.history),
                d.order,
                dict(d.acks),
                d.step_count,
                d.home,
            )

    def declaration(self, declaration_id: str) -> DeclarationRecord | None:
        with self.lock:
            return next((d for d in self.declarations if d.declaration_id == declaration_id), None)

    def finished_count(self) -> int:
        with self.lock:
            return sum(1 for d in self.drones.values() for s in d.steps if isinstance(s.action, Finished))
