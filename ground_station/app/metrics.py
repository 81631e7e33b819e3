"""Responsiveness figures the app measures about itself (shown in the status bar; read by the
benchmark): frame age capture -> on screen, event-loop stalls, and command -> last ack."""

from __future__ import annotations

import time
from collections import deque

from PyQt6.QtCore import QObject, QTimer

from common.stats import nearest_rank


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return nearest_rank(sorted(values), q / 100.0)


class LoopMonitor(QObject):
    """A timer that should fire every interval_ms; how late it fires is how long the loop stalled."""

    def __init__(self, interval_ms: int = 10, keep: int = 20000) -> None:
        super().__init__()
        self.interval_s = interval_ms / 1000.0
        self.stalls_s: deque[float] = deque(maxlen=keep)
        self._last: float | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        now = time.monotonic()
        if self._last is not None:
            self.stalls_s.append(max(0.0, now - self._last - self.interval_s))
        self._last = now


class Metrics:
    def __init__(self, keep: int = 20000) -> None:
        self.frame_age_s: deque[float] = deque(maxlen=keep)
        self.command_last_ack_s: dict[str, list[float]] = {}

    def frame_shown(self, capture_ground_s: float) -> None:
        self.frame_age_s.append(time.monotonic() - capture_ground_s)

    def command_acked(self, command: str, last_ack_s: float) -> None:
        self.command_last_ack_s.setdefault(command, []).append(last_ack_s)
