"""The three command structures (docs/howto/fleet.md#4-choose-a-structure) on top of a FleetClient.

Each structure is started with the operator's instruction and runs on its own worker thread (never
on the link's I/O thread), woken by fleet events:
- `PerDrone`: every drone flies its own pilot with the instruction; nothing more to do.
- `OneContext`: the drones run in remote mode (they only stream frames); each call gives the model
  the newest frame of every drone, and each action goes back to its drone as a RemoteAction with the
  pose and stamp of the frame it was chosen from (so the drone re-expresses or rejects it when late).
- `CommanderStructure`: a commander writes one order per drone; orders live for
  `expires_after_steps` executed sub-agent steps (each drone also holds itself when its order
  expires); the commander re-plans when an order expires and when a sub-agent returns `finished`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from typing import Any

import numpy as np

from common.actions import Finished, Go
from ground_station.fleet.client import FleetClient
from ground_station.fleet.state import FleetEvent, FrameRecord, StepRecord
from models.commanders import Commander, CommanderInput, DroneView

log = logging.getLogger(__name__)

STRUCTURES = ("per-drone", "one-context", "commander")


def decode_jpeg(jpeg: bytes) -> Any:
    import cv2

    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)


class Structure:
    """Base: a worker thread fed with fleet events; subclasses implement `_handle` and `_begin`."""

    name = "structure"

    def __init__(self, fleet: FleetClient) -> None:
        self.fleet = fleet
        self.instruction = ""
        self.calls = 0
        self.errors: list[str] = []
        self._events: queue.Queue[FleetEvent | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self, instruction: str) -> None:
        if not instruction.strip():
            raise ValueError("the instruction is empty")
        self.instruction = instruction
        self.fleet.resume_orders()  # the operator started this structure: a pause before it ends
        self.fleet.state.add_listener(self._events.put)
        self.fleet.state.emit("structure", None, structure=self.name, instruction=instruction)
        self._thread = threading.Thread(target=self._run, name=f"fleet-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.fleet.state.remove_listener(self._events.put)
        self._events.put(None)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10.0)

    def _run(self) -> None:
        try:
            self._begin()
            while not self._stop.is_set():
                try:
                    event = self._events.get(timeout=0.1)
                except queue.Empty:
                    event = None
                if self._stop.is_set():
                    break
                self._handle(event)
        except Exception as exc:  # the operator must see it; the drones hold on their own rules
            log.exception("%s structure failed", self.name)
            self.error(f"{self.name} failed: {type(exc).__name__}: {exc}")

    def _begin(self) -> None:
        pass

    def error(self, text: str) -> None:
        """Keep it, and tell the operator (a note in the session log and on screen)."""
        self.errors.append(text)
        self.fleet.state.emit("note", None, text, structure=self.name, text=text)

    def _handle(self, event: FleetEvent | None) -> None:
        pass


class PerDrone(Structure):
    """(a) one pilot per drone: the instruction goes to every drone; each onboard pilot flies it."""

    name = "per-drone"

    def _begin(self) -> None:
        acks = self.fleet.instruct(self.instruction)
        bad = [
            f"{d} ({a.result}: {a.reason})" if a.reason else f"{d} ({a.result})"
            for d, a in acks.items()
            if a.result != "ok"
        ]
        if bad:
            self.error(f"instruction not accepted by {', '.join(bad)}")


class OneContext(Structure):
    """(b) one model call for all N frames; the drones run `--pilot remote`."""

    name = "one-context"

    def __init__(
        self,
        fleet: FleetClient,
        model_url: str,
        min_call_period_s: float = 0.5,
        max_frame_age_s: float = 2.0,
    ) -> None:
        super().__init__(fleet)
        from models.backends import open_backend
        from models.pilot import profile_for_url
        from models.pilot_prompt import MultiDronePrompt

        self.backend = open_backend(model_url)
        self.prompt = MultiDronePrompt(profile_for_url(model_url), len(fleet.drone_ids))
        self.min_call_period_s = min_call_period_s
        self.max_frame_age_s = max_frame_age_s
        self._used: dict[str, int] = {}
        self._next_call_s = 0.0
        # calls where every drone got the same go (coordinate copying, docs/protocol.md#several-drones)
        self.copying_calls = 0
        self.all_go_calls = 0

    def _handle(self, event: FleetEvent | None) -> None:
        now_s = time.monotonic()
        if now_s < self._next_call_s or self.fleet.orders_paused is not None:
            return
        frames = self._fresh_frames(now_s)
        if frames is None:
            return
        self._next_call_s = now_s + self.min_call_period_s
        self.call(frames)

    def _fresh_frames(self, now_s: float) -> list[FrameRecord] | None:
        """Every drone's newest frame, once each has a frame not used in a call yet and not too old."""
        out = []
        with self.fleet.state.lock:
            for drone_id in self.fleet.drone_ids:
                frame = self.fleet.state.drones[drone_id].latest_frame
                if frame is None or frame.seq == self._used.get(drone_id):
                    return None
                if now_s - frame.received_s > self.max_frame_age_s:
                    return None
                out.append(frame)
        return out

    def call(self, frames: list[FrameRecord]) -> None:
        from models.pilot import decide_multi

        ids = self.fleet.drone_ids
        for drone_id, frame in zip(ids, frames, strict=True):
            self._used[drone_id] = frame.seq
        with self.fleet.state.lock:
            histories = [list(self.fleet.state.drones[d].history[-5:]) for d in ids]
        call_id = uuid.uuid4().hex[:10]
        images = [decode_jpeg(f.jpeg) for f in frames]
        decision = decide_multi(self.backend, self.prompt, self.instruction, images, histories)
        self.calls += 1
        latency = decision.stats.latency_s if decision.stats is not None else None
        self.fleet.state.emit(
            "multi_call",
            None,
            decision,
            call_id=call_id,
            raw=decision.raw[:2000],
            error=decision.error,
            latency_s=latency,
        )
        if decision.error is not None:
            # Malformed or failed: no drone gets an action; each finishes its segment and holds.
            self.errors.append(decision.error)
            return
        actions = decision.actions
        gos = [a for a in actions if isinstance(a, Go)]
        if len(gos) == len(actions):
            self.all_go_calls += 1
            if len({(a.point, a.depth_m) for a in gos}) == 1:
                self.copying_calls += 1
        futures = []
        for drone_id, frame, action in zip(ids, frames, actions, strict=True):
            blocker = self.fleet.order_blocker(drone_id)
            if blocker is not None:
                continue  # stopped by the operator or for safety, or gone: no action may undo that
            if action is not None:
                futures.append(
                    (drone_id, self.fleet.remote_action(drone_id, action, frame, call_id, decision.raw))
                )
        for drone_id, future in futures:
            try:
                ack = future.result(timeout=10.0)
                if ack.result != "ok":
                    self.errors.append(f"{drone_id}: {ack.result} {ack.reason}")
            except Exception as exc:
                self.errors.append(f"{drone_id}: {exc}")

    def stop(self) -> None:
        super().stop()
        self.backend.close()


