"""Widget shapes the ground station's panels share: a boxed table and a row of safety buttons."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PyQt6.QtWidgets import QBoxLayout, QPushButton, QTableWidget, QVBoxLayout, QWidget

from common.messages import EStop


def boxed_table(box: QWidget, object_name: str, columns: list[str]) -> QTableWidget:
    """A table filling `box` (4 px margins), headed by `columns`, without row numbers."""
    layout = QVBoxLayout(box)
    layout.setContentsMargins(4, 4, 4, 4)
    table = QTableWidget(0, len(columns))
    table.setObjectName(object_name)
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().setVisible(False)  # type: ignore[union-attr]
    layout.addWidget(table)
    return table


def safety_buttons(
    layout: QBoxLayout,
    labels: Iterable[tuple[str, str]],
    object_name: Callable[[str], str],
    estop_style: str,
    on_click: Callable[[str], None],
    min_height_px: int | None = None,
) -> dict[str, QPushButton]:
    """One button per (command kind, text) added to `layout`; the E-STOP stands out."""
    buttons: dict[str, QPushButton] = {}
    for kind, text in labels:
        button = QPushButton(text)
        button.setObjectName(object_name(kind))
        if min_height_px is not None:
            button.setMinimumHeight(min_height_px)
        if kind == EStop.TYPE:
            button.setStyleSheet(estop_style)
        button.clicked.connect(lambda _=False, k=kind: on_click(k))
        layout.addWidget(button)
        buttons[kind] = button
    return buttons
