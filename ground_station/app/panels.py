"""The side panels: instruction box, order history, declaration log, safety bar."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QImage, QPixmap
from PyQt6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ground_station.fleet.state import AckRecord, DeclarationRecord, OrderRecord

FLEET = "Fleet (all drones)"


class InstructionPanel(QGroupBox):
    """Instruction text, to one drone or the fleet, under a chosen structure (AGENT.md §5)."""

    def __init__(self, drone_ids: list[str], on_send: Callable[[str, str, str, str], None]) -> None:
        super().__init__("Instruction")
        self.on_send = on_send
        layout = QGridLayout(self)
        self.text = QLineEdit()
        self.text.setObjectName("instruction")
        self.text.setPlaceholderText("e.g. go to the red car")
        self.text.returnPressed.connect(self._send)
        layout.addWidget(self.text, 0, 0, 1, 3)
        self.target = QComboBox()
        self.target.setObjectName("instruction-target")
        self.target.addItems([FLEET, *drone_ids])
        self.structure = QComboBox()
        self.structure.setObjectName("structure")
        self.structure.addItems(["per-drone", "one-context", "commander"])
        self.structure.setToolTip(
            "per-drone: each drone's own pilot · one-context: one model call for all frames (drones in"
            " remote mode) · commander: orders to sub-agents, 6-step expiry"
        )
        self.model = QLineEdit()
        self.model.setObjectName("model-url")
        self.model.setPlaceholderText("model URL (one-context) / commander: rule or URL")
        layout.addWidget(QLabel("to"), 1, 0)
        layout.addWidget(self.target, 1, 1)
        layout.addWidget(self.structure, 1, 2)
        layout.addWidget(self.model, 2, 0, 1, 2)
        self.send = QPushButton("Send  (Enter)")
        self.send.setObjectName("send")
        self.send.clicked.connect(self._send)
        layout.addWidget(self.send, 2, 2)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status, 3, 0, 1, 3)
        self.structure.currentTextChanged.connect(self._structure_changed)

    def _structure_changed(self, name: str) -> None:
        self.target.setEnabled(name == "per-drone")
        if name != "per-drone":
            self.target.setCurrentText(FLEET)

    def _send(self) -> None:
        text = self.text.text().strip()
        if text:
            self.on_send(
                text, self.target.currentText(), self.structure.currentText(), self.model.text().strip()
            )


class OrderHistory(QGroupBox):
    def __init__(self) -> None:
        super().__init__("Orders and instructions")
        layout = QVBoxLayout(self)
        self.list = QListWidget()
        self.list.setObjectName("orders")
        layout.addWidget(self.list)

    def add(self, text: str) -> None:
        self.list.addItem(f"{time.strftime('%H:%M:%S')}  {text}")
        self.list.scrollToBottom()

    def order(self, order: OrderRecord) -> None:
        self.add(f"{order.drone} ← “{order.text}” ({order.expires_after_steps} steps, {order.state})")


class DeclarationLog(QGroupBox):
    """Every `finished`: time, drone, thumbnail, sim distance and visibility, Accept / Reject."""

    COLUMNS: ClassVar[list[str]] = ["time", "drone", "frame", "dist.", "vis.", "judgement"]

    def __init__(self, on_judge: Callable[[str, bool], None]) -> None:
        super().__init__("Declarations")
        self.on_judge = on_judge
        layout = QVBoxLayout(self)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setObjectName("declarations")
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.verticalHeader().setVisible(False)  # type: ignore[union-attr]
        header = self.table.horizontalHeader()
        assert header is not None
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        layout.addWidget(self.table)
        self.rows: dict[str, int] = {}

    def add(self, d: DeclarationRecord) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.rows[d.declaration_id] = row
        when = time.strftime("%H:%M:%S", time.localtime(d.received_wall_s))
        self.table.setItem(row, 0, QTableWidgetItem(f"{when}\nt={d.t_s:.1f} s"))
        self.table.setItem(row, 1, QTableWidgetItem(d.drone))
        self.set_thumbnail(d)
        distance = "n/a (real)" if d.distance_m is None else f"{d.distance_m:.1f} m"
        self.table.setItem(row, 3, QTableWidgetItem(distance))
        visible = "?" if d.visible is None else ("yes" if d.visible else "no")
        self.table.setItem(row, 4, QTableWidgetItem(visible))
        cell = QWidget()
        buttons = QHBoxLayout(cell)
        buttons.setContentsMargins(2, 0, 2, 0)
        for text, accept in (("Accept", True), ("Reject", False)):
            button = QPushButton(text)
            button.setMinimumWidth(58)
            button.setObjectName(f"{text.lower()}-{d.declaration_id}")
            button.clicked.connect(lambda _=False, i=d.declaration_id, a=accept: self.on_judge(i, a))
            buttons.addWidget(button)
        self.table.setCellWidget(row, 5, cell)
        self.table.setRowHeight(row, 52)
        self.table.scrollToBottom()

    def set_thumbnail(self, d: DeclarationRecord) -> None:
        row = self.rows.get(d.declaration_id)
        if row is None:
            return
        label = QLabel("frame pending" if d.thumbnail_jpeg is None else "")
        if d.thumbnail_jpeg is not None:
            image = QImage.fromData(d.thumbnail_jpeg, "JPG")
            label.setPixmap(
                QPixmap.fromImage(image).scaledToHeight(48, Qt.TransformationMode.SmoothTransformation)
            )
        self.table.setCellWidget(row, 2, label)

    def judged(self, declaration_id: str, verdict: str, result: str) -> None:
        row = self.rows.get(declaration_id)
        if row is None:
            return
        text = f"{verdict.upper()}ED" if result == "ok" else f"{verdict}: {result}"
        label = QLabel(text.replace("ACCEPTED", "ACCEPTED").replace("REJECTED", "REJECTED"))
        label.setObjectName(f"judged-{declaration_id}")
        label.setStyleSheet("color:#2e7d32;font-weight:bold" if verdict == "accept" else "color:#c62828")
        self.table.setCellWidget(row, 5, label)


class SafetyBar(QFrame):
    """Fleet-wide safety commands, always visible, with shortcuts; shows every drone's ack."""

    ACTIONS = (
        ("estop", "E-STOP ALL  (Esc)", "Esc"),
        ("hold", "Hold all  (Ctrl+H)", "Ctrl+H"),
        ("land", "Land all  (Ctrl+L)", "Ctrl+L"),
        ("return_home", "Return home  (Ctrl+R)", "Ctrl+R"),
    )

    def __init__(self, on_safety: Callable[[str, str | None], None]) -> None:
        super().__init__()
        self.setObjectName("safety-bar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        self.buttons: dict[str, QPushButton] = {}
        for kind, text, _ in self.ACTIONS:
            button = QPushButton(text)
            button.setObjectName(f"fleet-{kind}")
            button.setMinimumHeight(34)
            if kind == "estop":
                button.setStyleSheet("background:#b71c1c;color:white;font-weight:bold;font-size:14px")
            button.clicked.connect(lambda _=False, k=kind: on_safety(k, None))
            layout.addWidget(button)
            self.buttons[kind] = button
        self.acks = QLabel("no safety command sent")
        self.acks.setObjectName("fleet-acks")
        self.acks.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.acks, 1)

    def show_acks(self, command: str, acks: dict[str, AckRecord]) -> None:
        parts = []
        for drone, ack in sorted(acks.items()):
            ok = ack.result == "ok"
            colour = "#2e7d32" if ok else "#c62828"
            mark = "✔" if ok else "✘"
            parts.append(
                f"<span style='color:{colour}'>{drone} {mark} {ack.latency_s * 1000:.0f} ms"
                + ("" if ok else f" ({ack.result})")
                + "</span>"
            )
        last_ms = max((a.latency_s for a in acks.values()), default=0.0) * 1000
        self.acks.setText(f"<b>{command}</b>: " + " · ".join(parts) + f" — last ack {last_ms:.0f} ms")
