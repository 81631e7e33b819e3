"""The live view's refresh: four times a second, every tile, the map and the plots from the fleet
state (telemetry is polled, not pushed per message), the map image a model commander reads, and the
status bar's latency figures."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from PyQt6.QtCore import QObject, QTimer
from PyQt6.QtWidgets import QLabel

from common.capabilities import TakesMapImage
from ground_station.app.metrics import LoopMonitor, Metrics, percentile
from ground_station.app.supervision import DroneSupervisor
from ground_station.app.views import Views
from ground_station.fleet.client import FleetClient
from ground_station.fleet.structures import Structure


class StatusFigures:
    """The status bar's line: the running structure, whether orders are paused, and the app's own
    latency figures (frame age p95 and event-loop stall p99)."""

    def __init__(
        self, label: QLabel, fleet: FleetClient, metrics: Metrics, loop_monitor: LoopMonitor
    ) -> None:
        self.label = label
        self.fleet = fleet
        self.metrics = metrics
        self.loop_monitor = loop_monitor

    def show(self, structure: Structure | None) -> None:
        age = percentile(list(self.metrics.frame_age_s)[-500:], 95)
        stall = percentile(list(self.loop_monitor.stalls_s)[-3000:], 99)
        name = structure.name if structure is not None else "none"
        paused = f" (orders paused: {self.fleet.orders_paused})" if self.fleet.orders_paused else ""
        self.label.setText(
            f"structure: {name}{paused} · frame age p95 "
            + (f"{age * 1000:.0f} ms" if age is not None else "?")
            + " · event-loop stall p99 "
            + (f"{stall * 1000:.0f} ms" if stall is not None else "?")
        )


class LiveView(QObject):
    """Its `timer` drives `refresh`; `map_image` hands the newest map to the commander's thread."""

    INTERVAL_MS = 250

    def __init__(
        self,
        fleet: FleetClient,
        views: Views,
        supervisor: DroneSupervisor,
        figures: StatusFigures,
        structure: Callable[[], Structure | None],
        parent: QObject | None = None,
    ) -> None:
        """`structure`: the running structure, read at each refresh (the operator may replace it)."""
        super().__init__(parent)
        self.fleet = fleet
        self.views = views
        self.supervisor = supervisor
        self.figures = figures
        self.structure = structure
        self._map_image: Any = None
        self._map_lock = threading.Lock()
        self.timer = QTimer(self)
        self.timer.setInterval(self.INTERVAL_MS)
        self.timer.timeout.connect(self.refresh)

    def refresh(self) -> None:
        now = time.monotonic()
        view = self.views.map
        for drone_id in self.views.tiles:
            snap = self.supervisor.refresh_tile(drone_id, now)
            pose = snap.telemetry.pose_ned if snap.telemetry is not None else None
            view.set_drone(drone_id, pose, list(snap.trail), snap.is_stale(now, self.fleet.stale_after_s))
            if snap.home is not None:
                view.homes[drone_id] = snap.home
            self.views.plots.add(drone_id, snap, now)
        if self.views.plots.isVisible():
            self.views.plots.update()
        view.update()
        structure = self.structure()
        # a model commander reads the map: rendered here, on the GUI thread, for its worker
        if isinstance(structure, TakesMapImage) and structure.map_image_source is not None:
            with self._map_lock:
                self._map_image = view.render_bgr()
        self.figures.show(structure)

    def map_image(self) -> Any:
        """For the commander's worker thread: the newest map rendered on the GUI thread."""
        with self._map_lock:
            return self._map_image
