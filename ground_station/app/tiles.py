"""One tile per drone: the live frame with the model's `go` point ringed and labelled, heading, last
actions, current order and its expiry, link state, battery, mode, served control rate, model
latency, the Jetson's health when the drone reports it; a stale drone is greyed out and says for how
long it has been silent."""

from __future__ import annotations

import html
import time
from collections.abc import Callable

from PyQt6.QtCore import QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QImage, QPainter, QPen
from PyQt6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from common.actions import Go, action_name
from common.messages import JetsonHealth
from ground_station.app.metrics import Metrics
from ground_station.fleet.state import DroneState, FrameRecord, StepRecord

MODE_COLOURS = {"flying": "#2e7d32", "hold": "#f9a825", "landing": "#ef6c00", "estop": "#c62828"}


def short_action(step: StepRecord) -> str:
    action = step.action
    if action is None:
        return "MALFORMED (hold)" if step.malformed_reason else "discarded"
    if isinstance(action, Go):
        return f"GO ({action.point[0]},{action.point[1]}) {action.depth_m:g} m"
    name = action_name(action).upper()
    angle = getattr(action, "angle_deg", None)
    return f"{name} {angle:+.0f}°" if angle is not None else name


def jetson_text(health: JetsonHealth) -> str:
    """The companion computer's line on a tile: power mode, hottest sensor, GPU load, power, and a red
    THROTTLED with its reasons (a throttled GPU slows every model step)."""
    parts = [f"power mode {html.escape(health.power_mode or '?')}"]
    if health.max_temp_c is not None:
        parts.append(f"max {health.max_temp_c:.0f} °C")
    if health.gpu_temp_c is not None:
        parts.append(f"GPU {health.gpu_temp_c:.0f} °C")
    if health.gpu_load_pct is not None:
        parts.append(f"GPU load {health.gpu_load_pct:.0f}%")
    if health.power_mw is not None:
        parts.append(f"{health.power_mw / 1000:.1f} W")
    text = "jetson: " + " · ".join(parts)
    if health.throttled:
        reasons = html.escape("; ".join(health.throttle_reasons))
        text += f" · <span style='color:#c62828'><b>THROTTLED</b> {reasons}</span>"
    return text


class FrameView(QWidget):
    """Paints the newest frame, the last `go` ring and, when stale, a grey veil."""

    def __init__(self, metrics: Metrics | None = None) -> None:
        super().__init__()
        self.metrics = metrics
        self.setMinimumSize(240, 135)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.image: QImage | None = None
        self.frame: FrameRecord | None = None
        self.go_step: StepRecord | None = None
        self.stale_text = ""
        self.placeholder = "no frame yet"
        self._painted_seq = -1

    def set_frame(self, frame: FrameRecord, image: QImage) -> None:
        """`image`: the frame decoded off the GUI thread (FleetBridge.frame_ready)."""
        self.image = image
        self.frame = frame
        self.update()

    def image_rect(self) -> QRectF:
        if self.image is None:
            return QRectF(self.rect())
        w, h = self.width(), self.height()
        scale = min(w / self.image.width(), h / self.image.height())
        iw, ih = self.image.width() * scale, self.image.height() * scale
        return QRectF((w - iw) / 2, (h - ih) / 2, iw, ih)

    def paintEvent(self, event: object) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor("#202020"))
        if self.image is None:
            painter.setPen(QColor("#bbbbbb"))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.placeholder)
        else:
            target = self.image_rect()
            painter.drawImage(target, self.image, QRectF(self.image.rect()))
            self._draw_go(painter, target)
        if self.stale_text:
            painter.fillRect(self.rect(), QColor(60, 60, 60, 170))
            painter.setPen(QColor("#ffcc80"))
            font = QFont(painter.font())
            font.setBold(True)
            font.setPointSize(font.pointSize() + 4)
            painter.setFont(font)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.stale_text)
        painter.end()
        if self.frame is not None and self.frame.seq != self._painted_seq:
            self._painted_seq = self.frame.seq
            if self.metrics is not None:
                self.metrics.frame_shown(self.frame.capture_ground_s)

    def _draw_go(self, painter: QPainter, target: QRectF) -> None:
        step = self.go_step
        if step is None or not isinstance(step.action, Go):
            return
        x_px = target.left() + step.action.point[0] / 1000.0 * target.width()
        y_px = target.top() + step.action.point[1] / 1000.0 * target.height()
        # Solid: drawn on the frame it was chosen from; dashed: that frame has been replaced since.
        same = self.frame is not None and self.frame.seq == step.frame_seq
        pen = QPen(QColor("#00e5ff"), 2.5, Qt.PenStyle.SolidLine if same else Qt.PenStyle.DashLine)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(pen)
        centre = QPointF(x_px, y_px)
        painter.drawEllipse(centre, 11.0, 11.0)
        painter.drawLine(QPointF(x_px - 4, y_px), QPointF(x_px + 4, y_px))
        painter.drawLine(QPointF(x_px, y_px - 4), QPointF(x_px, y_px + 4))
        label = f"({step.action.point[0]}, {step.action.point[1]})  {step.action.depth_m:g} m"
        metrics = painter.fontMetrics()
        box = QRectF(x_px + 14, y_px - 20, metrics.horizontalAdvance(label) + 8, metrics.height() + 4)
        if box.right() > target.right():
            box.moveRight(x_px - 14)
        painter.fillRect(box, QColor(0, 0, 0, 170))
        painter.drawText(box, Qt.AlignmentFlag.AlignCenter, label)


