"""The models behind the operator's panels, without processes (the flows against real drones are in
e2e/test_gs_operator.py): the declaration rows' grouping rule, the alert model's signals, acknowledgement
and repeat merging, a drone's life-cycle state, the launcher's reading of a drone's end, and the GUI
preflight's naming of missing libraries."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from common.messages import TelemetryMessage
from common.pose import Pose
from ground_station.fleet.declarations import DeclarationRows
from ground_station.fleet.launch import DroneExit, end_reason
from ground_station.fleet.lifecycle import life_state
from ground_station.fleet.state import DeclarationRecord, DroneState


def declaration(drone: str, n: int, x_m: float) -> DeclarationRecord:
    return DeclarationRecord(
        f"{drone}-{n}", drone, float(n), Pose(x_m, 0.0, -2.0, 0.0), n, None, None, None, None, 0.0
    )


def test_declarations_of_one_drone_at_one_place_are_one_row_until_judged() -> None:
    rows = DeclarationRows()
    first, new = rows.add(declaration("Drone1", 1, 10.0))
    assert new and first.row == 0
    assert rows.add(declaration("Drone1", 2, 11.5)) == (first, False)  # within 2 m of its latest
    assert rows.add(declaration("Drone2", 3, 11.5))[1]  # another drone: its own row
    moved, new = rows.add(declaration("Drone1", 4, 14.0))  # 2.5 m further: another place
    assert new and moved.row == 2
    assert first.count == 2 and first.latest.declaration_id == "Drone1-2"
    again, new = rows.add(declaration("Drone1", 5, 14.5))
    assert not new and again is moved
    moved.verdict = "reject"  # judged: the next one, same place, starts a new row
    after, new = rows.add(declaration("Drone1", 6, 14.5))
    assert new and after.row == 3
    assert [r.row for r in rows.rows] == [0, 1, 2, 3] and len(rows.pending()) == 3
    assert rows.add(declaration("Drone1", 6, 14.5)) == (after, False)  # the same message twice


def test_a_relaunch_closes_the_rows_of_the_process_before() -> None:
    rows = DeclarationRows()
    old, _ = rows.add(declaration("Drone1", 1, 10.0))
    other, _ = rows.add(declaration("Drone2", 2, 10.0))
    judged, _ = rows.add(declaration("Drone1", 3, 20.0))
    judged.verdict = "accept"
    sent, _ = rows.add(declaration("Drone1", 4, 30.0))
    sent.judging = "reject"  # sent to the process that is gone: its ack never comes
    relaunch_wall_s = 100.0
    assert rows.end_run("Drone1", relaunch_wall_s, "re-launched") == [old, sent]
    assert old.closed == sent.closed == "re-launched" and sent.judging is None
    assert judged.verdict == "accept" and judged.closed is None  # a verdict given stays
    assert rows.pending() == [other]
    # one of the old process's declarations reaching the log late: closed, not grouped
    late = declaration("Drone1", 5, 30.0)
    late.received_wall_s = relaunch_wall_s - 1.0
    late_row, new = rows.add(late)
    assert new and late_row.closed == "re-launched"
    # the new process's declarations are judged as usual, and not grouped with a late old one
    fresh = declaration("Drone1", 6, 30.0)
    fresh.received_wall_s = relaunch_wall_s + 5.0
    fresh_row, new = rows.add(fresh)
    assert new and fresh_row.pending and rows.pending_for("Drone1") == [fresh_row]
    straggler = declaration("Drone1", 7, 30.0)
    straggler.received_wall_s = relaunch_wall_s - 0.5
    assert rows.add(straggler)[0] is not fresh_row


def test_alerts_sound_for_warnings_merge_repeats_and_clear_on_acknowledge(qtbot) -> None:
    from ground_station.app.alerts import AlertBanner, AlertModel

    model = AlertModel(beep=False)
    banner = AlertBanner(model)
    qtbot.addWidget(banner)
    banner.show()
    raised, sounds = [], []
    model.raised.connect(raised.append)
    model.sound.connect(sounds.append)
    model.raise_alert("info", "Drone1", "link back up", key="link")
    assert not sounds and not banner.active
    with qtbot.waitSignal(model.sound, timeout=1000):
        lost = model.raise_alert("warning", "Drone2", "link lost (silent 2.0 s)", key="link")
    again = model.raise_alert("warning", "Drone2", "link lost (silent 2.0 s)", key="link")
    assert again is lost and lost.count == 2 and len(sounds) == 1 and len(raised) == 3
    model.raise_alert("critical", "Drone3", "safety: collision hold", key="safety")
    assert banner.active and "CRITICAL Drone3" in banner.text.toolTip()
    assert len(model.unacknowledged()) == 2
    assert model.acknowledge_all() == 2
    assert not banner.active and not model.unacknowledged()
    assert model.raise_alert("warning", "Drone2", "link lost (silent 2.0 s)", key="link") is not lost


def telemetry(mode: str, z_m: float, armed: bool = True, safety: str = "ok") -> TelemetryMessage:
    return TelemetryMessage(
        0.0, Pose(1.0, 2.0, z_m, 0.0), (0.0, 0.0, 0.0), None, mode, armed, "up", 20.0, {}, safety
    )


def drone(t: TelemetryMessage | None, received_s: float | None = 100.0, link: str = "up") -> DroneState:
    return DroneState("Drone1", link_state=link, telemetry=t, telemetry_received_s=received_s)


def test_life_states() -> None:
    now = 100.5
    assert life_state(drone(None, None), now, 2.0).name == "connecting"
    assert life_state(drone(telemetry("flying", -3.0)), now, 2.0).name == "flying"
    assert life_state(drone(telemetry("landing", -0.05)), now, 2.0).name == "landed"
    assert life_state(drone(telemetry("hold", -0.05, armed=False)), now, 2.0).name == "disarmed"
    held = life_state(drone(telemetry("hold", -3.0, safety="collision hold")), now, 2.0)
    assert (held.name, held.detail) == ("hold", "collision hold")
    # silent: in the air it is lost; e-stopped or on the ground its run is over
    assert life_state(drone(telemetry("flying", -3.0), link="lost"), now, 2.0).name == "lost"
    assert life_state(drone(telemetry("estop", -3.0), link="lost"), now, 2.0).name == "done"
    assert life_state(drone(telemetry("landing", -0.02)), now + 10, 2.0).name == "done"
    ended = DroneExit("Drone1", 0, "declared", [])
    assert life_state(drone(telemetry("flying", -3.0)), now, 2.0, ended).detail == "run ended: declared"
    failed = DroneExit("Drone1", 2, None, ["dronecats onboard: pre-arm check: no valid action"])
    state = life_state(drone(None, None), now, 2.0, failed)
    assert state.name == "failed" and "pre-arm check" in state.detail and state.gone


def test_end_reason_is_read_from_the_onboard_result_line() -> None:
    lines = [
        "09:00:00 INFO something",
        '{"log_dir": "x", "reason": "estop: ground station estop", "steps": 3}',
    ]
    assert end_reason(lines) == "estop: ground station estop"
    assert end_reason(["Traceback (most recent call last):", "  {not json"]) is None


def test_preflight_names_the_packages_of_missing_libraries() -> None:
    from ground_station.app.preflight import gui_problem, packages_for, platform_name

    assert packages_for(["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libfoo.so.1"]) == [
        "libxcb-cursor0",
        "libxcb-icccm4",
        "libfoo.so.1",
    ]
    assert platform_name({"QT_QPA_PLATFORM": "offscreen"}) == "offscreen"
    assert platform_name({"WAYLAND_DISPLAY": "wayland-0"}) == "wayland"
    assert platform_name({"DISPLAY": ":0"}) == "xcb"
    assert "DISPLAY is not set" in (gui_problem({"PATH": os.environ.get("PATH", "")}) or "")
    assert gui_problem(dict(os.environ, QT_QPA_PLATFORM="offscreen")) is None
