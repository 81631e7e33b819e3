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
    QSizePolicy,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from common.messages import EStop, Hold, Land, ReturnHome
from ground_station.app.widgets import boxed_table, safety_buttons
from ground_station.fleet.declarations import DeclarationRow, DeclarationRows
from ground_station.fleet.state import AckRecord, DeclarationRecord, OrderRecord
from ground_station.fleet.structures import STRUCTURES

FLEET = "Fleet (all drones)"


class InstructionPanel(QGroupBox):
    """Instruction text, to one drone or the fleet, under a chosen structure
    (docs/howto/fleet.md#4-choose-a-structure)."""

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
        self.structure.addItems(list(STRUCTURES))
        self.structure.setToolTip(
            "per-drone: each drone's own pilot · one-context: one model call for all frames (drones in"
            " remote mode) · commander: orders to sub-agents, 6-step expiry"
        )
        self.model = QLineEdit()
        self.model.setObjectName("model-url")
        self.model.setPlaceholderText("model URL (one-context) / commander: rule or URL")
        self.model.returnPressed.connect(self._send)
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
    """Declarations, one row per drone and place (DeclarationRows): time, drone, latest frame, sim
    distance and visibility, how many times declared, Accept / Reject, then the verdict and who gave
    it when. Rows are appended, never moved, and the table does not scroll while the pointer is over
    it; rows of drones that are gone are disabled. The title counts the rows waiting for a verdict."""

    COLUMNS: ClassVar[list[str]] = ["time", "drone", "frame", "dist.", "vis.", "×", "judgement"]
    JUDGEMENT_WIDTH_PX = 150

    def __init__(self, on_judge: Callable[[str, bool], None]) -> None:
        super().__init__("Declarations")
        self.on_judge = on_judge
        self.model = DeclarationRows()
        self.table = boxed_table(self, "declarations", self.COLUMNS)
        self.table.setSortingEnabled(False)
        header = self.table.horizontalHeader()
        assert header is not None
        for column in range(len(self.COLUMNS) - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        # the judgement column first in line for space: its buttons are never pushed off-screen
        header.setSectionResizeMode(len(self.COLUMNS) - 1, QHeaderView.ResizeMode.Fixed)
        header.resizeSection(len(self.COLUMNS) - 1, self.JUDGEMENT_WIDTH_PX)
        header.setStretchLastSection(False)
        self.rows: dict[str, int] = {}  # declaration id -> row (every id of a grouped row)
        self.gone: set[str] = set()

    # ---- rows ------------------------------------------------------------------------------------
    def add(self, d: DeclarationRecord) -> tuple[DeclarationRow, bool]:
        """Show a declaration: a new row, or the drone's pending row at that place updated."""
        group, new = self.model.add(d)
        self.rows[d.declaration_id] = group.row
        if new:
            self.table.insertRow(group.row)
            self.table.setRowHeight(group.row, 52)
            if group.closed is None:
                self._judgement_buttons(group)
            else:
                self._closed_label(group)
        self._fill(group)
        if new and not self.table.underMouse():
            self.table.scrollToBottom()
        self._title()
        return group, new

    def _fill(self, group: DeclarationRow) -> None:
        d = group.latest
        row = group.row
        when = time.strftime("%H:%M:%S", time.localtime(d.received_wall_s))
        self.table.setItem(row, 0, QTableWidgetItem(f"{when}\nt={d.t_s:.1f} s"))
        self.table.setItem(row, 1, QTableWidgetItem(d.drone))
        self.set_thumbnail(d)
        distance = "n/a (real)" if d.distance_m is None else f"{d.distance_m:.1f} m"
        self.table.setItem(row, 3, QTableWidgetItem(distance))
        visible = "?" if d.visible is None else ("yes" if d.visible else "no")
        self.table.setItem(row, 4, QTableWidgetItem(visible))
        count = QTableWidgetItem(f"{group.count}")
        count.setToolTip(f"declared {group.count} times here since {_clock(group.first.received_wall_s)}")
        self.table.setItem(row, 5, count)

    def _judgement_buttons(self, group: DeclarationRow) -> None:
        cell = QWidget()
        buttons = QHBoxLayout(cell)
        buttons.setContentsMargins(2, 0, 2, 0)
        first_id = group.first.declaration_id
        for text, accept in (("Accept", True), ("Reject", False)):
            button = QPushButton(text)
            button.setMinimumWidth(58)
            button.setObjectName(f"{text.lower()}-{first_id}")
            # the row, not a declaration id, is what was aimed at: it judges the row's latest
            button.clicked.connect(lambda _=False, r=group.row, a=accept: self._judge_row(r, a))
            buttons.addWidget(button)
        cell.setEnabled(group.drone not in self.gone)
        self.table.setCellWidget(group.row, 6, cell)

    def _closed_label(self, group: DeclarationRow) -> None:
        label = QLabel(f"no verdict:\n{group.closed}")
        label.setObjectName(f"closed-{group.first.declaration_id}")
        label.setStyleSheet("color:#757575")
        self.table.setCellWidget(group.row, 6, label)

    def end_run(self, drone: str, wall_s: float) -> None:
        """The operator re-launched `drone`'s process at wall_s: the rows of the process before can
        no longer be judged (the new one never made those declarations), so they lose their buttons."""
        for group in self.model.end_run(drone, wall_s, "its process was re-launched"):
            self._closed_label(group)
        self._title()

    def _judge_row(self, row: int, accept: bool) -> None:
        group = self.model.rows[row]
        if not group.pending or group.judging is not None or group.drone in self.gone:
            return
        group.judging = "accept" if accept else "reject"
        label = QLabel(f"{group.judging}: sent …")
        label.setObjectName(f"judging-{group.first.declaration_id}")
        self.table.setCellWidget(row, 6, label)
        self.on_judge(group.latest.declaration_id, accept)

    def button(self, row: int, accept: bool) -> QPushButton | None:
        cell = self.table.cellWidget(row, 6)
        if cell is None:
            return None
        return cell.findChild(
            QPushButton, f"{'accept' if accept else 'reject'}-{self.model.rows[row].first.declaration_id}"
        )

    def set_thumbnail(self, d: DeclarationRecord) -> None:
        group = self.model.row_of(d.declaration_id)
        if group is None or group.latest is not d:
            return  # only the row's latest frame is shown
        label = QLabel("frame pending" if d.thumbnail_jpeg is None else "")
        if d.thumbnail_jpeg is not None:
            image = QImage.fromData(d.thumbnail_jpeg, "JPG")
            label.setPixmap(
                QPixmap.fromImage(image).scaledToHeight(48, Qt.TransformationMode.SmoothTransformation)
            )
        self.table.setCellWidget(group.row, 2, label)

    def judged(self, declaration_id: str, verdict: str, result: str, operator: str = "operator") -> None:
        group = self.model.row_of(declaration_id)
        if group is None:
            return
        if group.closed is not None:
            return  # an ack from the process before, too late: the row stays closed
        group.judging = None
        if result == "ok":
            group.verdict = verdict
            group.judged_by = operator
            group.judged_wall_s = time.time()
            label = QLabel(group.judged_text().replace(" by", "\nby", 1))
            label.setObjectName(f"judged-{group.first.declaration_id}")
            label.setStyleSheet(
                "color:#2e7d32;font-weight:bold" if verdict == "accept" else "color:#c62828;font-weight:bold"
            )
            label.setToolTip(f"{group.judged_text()} · covers {group.count} declaration(s)")
            self.table.setCellWidget(group.row, 6, label)
        else:  # not acked: the row stays pending, its buttons back
            self._judgement_buttons(group)
            cell = self.table.cellWidget(group.row, 6)
            if cell is not None:
                cell.setToolTip(f"{verdict} not confirmed by {group.drone}: {result}")
        self._title()

    def set_gone(self, drone: str, gone: bool) -> None:
        """A drone that is gone cannot act on a verdict: its pending rows' buttons are disabled."""
        if gone == (drone in self.gone):
            return
        (self.gone.add if gone else self.gone.discard)(drone)
        for group in self.model.pending_for(drone):
            cell = self.table.cellWidget(group.row, 6)
            if cell is not None and group.judging is None:
                cell.setEnabled(not gone)
                cell.setToolTip(f"{drone} is gone: no verdict can reach it" if gone else "")

    def _title(self) -> None:
        pending = len(self.model.pending())
        self.setTitle(f"Declarations — {pending} pending" if pending else "Declarations")


def _clock(wall_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall_s))


