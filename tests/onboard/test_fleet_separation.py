"""Fleet separation below the pilots: two drones flying head-on at each other in one lock-step world,
each with the real baseline pilot going for a car behind the other. Without separation they collide
(the control case proves the scenario); with it their governors cut the closing motion, log why,
and both stay clear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.pose import Pose
from episodes.local_flight import local_runtime
from models.baseline.pilot import BaselinePilot
from onboard.lockstep import MultiLockstepDriver
from onboard.recorder import FlightRecorder
from onboard.runtime import OnboardRuntime
from onboard.runtime_config import RuntimeConfig
from onboard.safety import Mode, SafetyConfig
from sim_bridge.sim.world import World


def fly_head_on(out: Path, separation_m: float) -> tuple[list[OnboardRuntime], World]:
    # Drone1 faces east toward a red car 24 m off; Drone2, 10 m east of it, faces west toward a blue one.
    world = World(
        "blocks", vehicles=2, seed=0, spawns=[Pose(0.0, 0.0, 0.0, 90.0), Pose(0.0, 10.0, 0.0, -90.0)]
    )
    world.pause(True)
    world.spawn("red", "car@red", Pose(0.0, 24.0, 0.0, 0.0))
    world.spawn("blue", "car@blue", Pose(0.0, -14.0, 0.0, 0.0))
    runtimes = []
    for name, instruction in (("Drone1", "go to the red car"), ("Drone2", "go to the blue car")):
        config = RuntimeConfig(
            drone=name,
            instruction=instruction,
            t_max_s=12.0,
            min_decision_period_s=0.5,
            save_frames=False,
            land_at_end=False,
            stop_on_declaration=False,
            safety=SafetyConfig(separation_m=separation_m),
        )
        runtimes.append(
            local_runtime(world, name, config, BaselinePilot(delta_m=5.0), FlightRecorder(out / name))
        )
    MultiLockstepDriver(runtimes, world).run()
    return runtimes, world


def clamps(out: Path, rule: str) -> list[dict]:
    lines = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    return [e for e in lines if e["event"] == "clamp" and e["rule"] == rule]


@pytest.mark.parametrize("separation_m", [0.0, 1.5])
def test_head_on_drones_collide_without_separation_and_stay_clear_with_it(tmp_path, separation_m) -> None:
    runtimes, world = fly_head_on(tmp_path, separation_m)
    try:
        gap_m = abs(world.vehicle_pose("Drone1").y_m - world.vehicle_pose("Drone2").y_m)
    finally:
        world.close()
    modes = [rt.governor.mode for rt in runtimes]
    if separation_m == 0.0:
        assert any(
            rt.governor.mode == Mode.HOLD and rt.governor.reason.startswith("collision with ")
            for rt in runtimes
        )
        return
    assert all(m == Mode.FLYING for m in modes), [rt.governor.reason for rt in runtimes]
    assert gap_m >= 1.0, gap_m  # stopped short of each other (collision radius 0.3 m each)
    for name in ("Drone1", "Drone2"):
        cut = clamps(tmp_path / name, "separation")
        assert cut and "fleet drone" in cut[0]["detail"], name
