"""GoTo from the map: the "GoTo: [drone] [Pick on map…]" row, the confirmation, the command and its
outcome on the map, the drone's tile and the alerts."""

from __future__ import annotations

from typing import Any

from PyQt6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from ground_station.app.bridge import FleetBridge
from ground_station.app.views import Views
from ground_station.fleet.state import AckRecord


class GotoControl(QWidget):
    """Choose a drone, pick a point on the map, confirm: the drone is sent there at its altitude.

    The map calls `on_picked` with the point (MapView.on_pick); the result of the command comes back
    through FleetBridge's `done` signal (label "goto:DRONE")."""

    def __init__(self, bridge: FleetBridge, views: Views) -> None:
        """The fleet is the bridge's (`bridge.fleet`)."""
        super().__init__()
        self.bridge = bridge
        self.views = views
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("GoTo:"))
        self.drone = QComboBox()
        self.drone.setObjectName("goto-drone")
        self.drone.addItems(bridge.fleet.drone_ids)
        row.addWidget(self.drone)
        self.pick = QPushButton("Pick on map…")
        self.pick.setObjectName("goto-pick")
        self.pick.setToolTip("then click the point on the map; a dialog asks you to confirm")
        self.pick.clicked.connect(self.on_pick)
        row.addWidget(self.pick)
        row.addStretch(1)
        self.confirm: QMessageBox | None = None

    def on_pick(self) -> None:
        view = self.views.map
        view.picking = True
        view.setFocus()
        view.update()

    def on_picked(self, world: tuple[float, float]) -> None:
        """A point picked on the map: ask to confirm it for the chosen drone (at its altitude)."""
        drone = self.drone.currentText()
        snap = self.bridge.fleet.state.snapshot(drone)
        if snap.telemetry is None:
            self.views.alerts.raise_alert("error", drone, "goto: no telemetry from it yet", key="ack:goto")
            return
        north, east = world
        down = snap.telemetry.pose_ned.z_m
        home_z = snap.home[2] if snap.home is not None else 0.0
        text = (
            f"Send {drone} to N {north:.1f} m, E {east:.1f} m ({self.views.map.geo_text(north, east)}), "
            f"at its altitude {home_z - down:.1f} m?\n\nThe drone checks the point against its "
            "geofence and altitude limits, flies there under its safety rules, then holds."
        )
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Confirm GoTo",
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self.window(),
        )
        box.setObjectName("goto-confirm")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)  # Enter alone sends nothing

        def answered(button: Any) -> None:
            if box.standardButton(button) == QMessageBox.StandardButton.Yes:
                self.send(drone, north, east, down)

        box.buttonClicked.connect(answered)
        self.confirm = box
        box.open()  # window-modal, not blocking: the display and e-stop keep working meanwhile

    def send(self, drone: str, north: float, east: float, down: float) -> None:
        self.views.map.goto_targets[drone] = (north, east)
        self.views.tiles[drone].show_ack("goto: sent …")
        self.views.orders.add(f"goto {drone}: N {north:.1f} E {east:.1f} m")
        self.bridge.submit(f"goto:{drone}", lambda: self.bridge.fleet.goto(drone, north, east, down))

    def on_done(self, label: str, result: Any) -> None:
        if not label.startswith("goto:"):
            return
        drone = label.split(":", 1)[1]
        if isinstance(result, AckRecord) and result.result == "ok":
            self.views.alerts.raise_alert("info", drone, "goto accepted: flying there", key="ack:goto")
            return
        self.views.map.goto_targets.pop(drone, None)  # not going there
        if isinstance(result, Exception):  # (a rejection is already an alert: the "ack" event)
            self.views.alerts.raise_alert("error", drone, f"goto failed: {result}", key="ack:goto")
