"""Suites, pre-flight checks, latency models and report statistics (issue 10).

Expected numbers come from the formulas (Wilson interval, log-normal quantiles, pinhole geometry),
not from this code's output."""

from __future__ import annotations

import itertools
import math
import statistics
from pathlib import Path

import pytest

from common.errors import ConfigError
from episodes.preflight import Expectation, check, expectation_for
from episodes.records import EpisodeRecord, SceneObject
from episodes.report import wilson
from episodes.run_options import LatencySpec
from episodes.suites import SINGLE_TASKS, generate, load_suite, save_suite
from tests.support.episodes import purple_car_approach

pytest.importorskip("pybullet")

ROOT = Path(__file__).resolve().parents[2]


def approach_record(target_x_m: float, distractors: list[SceneObject] | None = None, yaw_deg: float = 0.0):
    return purple_car_approach(
        "t-approach", (-10.0, 1.0, 0.0, yaw_deg), (target_x_m, 1.0, 0.0, 0.0), distractors or []
    )


def run_check(record: EpisodeRecord, expect: Expectation | None = None):
    from episodes.scenario import build_world

    world = build_world(record)
    try:
        return check(world, record, expect)
    finally:
        world.close()


def test_wilson_interval_matches_the_formula() -> None:
    z = 1.959963984540054
    for k, n in ((0, 10), (5, 10), (8, 10), (10, 10), (1, 1), (33, 80)):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        low, high = wilson(k, n)
        assert low == pytest.approx(max(0.0, centre - half), abs=1e-12)
        assert high == pytest.approx(min(1.0, centre + half), abs=1e-12)
        assert low <= p <= high
    # Textbook values: 0/10 -> [0, 0.2775], 5/10 -> [0.2366, 0.7634].
    assert wilson(0, 10)[1] == pytest.approx(0.2775, abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_latency_specs() -> None:
    assert LatencySpec.parse(None).model(0) is None  # measured
    fixed = LatencySpec.parse("fixed:0.44").model(1)
    assert fixed is not None and fixed(None) == 0.44
    spec = LatencySpec.parse("lognormal:0.6,2.0")
    draw = spec.model(7)
    assert draw is not None
    samples = sorted(draw(None) for _ in range(20000))
    assert statistics.median(samples) == pytest.approx(0.6, rel=0.05)
    assert samples[int(0.95 * len(samples))] == pytest.approx(2.0, rel=0.08)
    for bad in ("fixed:-1", "lognormal:2,1", "lognormal:0.6", "gauss:1", "fixed:x"):
        with pytest.raises(ConfigError):
            LatencySpec.parse(bad)


def test_preflight_accepts_a_clean_approach_and_names_each_broken_limit() -> None:
    good = run_check(approach_record(8.0))
    assert good.ok, good.problems
    assert good.start_distance_m == pytest.approx(18.0, abs=0.01)
    assert good.start_bearing_deg == pytest.approx(0.0, abs=0.01)
    assert 0.004 <= good.occupancy <= 0.12 and good.clear_path and good.visible_at_start

    far = run_check(approach_record(90.0))  # a car 100 m away fills far less than 0.40%
    assert not far.ok and any("fills" in p and "0.40%" in p for p in far.problems), far.problems

    blocker = SceneObject("ep_blocker", "truck", (-1.0, 1.0, 0.0, 0.0), colour="white")
    blocked = run_check(approach_record(8.0, [blocker]))
    assert any("camera path" in p for p in blocked.problems), blocked.problems

    on_start = SceneObject("ep_parked", "van", (-9.0, 1.0, 0.0, 0.0), colour="white")
    inside = run_check(approach_record(8.0, [on_start]))
    assert any("Drone1 starts" in p and "clearance" in p for p in inside.problems), inside.problems

    turned = approach_record(8.0, yaw_deg=180.0)  # facing away, but declared visible
    declared = Expectation(18.0, 0.0, True)
    wrong = run_check(turned, declared)
    assert any("not visible" in p for p in wrong.problems), wrong.problems
    assert any("bearing" in p for p in wrong.problems), wrong.problems
    # The same start declared as a search start (target behind) passes.
    assert run_check(
        turned, expectation_for(turned.__class__(**{**_fields(turned), "task_type": "search"}))
    ).ok


def _fields(record: EpisodeRecord) -> dict:
    return {f: getattr(record, f) for f in record.__struct_fields__}


def test_generation_is_deterministic_and_every_episode_has_both_distractors(tmp_path: Path) -> None:
    plan = [("blocks", "track", 1), ("indoor", "search", 1)]
    a = generate(plan, seed=3, name="tiny")
    b = generate(plan, seed=3, name="tiny")
    assert a == b
    path = tmp_path / "tiny.json"
    save_suite(a, path)
    assert load_suite(path) == a
    for entry in a.episodes:
        rec = entry.record
        target = rec.targets[0]
        kinds = {(d.class_ == target.class_, d.colour == target.colour) for d in rec.distractors}
        assert (False, True) in kinds and (True, False) in kinds  # same colour / same class
        assert run_check(rec, entry.expect).ok
    track = a.episodes[0].record
    assert track.targets[0].speed_m_s == 0.3
    route = track.targets[0].path or []
    length = sum(math.dist(p, q) for p, q in itertools.pairwise(route))
    assert length > 0.3 * track.t_max_s  # longer than the target can cover in an episode
    search = a.episodes[1]
    assert search.record.delta_m == 2.5 and not search.expect.visible_at_start
    assert abs(search.expect.start_bearing_deg) > 150  # yawed about 180° away


def test_committed_single_suite() -> None:
    suite = load_suite(ROOT / "episodes" / "suites" / "single.json")
    counts: dict[tuple[str, str], int] = {}
    for e in suite.episodes:
        counts[(e.record.scene, e.record.task_type)] = counts.get((e.record.scene, e.record.task_type), 0) + 1
    for scene in ("residential", "blocks"):
        for task in SINGLE_TASKS:
            assert counts[(scene, task)] == 10
    assert counts[("indoor", "approach")] == 5 and counts[("indoor", "search")] == 5
    assert all(e.record.delta_m == 2.5 for e in suite.episodes if e.record.environment == "indoor")
    moving = [e.record for e in suite.episodes if e.record.task_type in ("track", "search+track")]
    assert all(r.targets[0].speed_m_s == 0.3 for r in moving)


def test_committed_commanding_suite() -> None:
    """Four drones 2 m apart; look-alikes differ from the target only in their inscription; in
    sign_sum the goal's corridor is the one whose entrance shows the sum of the red numbers."""
    suite = load_suite(ROOT / "episodes" / "suites" / "commanding.json")
    by_task: dict[str, list[EpisodeRecord]] = {}
    for e in suite.episodes:
        by_task.setdefault(e.record.task_type, []).append(e.record)
    assert {t: len(v) for t, v in by_task.items()} == {"plate": 10, "sign": 10, "sign_sum": 10}
    for rec in (r for v in by_task.values() for r in v):
        assert rec.structure == "commander" and len(rec.drones) == 4
        xy = [d.start_pose[:2] for d in rec.drones]
        gaps = sorted(math.dist(a, b) for i, a in enumerate(xy) for b in xy[i + 1 :])
        assert gaps[:4] == pytest.approx([2.0] * 4, abs=0.01)  # a 2 x 2 grid, 2 m apart
        target = rec.targets[0]
        lookalikes = [d for d in rec.distractors if (d.class_, d.colour) == (target.class_, target.colour)]
        assert len(lookalikes) == 3
        if rec.task_type != "sign_sum":
            assert all(d.inscription != target.inscription for d in lookalikes)
            assert target.inscription and target.inscription in rec.instruction
        else:
            numbers = [int(d.inscription or 0) for d in rec.distractors if d.id.startswith("ep_number")]
            entrances = [d for d in rec.distractors if d.id.startswith("ep_entrance")]
            assert len(numbers) == 3 and len(entrances) == 4
            # The entrance nearest the goal (same corridor) shows the sum.
            nearest = min(entrances, key=lambda d: math.dist(d.pose[:2], target.pose[:2]))
            assert int(nearest.inscription or 0) == sum(numbers)
