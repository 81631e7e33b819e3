"""Multi-drone episodes in one lock-step world: the rule commander with baseline sub-agents, and one
model context for all drones (against `dronecats serve-pilot --pilot scripted:FILE`), logged as one
file set with a `drone` field per line and scored by the unchanged verifier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from episodes.episode import RESULT_FILE, run_episode
from episodes.logs import read_episode
from episodes.preflight import expectation_for
from episodes.records import DroneStart, EpisodeRecord, SceneObject
from episodes.report import groups, load_rows
from episodes.run_options import LatencySpec, RunOptions
from episodes.runner import run_suite
from episodes.suites import Suite, SuiteEntry, save_suite
from tests.support.pilots import serve_pilot_process
from tests.support.processes import run_dronecats

pytest.importorskip("pybullet")

GRID = [("Drone1", -2.0, -1.0), ("Drone2", -2.0, 1.0), ("Drone3", -4.0, -1.0), ("Drone4", -4.0, 1.0)]


def fleet_record(
    episode_id: str, structure: str = "commander", target_x_m: float = 8.0, task_type: str = "approach"
) -> EpisodeRecord:
    """Four drones on a 2x2 grid 2 m apart, a purple car ~10 m ahead on the residential street."""
    return EpisodeRecord(
        id=episode_id,
        scene="residential",
        task_type=task_type,  # type: ignore[arg-type]
        instruction="go to the purple car",
        environment="outdoor",
        delta_m=5.0,
        t_max_s=40.0,
        structure=structure,  # type: ignore[arg-type]
        drones=[DroneStart(name, (x, y, 0.0, 0.0)) for name, x, y in GRID],
        targets=[
            SceneObject(
                "ep_target",
                "car",
                (target_x_m, -1.0, 0.0, 10.0),
                colour="purple",
                inscription="PB964" if task_type == "plate" else None,
            )
        ],
        distractors=[SceneObject("ep_same_class", "car", (4.0, 2.6, 0.0, 180.0), colour="orange")],
    )


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_rule_commander_with_baseline_subagents_reaches_the_target(tmp_path: Path) -> None:
    record = fleet_record("fleet-cmd")
    out = tmp_path / "run"
    results = run_suite(
        Suite("tiny-fleet", [SuiteEntry(record, expectation_for(record))]),
        out,
        RunOptions(pilot="baseline", structure="commander", commander="rule", save_frames=False),
    )
    assert len(results) == 1
    result = results[0]
    assert result["structure"] == "commander" and result["end_reason"] == "declared", result
    assert result["verdict"]["success"], result["verdict"]
    summary = result["structure_summary"]
    assert summary["commander"] == "rule" and summary["replans"][0] == "start", summary
    directory = out / "fleet-cmd"
    logs = read_episode(directory)
    # one file set, every drone in it, steps under the commander's orders
    assert {s.drone for s in logs.steps} == {name for name, _, _ in GRID}
    assert {t.drone for t in logs.trace} == {name for name, _, _ in GRID}
    steps = lines(directory / "steps.jsonl")
    assert all(s["order_id"] for s in steps if s["action"] is not None), steps[:3]
    events = lines(directory / "events.jsonl")
    orders = [e for e in events if e["event"] == "order"]
    assert {e["drone"] for e in orders} == {name for name, _, _ in GRID}
    assert orders[0]["expires_after_steps"] == 6
    commander = [e for e in events if e["event"] == "commander"]
    assert len(commander) == summary["commander_calls"] >= 1
    # each drone's run metadata is its own (one recorder, no drone overwriting another's counters)
    meta = json.loads((directory / "episode.json").read_text())["run"]["drones"]
    assert set(meta) == {name for name, _, _ in GRID}
    for name, per_drone in result["per_drone"].items():
        assert meta[name]["counters"] == per_drone["counters"], name
        assert sum(per_drone["counters"]["by_action"].values()) == per_drone["counters"]["executed"]
    # the decisive declaration is one drone's, within delta and visible
    assert result["verdict"]["decisive_drone"] in {name for name, _, _ in GRID}
    # one shared clock: every drone's steps are on the same episode time line
    assert max(s.t for s in logs.steps) <= result["sim_time_s"] + 0.5


def test_commander_orders_expire_and_are_replanned(tmp_path: Path) -> None:
    """A target out of reach in T_max: orders run out after 6 steps and the commander re-plans.
    (A commanding task type: its pre-flight checks placement only, the target may be out of view.)"""
    record = fleet_record("fleet-expiry", target_x_m=60.0, task_type="plate")
    out = tmp_path / "fleet-expiry"
    result = run_episode(
        record, out, RunOptions(pilot="baseline", structure="commander", save_frames=False, t_max_s=8.0)
    )
    assert result["end_reason"] == "t_max", result
    replans = result["structure_summary"]["replans"]
    assert replans[0] == "start" and any("expired:" in why for why in replans[1:]), replans
    events = lines(out / "events.jsonl")
    assert any(e["event"] == "order_expired" for e in events)


def test_a_commanded_fleet_with_injected_latency_flies_the_same_twice(tmp_path: Path) -> None:
    """The commander's call costs the injected latency, not its measured compute time (which varies
    with the machine's load and made two flights of one record differ)."""
    record = fleet_record("fleet-twice", target_x_m=60.0, task_type="plate")
    options = RunOptions(
        pilot="baseline",
        structure="commander",
        save_frames=False,
        t_max_s=6.0,
        latency=LatencySpec.parse("fixed:0.3"),
    )
    flights = []
    for name in ("first", "second"):
        result = run_episode(record, tmp_path / name, options)
        measured = {"latency_s", "stages"}  # the pilot's own compute time, logged as measured
        steps = [
            {k: v for k, v in step.items() if k not in measured}
            for step in lines(tmp_path / name / "steps.jsonl")
        ]
        commander = [e for e in lines(tmp_path / name / "events.jsonl") if e["event"] == "commander"]
        assert len(commander) >= 2 and {e["latency_s"] for e in commander} == {0.3}, commander
        flights.append((result["sim_time_s"], result["steps"], steps, lines(tmp_path / name / "trace.jsonl")))
    assert flights[0] == flights[1]


