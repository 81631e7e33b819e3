"""Fleet events into the Qt event loop, and blocking fleet calls off it.

FleetState listeners run on the link's I/O thread (or a structure's worker); `FleetBridge.fleet_event`
is a Qt signal, so connecting a slot to it delivers every event on the GUI thread (queued connection).
Frames are decoded on a decoder thread, at display size (JPEG's own DCT downscaling), newest only per
drone, and arrive as `frame_ready` QImages: the GUI thread never decodes a JPEG.
Commands wait for acks, so they run on a small thread pool and report back through `done`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PyQt6.QtCore import QBuffer, QByteArray, QIODevice, QObject, QSize, pyqtSignal
from PyQt6.QtGui import QImage, QImageReader

from ground_station.fleet.client import FleetClient
from ground_station.fleet.state import FleetEvent, FrameRecord

log = logging.getLogger(__name__)


class FleetBridge(QObject):
    fleet_event = pyqtSignal(object)  # FleetEvent (not `event`: that is QObject's event handler)
    frame_ready = pyqtSignal(str, object, object)  # (drone, FrameRecord, QImage)
    done = pyqtSignal(str, object)  # (label, result or exception)
    ack_ready = pyqtSignal(str, object)  # (label, AckRecord): one drone's ack, as it arrives

    def __init__(self, fleet: FleetClient, frame_width_px: int = 640) -> None:
        super().__init__()
        self.fleet = fleet
        self.frame_width_px = frame_width_px
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="gs-cmd")
        self.decoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gs-decode")
        self._newest: dict[str, FrameRecord] = {}
        self._newest_lock = threading.Lock()
        fleet.state.add_listener(self._on_event)

    def _on_event(self, event: FleetEvent) -> None:
        if event.kind == "telemetry":  # the window polls telemetry
            return
        if event.kind == "frame" and event.drone is not None:
            with self._newest_lock:
                queued = event.drone in self._newest
                self._newest[event.drone] = event.record
            if not queued:  # a queued decode will take this newer frame instead
                self.decoder.submit(self._decode, event.drone)
            return
        self.fleet_event.emit(event)

    def _decode(self, drone: str) -> None:
        with self._newest_lock:
            record = self._newest.pop(drone, None)
        if record is None:
            return
        image = decode_jpeg(record.jpeg, self.frame_width_px)
        if image is not None:
            self.frame_ready.emit(drone, record, image)

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
        self.decoder.shutdown(wait=True, cancel_futures=True)
        self.pool.shutdown(wait=True, cancel_futures=False)


def decode_jpeg(jpeg: bytes, max_width_px: int) -> QImage | None:
    """A JPEG as a QImage at most max_width_px wide (decoded small, not decoded then scaled)."""
    buffer = QBuffer()
    buffer.setData(QByteArray(jpeg))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer, QByteArray(b"jpg"))
    size = reader.size()
    if size.isValid() and size.width() > max_width_px:
        reader.setScaledSize(QSize(max_width_px, round(size.height() * max_width_px / size.width())))
    image = reader.read()
    return None if image.isNull() else image
