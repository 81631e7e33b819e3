"""Operator telemetry: small plots of each drone's altitude, speed, served control rate, model latency
and battery (where the vehicle reports one) over the last minutes, one line per drone in its map
colour. Sampled from the window's refresh (a few times a second), drawn with QPainter (no plotting
library on the GUI thread)."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

from PyQt6.QtCore import QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QPainter, QPainterPath, QPen
from PyQt6.QtWidgets import QSizePolicy, QWidget

from ground_station.fleet.state import DroneState

WINDOW_S = 180.0


@dataclass(frozen=True)
class Quantity:
    key: str
    label: str
    unit: str


QUANTITIES = (
    Quantity("alt", "altitude", "m"),
    Quantity("speed", "speed", "m/s"),
    Quantity("rate", "control rate", "Hz"),
    Quantity("model", "model latency", "ms"),
    Quantity("battery", "battery", "%"),
)


def sample(state: DroneState) -> dict[str, float | None]:
    """One drone's plotted values now (None: nothing to plot for it)."""
    t = state.telemetry
    if t is None:
        return {q.key: None for q in QUANTITIES}
    latency = state.steps[-1].model_latency_s if state.steps else None
    return {
        "alt": -t.pose_ned.z_m,
        "speed": math.sqrt(sum(v * v for v in t.velocity_ned_m_s)),
        "rate": t.control_rate_hz,
        "model": None if latency is None else latency * 1000.0,
        "battery": t.battery_pct,
    }


class TelemetryPlots(QWidget):
    def __init__(self, colours: dict[str, str], window_s: float = WINDOW_S) -> None:
        super().__init__()
        self.setObjectName("telemetry-plots")
        self.colours = colours
        self.window_s = window_s
        self.series: dict[str, deque[tuple[float, dict[str, float | None]]]] = {
            d: deque(maxlen=int(window_s * 5)) for d in colours
        }
        self.setMinimumSize(220, 110)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def add(self, drone: str, state: DroneState, now_s: float | None = None) -> None:
        now_s = time.monotonic() if now_s is None else now_s
        if state.telemetry is None or state.telemetry_received_s is None:
            return
        series = self.series.setdefault(drone, deque(maxlen=int(self.window_s * 5)))
        if series and series[-1][0] >= state.telemetry_received_s:
            return  # nothing new from this drone since the last sample
        series.append((state.telemetry_received_s, sample(state)))
        while series and series[0][0] < now_s - self.window_s:
            series.popleft()

    def values(self, drone: str, key: str) -> list[tuple[float, float]]:
        return [(t, v[key]) for t, v in self.series.get(drone, ()) if v.get(key) is not None]  # type: ignore[misc]

    def shown(self) -> list[Quantity]:
        """Battery only where a vehicle reports it."""
        return [
            q for q in QUANTITIES if q.key != "battery" or any(self.values(d, "battery") for d in self.series)
        ]

    def paintEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), QColor("#ffffff"))
        font = QFont(painter.font())
        font.setPointSizeF(max(6.0, font.pointSizeF() - 1.5))
        painter.setFont(font)
        quantities = self.shown()
        now_s = time.monotonic()
        height = self.height() / max(1, len(quantities))
        firsts = [series[0][0] for series in self.series.values() if series]
        # the span grows with the session up to window_s: a fresh session is not a sliver at the edge
        span_s = min(self.window_s, max(30.0, now_s - min(firsts))) if firsts else self.window_s
        for index, quantity in enumerate(quantities):
            self._plot(painter, quantity, QRectF(0, index * height, self.width(), height), now_s, span_s)
        painter.setPen(QColor("#757575"))
        painter.drawText(
            QRectF(0, 0, self.width() - 6, 12), Qt.AlignmentFlag.AlignRight, f"last {span_s:.0f} s"
        )
        if not any(self.series.values()):
            painter.setPen(QColor("#757575"))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "no telemetry yet")
        painter.end()

    def _plot(self, painter: QPainter, quantity: Quantity, box: QRectF, now_s: float, span_s: float) -> None:
        left, right = box.left() + 44, box.right() - 6
        top, bottom = box.top() + 14, box.bottom() - 4
        lines = {d: self.values(d, quantity.key) for d in self.series}
        points = [v for series in lines.values() for _, v in series]
        low, high = (min(points), max(points)) if points else (0.0, 1.0)
        if quantity.key in ("alt", "speed", "rate", "model", "battery"):
            low = min(low, 0.0)
        if high - low < 1e-6:
            high = low + 1.0
        painter.setPen(QPen(QColor("#e0e0e0"), 1))
        painter.drawRect(QRectF(left, top, right - left, bottom - top))
        painter.setPen(QColor("#424242"))
        latest = ", ".join(f"{d} {series[-1][1]:.1f}" for d, series in sorted(lines.items()) if series)
        painter.drawText(
            QPointF(box.left() + 4, box.top() + 11), f"{quantity.label} ({quantity.unit})  {latest}"
        )
        painter.drawText(QRectF(box.left(), top - 2, 40, 12), Qt.AlignmentFlag.AlignRight, f"{high:.3g}")
        if bottom - top >= 26:  # room for both bounds without overlap
            painter.drawText(
                QRectF(box.left(), bottom - 10, 40, 12), Qt.AlignmentFlag.AlignRight, f"{low:.3g}"
            )
        for drone, series in lines.items():
            if len(series) < 2:
                continue
            path = QPainterPath()
            for k, (t, v) in enumerate(series):
                x = right - (now_s - t) / span_s * (right - left)
                y = bottom - (v - low) / (high - low) * (bottom - top)
                point = QPointF(max(left, x), y)
                if k == 0:
                    path.moveTo(point)
                else:
                    path.lineTo(point)
            painter.setPen(QPen(QColor(self.colours.get(drone, "#000000")), 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawPath(path)
