"""The fleet library headless, against real processes: `dronecats sim --vehicles 2` and two
`dronecats onboard` processes bound for the ground station, reached through the real GroundLink.

- commander + sub-agents with the rule-based commander: orders, expiry after N steps (the drone
  holds), re-plan on expiry;
- one pilot per drone (baseline): an instruction, a declaration with sim distance/visibility and
  its frame, a judgement, then a fleet-wide e-stop acknowledged by every drone;
- one context: drones in remote mode, a scripted model behind `dronecats serve-pilot`, actions
  sent back as RemoteActions and logged by the drones under the shared call id.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.pose import Pose
from ground_station.fleet.client import FleetClient
from ground_station.fleet.launch import LaunchTarget, SimFleet
from ground_station.fleet.structures import CommanderStructure, OneContext, PerDrone
from ground_station.headless import HeadlessSession
from models.commanders import RuleCommander
from tests.support.pilots import serve_pilot_process
from tests.support.processes import run_dronecats, wait_for

pytestmark = pytest.mark.slow

TARGET = LaunchTarget("target", "car@red", Pose(9.0, 1.0, 0.0, 90.0))
SETTINGS = ["min_decision_period_s=0.5", "t_max_s=400", "stop_on_declaration=false"]


def wait_until(predicate, timeout_s: float, step_s: float = 0.1) -> bool:
    return wait_for(predicate, timeout_s, step_s)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def baseline_fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet")
    with SimFleet(2, "baseline", targets=[TARGET], log_dir=out, onboard_settings=SETTINGS) as sim:
        fleet = FleetClient(sim.addresses, sim.security).start()
        try:
            assert fleet.wait_for_link(90.0), [sim.drone_log(f"Drone{i}")[-800:] for i in (1, 2)]
            yield sim, fleet
        finally:
            fleet.close()


def test_commander_orders_expire_and_the_commander_replans(baseline_fleet) -> None:
    sim, fleet = baseline_fleet
    structure = CommanderStructure(fleet, RuleCommander(), expires_after_steps=2, marked_targets=[(9.0, 1.0)])
    structure.start("go to the red car")
    try:
        assert wait_until(lambda: sum(r.startswith("expired:") for r in structure.replans) >= 2, 90.0), (
            structure.replans,
            structure.errors,
        )
    finally:
        structure.stop()
    assert structure.replans[0] == "start" and not structure.errors
    orders = list(fleet.state.orders)
    assert {o.drone for o in orders} == {"Drone1", "Drone2"}
    # distinct candidates by bearing: one car, so one drone is sent to it and the other searches
    first = [o.text for o in orders[:2]]
    assert sum("red car (the one" in t for t in first) == 1 and sum("; search " in t for t in first) == 1
    assert all(t.startswith("go to the red car") for t in first), first
    expired = [o for o in orders if o.state == "expired"]
    assert expired and all(o.steps_used == 2 for o in expired)
    # each drone counted its order's steps itself and held at expiry
    for drone in ("Drone1", "Drone2"):
        steps = lines(sim.log_dir / drone / "steps.jsonl")
        by_order: dict[str, list[int]] = {}
        for step in steps:
            if step.get("order_id"):
                by_order.setdefault(step["order_id"], []).append(step["order_steps_left"])
        assert by_order and all(left[:2] == [1, 0][: len(left)] for left in by_order.values()), by_order
        assert all(len(left) <= 2 for left in by_order.values())
    events = lines(sim.log_dir / "Drone1" / "events.jsonl") + lines(sim.log_dir / "Drone2" / "events.jsonl")
    assert any(e["event"] == "order_expired" for e in events)


def test_per_drone_declaration_judgement_and_fleet_estop(baseline_fleet, tmp_path) -> None:
    sim, fleet = baseline_fleet
    session = HeadlessSession(fleet, PerDrone(fleet))
    summary = session.run("go to the red car", duration_s=150.0, until="declaration")
    assert summary.reason == "declaration", (summary, sim.drone_log("Drone1")[-1500:])
    declaration = fleet.state.declarations[0]
    assert declaration.distance_m is not None and declaration.distance_m < 9.5  # sim ground truth
    assert declaration.visible is not None
    assert wait_until(lambda: declaration.thumbnail_jpeg is not None, 10.0)
    assert declaration.thumbnail_jpeg is not None and declaration.thumbnail_jpeg[:2] == b"\xff\xd8"
    # the operator's judgement goes to the drone and into its declarations log
    ack = fleet.judge(declaration.declaration_id, accept=False, operator="test")
    assert ack.result == "ok" and declaration.judged == "reject"
    judged = [d for d in lines(sim.log_dir / declaration.drone / "declarations.jsonl") if d.get("judged")]
    assert judged and judged[-1]["judged"] == "reject"
    assert judged[-1]["t"] == pytest.approx(declaration.t_s, abs=1e-3)
    acks = fleet.safety("estop")
    assert set(acks) == {"Drone1", "Drone2"} and all(a.result == "ok" for a in acks.values()), acks
    assert wait_until(
        lambda: all(
            (s.telemetry is not None and s.telemetry.mode == "estop") for s in fleet.state.drones.values()
        ),
        10.0,
    )
    log = fleet.export_session(tmp_path / "session.jsonl")
    kinds = {e["kind"] for e in lines(log)}
    assert {"instruction", "ack", "step", "declaration", "judgement", "safety"} <= kinds


def test_one_context_actions_reach_remote_drones_with_a_shared_call_id(tmp_path) -> None:
    go = {"action": "go", "point": [500, 640], "depth_m": 8, "angle_deg": None}
    turn = {"action": "rotate", "point": None, "depth_m": None, "angle_deg": 30}
    script = tmp_path / "multi.json"
    script.write_text(json.dumps([{"drones": [go, turn]}, {"drones": [turn, go]}, {"drones": [go, go]}]))
    with (
        serve_pilot_process("--pilot", f"scripted:{script}") as hostport,
        SimFleet(2, "remote", targets=[TARGET], log_dir=tmp_path / "fleet", onboard_settings=SETTINGS) as sim,
        FleetClient(sim.addresses, sim.security) as fleet,
    ):
        assert fleet.wait_for_link(90.0), sim.drone_log("Drone1")[-1500:]
        structure = OneContext(fleet, f"openai://{hostport}/v1?profile=qwen3.5-2b&retries=0")
        structure.start("go to the red car")
        try:
            assert wait_until(lambda: structure.calls >= 4, 60.0), structure.errors
        finally:
            structure.stop()
        # three scripted replies, then the script is spent: a failed call sends nothing
        assert structure.errors and "replies used" in structure.errors[-1]
        assert wait_until(lambda: all(s.step_count >= 3 for s in fleet.state.drones.values()), 10.0), (
            structure.errors,
            sim.drone_log("Drone1")[-2000:],
        )
        steps = {d: lines(sim.log_dir / d / "steps.jsonl") for d in ("Drone1", "Drone2")}
        assert [s["action"]["action"] for s in steps["Drone1"]] == ["go", "rotate", "go"]
        assert [s["action"]["action"] for s in steps["Drone2"]] == ["rotate", "go", "go"]
        assert [s["call_id"] for s in steps["Drone1"]] == [s["call_id"] for s in steps["Drone2"]]
        assert all(s["source"] == "remote" and s["distance_m"] is not None for s in steps["Drone1"])
        assert structure.all_go_calls == 1 and structure.copying_calls == 1


def test_headless_cli_commander_until_a_qualifying_declaration(tmp_path) -> None:
    """`dronecats demo-fleet --headless` (= `dronecats gs --launch N --headless`): scriptable end to end."""
    result = run_dronecats(
        "demo-fleet", "--headless", "--drones", "2", "--structure", "commander",
        "--target-distance-m", "9", "--duration-s", "120", "--log-dir", str(tmp_path),
        timeout_s=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Connected!" not in result.stdout  # the airsim client's confirmConnection banner
    lines_out = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    summary = lines_out[-1]
    assert summary["structure"] == "commander" and summary["reason"] == "qualifying", summary
    assert any(e.get("event") == "order" for e in lines_out[:-1])
    first = summary["declarations"][0]
    assert first["visible"] and first["distance_m"] <= 5.0
