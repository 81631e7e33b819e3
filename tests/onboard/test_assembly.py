"""The composition root (onboard.assembly): a runtime wired from its parts, its recorder opened in a log
directory with the configuration's recorder settings, flown in lock-step with an injected latency."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from common.pose import Pose
from models.baseline.pilot import BaselinePilot
from onboard.assembly import assemble, fly_lockstep
from onboard.recorder import RecorderConfig
from onboard.runtime_config import RuntimeConfig
from sim_bridge.local import LocalCamera, LocalTruth, LocalVehicle
from sim_bridge.sim.world import World


def test_a_log_dir_gets_a_recorder_and_the_lockstep_run_costs_the_injected_latency(tmp_path: Path) -> None:
    world = World("residential", vehicles=1, seed=0)
    world.spawn("target", "car@red", Pose(12.0, 0.0, 0.0, 90.0))
    world.pause(True)
    log_dir = tmp_path / "log"
    config = RuntimeConfig(
        instruction="go to the red car",
        t_max_s=30.0,
        min_decision_period_s=0.5,
        save_frames=False,
        recorder=RecorderConfig(save_frames=False, trace_hz=1.0),
    )
    try:
        camera = LocalCamera(world, "Drone1")
        runtime = assemble(
            config,
            LocalVehicle(world, "Drone1"),
            BaselinePilot(delta_m=config.delta_m),
            world.clock,
            log_dir,
            camera=camera,
            truth=LocalTruth(world, "target", {"Drone1": camera}),
        )
        assert runtime.camera is camera and runtime.clock is world.clock
        assert runtime.recorder.directory == log_dir and runtime.recorder.config == config.recorder
        flown = fly_lockstep(runtime, world, latency=lambda pending: 0.7)
        runtime.recorder.close()
    finally:
        world.close()
    assert flown.result.reason == "declared", flown.result
    assert flown.injected_latencies_s and set(flown.injected_latencies_s) == {0.7}
    steps = [json.loads(line) for line in (log_dir / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == flown.result.steps
    # each decision cost its 0.7 s of episode time: no step starts sooner than that after the last
    starts = [s["t"] for s in steps]
    assert all(b - a >= 0.7 - 1e-6 for a, b in itertools.pairwise(starts))
