"""The main window: safety bar on top (always visible) and the alert banner under it, drone tiles,
the control-tower map, instruction box, order history, alerts and the declaration log; a status bar
with the app's own latency figures.

Shortcuts: Esc e-stop all · Ctrl+H hold all · Ctrl+L land all · Ctrl+R return home ·
Ctrl+1..9 e-stop drone N · Ctrl+K acknowledge alerts · Ctrl+S export the session log.

GoTo: choose a drone and "Pick on map…" above the map, click the point, confirm (the dialog shows
the drone, the point in north/east metres and latitude/longitude, at the drone's altitude): the drone
checks it against its geofence and altitude limits, acks, flies there and holds.

With a launcher (`gs --launch`), the window also knows each drone's process: how it ended (done with
its end reason, or failed with its last log lines) and re-launches it from its tile.
"""

from __future__ import annotations

import contextlib
import html
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from PyQt6.QtCore import Qt, QTimer
from PyQt6.QtGui import QKeySequence, QShortcut
from PyQt6.QtWidgets import (
    QApplication,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ground_station.app.alerts import AlertBanner, AlertModel, AlertPanel
from ground_station.app.bridge import FleetBridge
from ground_station.app.map_view import DRONE_COLOURS, MapView
from ground_station.app.metrics import LoopMonitor, Metrics, percentile
from ground_station.app.panels import FLEET, DeclarationLog, InstructionPanel, OrderHistory, SafetyBar
from ground_station.app.plots import TelemetryPlots
from ground_station.app.tiles import DroneTile
from ground_station.fleet.client import SAFETY_COMMANDS, FleetClient
from ground_station.fleet.lifecycle import LifeState, life_state
from ground_station.fleet.state import (
    AckRecord,
    DeclarationRecord,
    DroneState,
    FleetEvent,
    FrameRecord,
    OrderRecord,
)
from ground_station.fleet.structures import Structure, make_structure

log = logging.getLogger(__name__)

SAFETY_KINDS = frozenset(cls.TYPE for cls in SAFETY_COMMANDS.values())


class MainWindow(QMainWindow):
    def __init__(
        self,
        fleet: FleetClient,
        marks: list[tuple[float, float]] | None = None,
        launcher: Any = None,
        beep: bool = True,
    ) -> None:
        """`launcher`: the SimFleet that started the drones (exit_info, relaunch), or None."""
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
        self.launcher = launcher
        self.operator = _operator_name()
        self.alerts = AlertModel(beep=beep)
        self.life: dict[str, LifeState] = {}
        self._safety_seen: dict[str, str] = {}
        self._problem_shown: dict[str, Any] = {}  # drone -> the exit whose log lines its tile shows
        self._partial_acks: dict[str, dict[str, AckRecord]] = {}
        self.colours = {d: DRONE_COLOURS[i % len(DRONE_COLOURS)] for i, d in enumerate(fleet.drone_ids)}

        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(4, 4, 4, 4)
        self.safety = SafetyBar(self.on_safety)
        outer.addWidget(self.safety)
        self.banner = AlertBanner(self.alerts)
        outer.addWidget(self.banner)
        split = QSplitter(Qt.Orientation.Horizontal)
        tiles_widget = QWidget()
        grid = QGridLayout(tiles_widget)
        grid.setContentsMargins(0, 0, 0, 0)
        columns = min(2, max(1, math.ceil(math.sqrt(len(fleet.drone_ids)))))
        self.tiles: dict[str, DroneTile] = {}
        for index, drone_id in enumerate(fleet.drone_ids):
            tile = DroneTile(
                drone_id,
                self.metrics,
                self.on_safety,
                fleet.stale_after_s,
                colour=self.colours[drone_id],
                on_relaunch=self.on_relaunch if launcher is not None else None,
            )
            grid.addWidget(tile, index // columns, index % columns)
            self.tiles[drone_id] = tile
        grid.setRowStretch(grid.rowCount(), 0)
        tiles_widget.setFixedWidth(columns * (DroneTile.WIDTH_PX + grid.horizontalSpacing() + 2))
        split.addWidget(tiles_widget)
        split.setCollapsible(0, False)
        side = QSplitter(Qt.Orientation.Vertical)
        self.side = side
        self.map = MapView(on_marks=self._marks_changed)
        self.map.colours = dict(self.colours)
        for tile in self.tiles.values():
            tile.geo = self.map.to_geo
            if launcher is not None and getattr(launcher, "log_dir", None) is not None:
                tile.record_dir = Path(launcher.log_dir) / "recordings"
        if launcher is not None:  # it knows the world: its targets, fence and geographic origin
            self.map.targets = [(t.name, t.pose.x_m, t.pose.y_m) for t in getattr(launcher, "targets", [])]
            self.map.geo_origin = getattr(launcher, "geo_origin", None)
            with contextlib.suppress(Exception):
                self.map.fence_radius_m = launcher.geofence_radius_m()
        self.map.marks = list(marks or [])
        self.map.on_pick = self.on_goto_picked
        map_box = QWidget()
        map_layout = QVBoxLayout(map_box)
        map_layout.setContentsMargins(0, 0, 0, 0)
        map_layout.setSpacing(2)
        goto_row = QHBoxLayout()
        goto_row.addWidget(QLabel("GoTo:"))
        self.goto_drone = QComboBox()
        self.goto_drone.setObjectName("goto-drone")
        self.goto_drone.addItems(fleet.drone_ids)
        goto_row.addWidget(self.goto_drone)
        self.goto_pick = QPushButton("Pick on map…")
        self.goto_pick.setObjectName("goto-pick")
        self.goto_pick.setToolTip("then click the point on the map; a dialog asks you to confirm")
        self.goto_pick.clicked.connect(self.on_goto_pick)
        goto_row.addWidget(self.goto_pick)
        goto_row.addStretch(1)
        map_layout.addLayout(goto_row)
        map_layout.addWidget(self.map, 1)
        self.goto_confirm: QMessageBox | None = None
        side.addWidget(map_box)
        self.instruction = InstructionPanel(fleet.drone_ids, self.on_send)
        side.addWidget(self.instruction)
        self.orders = OrderHistory()
        self.alert_panel = AlertPanel(self.alerts)
        logs = QTabWidget()
        logs.setObjectName("logs")
        logs.addTab(self.alert_panel, "Alerts")
        logs.addTab(self.orders, "Orders")
        self.plots = TelemetryPlots(self.colours)
        logs.addTab(self.plots, "Telemetry")
        self.logs = logs
        side.addWidget(logs)
        self.declarations = DeclarationLog(self.on_judge)
        side.addWidget(self.declarations)
        side.setSizes([280, 140, 150, 230])
        split.addWidget(side)
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
        self._shortcut("Ctrl+K", self.alerts.acknowledge_all)

        self.bridge.fleet_event.connect(self.on_event)
        self.bridge.frame_ready.connect(self.on_frame)
        self.bridge.done.connect(self.on_done)
        self.bridge.ack_ready.connect(self.on_ack)
        self.refresh_timer = QTimer(self)
        self.refresh_timer.setInterval(250)
        self.refresh_timer.timeout.connect(self.refresh)
        self.refresh_timer.start()
        self.resize(1280, 800)

    def _shortcut(self, keys: str, slot: Any) -> None:
        shortcut = QShortcut(QKeySequence(keys), self)
        shortcut.setContext(Qt.ShortcutContext.ApplicationShortcut)
        shortcut.activated.connect(slot)

    # ---- fleet events (GUI thread) -------------------------------------------------------------
    def on_event(self, event: FleetEvent) -> None:
        kind, drone = event.kind, event.drone
        if kind in ("step", "link", "order_end") and drone in self.tiles:
            self._refresh_tile(drone, time.monotonic())
        if kind == "link" and drone in self.tiles:
            self._link_alert(drone, event.record.state, event.record.silence_s)
        elif kind == "order":
            assert isinstance(event.record, OrderRecord)
            self.orders.order(event.record)
            if drone in self.tiles:
                self._refresh_tile(drone, time.monotonic())
        elif kind == "declaration":
            assert isinstance(event.record, DeclarationRecord)
            _, new = self.declarations.add(event.record)
            self.map.add_declaration(event.record.pose, event.record.drone)
            if new:
                d = event.record
                where = "" if d.distance_m is None else f", {d.distance_m:.1f} m from the target"
                self.alerts.raise_alert(
                    "warning",
                    d.drone,
                    f"declared arrival: judge it (Accept / Reject){where}",
                    key="declaration",
                )
        elif kind == "declaration_frame":
            assert isinstance(event.record, DeclarationRecord)
            self.declarations.set_thumbnail(event.record)
        elif kind == "commander":
            orders = event.record
            if orders.orders is None:
                self.orders.add(f"commander: no orders ({orders.error})")
                self.alerts.raise_alert(
                    "error", "", f"commander gave no orders: {orders.error}", key="commander"
                )
        elif kind == "multi_call":
            if event.record.error:
                self.orders.add(f"one-context call failed: {event.record.error} — drones hold")
                self.alerts.raise_alert(
                    "error", "", f"one-context call failed: {event.record.error}", key="multi_call"
                )
        elif kind == "note":
            text = str(event.record or "")
            self.instruction.status.setText(text)
            self.alerts.raise_alert("warning" if "paused" in text else "error", "", text, key="note")
        elif kind == "ack" and drone in self.tiles and event.record.command not in SAFETY_KINDS:
            ack = event.record
            self.tiles[drone].show_ack(_ack_text(ack.command, ack))
            if ack.result != "ok":
                self.alerts.raise_alert(
                    "error", drone, f"{ack.command} {ack.result}: {ack.reason}", key=f"ack:{ack.command}"
                )

    def on_frame(self, drone: str, frame: FrameRecord, image: Any) -> None:
        if drone in self.tiles:
            self.tiles[drone].show_frame(frame, image)

    def _exit_info(self, drone: str) -> Any:
        if self.launcher is None:
            return None
        try:
            return self.launcher.exit_info(drone)
        except Exception:  # a launcher that cannot say must not stop the display
            log.exception("exit_info failed for %s", drone)
            return None

    def _refresh_tile(self, drone_id: str, now: float) -> DroneState:
        snap = self.fleet.state.snapshot(drone_id)
        ended = self._exit_info(drone_id)
        life = life_state(snap, now, self.fleet.stale_after_s, ended)
        previous = self.life.get(drone_id)
        self.life[drone_id] = life
        tile = self.tiles[drone_id]
        tile.refresh(snap, life, relaunchable=ended is not None)
        if ended is not None and ended.failed and self._problem_shown.get(drone_id) is not ended:
            tile.show_problem(ended.log_tail[-6:])
            self._problem_shown[drone_id] = ended
        elif ended is None and tile.problem.isVisible():
            tile.show_problem([])
            self._problem_shown.pop(drone_id, None)
        self.declarations.set_gone(drone_id, life.gone)
        if previous is not None and previous.name != life.name:
            self._life_alert(drone_id, previous, life)
            if life.name == "failed":
                tile.show_ack("not running: its last log lines are above")
        t = snap.telemetry
        safety = t.safety_state if t is not None else "ok"
        if safety != self._safety_seen.get(drone_id, "ok") and safety not in ("", "ok"):
            self._safety_alert(drone_id, safety)
        self._safety_seen[drone_id] = safety
        return snap

    def _life_alert(self, drone: str, previous: LifeState, life: LifeState) -> None:
        if life.name == "failed":
            self.alerts.raise_alert("error", drone, life.detail, key="life")
        elif life.name == "lost":
            self.alerts.raise_alert("critical", drone, life.detail, key="life")
        elif life.name == "done":
            self.alerts.raise_alert("info", drone, life.detail, key="life")
        elif life.name in ("landed", "disarmed") or (
            previous.name == "connecting" and life.name != "connecting"
        ):
            self.alerts.raise_alert(
                "info", drone, f"{life.name}" + (f": {life.detail}" if life.detail else "")
            )

    def _safety_alert(self, drone: str, safety: str) -> None:
        """The drone's own safety layer acted (collision hold, geofence, link-loss failsafe …)."""
        lowered = safety.lower()
        severity = "critical" if "collision" in lowered or "estop" in lowered else "warning"
        if lowered.startswith(("ground station", "operator", "order expired", "new instruction", "order ")):
            severity = "info"  # what the operator (or the commander's expiry) asked for
        self.alerts.raise_alert(severity, drone, f"safety: {safety}", key=f"safety:{safety}")

    def _link_alert(self, drone: str, state: str, silence_s: float) -> None:
        life = self.life.get(drone)
        if state == "lost" and (life is None or not life.gone):
            self.alerts.raise_alert("warning", drone, f"link lost (silent {silence_s:.1f} s)", key="link")
        elif state == "up" and life is not None and life.name != "connecting":
            self.alerts.raise_alert("info", drone, "link back up", key="link")

    def refresh(self) -> None:
        now = time.monotonic()
        for drone_id in self.tiles:
            snap = self._refresh_tile(drone_id, now)
            pose = snap.telemetry.pose_ned if snap.telemetry is not None else None
            self.map.set_drone(drone_id, pose, list(snap.trail), snap.is_stale(now, self.fleet.stale_after_s))
            if snap.home is not None:
                self.map.homes[drone_id] = snap.home
            self.plots.add(drone_id, snap, now)
        if self.plots.isVisible():
            self.plots.update()
        self.map.update()
        if getattr(self.structure, "map_image_source", None) is not None:  # a model commander reads it
            with self._map_lock:
                self._map_image = self.map.render_bgr()
        age = percentile(list(self.metrics.frame_age_s)[-500:], 95)
        stall = percentile(list(self.loop_monitor.stalls_s)[-3000:], 99)
        structure = self.structure.name if self.structure is not None else "none"
        paused = f" (orders paused: {self.fleet.orders_paused})" if self.fleet.orders_paused else ""
        self.figures.setText(
            f"structure: {structure}{paused} · frame age p95 "
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
        targets = [drone] if drone else list(self.fleet.drone_ids)
        self._partial_acks[label] = {}
        if drone is None:
            self.safety.show_waiting(kind, targets, {})
        else:
            self.tiles[drone].show_ack(f"{kind}: sent …")

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
        if ack.drone in self.tiles:
            self.tiles[ack.drone].show_ack(_ack_text(kind, ack))
        if not drone:
            self.safety.show_waiting(kind, list(self.fleet.drone_ids), partial)
        if ack.result != "ok":
            self.alerts.raise_alert("error", ack.drone, f"{kind} {_ack_text(kind, ack)}", key=f"ack:{kind}")

    def on_relaunch(self, drone: str) -> None:
        if self.launcher is None:
            return
        try:
            self.launcher.relaunch(drone)
            self.fleet.forget_telemetry(drone)
        except Exception as exc:
            self.alerts.raise_alert("error", drone, f"cannot re-launch: {exc}", key="relaunch")
            return
        self.tiles[drone].show_problem([])
        self._problem_shown.pop(drone, None)
        self.tiles[drone].show_ack("re-launched: waiting for it to report …")
        self._refresh_tile(drone, time.monotonic())  # "connecting" now, not the last launch's end
        self.alerts.raise_alert("info", drone, "re-launched", key="relaunch")
        self.orders.add(f"{drone} re-launched by the operator")

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

    def on_goto_pick(self) -> None:
        self.map.picking = True
        self.map.setFocus()
        self.map.update()

    def on_goto_picked(self, world: tuple[float, float]) -> None:
        """A point picked on the map: ask to confirm it for the chosen drone (at its altitude)."""
        drone = self.goto_drone.currentText()
        snap = self.fleet.state.snapshot(drone)
        if snap.telemetry is None:
            self.alerts.raise_alert("error", drone, "goto: no telemetry from it yet", key="ack:goto")
            return
        north, east = world
        down = snap.telemetry.pose_ned.z_m
        home_z = snap.home[2] if snap.home is not None else 0.0
        text = (
            f"Send {drone} to N {north:.1f} m, E {east:.1f} m ({self.map.geo_text(north, east)}), "
            f"at its altitude {home_z - down:.1f} m?\n\nThe drone checks the point against its "
            "geofence and altitude limits, flies there under its safety rules, then holds."
        )
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Confirm GoTo",
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setObjectName("goto-confirm")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)  # Enter alone sends nothing

        def answered(button: Any) -> None:
            if box.standardButton(button) == QMessageBox.StandardButton.Yes:
                self.send_goto(drone, north, east, down)

        box.buttonClicked.connect(answered)
        self.goto_confirm = box
        box.open()  # window-modal, not blocking: the display and e-stop keep working meanwhile

    def send_goto(self, drone: str, north: float, east: float, down: float) -> None:
        self.map.goto_targets[drone] = (north, east)
        self.tiles[drone].show_ack("goto: sent …")
        self.orders.add(f"goto {drone}: N {north:.1f} E {east:.1f} m")
        self.bridge.submit(f"goto:{drone}", lambda: self.fleet.goto(drone, north, east, down))

    def on_judge(self, declaration_id: str, accept: bool) -> None:
        self.bridge.submit(
            f"judge:{declaration_id}:{'accept' if accept else 'reject'}",
            lambda: self.fleet.judge(declaration_id, accept, operator=self.operator),
        )

    def on_done(self, label: str, result: Any) -> None:
        if label.startswith("safety:"):
            _, kind, drone = label.split(":", 2)
            started = self._sent_at.pop(label, None)
            self._partial_acks.pop(label, None)
            if isinstance(result, Exception):
                self.safety.acks.setText(f"<b>{kind}</b>: failed: {html.escape(str(result))}")
                self.alerts.raise_alert("error", drone, f"{kind} failed: {result}", key=f"ack:{kind}")
                return
            acks: dict[str, AckRecord] = result
            if started is not None:
                self.metrics.command_acked(kind, time.monotonic() - started)
            if drone:
                self.tiles[drone].show_ack(_ack_text(kind, acks[drone]))
            else:
                self.safety.show_acks(kind, acks)
                for drone_id, ack in acks.items():
                    self.tiles[drone_id].show_ack(_ack_text(kind, ack))
        elif label.startswith("judge:"):
            _, declaration_id, verdict = label.split(":", 2)
            if isinstance(result, AckRecord):
                result_text = result.result if result.result == "ok" else f"{result.result} ({result.reason})"
            else:
                result_text = f"failed: {result}"
            self.declarations.judged(declaration_id, verdict, result_text, operator=self.operator)
            if result_text != "ok":
                self.alerts.raise_alert("error", "", f"{verdict} not confirmed: {result_text}", key="judge")
        elif label == "structure":
            text = f"failed: {result}" if isinstance(result, Exception) else f"{result}: running"
            if self.structure is not None and self.structure.errors:
                text += f" ({self.structure.errors[-1]})"
            self.instruction.status.setText(text)
            if isinstance(result, Exception):
                self.alerts.raise_alert("error", "", f"structure {text}", key="structure")
        elif label.startswith("goto:"):
            drone = label.split(":", 1)[1]
            if isinstance(result, AckRecord) and result.result == "ok":
                self.alerts.raise_alert("info", drone, "goto accepted: flying there", key="ack:goto")
                return
            self.map.goto_targets.pop(drone, None)  # not going there
            if isinstance(result, Exception):  # (a rejection is already an alert: the "ack" event)
                self.alerts.raise_alert("error", drone, f"goto failed: {result}", key="ack:goto")
        elif label == "instruct" and isinstance(result, Exception):
            self.instruction.status.setText(f"instruction failed: {result}")
            self.alerts.raise_alert("error", "", f"instruction failed: {result}", key="instruct")

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
        for tile in self.tiles.values():  # a recording in progress is finished, not left truncated
            tile.record.setChecked(False)
        if self.structure is not None:
            self.structure.stop()
        self.bridge.close()

    def closeEvent(self, event: Any) -> None:  # noqa: N802 (Qt's name)
        self.shutdown()
        super().closeEvent(event)


def _ack_text(kind: str, ack: AckRecord) -> str:
    text = f"{kind}: {ack.result} in {ack.latency_s * 1000:.0f} ms"
    return text if ack.result == "ok" else f"{text} — {ack.reason}"


def _operator_name() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment
        return "operator"


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
    launcher: Any = None,
    map_tiles: str | None = None,
    geo_origin: tuple[float, float, float] | None = None,
) -> int:
    """The window until it is closed, or Ctrl+C / SIGTERM / SIGHUP close it; the caller then stops
    what it launched (drones first, the simulator last). `quit_after_qualifying_s`: close the window
    this long after the first declaration within `delta_m` of the target and visible (the
    simulator's judgement; the demo ends there)."""
    app = QApplication.instance() or QApplication([])
    window = MainWindow(fleet, marks, launcher=launcher)
    if geo_origin is not None:
        window.map.geo_origin = geo_origin
    if map_tiles:
        from ground_station.app.map_tiles import TileSource

        window.map.tiles = TileSource(map_tiles)
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
    with close_on_signals(window) as caught, keep_running_on_errors(window):
        code = app.exec()
    window.shutdown()
    return 128 + caught[0] if caught else int(code)  # the shell's convention for a signal


@contextlib.contextmanager
def close_on_signals(window: QMainWindow) -> Iterator[list[int]]:
    """Ctrl+C, SIGTERM and SIGHUP close the window (an orderly exit) instead of killing the process;
    the list it yields gets the signal's number. Python runs signal handlers only between bytecodes,
    so a timer wakes the interpreter while Qt waits in C++."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return

    def close(signum: int, frame: Any) -> None:
        caught.append(signum)
        QTimer.singleShot(0, window.close)

    previous = {sig: signal.signal(sig, close) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    waker = QTimer()
    waker.timeout.connect(lambda: None)
    waker.start(200)
    try:
        yield caught
    finally:
        waker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def keep_running_on_errors(window: MainWindow) -> Iterator[None]:
    """An exception in a slot is an alert, not an abort: PyQt6 aborts the process on one by default,
    which would leave the drones to their link-loss failsafe instead of landing them in order."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        log.error("unhandled error in the ground station", exc_info=(kind, value, tb))
        if isinstance(value, KeyboardInterrupt):
            window.close()
            return
        try:
            window.alerts.raise_alert(
                "error", "", f"internal error: {kind.__name__}: {value}", key="internal"
            )
        except Exception:
            log.exception("could not raise the alert")

    sys.excepthook = hook
    try:
        yield
    finally:
        sys.excepthook = previous
