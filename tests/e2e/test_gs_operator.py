"""The ground station as an operator uses it, under QT_QPA_PLATFORM=offscreen, against real processes:
`dronecats sim --vehicles 4`, four `dronecats onboard` processes whose pilot is a real
OpenAI-compatible server (`dronecats serve-pilot` with a script that says `finished` at every
step), so each drone re-declares every 0.5 s while it hovers: the flood an operator faces.

- declarations: one row per drone and place with a count, judgements land on the row aimed at,
  the verdict and who gave it on the row, pending count in the title, one alert (sound) per new row;
- the commander is paused by a fleet-wide hold and sends nothing to drones that are not flying;
- one drone made unreachable for real (SIGSTOP): the other three show their true ack times to an
  e-stop, within 50 ms of the time each drone logged the e-stop itself;
- end states: e-stopped drones whose processes end are "done" with their end reason (not "link
  lost"); their declaration rows are disabled; one is re-launched from its tile and flies again.
"""

from __future__ import annotations

import json
import os
import signal
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import cv2
import pytest

from ground_station.fleet.client import FleetClient
from ground_station.fleet.launch import SimFleet
from tests.support.pilots import serve_pilot_process

pytestmark = pytest.mark.slow

FINISHED = {"action": "finished", "point": None, "depth_m": None, "angle_deg": None}
# No truth and a declaration every step: a flood for the station to show (on_declaration=continue; the
# default, a hold for the operator's verdict, has its own rows in tests/faults/test_fault_declaration.py).
SETTINGS = [
    "min_decision_period_s=0.5",
    "t_max_s=400",
    "stop_on_declaration=false",
    "on_declaration=continue",
]
FLOOD_S = 12.0  # the 60 s scaled down: the same rule applies to every declaration after the first