class CommanderStructure(Structure):
    """(c) commander + sub-agents; the drones fly their own pilots with the orders as instructions."""

    name = "commander"

    def __init__(
        self,
        fleet: FleetClient,
        commander: Commander,
        expires_after_steps: int = 6,
        marked_targets: list[tuple[float, float]] | None = None,
        map_image_source: Any = None,
    ) -> None:
        super().__init__(fleet)
        if expires_after_steps < 1:
            raise ValueError(f"expires_after_steps={expires_after_steps} must be >= 1")
        self.commander = commander
        self.expires_after_steps = expires_after_steps
        self.marked_targets = list(marked_targets or [])
        self.map_image_source = map_image_source  # callable -> BGR map image (the GUI's map), or None
        self.replans: list[str] = []  # why each plan was made: start, expired:DroneN, finished:DroneN

    def _begin(self) -> None:
        self.replan("start")

    def _handle(self, event: FleetEvent | None) -> None:
        if event is None or event.kind != "step":
            return
        step = event.record
        assert isinstance(step, StepRecord)
        drone_id = event.drone
        assert drone_id is not None
        with self.fleet.state.lock:
            order = self.fleet.state.drones[drone_id].order
            if order is None or order.state not in ("sent", "active") or step.order_id != order.order_id:
                return
            if isinstance(step.action, Finished) and step.executed:
                order.state = "finished"
                why = f"finished:{drone_id}"
            elif order.steps_used >= order.expires_after_steps:
                order.state = "expired"
                why = f"expired:{drone_id}"
            else:
                return
        self.fleet.state.emit("order_end", drone_id, order, order_id=order.order_id, why=why)
        self.replan(why)

    def situation(self) -> CommanderInput:
        views = []
        with self.fleet.state.lock:
            drones = [self.fleet.state.drones[d] for d in self.fleet.drone_ids]
            raw = [
                (d.drone_id, d.telemetry, d.latest_frame, d.history[-1] if d.history else None)
                for d in drones
            ]
        for drone_id, telemetry, frame, last in raw:
            pose = telemetry.pose_ned if telemetry is not None else (frame.pose if frame else None)
            image = decode_jpeg(frame.jpeg) if frame is not None else None
            views.append(DroneView(drone_id, pose, image, last))
        map_image = self.map_image_source() if self.map_image_source is not None else None
        return CommanderInput(self.instruction, views, tuple(self.marked_targets), map_image)

    def replan(self, why: str) -> None:
        if self.fleet.orders_paused is not None:
            self.fleet.state.emit("note", None, f"commander paused: {self.fleet.orders_paused}", why=why)
            return
        orders = self.commander.plan(self.situation())
        self.calls += 1
        self.replans.append(why)
        self.fleet.state.emit(
            "commander",
            None,
            orders,
            why=why,
            orders=list(orders.orders or []),
            error=orders.error,
            detail=orders.detail,
        )
        if orders.orders is None:
            self.error(orders.error or "commander gave no orders")
            return  # every order stays as it is; expired ones keep their drones holding
        for drone_id, text in zip(self.fleet.drone_ids, orders.orders, strict=True):
            self.fleet.order(drone_id, text, self.expires_after_steps)


def make_structure(
    kind: str,
    fleet: FleetClient,
    model_url: str | None = None,
    commander: str = "rule",
    expires_after_steps: int = 6,
    marked_targets: list[tuple[float, float]] | None = None,
) -> Structure:
    """per-drone | one-context (needs model_url) | commander (rule, or a commander model URL)."""
    from common.errors import ConfigError

    if kind == "per-drone":
        return PerDrone(fleet)
    if kind == "one-context":
        if not model_url:
            raise ConfigError("one-context needs the model's URL (--model)")
        return OneContext(fleet, model_url)
    if kind == "commander":
        from models.commanders import ModelCommander, RuleCommander

        chosen: Commander = (
            RuleCommander() if commander == "rule" else ModelCommander(commander, len(fleet.drone_ids))
        )
        return CommanderStructure(fleet, chosen, expires_after_steps, marked_targets)
    raise ConfigError(f"structure {kind!r} is not one of {STRUCTURES}")
