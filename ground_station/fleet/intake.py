"""What the drones send, into FleetState: the GroundLink's callbacks.

They run on the link's I/O thread, so each one only updates FleetState under its lock and announces
the change (FleetState.emit); nothing here blocks or sends.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from common import wire
from common.actions import action_to_dict
from common.link import LinkEvent
from common.link.clock_sync import ClockOffsetEstimator
from common.messages import Declaration, FrameMeta, Step, TelemetryMessage
from ground_station.fleet.state import DeclarationRecord, FleetState, FrameRecord, StepRecord


class FleetIntake:
    """Records every telemetry, frame, step, declaration and link change of the fleet's drones.

    `clock_offset` is the link's estimate of a drone's clock against ours: a callable, not the link,
    because the link is built with these callbacks and so exists only after this object does."""

    def __init__(self, state: FleetState, clock_offset: Callable[[str], ClockOffsetEstimator]) -> None:
        self.state = state
        self._clock_offset = clock_offset

    def on_telemetry(self, drone_id: str, envelope: wire.Envelope, body: TelemetryMessage) -> None:
        now_s = time.monotonic()
        with self.state.lock:
            drone = self.state.drones[drone_id]
            drone.telemetry = body
            drone.telemetry_received_s = now_s
            if drone.home is None:
                # Its take-off spot: where it first reports from (it climbs straight up), on the
                # ground of its local frame (z = 0 there: the vehicle's origin, as the tiles' alt).
                drone.home = (body.pose_ned.x_m, body.pose_ned.y_m, 0.0)
            drone.trail.append((body.pose_ned.x_m, body.pose_ned.y_m))
        self.state.emit("telemetry", drone_id, body)

    def on_frame(self, drone_id: str, envelope: wire.Envelope, meta: FrameMeta, jpeg: bytes) -> None:
        now_s = time.monotonic()
        offset = self._clock_offset(drone_id)
        capture_ground_s = offset.to_ground_time(meta.capture_time_s) if offset.ready else meta.capture_time_s
        record = FrameRecord(
            meta.frame_seq,
            meta.capture_time_s,
            meta.pose_ned,
            jpeg,
            meta.width_px,
            meta.height_px,
            now_s,
            capture_ground_s,
        )
        with self.state.lock:
            self.state.drones[drone_id].frames.append(record)
            # Frames travel on their own socket: a declaration can arrive before the frame it names.
            waiting = [
                d
                for d in self.state.declarations
                if d.drone == drone_id and d.thumbnail_jpeg is None and d.frame_seq <= meta.frame_seq
            ]
            for declaration in waiting:
                declaration.thumbnail_jpeg = jpeg
        self.state.emit("frame", drone_id, record)
        for declaration in waiting:
            self.state.emit("declaration_frame", drone_id, declaration)

    def on_step(self, drone_id: str, envelope: wire.Envelope, body: Step) -> None:
        record = StepRecord(
            body.t_s,
            body.frame_seq,
            body.action,
            body.raw,
            body.call_id,
            body.executed,
            body.latencies_s.get("model_s"),
            body.malformed_reason,
            time.monotonic(),
            body.order_id,
            body.order_steps_left,
        )
        with self.state.lock:
            drone = self.state.drones[drone_id]
            drone.steps.append(record)
            drone.step_count += 1
            if body.executed and body.action is not None:
                drone.history.append(body.action)
                del drone.history[:-20]
                order = drone.order
                # The drone counts the order's steps itself (it holds when the order expires); the
                # step says which order it ran under and how many steps that order has left.
                if (
                    order is not None
                    and body.order_id == order.order_id
                    and body.order_steps_left is not None
                ):
                    order.steps_used = order.expires_after_steps - body.order_steps_left
        self.state.emit(
            "step",
            drone_id,
            record,
            t_s=round(body.t_s, 3),
            action=None if body.action is None else action_to_dict(body.action),
            call_id=body.call_id,
            executed=body.executed,
        )

    def on_declaration(self, drone_id: str, envelope: wire.Envelope, body: Declaration) -> None:
        with self.state.lock:
            frame = self.state.drones[drone_id].frame(body.frame_seq)
            record = DeclarationRecord(
                body.declaration_id,
                drone_id,
                body.t_s,
                body.pose_ned,
                body.frame_seq,
                body.distance_m,
                body.bbox_distance_m,
                body.visible,
                frame.jpeg if frame is not None else None,
                time.time(),
            )
            self.state.declarations.append(record)
        self.state.emit(
            "declaration",
            drone_id,
            record,
            declaration_id=body.declaration_id,
            t_s=round(body.t_s, 3),
            distance_m=body.distance_m,
            visible=body.visible,
            pose=body.pose_ned.as_list(),
        )

    def on_link(self, event: LinkEvent) -> None:
        with self.state.lock:
            if event.peer in self.state.drones:
                self.state.drones[event.peer].link_state = event.state
        self.state.emit("link", event.peer, event, state=event.state, silence_s=round(event.silence_s, 3))
