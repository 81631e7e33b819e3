"""benchmarks/bench_jitter.py's scoring (issue 25): success by a scripted declaration, the verifier's
qualifying rule at an instant no loop chooses (the same for every loop of a seed)."""

from __future__ import annotations

import importlib.util
import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest

from common.logformat import TraceLine

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_jitter", ROOT / "benchmarks" / "bench_jitter.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_the_declaration_instant_is_drawn_per_seed_inside_the_scored_window() -> None:
    instants = [bench.scripted_declaration_t(seed, 45.0) for seed in range(30)]
    assert all(bench.DECLARE_FROM_S <= t <= 45.0 for t in instants)
    assert instants == [bench.scripted_declaration_t(seed, 45.0) for seed in range(30)]  # paired
    assert len(set(instants)) == 30


def test_the_verifiers_rule_on_the_nearest_trace_sample() -> None:
    def sample(t: float, distance_m: float | None, visible: bool | None) -> TraceLine:
        return TraceLine(t=t, drone="Drone1", distance_m=distance_m, visible=visible)

    trace = [
        sample(20.0, 4.0, True),
        sample(20.5, 4.9, False),
        sample(21.0, 5.2, True),
        sample(21.5, 3.0, None),
    ]
    assert bench.scripted_success(trace, 20.1)  # within δ (5 m) and visible
    assert not bench.scripted_success(trace, 20.4)  # within δ, but the target is out of view
    assert not bench.scripted_success(trace, 21.1)  # visible, but 5.2 m from the target's centre
    assert not bench.scripted_success(trace, 21.6)  # visibility unknown never qualifies
    assert not bench.scripted_success([], 20.0)
    other = [TraceLine(t=20.0, drone="Drone2", distance_m=1.0, visible=True)]
    assert not bench.scripted_success(other, 20.0)  # another drone's sample says nothing about Drone1


# Both benchmarks' refusals: the lock-step one and its process-separated variant.
BAD_ARGUMENTS = {
    "bench_jitter.py": (
        ["--t-max", "10"],
        ["--target-speeds", "fast"],
        ["--seeds", "0"],
        ["--loops", "eager"],
        ["--camera-pitch-deg", "nan"],
        ["--camera-pitch-deg", "-120"],
    ),
    "bench_jitter_processes.py": (
        ["--t-max", "10"],
        ["--seeds", "0"],
        ["--jobs", "0"],
        ["--loops", "eager"],
        ["--target-speed", "-1"],
    ),
}


@pytest.mark.parametrize("script", sorted(BAD_ARGUMENTS))
def test_bad_arguments_get_one_line_and_a_non_zero_exit(script: str) -> None:
    for args in BAD_ARGUMENTS[script]:
        run = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / script), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode != 0, args
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_the_targets_route_is_the_seeds_own() -> None:
    route = bench.target_route(12, 45.0, 0.3)
    assert route[0] == (bench.TARGET_START_N_M, 0.0, 0.0)
    assert route == bench.target_route(12, 45.0, 0.3)  # the lock-step and the process runs share it
    assert route != bench.target_route(13, 45.0, 0.3)
    length_m = sum(math.dist(a, b) for a, b in itertools.pairwise(route))
    assert length_m > 45.0 * 0.3  # the car never runs out of road inside T_max


def test_the_frozen_scene_has_the_level_camera_and_a_pitch_holds_it_down() -> None:
    from sim_bridge.sim.gimbal import STABILISED

    world, _ = bench.build_scene(12, 45.0, 0.3)
    try:
        assert world.camera_mount == STABILISED
    finally:
        world.close()
    world, _ = bench.build_scene(12, 45.0, 0.3, camera_pitch_deg=-20.0)
    try:
        gimbal = world.camera_mount.gimbal
        assert (gimbal.stabilization, gimbal.pitch_deg, gimbal.roll_deg) == (1.0, -20.0, 0.0)
        assert not world.camera_mount.level
    finally:
        world.close()
