"""The main window: safety bar on top (always visible), drone tiles, the control-tower map,
instruction box, order history and declaration log; a status bar with the app's own latency figures.

Shortcuts: Esc e-stop all · Ctrl+H hold all · Ctrl+L land all · Ctrl+R return home ·
Ctrl+1..9 e-stop drone N · Ctrl+S export the session log.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from pathlib import Path
from typing import Any

from PyQt6.QtCore import Qt, QTimer
from PyQt6.QtGui import QKeySequence, QShortcut
from PyQt6.QtWidgets import (
    QApplication,
    QFileDialog,
    QGridLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ground_station.app.bridge import FleetBridge
from ground_station.app.map_view import MapView
from ground_station.app.metrics import LoopMonitor, Metrics, percentile
from ground_station.app.panels import FLEET, DeclarationLog, InstructionPanel, OrderHistory, SafetyBar
from ground_station.app.tiles import DroneTile
from ground_station.fleet.client import SAFETY_COMMANDS, FleetClient
from ground_station.fleet.state import AckRecord, DeclarationRecord, FleetEvent, FrameRecord, OrderRecord
from ground_station.fleet.structures import Structure, make_structure

log = logging.getLogger(__name__)

SAFETY_KINDS = frozenset(cls.TYPE for cls in SAFETY_COMMANDS.values())


class MainWindow(QMainWindow):
    def __init__(self, fleet: FleetClient, marks: list[tuple[float, float]] | None = None) -> None:
        super().__init__()
        self.setWindowTitle("DroneCATS ground station")
        self.fleet = fleet
        self.metrics = Metrics()
        self.loop_monitor = LoopMonitor()
        self.bridge = FleetBridge(fleet)
        self.structure: Structure | None = None
        self._map_image: Any = None
        self._map_lock = threading.Lock()
        self._sent_at: dict[str, float] = {}

        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(4, 4, 4, 4)
        self.safety = SafetyBar(self.on_safety)
        outer.addWidget(self.safety)
        split = QSplitter(Qt.Orientation.Horizontal)
        tiles_widget = QWidget()
        grid = QGridLayout(tiles_widget)
        grid.setContentsMargins(0, 0, 0, 0)
        columns = max(1, math.ceil(math.sqrt(len(fleet.drone_ids))))
        self.tiles: dict[str, DroneTile] = {}
        for index, drone_id in enumerate(fleet.drone_ids):
            tile = DroneTile(drone_id, self.metrics, self.on_safety, fleet.stale_after_s)
            grid.addWidget(tile, index // columns, index % columns)
            self.tiles[drone_id] = tile
        split.addWidget(tiles_widget)
        side = QSplitter(Qt.Orientation.Vertical)
        self.map = MapView(on_marks=self._marks_changed)
        self.map.marks = list(marks or [])
        side.addWidget(self.map)
        self.instruction = InstructionPanel(fleet.drone_ids, self.on_send)
        side.addWidget(self.instruction)
        self.orders = OrderHistory()
        side.addWidget(self.orders)
        self.declarations = DeclarationLog(self.on_judge)
        side.addWidget(self.declarations)
        side.setSizes([330, 140, 110, 260])
        split.addWidget(side)
        split.setSizes([880, 560])
        outer.addWidget(split, 1)
        self.setCentralWidget(central)

        status = self.statusBar()
        assert status is not None
        self.figures = QLabel("")
        self.figures.setObjectName("figures")
        status.addWidget(self.figures, 1)
        export = QPushButton("Export session log  (Ctrl+S)")
        export.setObjectName("export")
        export.clicked.connect(lambda: self.export_session(None))
        status.addPermanentWidget(export)

        for kind, _, keys in SafetyBar.ACTIONS:
            self._shortcut(keys, lambda k=kind: self.on_safety(k, None))
        for index, drone_id in enumerate(fleet.drone_ids[:9]):
            self._shortcut(f"Ctrl+{index + 1}", lambda d=drone_id: self.on_safety("estop", d))
        self._shortcut("Ctrl+S", lambda: self.export_session(None))

        self.bridge.fleet_event.connect(self.on_event)
        self.bridge.frame_ready.connect(self.on_frame)
        self.bridge.done.connect(self.on_done)
        self.refresh_timer = QTimer(self)
        self.refresh_timer.setInterval(250)
        self.refresh_timer.timeout.connect(self.refresh)
        self.refresh_timer.start()
        self.resize(1480, 900)

    def _shortcut(self, keys: str, slot: Any) -> None:
        shortcut = QShortcut(QKeySequence(keys), self)
        shortcut.setContext(Qt.ShortcutContext.ApplicationShortcut)
        shortcut.activated.connect(slot)

    # ---- fleet events (GUI thread) -------------------------------------------------------------
    def on_event(self, event: FleetEvent) -> None:
        kind, drone = event.kind, event.drone
        if kind in ("step", "link", "order_end") and drone in self.tiles:
            self.tiles[drone].refresh(self.fleet.state.snapshot(drone))
        elif kind == "order":
            assert isinstance(event.record, OrderRecord)
            self.orders.order(event.record)
            if drone in self.tiles:
                self.tiles[drone].refresh(self.fleet.state.snapshot(drone))
        elif kind == "declaration":
            assert isinstance(event.record, DeclarationRecord)
            self.declarations.add(event.record)
            self.map.add_declaration(event.record.pose)
        elif kind == "declaration_frame":
            assert isinstance(event.record, DeclarationRecord)
            self.declarations.set_thumbnail(event.record)
        elif kind == "commander":
            orders = event.record
            if orders.orders is None:
                self.orders.add(f"commander: no orders ({orders.error})")
        elif kind == "multi_call":
            if event.record.error:
                self.orders.add(f"one-context call failed: {event.record.error} — drones hold")
        elif kind == "note":
            self.instruction.status.setText(str(event.record or ""))
        elif kind == "ack" and drone in self.tiles and event.record.command not in SAFETY_KINDS:
            ack = event.record
            ok = ack.result == "ok"
            self.tiles[drone].show_ack(
                f"{ack.command}: {ack.result} in {ack.latency_s * 1000:.0f} ms"
                + ("" if ok else f" — {ack.reason}")
            )

    def on_frame(self, drone: str, frame: FrameRecord, image: Any) -> None:
        if drone in self.tiles:
            self.tiles[drone].show_frame(frame, image)

    def refresh(self) -> None:
        now = time.monotonic()
        for drone_id, tile in self.tiles.items():
            snap = self.fleet.state.snapshot(drone_id)
            tile.refresh(snap)
            pose = snap.telemetry.pose_ned if snap.telemetry is not None else None
            self.map.set_drone(drone_id, pose, list(snap.trail), snap.is_stale(now, self.fleet.stale_after_s))
        self.map.update()
        if getattr(self.structure, "map_image_source", None) is not None:  # a model commander reads it
            with self._map_lock:
                self._map_image = self.map.render_bgr()
        age = percentile(list(self.metrics.frame_age_s)[-500:], 95)
        stall = percentile(list(self.loop_monitor.stalls_s)[-3000:], 99)
        structure = self.structure.name if self.structure is not None else "none"
        self.figures.setText(
            f"structure: {structure} · frame age p95 "
            + (f"{age * 1000:.0f} ms" if age is not None else "?")
            + " · event-loop stall p99 "
            + (f"{stall * 1000:.0f} ms" if stall is not None else "?")
        )

    def map_image(self) -> Any:
        """For the commander's worker thread: the newest map rendered on the GUI thread."""
        with self._map_lock:
            return self._map_image

    def _marks_changed(self, marks: list[tuple[float, float]]) -> None:
        structure = self.structure
        if structure is not None and hasattr(structure, "marked_targets"):
            structure.marked_targets = list(marks)

    # ---- operator actions ------------------------------------------------------------------------
    def on_safety(self, kind: str, drone: str | None) -> None:
        label = f"safety:{kind}:{drone or ''}"
        self._sent_at[label] = time.monotonic()
        targets = [drone] if drone else None
        if drone is None:
            self.safety.acks.setText(f"<b>{kind}</b>: sent to every drone, waiting for acks …")
        else:
            self.tiles[drone].show_ack(f"{kind}: sent …")
        self.bridge.submit(label, lambda: self.fleet.safety(kind, targets))

    def on_send(self, text: str, target: str, structure: str, model: str) -> None:
        marks = list(self.map.marks)
        if structure == "per-drone" and target != FLEET:
            self.orders.add(f"instruction to {target}: “{text}”")
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
            self.instruction.status.setText(f"cannot start {structure}: {exc}")
            return
        if hasattr(new, "map_image_source") and model:
            new.map_image_source = self.map_image
        old, self.structure = self.structure, new
        self.orders.add(f"{structure} · fleet: “{text}”")
        self.instruction.status.setText(f"{structure}: starting …")

        def start() -> str:
            if old is not None:
                old.stop()
            new.start(text)
            return structure

        self.bridge.submit("structure", start)

    def on_judge(self, declaration_id: str, accept: bool) -> None:
        self.bridge.submit(
            f"judge:{declaration_id}:{'accept' if accept else 'reject'}",
            lambda: self.fleet.judge(declaration_id, accept, operator="gs"),
        )

    def on_done(self, label: str, result: Any) -> None:
        if label.startswith("safety:"):
            _, kind, drone = label.split(":", 2)
            started = self._sent_at.pop(label, None)
            if isinstance(result, Exception):
                self.safety.acks.setText(f"<b>{kind}</b>: failed: {result}")
                return
            acks: dict[str, AckRecord] = result
            if started is not None:
                self.metrics.command_acked(kind, time.monotonic() - started)
            if drone:
                ack = acks[drone]
                self.tiles[drone].show_ack(f"{kind}: {ack.result} in {ack.latency_s * 1000:.0f} ms")
            else:
                self.safety.show_acks(kind, acks)
                for drone_id, ack in acks.items():
                    self.tiles[drone_id].show_ack(f"{kind}: {ack.result} in {ack.latency_s * 1000:.0f} ms")
        elif label.startswith("judge:"):
            _, declaration_id, verdict = label.split(":", 2)
            result_text = result.result if isinstance(result, AckRecord) else f"failed: {result}"
            self.declarations.judged(declaration_id, verdict, result_text)
        elif label == "structure":
            text = f"failed: {result}" if isinstance(result, Exception) else f"{result}: running"
            if self.structure is not None and self.structure.errors:
                text += f" ({self.structure.errors[-1]})"
            self.instruction.status.setText(text)
        elif label == "instruct" and isinstance(result, Exception):
            self.instruction.status.setText(f"instruction failed: {result}")

    def export_session(self, path: str | None) -> Path | None:
        if path is None:
            chosen, _ = QFileDialog.getSaveFileName(self, "Export session log", "session.jsonl")
            if not chosen:
                return None
            path = chosen
        written = self.fleet.export_session(path)
        self.orders.add(f"session log exported to {written}")
        return written

    def shutdown(self) -> None:
        self.refresh_timer.stop()
        if self.structure is not None:
            self.structure.stop()
        self.bridge.close()

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        self.shutdown()
        super().closeEvent(event)