class SafetyBar(QFrame):
    """Fleet-wide safety commands, always visible, with shortcuts; shows every drone's ack."""

    ACTIONS = (
        (EStop.TYPE, "E-STOP ALL  (Esc)", "Esc"),
        (Hold.TYPE, "Hold all  (Ctrl+H)", "Ctrl+H"),
        (Land.TYPE, "Land all  (Ctrl+L)", "Ctrl+L"),
        (ReturnHome.TYPE, "Return home  (Ctrl+R)", "Ctrl+R"),
    )

    def __init__(self, on_safety: Callable[[str, str | None], None]) -> None:
        super().__init__()
        self.setObjectName("safety-bar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        self.buttons = safety_buttons(
            layout,
            ((kind, text) for kind, text, _ in self.ACTIONS),
            lambda kind: f"fleet-{kind}",
            "background:#b71c1c;color:white;font-weight:bold;font-size:14px",
            lambda kind: on_safety(kind, None),
            min_height_px=34,
        )
        self.acks = QLabel("no safety command sent")
        self.acks.setObjectName("fleet-acks")
        self.acks.setTextFormat(Qt.TextFormat.RichText)
        self.acks.setWordWrap(True)
        self.acks.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.acks, 1)

    def show_waiting(self, command: str, drones: list[str], acks: dict[str, AckRecord]) -> None:
        """While a fleet command is out: each ack as it arrives, "…" for those not back yet."""
        parts = [_ack_part(d, acks[d]) if d in acks else f"{d} …" for d in sorted(drones)]
        self.acks.setText(f"<b>{command}</b>: " + " · ".join(parts))

    def show_acks(self, command: str, acks: dict[str, AckRecord]) -> None:
        parts = [_ack_part(drone, ack) for drone, ack in sorted(acks.items())]
        last_ms = max((a.latency_s for a in acks.values()), default=0.0) * 1000
        self.acks.setText(f"<b>{command}</b>: " + " · ".join(parts) + f" — last ack {last_ms:.0f} ms")
        self.acks.setToolTip(
            "\n".join(
                f"{d}: {a.result} in {a.latency_s * 1000:.0f} ms {a.reason}" for d, a in sorted(acks.items())
            )
        )


def _ack_part(drone: str, ack: AckRecord) -> str:
    ok = ack.result == "ok"
    colour = "#2e7d32" if ok else "#c62828"
    mark = "✔" if ok else "✘"
    return (
        f"<span style='color:{colour}'>{drone} {mark} {ack.latency_s * 1000:.0f} ms"
        + ("" if ok else f" ({ack.result})")
        + "</span>"
    )
