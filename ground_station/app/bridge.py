"""Fleet events into the Qt event loop, and blocking fleet calls off it.

FleetState listeners run on the link's I/O thread (or a structure's worker); `FleetBridge.event` is a
Qt signal, so connecting a slot to it delivers every event on the GUI thread (queued connection).
Commands wait for acks, so they run on a small thread pool and report back through `done`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PyQt6.QtCore import QObject, pyqtSignal

from ground_station.fleet.client import FleetClient
from ground_station.fleet.state import FleetEvent

log = logging.getLogger(__name__)


class FleetBridge(QObject):
    fleet_event = pyqtSignal(object)  # FleetEvent (not `event`: that is QObject's event handler)
    done = pyqtSignal(str, object)  # (label, result or exception)

    def __init__(self, fleet: FleetClient) -> None:
        super().__init__()
        self.fleet = fleet
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gs-cmd")
        fleet.state.add_listener(self._on_event)

    def _on_event(self, event: FleetEvent) -> None:
        if event.kind != "telemetry":  # the window polls telemetry; frames and steps come at once
            self.fleet_event.emit(event)

    def submit(self, label: str, fn: Callable[[], Any]) -> None:
        """Run fn off the GUI thread; its result (or exception) comes back through `done`."""

        def task() -> None:
            try:
                result: Any = fn()
            except Exception as exc:
                log.exception("%s failed", label)
                result = exc
            self.done.emit(label, result)

        self.pool.submit(task)

    def close(self) -> None:
        self.fleet.state.remove_listener(self._on_event)
        self.pool.shutdown(wait=True, cancel_futures=False)
