"""The ground-station GUI under QT_QPA_PLATFORM=offscreen, driven through its real widgets against
real processes: `dronecats sim --vehicles 2` and two `dronecats onboard --pilot baseline` processes.

Send an instruction, see a tile update (frame with the go ring, steps), see a declaration appear with
its thumbnail and sim distance, judge it, press Esc (fleet e-stop) and see every drone acknowledge.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from common.pose import Pose
from ground_station.fleet.client import FleetClient
from ground_station.fleet.launch import LaunchTarget, SimFleet

pytestmark = pytest.mark.slow

SETTINGS = ["min_decision_period_s=0.5", "t_max_s=400", "stop_on_declaration=false"]


@pytest.fixture(scope="module")
def live_fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("gui-fleet")
    target = LaunchTarget("target", "car@red", Pose(9.0, 1.0, 0.0, 90.0))
    with SimFleet(2, "baseline", targets=[target], log_dir=out, onboard_settings=SETTINGS) as sim:
        fleet = FleetClient(sim.addresses, sim.security).start()
        try:
            yield sim, fleet
        finally:
            fleet.close()


def test_instruction_tiles_declaration_judgement_and_estop(qtbot, live_fleet, tmp_path) -> None:
    from PyQt6.QtCore import Qt
    from PyQt6.QtWidgets import QLabel, QPushButton

    from ground_station.app.main import MainWindow

    sim, fleet = live_fleet
    window = MainWindow(fleet, marks=[(9.0, 1.0)])
    qtbot.addWidget(window)
    window.show()
    tile = window.tiles["Drone1"]
    # the drones report in: the tiles show them flying (take-off done) and not stale
    qtbot.waitUntil(lambda: all("flying" in t.header.text() for t in window.tiles.values()), timeout=90_000)
    assert tile.view.stale_text == ""

    # commander + sub-agents from the structure chooser: the rule commander's orders, on the tiles
    window.instruction.structure.setCurrentText("commander")
    qtbot.keyClicks(window.instruction.text, "go to the red car")
    qtbot.mouseClick(window.instruction.send, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.orders.list.count() >= 3, timeout=120_000)
    assert "Drone1 ← “go to the red car" in window.orders.list.item(1).text()
    qtbot.waitUntil(
        lambda: all("order: “go to the red car" in t.info.text() for t in window.tiles.values()),
        timeout=60_000,
    )

    # back to one pilot per drone, for the whole fleet
    window.instruction.structure.setCurrentText("per-drone")
    qtbot.mouseClick(window.instruction.send, Qt.MouseButton.LeftButton)
    # the tile updates: a live frame, the model's go ringed on it, steps counted
    # (waited for together: the go ringed may be an earlier step's, and the tile's last two lines may
    # be a rotate and a finished when the assertion looks)
    qtbot.waitUntil(
        lambda: tile.view.image is not None and tile.view.go_step is not None and "GO (" in tile.info.text(),
        timeout=60_000,
    )
    qtbot.waitUntil(lambda: "instruction: ok" in tile.ack_label.text(), timeout=60_000)

    # a declaration appears in the log, with its frame and the simulator's distance
    table = window.declarations.table
    qtbot.waitUntil(lambda: table.rowCount() >= 1, timeout=150_000)
    declaration = fleet.state.declarations[0]
    assert table.item(0, 1).text() == declaration.drone
    assert table.item(0, 3).text().endswith(" m")
    qtbot.waitUntil(
        lambda: table.cellWidget(0, 2).pixmap() is not None and not table.cellWidget(0, 2).pixmap().isNull(),
        timeout=60_000,
    )

    # judged by the operator: Reject goes to the drone, which logs it
    reject = window.findChild(QPushButton, f"reject-{declaration.declaration_id}")
    assert reject is not None
    qtbot.mouseClick(reject, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: window.findChild(QLabel, f"judged-{declaration.declaration_id}") is not None, timeout=60_000
    )
    assert window.findChild(QLabel, f"judged-{declaration.declaration_id}").text().startswith("REJECTED\nby ")
    lines = (sim.log_dir / declaration.drone / "declarations.jsonl").read_text().splitlines()
    assert any(json.loads(line).get("judged") == "reject" for line in lines)

    exported = window.export_session(str(tmp_path / "session.jsonl"))
    kinds = {json.loads(line)["kind"] for line in exported.read_text().splitlines()}
    assert {"structure", "order", "instruction", "declaration", "judgement"} <= kinds

    window.grab().save(str(tmp_path / "gs.png"))
    assert (tmp_path / "gs.png").stat().st_size > 10_000

    # a per-drone safety button: only that drone is told, and its tile shows its ack
    qtbot.mouseClick(window.tiles["Drone2"].buttons["hold"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "hold: ok" in window.tiles["Drone2"].ack_label.text(), timeout=60_000)
    assert "hold" not in window.tiles["Drone1"].ack_label.text()

    # Esc: fleet-wide e-stop; every drone acknowledges, on the bar and on its tile
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: "last ack" in window.safety.acks.text(), timeout=60_000)
    text = window.safety.acks.text()
    assert "Drone1 ✔" in text and "Drone2 ✔" in text, text
    assert all("estop: ok" in t.ack_label.text() for t in window.tiles.values())
    qtbot.waitUntil(lambda: all("estop" in t.header.text() for t in window.tiles.values()), timeout=60_000)
    assert window.metrics.command_last_ack_s["estop"]
    # e-stopped, the onboard processes end: their runs are over ("done"), not "link lost"
    qtbot.waitUntil(lambda: all(t.view.stale_text == "DONE" for t in window.tiles.values()), timeout=80_000)
    assert all(window.life[d].name == "done" for d in window.tiles)
