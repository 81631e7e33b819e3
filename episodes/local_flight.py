"""Drones of an in-process World: each one's runtime wired by the composition root (onboard.assembly)
from the in-process adapters (sim_bridge.local) on the world's clock, and a single-drone record flown
on its world in lock-step.

The world comes from episodes.scenario.build_world(record) (the runner, the fleet runner, the demo)
or is set up by hand (the jitter benchmark, tests); the caller checks it and closes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onboard.assembly import LockstepRun, assemble, fly_lockstep
from onboard.lockstep import LatencyModel
from onboard.recorder import FlightRecorder
from onboard.reporter import Publisher
from onboard.runtime import OnboardRuntime
from onboard.runtime_config import RuntimeConfig
from sim_bridge.local import LocalCamera, LocalTruth, LocalVehicle

if TYPE_CHECKING:
    from common.truth import GroundTruth
    from episodes.records import EpisodeRecord
    from models.pilot import Pilot
    from sim_bridge.sim.world import World


def local_runtime(
    world: World,
    drone: str,
    config: RuntimeConfig,
    pilot: Pilot,
    recorder: FlightRecorder,
    *,
    target: str | None = None,
    camera: LocalCamera | None = None,
    truth: GroundTruth | None = None,
    publisher: Publisher | None = None,
) -> OnboardRuntime:
    """The runtime of `drone` in `world`. Ground truth: `truth` (one LocalTruth a fleet shares, with
    every drone's camera), or else about the object `target` from this drone's camera, or none."""
    camera = camera if camera is not None else LocalCamera(world, drone)
    if truth is None and target is not None:
        truth = LocalTruth(world, target, {drone: camera})
    return assemble(
        config,
        LocalVehicle(world, drone),
        pilot,
        world.clock,
        recorder,
        camera=camera,
        truth=truth,
        publisher=publisher,
    )


@dataclass(frozen=True)
class LocalRun:
    runtime: OnboardRuntime
    flown: LockstepRun
    sim_time_s: float  # episode time at the end of the run


def fly_record(
    world: World,
    record: EpisodeRecord,
    config: RuntimeConfig,
    pilot: Pilot,
    recorder: FlightRecorder,
    latency: LatencyModel | None = None,
    on_step: Callable[[OnboardRuntime], None] | None = None,
) -> LocalRun:
    """Fly a single-drone record's drone toward its first target on `world` (built from the record
    and checked): lock-step, each decision costing the `latency` model's time (None: measured)."""
    runtime = local_runtime(
        world, record.drones[0].name, config, pilot, recorder, target=record.targets[0].id
    )
    flown = fly_lockstep(runtime, world, latency, on_step)
    return LocalRun(runtime, flown, runtime.t())
