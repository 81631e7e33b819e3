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
    QFileDialog,
    QGridLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from common.messages import EStop
from ground_station.app.alerts import AlertBanner, AlertModel, AlertPanel
from ground_station.app.bridge import FleetBridge
from ground_station.app.commands import OperatorCommands
from ground_station.app.events import FleetEventView
from ground_station.app.goto import GotoControl
from ground_station.app.launcher import DroneLauncher
from ground_station.app.live_view import LiveView, StatusFigures
from ground_station.app.map_view import DRONE_COLOURS, MapView
from ground_station.app.metrics import LoopMonitor, Metrics
from ground_station.app.panels import DeclarationLog, InstructionPanel, OrderHistory, SafetyBar
from ground_station.app.plots import TelemetryPlots
from ground_station.app.safety_commands import SafetyCommands
from ground_station.app.supervision import DroneSupervisor
from ground_station.app.tiles import DroneTile
from ground_station.app.views import Views
from ground_station.fleet.client import FleetClient
from ground_station.fleet.structures import Structure

log = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    """Builds the layout and composes the controllers that do the work, each with one job:
    DroneSupervisor (each drone's life on its tile, its alerts and its re-launch), FleetEventView
    (fleet events into the panels), SafetyCommands (e-stop, hold, land, return home),
    OperatorCommands (instruction or structure, judgement), GotoControl (GoTo from the map) and
    LiveView (the periodic refresh). FleetBridge's signals and the refresh timer are connected
    straight to their slots."""

    def __init__(
        self,
        fleet: FleetClient,
        marks: list[tuple[float, float]] | None = None,
        launcher: DroneLauncher | None = None,
        beep: bool = True,
    ) -> None:
        """`launcher`: the SimFleet that started the drones (exit_info, relaunch), or None."""
        super().__init__()
        self.setWindowTitle("DroneCATS ground station")
        self.fleet = fleet
        self.metrics = Metrics()
        self.loop_monitor = LoopMonitor()
        self.bridge = FleetBridge(fleet)
        self.launcher = launcher
        self.alerts = AlertModel(beep=beep)
        self.colours = {d: DRONE_COLOURS[i % len(DRONE_COLOURS)] for i, d in enumerate(fleet.drone_ids)}

        # The widgets first (their buttons call the slots below, which reach the controllers built
        # after them), then the controllers, then the layout.
        self.safety = SafetyBar(self.on_safety)
        self.banner = AlertBanner(self.alerts)
        self.tiles: dict[str, DroneTile] = {}
        for drone_id in fleet.drone_ids:
            self.tiles[drone_id] = DroneTile(
                drone_id,
                self.metrics,
                self.on_safety,
                fleet.stale_after_s,
                colour=self.colours[drone_id],
                on_relaunch=self.on_relaunch if launcher is not None else None,
            )
        self.map = MapView(on_marks=self._marks_changed)
        self.map.colours = dict(self.colours)
        for tile in self.tiles.values():
            tile.geo = self.map.to_geo
            if launcher is not None:
                tile.record_dir = Path(launcher.log_dir) / "recordings"
        if launcher is not None:  # it knows the world: its targets, fence and geographic origin
            self.map.targets = [(t.name, t.pose.x_m, t.pose.y_m) for t in launcher.targets]
            self.map.geo_origin = launcher.geo_origin
            with contextlib.suppress(Exception):
                self.map.fence_radius_m = launcher.geofence_radius_m()
        self.map.marks = list(marks or [])
        self.instruction = InstructionPanel(fleet.drone_ids, self.on_send)
        self.orders = OrderHistory()
        self.alert_panel = AlertPanel(self.alerts)
        self.plots = TelemetryPlots(self.colours)
        self.declarations = DeclarationLog(self.on_judge)
        self.figures = QLabel("")
        self.figures.setObjectName("figures")

        views = Views(
            self.tiles,
            self.safety,
            self.map,
            self.instruction,
            self.orders,
            self.declarations,
            self.alerts,
            self.plots,
        )
        self.supervisor = DroneSupervisor(fleet, views, launcher)
        self.events = FleetEventView(views, self.supervisor)
        self.live = LiveView(
            fleet,
            views,
            self.supervisor,
            StatusFigures(self.figures, fleet, self.metrics, self.loop_monitor),
            structure=lambda: self.commands.structure,
            parent=self,
        )
        self.safety_commands = SafetyCommands(self.bridge, views, self.metrics)
        self.commands = OperatorCommands(self.bridge, views, self.live.map_image)
        self.operator = self.commands.operator
        self.goto = GotoControl(self.bridge, views)
        self.map.on_pick = self.goto.on_picked
        # What the controllers own, under the names callers use (the same objects, never replaced).
        self.life = self.supervisor.life
        self.goto_drone = self.goto.drone
        self.goto_pick = self.goto.pick
        self._lay_out()

        for kind, _, keys in SafetyBar.ACTIONS:
            self._shortcut(keys, lambda k=kind: self.on_safety(k, None))
        for index, drone_id in enumerate(fleet.drone_ids[:9]):
            self._shortcut(f"Ctrl+{index + 1}", lambda d=drone_id: self.on_safety(EStop.TYPE, d))
        self._shortcut("Ctrl+S", lambda: self.export_session(None))
        self._shortcut("Ctrl+K", self.alerts.acknowledge_all)

        self.bridge.fleet_event.connect(self.events.on_event)
        self.bridge.frame_ready.connect(self.events.on_frame)
        self.bridge.done.connect(self.safety_commands.on_done)
        self.bridge.done.connect(self.commands.on_done)
        self.bridge.done.connect(self.goto.on_done)
        self.bridge.ack_ready.connect(self.safety_commands.on_ack)
        self.refresh_timer = self.live.timer
        self.refresh_timer.start()
        self.resize(1280, 800)

    def _lay_out(self) -> None:
        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.addWidget(self.safety)
        outer.addWidget(self.banner)
        split = QSplitter(Qt.Orientation.Horizontal)
        tiles_widget = QWidget()
        grid = QGridLayout(tiles_widget)
        grid.setContentsMargins(0, 0, 0, 0)
        columns = min(2, max(1, math.ceil(math.sqrt(len(self.tiles)))))
        for index, tile in enumerate(self.tiles.values()):
            grid.addWidget(tile, index // columns, index % columns)
        grid.setRowStretch(grid.rowCount(), 0)
        tiles_widget.setFixedWidth(columns * (DroneTile.WIDTH_PX + grid.horizontalSpacing() + 2))
        split.addWidget(tiles_widget)
        split.setCollapsible(0, False)
        side = QSplitter(Qt.Orientation.Vertical)
        self.side = side
        map_box = QWidget()
        map_layout = QVBoxLayout(map_box)
        map_layout.setContentsMargins(0, 0, 0, 0)
        map_layout.setSpacing(2)
        map_layout.addWidget(self.goto)
        map_layout.addWidget(self.map, 1)
        side.addWidget(map_box)
        side.addWidget(self.instruction)
        logs = QTabWidget()
        logs.setObjectName("logs")
        logs.addTab(self.alert_panel, "Alerts")
        logs.addTab(self.orders, "Orders")
        logs.addTab(self.plots, "Telemetry")
        self.logs = logs
        side.addWidget(logs)
        side.addWidget(self.declarations)
        side.setSizes([280, 140, 150, 230])
        split.addWidget(side)
        outer.addWidget(split, 1)
        self.setCentralWidget(central)

        status = self.statusBar()
        assert status is not None
        status.addWidget(self.figures, 1)
        export = QPushButton("Export session log  (Ctrl+S)")
        export.setObjectName("export")
        export.clicked.connect(lambda: self.export_session(None))
        status.addPermanentWidget(export)

    def _shortcut(self, keys: str, slot: Any) -> None:
        shortcut = QShortcut(QKeySequence(keys), self)
        shortcut.setContext(Qt.ShortcutContext.ApplicationShortcut)
        shortcut.activated.connect(slot)

    # ---- what the controllers replace while running, under the names callers use ----------------
    @property
    def structure(self) -> Structure | None:
        return self.commands.structure

    @property
    def goto_confirm(self) -> QMessageBox | None:
        return self.goto.confirm

    # ---- slots the widgets call (built before the controllers that handle them) --------------------
    def on_safety(self, kind: str, drone: str | None) -> None:
        self.safety_commands.on_safety(kind, drone)

    def on_relaunch(self, drone: str) -> None:
        self.supervisor.relaunch(drone)

    def on_send(self, text: str, target: str, structure: str, model: str) -> None:
        self.commands.on_send(text, target, structure, model)

    def on_judge(self, declaration_id: str, accept: bool) -> None:
        self.commands.on_judge(declaration_id, accept)

    def _marks_changed(self, marks: list[tuple[float, float]]) -> None:
        self.commands.marks_changed(marks)

    def on_goto_pick(self) -> None:
        self.goto.on_pick()

    def on_goto_picked(self, world: tuple[float, float]) -> None:
        self.goto.on_picked(world)

    def send_goto(self, drone: str, north: float, east: float, down: float) -> None:
        self.goto.send(drone, north, east, down)

    def refresh(self) -> None:
        self.live.refresh()

    def map_image(self) -> Any:
        """For the commander's worker thread: the newest map rendered on the GUI thread."""
        return self.live.map_image()

    # ---- session ----------------------------------------------------------------------------------
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
        self.commands.stop()
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
    launcher: DroneLauncher | None = None,
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
