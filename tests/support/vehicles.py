"""Shared set-up for the real-vehicle tests: a built-in simulator world running in wall time with an
emulator in front of it, the onboard runtime flying the baseline pilot through the real client
library, and the verifier on the logs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.camera import camera_profile
from common.clock import WallClock
from common.pose import Pose
from episodes.logs import read_episode
from episodes.records import DroneStart, EpisodeRecord, SceneObject, record_to_json
from episodes.verifier import VerifierSettings, verify
from models.baseline.pilot import BaselinePilot
from onboard.assembly import assemble
from onboard.recorder import FlightRecorder
from onboard.runtime import OnboardRuntime
from onboard.runtime_config import RuntimeConfig
from sim_bridge.local import LocalTruth
from sim_bridge.sim.world import World

DELTA_M = 5.0
TARGET = "target"


def make_world(
    camera: str = "tello", width_px: int = 480, height_px: int = 360, target_x_m: float = 9.0
) -> World:
    # half the Tello's 960x720 keeps the CPU renderer near real time on a shared 2-core machine
    world = World(
        "residential", vehicles=1, camera=camera_profile(camera).scaled_to(width_px, height_px), seed=0
    )
    world.spawn(TARGET, "car@red", Pose(target_x_m, 0.0, 0.0, 90.0))
    world.start()  # wall-time physics: the emulators are real network peers
    return world


def spawn_query(world: World) -> str:
    p = world.vehicle_pose("Drone1")
    return f"spawn={p.x_m},{p.y_m},{p.z_m},{p.yaw_deg}"


@dataclass
class Flight:
    runtime: OnboardRuntime
    out: Path


def make_runtime(world: World, vehicle: Any, out: Path, profile: str, **cfg: Any) -> OnboardRuntime:
    cfg.setdefault("takeoff_altitude_m", None)  # the flight profile's (Tello: 1.5 m)
    config = RuntimeConfig(
        instruction=cfg.pop("instruction", "go to the red car"),
        flight_profile=profile,
        delta_m=DELTA_M,
        t_max_s=cfg.pop("t_max_s", 60.0),
        min_decision_period_s=cfg.pop("min_decision_period_s", 0.5),
        save_frames=cfg.pop("save_frames", False),
        **cfg,
    )
    recorder = FlightRecorder(out)
    start = world.vehicle_pose("Drone1")
    target = world.get_object(TARGET)
    record = EpisodeRecord(
        id=out.name,
        scene="residential",
        task_type="approach",
        instruction=config.instruction,
        environment="outdoor",
        delta_m=DELTA_M,
        t_max_s=config.t_max_s,
        drones=[DroneStart("Drone1", tuple(start.as_list()))],  # type: ignore[arg-type]
        targets=[SceneObject(TARGET, "car", tuple(target.pose.as_list()), colour="red")],  # type: ignore[arg-type]
        seed=0,
    )
    recorder.write_metadata(**json.loads(record_to_json(record)))
    # assemble routes the vehicle's faults (link loss, RC takeover, stale video) into the runtime
    return assemble(
        config,
        vehicle,
        BaselinePilot(delta_m=DELTA_M),
        WallClock(),
        recorder,
        truth=LocalTruth(world, TARGET),
    )


def verdict(out: Path, t_max_s: float = 60.0) -> Any:
    return verify(read_episode(out), VerifierSettings(delta_m=DELTA_M, t_max_s=t_max_s))


def events(out: Path) -> list[dict]:
    path = out / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def steps(out: Path) -> list[dict]:
    path = out / "steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
