"""Alerts: every event an operator must not miss, in one list (time, drone, severity, text), with a
banner and a sound for warnings and above until the operator acknowledges them.

`AlertModel` is the one place alerts come from (the window feeds it safety events, link changes,
collisions, declarations and errors); `raised` and `sound` are its signals, so tests watch those
instead of listening for audio. Repeats of one (drone, key) within `repeat_s` are counted, not
listed again: a flapping link is one line, not a hundred.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from PyQt6.QtCore import QObject, Qt, pyqtSignal
from PyQt6.QtGui import QColor
from PyQt6.QtWidgets import (
    QApplication,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidgetItem,
)

from ground_station.app.widgets import boxed_table

SEVERITIES = ("info", "warning", "error", "critical")
COLOURS = {"info": "#455a64", "warning": "#e65100", "error": "#c62828", "critical": "#880e4f"}
BANNER_SEVERITIES = frozenset({"warning", "error", "critical"})


@dataclass
class Alert:
    wall_s: float
    drone: str  # "" for the fleet or the ground station itself
    severity: str
    text: str
    key: str  # what it is about (e.g. "link", "safety:collision"): repeats of a key are merged
    count: int = 1
    acknowledged: bool = False

    @property
    def loud(self) -> bool:
        return self.severity in BANNER_SEVERITIES

    def line(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.wall_s))
        who = f"{self.drone}: " if self.drone else ""
        more = f" (×{self.count})" if self.count > 1 else ""
        return f"{when} {self.severity.upper()} {who}{self.text}{more}"


class AlertModel(QObject):
    raised = pyqtSignal(object)  # Alert: a new one, or a repeat (its count went up)
    sound = pyqtSignal(object)  # Alert: a new warning or worse, to be heard
    changed = pyqtSignal()  # the list or what is acknowledged changed

    def __init__(self, repeat_s: float = 30.0, beep: bool = True) -> None:
        super().__init__()
        self.alerts: list[Alert] = []
        self.repeat_s = repeat_s
        self.beep = beep

    def raise_alert(self, severity: str, drone: str, text: str, key: str = "") -> Alert:
        if severity not in SEVERITIES:
            raise ValueError(f"severity {severity!r} is not one of {SEVERITIES}")
        now = time.time()
        key = key or text
        for alert in reversed(self.alerts[-50:]):
            if (
                alert.drone == drone
                and alert.key == key
                and alert.text == text
                and not alert.acknowledged
                and now - alert.wall_s <= self.repeat_s
            ):
                alert.count += 1
                alert.wall_s = now
                self.raised.emit(alert)
                self.changed.emit()
                return alert
        alert = Alert(now, drone, severity, text, key)
        self.alerts.append(alert)
        self.raised.emit(alert)
        if alert.loud:
            self.sound.emit(alert)
            if self.beep:
                QApplication.beep()
        self.changed.emit()
        return alert

    def unacknowledged(self) -> list[Alert]:
        return [a for a in self.alerts if a.loud and not a.acknowledged]

    def acknowledge_all(self) -> int:
        todo = self.unacknowledged()
        for alert in todo:
            alert.acknowledged = True
        if todo:
            self.changed.emit()
        return len(todo)


class AlertBanner(QFrame):
    """The newest unacknowledged warning (or worse), across the window, until acknowledged."""

    def __init__(self, model: AlertModel) -> None:
        super().__init__()
        self.model = model
        self.setObjectName("alert-banner")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        self.text = QLabel("")
        self.text.setObjectName("alert-text")
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.text.setMinimumWidth(100)
        layout.addWidget(self.text, 1)
        self.ack = QPushButton("Acknowledge  (Ctrl+K)")
        self.ack.setObjectName("alert-ack")
        self.ack.clicked.connect(model.acknowledge_all)
        layout.addWidget(self.ack)
        self.active = False  # an unacknowledged warning (or worse) is shown
        model.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """Always there (showing or hiding it would move everything under it): grey when quiet."""
        todo = self.model.unacknowledged()
        self.ack.setEnabled(bool(todo))
        if not todo:
            self.text.setText("no alert to acknowledge")
            self.text.setToolTip("")
            self.setStyleSheet("#alert-banner { background:#eceff1; } QLabel { color:#607d8b; }")
            self.active = False
            return
        worst = max(todo, key=lambda a: (SEVERITIES.index(a.severity), a.wall_s))
        newest = todo[-1]
        more = f"   (+{len(todo) - 1} more)" if len(todo) > 1 else ""
        full = newest.line() + more
        metrics = self.text.fontMetrics()
        self.text.setText(metrics.elidedText(full, Qt.TextElideMode.ElideRight, max(200, self.text.width())))
        self.text.setToolTip(full)
        self.setStyleSheet(
            f"#alert-banner {{ background:{COLOURS[worst.severity]}; }}"
            " QLabel { color:white; font-weight:bold; }"
        )
        self.active = True


class AlertPanel(QGroupBox):
    """Every alert, newest at the bottom; never scrolled while the pointer is over it."""

    COLUMNS: ClassVar[list[str]] = ["time", "drone", "severity", "message"]

    def __init__(self, model: AlertModel) -> None:
        super().__init__("Alerts")
        self.model = model
        self.table = boxed_table(self, "alerts", self.COLUMNS)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = self.table.horizontalHeader()
        assert header is not None
        for column in range(3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self._rows: dict[int, int] = {}  # id(alert) -> row
        model.raised.connect(self.show_alert)
        model.changed.connect(self._title)

    def show_alert(self, alert: Alert) -> None:
        row = self._rows.get(id(alert))
        if row is None:
            row = self.table.rowCount()
            self.table.insertRow(row)
            self._rows[id(alert)] = row
        when = time.strftime("%H:%M:%S", time.localtime(alert.wall_s))
        text = alert.text + (f" (×{alert.count})" if alert.count > 1 else "")
        for column, value in enumerate((when, alert.drone or "—", alert.severity, text)):
            item = QTableWidgetItem(value)
            item.setToolTip(text)
            if column == 2:
                item.setForeground(Qt.GlobalColor.white)
                item.setBackground(_qcolor(COLOURS[alert.severity]))
            self.table.setItem(row, column, item)
        if not self.table.underMouse():
            self.table.scrollToBottom()

    def _title(self) -> None:
        todo = len(self.model.unacknowledged())
        self.setTitle(f"Alerts — {todo} to acknowledge" if todo else "Alerts")


def _qcolor(name: str) -> QColor:
    return QColor(name)
