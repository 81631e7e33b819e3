"""The safety commands from the window (e-stop, hold, land, return home; the fleet or one drone):
sent off the GUI thread, each drone's ack shown the moment it arrives, the whole answer timed.

A command runs under the label "safety:KIND:DRONE" (DRONE empty for the fleet); FleetBridge's
`ack_ready` signal brings each drone's ack and `done` the whole result, both to slots here."""

from __future__ import annotations

import html
import time
from typing import Any

from ground_station.app.bridge import FleetBridge
from ground_station.app.metrics import Metrics
from ground_station.app.views import Views, ack_text
from ground_station.fleet.state import AckRecord


class SafetyCommands:
    """Remembers when each command went and which drones have acked it so far."""

    def __init__(self, bridge: FleetBridge, views: Views, metrics: Metrics) -> None:
        """The fleet is the bridge's (`bridge.fleet`): commands go out through the bridge's threads."""
        self.bridge = bridge
        self.views = views
        self.metrics = metrics
        self._sent_at: dict[str, float] = {}
        self._partial_acks: dict[str, dict[str, AckRecord]] = {}

    def on_safety(self, kind: str, drone: str | None) -> None:
        label = f"safety:{kind}:{drone or ''}"
        self._sent_at[label] = time.monotonic()
        targets = [drone] if drone else list(self.bridge.fleet.drone_ids)
        self._partial_acks[label] = {}
        if drone is None:
            self.views.safety.show_waiting(kind, targets, {})
        else:
            self.views.tiles[drone].show_ack(f"{kind}: sent …")

        def emit_ack(record: AckRecord) -> None:  # link I/O thread: queued to the GUI thread
            self.bridge.ack_ready.emit(label, record)

        self.bridge.submit(label, lambda: self.bridge.fleet.safety(kind, targets, on_ack=emit_ack))

    def on_ack(self, label: str, ack: AckRecord) -> None:
        """One drone's ack to a safety command, shown the moment it arrives (the others may be late)."""
        if not label.startswith("safety:"):
            return
        _, kind, drone = label.split(":", 2)
        partial = self._partial_acks.get(label)
        if partial is None:
            return
        partial[ack.drone] = ack
        if ack.drone in self.views.tiles:
            self.views.tiles[ack.drone].show_ack(ack_text(kind, ack))
        if not drone:
            self.views.safety.show_waiting(kind, list(self.bridge.fleet.drone_ids), partial)
        if ack.result != "ok":
            self.views.alerts.raise_alert(
                "error", ack.drone, f"{kind} {ack_text(kind, ack)}", key=f"ack:{kind}"
            )

    def on_done(self, label: str, result: Any) -> None:
        if not label.startswith("safety:"):
            return
        _, kind, drone = label.split(":", 2)
        started = self._sent_at.pop(label, None)
        self._partial_acks.pop(label, None)
        if isinstance(result, Exception):
            self.views.safety.acks.setText(f"<b>{kind}</b>: failed: {html.escape(str(result))}")
            self.views.alerts.raise_alert("error", drone, f"{kind} failed: {result}", key=f"ack:{kind}")
            return
        acks: dict[str, AckRecord] = result
        if started is not None:
            self.metrics.command_acked(kind, time.monotonic() - started)
        if drone:
            self.views.tiles[drone].show_ack(ack_text(kind, acks[drone]))
        else:
            self.views.safety.show_acks(kind, acks)
            for drone_id, ack in acks.items():
                self.views.tiles[drone_id].show_ack(ack_text(kind, ack))
