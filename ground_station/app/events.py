"""Fleet events (FleetBridge.fleet_event, on the GUI thread) into the panels, tiles and alerts."""

from __future__ import annotations

import time
from typing import Any

from ground_station.app.supervision import DroneSupervisor
from ground_station.app.views import SAFETY_KINDS, Views, ack_text
from ground_station.fleet.state import DeclarationRecord, FleetEvent, FrameRecord, OrderRecord


class FleetEventView:
    """Slots for FleetBridge's `fleet_event` and `frame_ready` signals."""

    def __init__(self, views: Views, supervisor: DroneSupervisor) -> None:
        self.views = views
        self.supervisor = supervisor

    def on_event(self, event: FleetEvent) -> None:
        views, alerts = self.views, self.views.alerts
        kind, drone = event.kind, event.drone
        if kind in ("step", "link", "order_end") and drone in views.tiles:
            self.supervisor.refresh_tile(drone, time.monotonic())
        if kind == "link" and drone in views.tiles:
            self.supervisor.link_alert(drone, event.record.state, event.record.silence_s)
        elif kind == "order":
            assert isinstance(event.record, OrderRecord)
            views.orders.order(event.record)
            if drone in views.tiles:
                self.supervisor.refresh_tile(drone, time.monotonic())
        elif kind == "declaration":
            assert isinstance(event.record, DeclarationRecord)
            row, new = views.declarations.add(event.record)
            views.map.add_declaration(event.record.pose, event.record.drone)
            if new and row.pending:  # not a late one of a re-launched drone's process before
                d = event.record
                where = "" if d.distance_m is None else f", {d.distance_m:.1f} m from the target"
                alerts.raise_alert(
                    "warning",
                    d.drone,
                    f"declared arrival: judge it (Accept / Reject){where}",
                    key="declaration",
                )
        elif kind == "declaration_frame":
            assert isinstance(event.record, DeclarationRecord)
            views.declarations.set_thumbnail(event.record)
        elif kind == "commander":
            orders = event.record
            if orders.orders is None:
                views.orders.add(f"commander: no orders ({orders.error})")
                alerts.raise_alert("error", "", f"commander gave no orders: {orders.error}", key="commander")
        elif kind == "multi_call":
            if event.record.error:
                views.orders.add(f"one-context call failed: {event.record.error} — drones hold")
                alerts.raise_alert(
                    "error", "", f"one-context call failed: {event.record.error}", key="multi_call"
                )
        elif kind == "note":
            text = str(event.record or "")
            views.instruction.status.setText(text)
            alerts.raise_alert("warning" if "paused" in text else "error", "", text, key="note")
        elif kind == "ack" and drone in views.tiles and event.record.command not in SAFETY_KINDS:
            ack = event.record
            views.tiles[drone].show_ack(ack_text(ack.command, ack))
            if ack.result != "ok":
                alerts.raise_alert(
                    "error", drone, f"{ack.command} {ack.result}: {ack.reason}", key=f"ack:{ack.command}"
                )

    def on_frame(self, drone: str, frame: FrameRecord, image: Any) -> None:
        if drone in self.views.tiles:
            self.views.tiles[drone].show_frame(frame, image)