class DroneTile(QFrame):
    def __init__(
        self,
        drone_id: str,
        metrics: Metrics | None,
        on_safety: Callable[[str, str], None],
        stale_after_s: float = 2.0,
    ) -> None:
        super().__init__()
        self.drone_id = drone_id
        self.stale_after_s = stale_after_s
        self.setObjectName(f"tile-{drone_id}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(2)
        self.header = QLabel(f"<b>{drone_id}</b>")
        self.header.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.header)
        self.view = FrameView(metrics)
        layout.addWidget(self.view, 1)
        self.info = QLabel("")
        self.info.setTextFormat(Qt.TextFormat.RichText)
        self.info.setWordWrap(True)
        layout.addWidget(self.info)
        row = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for kind, text in (("estop", "E-STOP"), ("hold", "Hold"), ("land", "Land"), ("return_home", "Home")):
            button = QPushButton(text)
            button.setObjectName(f"{kind}-{drone_id}")
            if kind == "estop":
                button.setStyleSheet("background:#c62828;color:white;font-weight:bold")
            button.clicked.connect(lambda _=False, k=kind: on_safety(k, drone_id))
            row.addWidget(button)
            self.buttons[kind] = button
        layout.addLayout(row)
        self.ack_label = QLabel("")
        self.ack_label.setObjectName(f"ack-{drone_id}")
        layout.addWidget(self.ack_label)

    def show_frame(self, frame: FrameRecord, image: QImage) -> None:
        self.view.set_frame(frame, image)

    def show_ack(self, text: str) -> None:
        self.ack_label.setText(text)

    def refresh(self, state: DroneState) -> None:
        """Header and info from a snapshot (called a few times a second, and on steps)."""
        now = time.monotonic()
        stale = state.is_stale(now, self.stale_after_s)
        t = state.telemetry
        mode = t.mode if t is not None else "?"
        colour = MODE_COLOURS.get(mode, "#555555")
        battery = f"{t.battery_pct:.0f}%" if t is not None and t.battery_pct is not None else "n/a"
        link = state.link_state
        link_colour = {"up": "#2e7d32", "lost": "#c62828"}.get(link, "#f9a825")
        safety = f" ({t.safety_state})" if t is not None and t.safety_state not in ("ok", "") else ""
        self.header.setText(
            f"<b>{self.drone_id}</b> &nbsp; <span style='background:{colour};color:white'>&nbsp;{mode}"
            f"{safety}&nbsp;</span> &nbsp; link <span style='color:{link_colour}'><b>{link}</b></span>"
            f" &nbsp; battery {battery}"
        )
        if stale:
            silent = now - state.telemetry_received_s if state.telemetry_received_s is not None else None
            self.view.stale_text = "STALE" + (
                f" — silent {silent:.1f} s" if silent is not None else " — no data yet"
            )
        else:
            self.view.stale_text = ""
        if state.latest_frame is None:
            self.view.placeholder = "no frame yet (frames flow while the drone decides)"
        go = next((s for s in reversed(state.steps) if s.executed and isinstance(s.action, Go)), None)
        self.view.go_step = go
        heading = f"{t.pose_ned.yaw_deg % 360:.0f}°" if t is not None else "?"
        alt = f"{-t.pose_ned.z_m:.1f} m" if t is not None else "?"
        rate = f"{t.control_rate_hz:.1f} Hz" if t is not None else "?"
        latency = state.steps[-1].model_latency_s if state.steps else None
        latency_text = f"{latency * 1000:.0f} ms" if latency is not None else "?"
        last = " · ".join(short_action(s) for s in list(state.steps)[-3:][::-1]) or "none yet"
        order = state.order
        order_text = (
            f"“{order.text}” — {order.state}, {order.steps_left}/{order.expires_after_steps} steps left"
            if order is not None
            else "none"
        )
        self.info.setText(
            f"heading {heading} · alt {alt} · control {rate} · model {latency_text}"
            f" · steps {state.step_count}"
            f"<br>last: {last}<br>order: {order_text}"
            + (f"<br>{jetson_text(t.jetson)}" if t is not None and t.jetson is not None else "")
        )
        self.view.update()
