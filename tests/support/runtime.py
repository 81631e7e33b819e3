"""An onboard runtime on a built-in simulator world (in process), flying the baseline pilot to a red car."""

from __future__ import annotations

from pathlib import Path

from common.pose import Pose
from episodes.local_flight import local_runtime
from models.baseline.pilot import BaselinePilot
from onboard.recorder import FlightRecorder
from onboard.runtime import OnboardRuntime
from onboard.runtime_config import RuntimeConfig
from sim_bridge.sim.world import World

DELTA_M = 5.0


def make_runtime(world: World, out: Path, pilot=None, target_x_m: float = 25.0, **cfg) -> OnboardRuntime:
    target = world.spawn("target", "car@red", Pose(target_x_m, 0.0, 0.0, 90.0))
    config = RuntimeConfig(
        instruction=cfg.pop("instruction", "go to the red car"),
        delta_m=DELTA_M,
        t_max_s=cfg.pop("t_max_s", 90.0),
        min_decision_period_s=0.5,
        save_frames=cfg.pop("save_frames", False),
        **cfg,
    )
    return local_runtime(
        world,
        "Drone1",
        config,
        pilot or BaselinePilot(delta_m=DELTA_M),
        FlightRecorder(out),
        target=target.name,
    )