def events(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def declaring_fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("operator-fleet")
    script = out / "finished.json"
    script.write_text(json.dumps([FINISHED] * 4000))
    with serve_pilot_process("--pilot", f"scripted:{script}") as hostport:
        pilot = f"openai://{hostport}/v1?profile=qwen3.5-2b&retries=0"
        with SimFleet(4, pilot, log_dir=out, onboard_settings=SETTINGS, truth=False) as sim:
            fleet = FleetClient(sim.addresses, sim.security).start()
            try:
                assert fleet.wait_for_link(120.0), [sim.drone_log(f"Drone{i}")[-600:] for i in range(1, 5)]
                yield sim, fleet
            finally:
                fleet.close()


@pytest.fixture(scope="module")
def window(declaring_fleet):
    from PyQt6.QtWidgets import QApplication

    from ground_station.app.main import MainWindow

    sim, fleet = declaring_fleet
    QApplication.instance() or QApplication([])
    win = MainWindow(fleet, launcher=sim, beep=False)
    win.show()
    yield win
    win.shutdown()
    win.close()


def test_a_declaration_flood_is_one_row_per_drone_and_judgements_hit_the_row_aimed_at(
    qtbot, declaring_fleet, window
) -> None:
    from PyQt6.QtCore import Qt
    from PyQt6.QtWidgets import QLabel

    sim, fleet = declaring_fleet
    sounds = []
    window.alerts.sound.connect(sounds.append)
    log = window.declarations
    table = log.table
    qtbot.keyClicks(window.instruction.text, "go to the red car")
    qtbot.keyClick(window.instruction.text, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: table.rowCount() == 4, timeout=120_000)
    # the pointer rests on the table: rows keep their places while the flood goes on
    table.setAttribute(Qt.WidgetAttribute.WA_UnderMouse, True)
    rows_before = [(r.row, r.drone) for r in log.model.rows]
    qtbot.mouseClick(window.tiles["Drone1"].record, Qt.MouseButton.LeftButton)  # ● Rec meanwhile
    flood_end = time.monotonic() + FLOOD_S
    seen_max_rows = 0
    while time.monotonic() < flood_end:
        qtbot.wait(200)
        seen_max_rows = max(seen_max_rows, table.rowCount())
    table.setAttribute(Qt.WidgetAttribute.WA_UnderMouse, False)
    qtbot.mouseClick(window.tiles["Drone1"].record, Qt.MouseButton.LeftButton)
    video = window.tiles["Drone1"].recordings[-1]
    assert video.parent == sim.log_dir / "recordings"
    capture = cv2.VideoCapture(str(video))
    frames = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    ok, first = capture.read()
    capture.release()
    assert ok and frames >= FLOOD_S and first.shape[1] >= 320, (
        frames,
        None if first is None else first.shape,
    )
    with fleet.state.lock:
        declared = {d: sum(1 for x in fleet.state.declarations if x.drone == d) for d in fleet.drone_ids}
    assert all(n >= FLOOD_S / 0.5 * 0.5 for n in declared.values()), declared  # they did flood
    assert seen_max_rows == 4 and [(r.row, r.drone) for r in log.model.rows] == rows_before
    assert sorted(r.drone for r in log.model.rows) == sorted(fleet.drone_ids)
    qtbot.waitUntil(lambda: all(table.item(r.row, 5).text() == str(r.count) for r in log.model.rows))
    for row in log.model.rows:  # every declaration of the drone is counted on its one row
        assert declared[row.drone] - 3 <= row.count <= declared[row.drone], (row.count, declared)
    assert log.title() == "Declarations — 4 pending"
    # one sound and one alert per new pending row, not one per declaration
    assert len([a for a in sounds if a.key == "declaration"]) == 4
    assert window.banner.active and "declared arrival" in window.banner.text.toolTip()

    # Reject aimed at Drone3's row, while Drone3 (and the others) keep declaring
    aimed = next(r for r in log.model.rows if r.drone == "Drone3")
    reject = log.button(aimed.row, False)
    assert reject is not None and reject.isEnabled()
    qtbot.mouseClick(reject, Qt.MouseButton.LeftButton)
    judged_t = aimed.latest.t_s
    qtbot.waitUntil(
        lambda: window.findChild(QLabel, f"judged-{aimed.first.declaration_id}") is not None, timeout=60_000
    )
    verdict = window.findChild(QLabel, f"judged-{aimed.first.declaration_id}").text()
    assert verdict.startswith("REJECTED") and f"by {window.operator}" in verdict, verdict
    assert table.cellWidget(aimed.row, 6).objectName() == f"judged-{aimed.first.declaration_id}"
    # the drone aimed at got it, for a declaration of its own; nobody else got a verdict
    judged = {
        d: [e for e in events(sim.log_dir / d / "events.jsonl") if e["event"] == "judged"]
        for d in fleet.drone_ids
    }
    assert [(e["accept"], e["declaration_t"]) for e in judged["Drone3"]] == [
        (False, pytest.approx(judged_t, abs=0.002))
    ]
    assert not any(judged[d] for d in ("Drone1", "Drone2", "Drone4")), judged
    # Drone3 declares again: a new row at the bottom; the judged row and the others stay put
    qtbot.waitUntil(lambda: table.rowCount() == 5, timeout=60_000)
    assert log.model.rows[4].drone == "Drone3" and log.model.rows[4].pending
    assert [(r.row, r.drone) for r in log.model.rows[:4]] == rows_before
    assert log.title() == "Declarations — 4 pending"

    # acknowledging clears the banner
    qtbot.mouseClick(window.banner.ack, Qt.MouseButton.LeftButton)
    assert not window.banner.active and not window.alerts.unacknowledged()


def test_hold_pauses_the_commander_and_estop_acks_are_timed_on_arrival(
    qtbot, declaring_fleet, window
) -> None:
    from PyQt6.QtCore import Qt

    sim, fleet = declaring_fleet
    # the commander (rule) orders every drone ...
    window.instruction.structure.setCurrentText("commander")
    qtbot.mouseClick(window.instruction.send, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: sum(o.state == "active" for o in fleet.state.orders) >= 4, timeout=120_000)
    # ... until the operator holds the fleet: nothing more is sent, re-plans included
    qtbot.keyClick(window, Qt.Key.Key_H, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: "last ack" in window.safety.acks.text(), timeout=60_000)
    assert fleet.orders_paused == "hold (all drones)"
    qtbot.waitUntil(lambda: all(window.life[d].name == "hold" for d in fleet.drone_ids), timeout=60_000)
    sent_before = {
        d: sum(e["event"] == "order" for e in events(sim.log_dir / d / "events.jsonl"))
        for d in fleet.drone_ids
    }
    window.structure.replan("operator test")
    skipped = fleet.order("Drone2", "go to the red car")
    assert skipped.state == "skipped"
    qtbot.wait(1500)
    sent_after = {
        d: sum(e["event"] == "order" for e in events(sim.log_dir / d / "events.jsonl"))
        for d in fleet.drone_ids
    }
    assert sent_after == sent_before
    assert any("commander paused" in a.text for a in window.alerts.alerts)

    # Drone1 stops answering (its process frozen): the link says so, an alert says so
    drone1 = sim.drones["Drone1"].proc
    os.kill(drone1.pid, signal.SIGSTOP)
    try:
        qtbot.waitUntil(lambda: window.life["Drone1"].name == "lost", timeout=60_000)
        assert any(a.drone == "Drone1" and "link lost" in a.text for a in window.alerts.alerts)
        # E-STOP ALL: the three that answer show their own ack times at once, Drone1 still pending
        sent_wall = time.time()
        qtbot.keyClick(window, Qt.Key.Key_Escape)
        others = ("Drone2", "Drone3", "Drone4")
        qtbot.waitUntil(
            lambda: all("estop: ok" in window.tiles[d].full_ack_text() for d in others), timeout=60_000
        )
        assert "Drone1 …" in window.safety.acks.text()
        assert "estop" not in fleet.state.drones["Drone1"].acks
        for drone in others:
            ack = fleet.state.drones[drone].acks["estop"]
            logged = [e for e in events(sim.log_dir / drone / "events.jsonl") if e["event"] == "estop"]
            assert logged, drone
            # the ack's arrival against the drone's own e-stop time: the same clock, this machine
            assert abs(sent_wall + ack.latency_s - logged[-1]["wall_time"]) <= 0.05, (drone, ack)
    finally:
        os.kill(drone1.pid, signal.SIGCONT)
    qtbot.waitUntil(lambda: "last ack" in window.safety.acks.text(), timeout=60_000)
    session = [e for e in fleet.state.session_log if e["kind"] == "ack" and e.get("command") == "estop"]
    assert {e["drone"] for e in session if e["latency_s"] < 0.5} >= {"Drone2", "Drone3", "Drone4"}


def test_end_states_and_relaunch_from_the_tile(qtbot, declaring_fleet, window) -> None:
    from PyQt6.QtCore import Qt

    sim, fleet = declaring_fleet
    # e-stopped, every onboard process ends its run: "done" with the reason, not "link lost"
    qtbot.waitUntil(lambda: all(window.life[d].name == "done" for d in fleet.drone_ids), timeout=120_000)
    tile = window.tiles["Drone2"]
    assert "estop" in window.life["Drone2"].detail and "done" in tile.header.text()
    assert tile.view.stale_text == "DONE" and tile.relaunch.isVisible()
    assert not tile.buttons["hold"].isEnabled()
    log = window.declarations
    pending = [r for r in log.model.rows if r.pending]
    assert pending and all(not log.table.cellWidget(r.row, 6).isEnabled() for r in pending)

    # e-stopped, the vehicle fell: the simulator refuses a take-off until it is at rest, and the
    # tile says so (its last log lines); the operator tries again a moment later
    for attempt in range(1, 6):
        qtbot.mouseClick(tile.relaunch, Qt.MouseButton.LeftButton)
        assert sim.drones["Drone2"].launches == attempt + 1
        qtbot.waitUntil(lambda: window.life["Drone2"].name in ("flying", "hold", "failed"), timeout=90_000)
        if window.life["Drone2"].name != "failed":
            break
        # why, on the tile: its last log lines (here the simulator refusing a take-off while moving)
        assert "onboard" in tile.problem.text() and tile.problem.isVisible(), tile.problem.text()
        qtbot.wait(2000)
    assert not tile.relaunch.isVisible() and not tile.problem.isVisible()
    assert any(a.drone == "Drone2" and a.text == "re-launched" for a in window.alerts.alerts)
    # the e-stopped run's rows of Drone2 stay without buttons: the new process never made them
    old_rows = [r for r in pending if r.drone == "Drone2"]
    assert old_rows and all(r.closed and log.button(r.row, True) is None for r in old_rows)
    others = [r for r in pending if r.drone != "Drone2"]  # their processes still ended: disabled
    assert all(r.pending and not log.table.cellWidget(r.row, 6).isEnabled() for r in others)
    # back, it waits for an instruction; given one, it declares again; Accept ends its run: it
    # lands and its process exits -> "done"
    declared = len(fleet.state.declarations)
    window.instruction.structure.setCurrentText("per-drone")
    window.instruction.target.setCurrentText("Drone2")
    qtbot.mouseClick(window.instruction.send, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: any(d.drone == "Drone2" for d in fleet.state.declarations[declared:]), timeout=120_000
    )
    # The row of this run's declaration, once the log shows it (the log lags the fleet's state on a
    # loaded machine; a late row of the e-stopped run would be shown closed).
    new_id = next(d.declaration_id for d in fleet.state.declarations[declared:] if d.drone == "Drone2")
    qtbot.waitUntil(lambda: log.model.row_of(new_id) is not None, timeout=60_000)
    row = log.model.row_of(new_id)
    assert row is not None
    qtbot.waitUntil(lambda: log.table.cellWidget(row.row, 6).isEnabled(), timeout=60_000)
    qtbot.mouseClick(log.button(row.row, True), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: row.verdict == "accept", timeout=120_000)  # the ack, on a loaded machine
    qtbot.waitUntil(lambda: window.life["Drone2"].name == "done", timeout=120_000)
    assert "link lost" not in tile.header.text() and tile.view.stale_text == "DONE"
    window.grab().save(str(sim.log_dir / "operator.png"))
