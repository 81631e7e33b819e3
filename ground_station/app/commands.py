"""The operator's commands from the window: the safety commands (fleet-wide or one drone), the
instruction or structure to start, the verdict on a declaration, and a drone's re-launch.

Each runs off the GUI thread (FleetBridge.submit) under a label; its result comes back through
FleetBridge's `done` signal and a safety command's per-drone acks through `ack_ready`, both slots
here, on the GUI thread."""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import Any

from PyQt6.QtCore import QObject

from ground_station.app.bridge import FleetBridge
from ground_station.app.metrics import Metrics
from ground_station.app.panels import FLEET
from ground_station.app.supervision import DroneSupervisor
from ground_station.app.views import Views, ack_text
from ground_station.fleet.client import FleetClient
from ground_station.fleet.state import AckRecord
from ground_station.fleet.structures import Structure, make_structure


class OperatorCommands(QObject):
    """Owns the running structure (`structure`) and what each safety command has heard so far."""

    def __init__(
        self,
        fleet: FleetClient,
        bridge: FleetBridge,
        views: Views,
        supervisor: DroneSupervisor,
        metrics: Metrics,
        operator: str,
        map_image: Callable[[], Any],
        launcher: Any = None,
    ) -> None:
        """`map_image`: the newest rendered map, for a model commander that looks at it;
        `launcher`: the SimFleet that started the drones (relaunch), or None."""
        super().__init__()
        self.fleet = fleet
        self.bridge = bridge
        self.views = views
        self.supervisor = supervisor
        self.metrics = metrics
        self.operator = operator
        self.map_image = map_image
        self.launcher = launcher
        self.structure: Structure | None = None
        self._sent_at: dict[str, float] = {}
        self._partial_acks: dict[str, dict[str, AckRecord]] = {}

    # ---- safety ------------------------------------------------------------------------------------
    def on_safety(self, kind: str, drone: str | None) -> None:
        label = f"safety:{kind}:{drone or ''}"
        self._sent_at[label] = time.monotonic()
        targets = [drone] if drone else list(self.fleet.drone_ids)
        self._partial_acks[label] = {}
        if drone is None:
            self.views.safety.show_waiting(kind, targets, {})
        else:
            self.views.tiles[drone].show_ack(f"{kind}: sent …")

        def emit_ack(record: AckRecord) -> None:  # link I/O thread: queued to the GUI thread
            self.bridge.ack_ready.emit(label, record)

        self.bridge.submit(label, lambda: self.fleet.safety(kind, targets, on_ack=emit_ack))

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
            self.views.safety.show_waiting(kind, list(self.fleet.drone_ids), partial)
        if ack.result != "ok":
            self.views.alerts.raise_alert(
                "error", ack.drone, f"{kind} {ack_text(kind, ack)}", key=f"ack:{kind}"
            )

    def _safety_done(self, label: str, result: Any) -> None:
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

    # ---- re-launch ---------------------------------------------------------------------------------
    def on_relaunch(self, drone: str) -> None:
        if self.launcher is None:
            return
        try:
            self.launcher.relaunch(drone)
            self.fleet.forget_telemetry(drone)
        except Exception as exc:
            self.views.alerts.raise_alert("error", drone, f"cannot re-launch: {exc}", key="relaunch")
            return
        self.supervisor.relaunched(drone)
        self.views.tiles[drone].show_ack("re-launched: waiting for it to report …")
        self.supervisor.refresh_tile(drone, time.monotonic())  # "connecting" now, not the last launch's end
        self.views.alerts.raise_alert("info", drone, "re-launched", key="relaunch")
        self.views.orders.add(f"{drone} re-launched by the operator")

    # ---- instruction and structure -----------------------------------------------------------------
    def on_send(self, text: str, target: str, structure: str, model: str) -> None:
        marks = list(self.views.map.marks)
        if structure == "per-drone" and target != FLEET:
            self.views.orders.add(f"instruction to {target}: “{text}”")
            self.bridge.submit("instruct", lambda: self.fleet.instruct(text, [target]))
            return
        try:
            new = make_structure(
                structure,
                self.fleet,
                model_url=model or None,
                commander=model or "rule",
                marked_targets=marks,
            )
        except Exception as exc:
            self.views.instruction.status.setText(f"cannot start {structure}: {exc}")
            return
        if hasattr(new, "map_image_source") and model:
            new.map_image_source = self.map_image
        old, self.structure = self.structure, new
        self.views.orders.add(f"{structure} · fleet: “{text}”")
        self.views.instruction.status.setText(f"{structure}: starting …")

        def start() -> str:
            if old is not None:
                old.stop()
            new.start(text)
            return structure

        self.bridge.submit("structure", start)

    def marks_changed(self, marks: list[tuple[float, float]]) -> None:
        structure = self.structure
        if structure is not None and hasattr(structure, "marked_targets"):
            structure.marked_targets = list(marks)

    # ---- judgement ---------------------------------------------------------------------------------
    def on_judge(self, declaration_id: str, accept: bool) -> None:
        self.bridge.submit(
            f"judge:{declaration_id}:{'accept' if accept else 'reject'}",
            lambda: self.fleet.judge(declaration_id, accept, operator=self.operator),
        )

    # ---- results (FleetBridge.done) ----------------------------------------------------------------
    def on_done(self, label: str, result: Any) -> None:
        views = self.views
        if label.startswith("safety:"):
            self._safety_done(label, result)
        elif label.startswith("judge:"):
            _, declaration_id, verdict = label.split(":", 2)
            if isinstance(result, AckRecord):
                result_text = result.result if result.result == "ok" else f"{result.result} ({result.reason})"
            else:
                result_text = f"failed: {result}"
            views.declarations.judged(declaration_id, verdict, result_text, operator=self.operator)
            if result_text != "ok":
                views.alerts.raise_alert("error", "", f"{verdict} not confirmed: {result_text}", key="judge")
        elif label == "structure":
            text = f"failed: {result}" if isinstance(result, Exception) else f"{result}: running"
            if self.structure is not None and self.structure.errors:
                text += f" ({self.structure.errors[-1]})"
            views.instruction.status.setText(text)
            if isinstance(result, Exception):
                views.alerts.raise_alert("error", "", f"structure {text}", key="structure")
        elif label == "instruct" and isinstance(result, Exception):
            views.instruction.status.setText(f"instruction failed: {result}")
            views.alerts.raise_alert("error", "", f"instruction failed: {result}", key="instruct")

    def stop(self) -> None:
        if self.structure is not None:
            self.structure.stop()
