"""One tile per drone: the live frame with the model's `go` point ringed and labelled, heading, last
actions, current order and its expiry, link state, battery, mode, served control rate, model
latency, the Jetson's health when the drone reports it; a stale drone is greyed out and says for how
long it has been silent."""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from pathlib import Path

from PyQt6.QtCore import QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QImage, QPainter, QPen
from PyQt6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from common.actions import Go, Rotate, action_name
from common.messages import EStop, Hold, JetsonHealth, Land, ReturnHome
from ground_station.app.metrics import Metrics
from ground_station.app.recording import ViewRecorder
from ground_station.app.widgets import safety_buttons
from ground_station.fleet.lifecycle import LifeState, life_state
from ground_station.fleet.state import DroneState, FrameRecord, StepRecord


def short_action(step: StepRecord) -> str:
    action = step.action
    if action is None:
        return "MALFORMED (hold)" if step.malformed_reason else "discarded"
    if isinstance(action, Go):
        return f"GO ({action.point[0]},{action.point[1]}) {action.depth_m:g} m"
    name = action_name(action).upper()
    return f"{name} {action.angle_deg:+.0f}°" if isinstance(action, Rotate) else name


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

    def annotated(self) -> QImage | None:
        """The current frame at its own size with the go ring drawn on it (for recording)."""
        if self.image is None:
            return None
        out = self.image.convertToFormat(QImage.Format.Format_RGB32)
        painter = QPainter(out)
        self._draw_go(painter, QRectF(out.rect()))
        painter.end()
        return out

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
    """Fixed width (the window never grows with a long message): every text line is elided or
    wrapped inside it, with the full text as a tooltip."""

    WIDTH_PX = 372

    def __init__(
        self,
        drone_id: str,
        metrics: Metrics | None,
        on_safety: Callable[[str, str], None],
        stale_after_s: float = 2.0,
        colour: str = "#1e88e5",
        on_relaunch: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.drone_id = drone_id
        self.stale_after_s = stale_after_s
        self.colour = colour
        self.life = LifeState("connecting", "")
        self.geo: Callable[[float, float], tuple[float, float] | None] | None = None  # NED m -> lat, lon
        self.setObjectName(f"tile-{drone_id}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFixedWidth(self.WIDTH_PX)
        # the drone's map colour down the tile's left edge: the same drone on the map and here
        self.setStyleSheet(f"#tile-{drone_id} {{ border-left: 6px solid {colour}; }}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.setSpacing(2)
        self.header = QLabel(f"<b>{drone_id}</b>")
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.header)
        self.view = FrameView(metrics)
        layout.addWidget(self.view, 1)
        self.info = QLabel("")
        self.info.setTextFormat(Qt.TextFormat.RichText)
        self.info.setWordWrap(False)  # a fixed number of lines: the tiles never grow with the text
        self.info.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.info)
        self.problem = QLabel("")
        self.problem.setObjectName(f"problem-{drone_id}")
        self.problem.setWordWrap(True)
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.problem.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.problem.setStyleSheet("color:#6a1b9a;font-family:monospace;font-size:10px")
        self.problem.hide()
        layout.addWidget(self.problem)
        row = QHBoxLayout()
        self.buttons = safety_buttons(
            row,
            ((EStop.TYPE, "E-STOP"), (Hold.TYPE, "Hold"), (Land.TYPE, "Land"), (ReturnHome.TYPE, "Home")),
            lambda kind: f"{kind}-{drone_id}",
            "background:#c62828;color:white;font-weight:bold",
            lambda kind: on_safety(kind, drone_id),
        )
        self.relaunch = QPushButton("Re-launch")
        self.relaunch.setObjectName(f"relaunch-{drone_id}")
        self.relaunch.setToolTip("start this drone's onboard process again (the ground station launched it)")
        self.relaunch.hide()
        if on_relaunch is not None:
            self.relaunch.clicked.connect(lambda: on_relaunch(drone_id))
        row.addWidget(self.relaunch)
        layout.addLayout(row)
        bottom = QHBoxLayout()
        self.ack_label = QLabel("")
        self.ack_label.setObjectName(f"ack-{drone_id}")
        self.ack_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        bottom.addWidget(self.ack_label, 1)
        self.recorder: ViewRecorder | None = None
        self.recordings: list[Path] = []
        self.record_dir = Path("runs") / "recordings"
        self.record = QPushButton("● Rec")
        self.record.setObjectName(f"record-{drone_id}")
        self.record.setCheckable(True)
        self.record.setToolTip("record this drone's annotated view to a video file")
        self.record.setStyleSheet("QPushButton:checked { background:#c62828; color:white; }")
        self.record.toggled.connect(self.toggle_recording)
        bottom.addWidget(self.record)
        layout.addLayout(bottom)
        self._ack_text = ""

    def show_frame(self, frame: FrameRecord, image: QImage) -> None:
        self.view.set_frame(frame, image)
        if self.recorder is not None:
            annotated = self.view.annotated()
            if annotated is not None:
                self.recorder.add(annotated)

    def toggle_recording(self, on: bool) -> None:
        """● Rec: this drone's annotated view to a video (an MJPG .avi in `record_dir`)."""
        if on and self.recorder is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = self.record_dir / f"{self.drone_id}-{stamp}.avi"
            width, height = (
                (self.view.image.width(), self.view.image.height()) if self.view.image else (640, 360)
            )
            try:
                self.recorder = ViewRecorder(path, width, height)
            except (OSError, ValueError) as exc:
                self.record.setChecked(False)
                self.show_ack(f"cannot record: {exc}")
                return
            self.show_ack(f"recording to {path}")
        elif not on and self.recorder is not None:
            recorder, self.recorder = self.recorder, None
            path = recorder.close()
            self.recordings.append(path)
            self.show_ack(f"recorded {recorder.frames} frames to {path}")

    def show_ack(self, text: str) -> None:
        self._ack_text = text
        self.ack_label.setToolTip(text)
        width = max(80, self.WIDTH_PX - 90)
        self.ack_label.setText(
            self.ack_label.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, width)
        )

    def full_ack_text(self) -> str:
        return self._ack_text

    def refresh(self, state: DroneState, life: LifeState | None = None, relaunchable: bool = False) -> None:
        """Header and info from a snapshot (called a few times a second, and on steps)."""
        now = time.monotonic()
        life = life or life_state(state, now, self.stale_after_s)
        self.life = life
        t = state.telemetry
        battery = f"{t.battery_pct:.0f}%" if t is not None and t.battery_pct is not None else "n/a"
        link = state.link_state if t is not None or state.link_state == "lost" else "waiting"
        if life.name in ("done", "failed"):
            link = "closed"  # its process ended: nothing more will come, whatever the socket says
        link_colour = {"up": "#2e7d32", "lost": "#c62828", "closed": "#757575"}.get(link, "#f9a825")
        self.header.setText(
            f"<b style='color:{self.colour}'>■</b> <b>{self.drone_id}</b> &nbsp; "
            f"<span style='background:{life.colour};color:white'>&nbsp;{life.name}&nbsp;</span>"
            f" &nbsp; link <span style='color:{link_colour}'><b>{link}</b></span> &nbsp; battery {battery}"
        )
        self.header.setToolTip(f"{life.name}: {life.detail}" if life.detail else life.name)
        self.view.stale_text = _veil(life, state, now)
        if state.latest_frame is None:
            self.view.placeholder = (
                "waiting for the drone …"
                if life.name == "connecting"
                else "no frame yet (frames flow while it decides)"
            )
        go = next((s for s in reversed(state.steps) if s.executed and isinstance(s.action, Go)), None)
        self.view.go_step = go
        heading = f"{t.pose_ned.yaw_deg % 360:.0f}°" if t is not None else "?"
        alt = f"{-t.pose_ned.z_m:.1f} m" if t is not None else "?"
        rate = f"{t.control_rate_hz:.1f} Hz ±{t.control_jitter_ms:.1f} ms" if t is not None else "?"
        latency = state.steps[-1].model_latency_s if state.steps else None
        latency_text = f"{latency * 1000:.0f} ms" if latency is not None else "?"
        last = " · ".join(short_action(s) for s in list(state.steps)[-2:][::-1]) or "none yet"
        order = state.order
        order_text = "none"
        if order is not None:
            left = f"{order.steps_left}/{order.expires_after_steps} steps left"
            order_text = html.escape(f"“{_short(order.text, 70)}” — {order.state}, {left}")
        status = html.escape(_short(life.detail, 90))
        geo = self.geo(t.pose_ned.x_m, t.pose_ned.y_m) if t is not None and self.geo is not None else None
        where = f"{geo[0]:.6f}, {geo[1]:.6f}" if geo is not None else "position: no geo origin"
        if t is None:
            where = "position: not reported yet"
        self.info.setText(
            f"hdg {heading} · alt {alt} · ctrl {rate} · model {latency_text} · {state.step_count} steps"
            f"<br>{where}"
            f"<br>last: {last}<br>order: {order_text}"
            + (f"<br><span style='color:{life.colour}'>{status}</span>" if status else "")
            + (f"<br>{jetson_text(t.jetson)}" if t is not None and t.jetson is not None else "")
        )
        self.relaunch.setVisible(relaunchable)
        for kind, button in self.buttons.items():
            button.setEnabled(not life.gone or kind == EStop.TYPE)
        self.view.update()

    def show_problem(self, lines: list[str]) -> None:
        """A launched drone's last log lines (why it failed), on its tile: never only in a file."""
        text = "\n".join(line[:400] for line in lines[-4:] if line.strip())
        self.problem.setText(text)
        self.problem.setToolTip(text)
        self.problem.setVisible(bool(text))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _veil(life: LifeState, state: DroneState, now: float) -> str:
    """What is written across the frame when what it shows is no longer live."""
    if life.name == "lost":
        silent = now - state.telemetry_received_s if state.telemetry_received_s is not None else None
        return "LINK LOST" + (f" — silent {silent:.0f} s" if silent is not None else "")
    if life.name == "done":
        return "DONE"
    if life.name == "failed":
        return "FAILED"
    if life.name == "connecting":
        return ""
    if state.is_stale(now, 2.0) and state.telemetry_received_s is not None:
        return f"STALE — silent {now - state.telemetry_received_s:.1f} s"
    return ""