def send_when_linked(window: MainWindow, timeout_s: float = 120.0) -> None:
    """Click Send once every drone has reported (an instruction sent earlier would go unacked)."""
    deadline = time.monotonic() + timeout_s
    timer = QTimer(window)

    def check() -> None:
        with window.fleet.state.lock:
            ready = all(d.telemetry is not None for d in window.fleet.state.drones.values())
        if ready or time.monotonic() > deadline:
            timer.stop()
            window.instruction.send.click()

    timer.timeout.connect(check)
    timer.start(200)


def run_app(
    fleet: FleetClient,
    instruction: str = "",
    structure: str = "per-drone",
    model_url: str | None = None,
    commander: str = "rule",
    marks: list[tuple[float, float]] | None = None,
    screenshot: str | None = None,
    screenshot_after_s: float = 20.0,
    quit_after_s: float | None = None,
    quit_after_qualifying_s: float | None = None,
    delta_m: float = 5.0,
) -> int:
    """`quit_after_qualifying_s`: close the window this long after the first declaration within
    `delta_m` of the target and visible (the simulator's judgement; the demo ends there)."""
    app = QApplication.instance() or QApplication([])
    window = MainWindow(fleet, marks)
    window.show()
    if instruction:
        window.instruction.text.setText(instruction)
        window.instruction.structure.setCurrentText(structure)
        if model_url or commander != "rule":
            window.instruction.model.setText(model_url or commander)
        send_when_linked(window)
    if screenshot:
        QTimer.singleShot(int(screenshot_after_s * 1000), lambda: window.grab().save(screenshot))
    if quit_after_s is not None:
        QTimer.singleShot(int(quit_after_s * 1000), window.close)
    if quit_after_qualifying_s is not None:
        poll = QTimer(window)

        def close_when_qualifying() -> None:
            with fleet.state.lock:
                qualifying = any(
                    d.distance_m is not None and d.distance_m <= delta_m and d.visible
                    for d in fleet.state.declarations
                )
            if qualifying:
                poll.stop()
                QTimer.singleShot(int(quit_after_qualifying_s * 1000), window.close)

        poll.timeout.connect(close_when_qualifying)
        poll.start(200)
    code = app.exec()
    window.shutdown()
    return int(code)