def test_one_context_model_flies_all_drones_with_shared_call_ids(tmp_path: Path) -> None:
    go_a = {"action": "go", "point": [500, 640], "depth_m": 6, "angle_deg": None}
    go_b = {"action": "go", "point": [450, 600], "depth_m": 5, "angle_deg": None}
    turn = {"action": "rotate", "point": None, "depth_m": None, "angle_deg": 20}
    script = tmp_path / "multi.json"
    replies = [{"drones": [go_a] * 4}, {"drones": [go_a, go_b, turn, go_a]}, {"drones": [go_b] * 4}]
    script.write_text(json.dumps(replies))
    record = fleet_record("fleet-multi", structure="multi")
    out = tmp_path / "fleet-multi"
    with serve_pilot_process("--pilot", f"scripted:{script}") as hostport:
        url = f"openai://{hostport}/v1?profile=qwen3.5-2b&retries=0"
        result = run_episode(record, out, RunOptions(pilot=url, save_frames=False, t_max_s=5.0))
    summary = result["structure_summary"]
    assert result["structure"] == "multi"
    # three scripted replies, then the script is spent: those calls fail and nobody moves
    assert summary["multi_calls"] >= 4 and summary["multi_call_errors"], summary
    assert summary["all_go_calls"] == 2 and summary["coordinate_copying_calls"] == 2, summary
    steps = lines(out / "steps.jsonl")
    by_call: dict[str, list[dict]] = {}
    for s in steps:
        by_call.setdefault(s["call_id"], []).append(s)
    assert len(by_call) == 3, list(by_call)
    actions = [[s["action"]["action"] for s in group] for group in by_call.values()]
    assert actions == [["go"] * 4, ["go", "go", "rotate", "go"], ["go"] * 4]
    assert all(s["source"] == "remote" and s["distance_m"] is not None for s in steps)
    assert [s["drone"] for s in next(iter(by_call.values()))] == [name for name, _, _ in GRID]
    # the report's coordinate-copying rate is over the multi-drone calls where every drone went
    stats = groups(load_rows(out))
    assert stats and all(g.coordinate_copying_rate == pytest.approx(1.0) for g in stats), stats
    assert (out / RESULT_FILE).exists()


def test_cli_refuses_a_fleet_record_as_single_and_multi_without_a_model(tmp_path: Path) -> None:
    suite_file = tmp_path / "suite.json"
    record = fleet_record("fleet-cli")
    save_suite(Suite("fleet", [SuiteEntry(record, expectation_for(record))]), suite_file)
    for extra, needle in (
        (["--structure", "single"], "4 drones"),
        (["--structure", "multi", "--pilot", "baseline"], "needs a model URL"),
    ):
        proc = run_dronecats(
            "episodes",
            "run",
            str(suite_file),
            "--out",
            str(tmp_path / "o"),
            "--t-max",
            "2",
            *extra,
            timeout_s=120,
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert needle in proc.stderr, proc.stderr
