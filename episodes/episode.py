"""One episode: record -> simulator -> onboard runtime -> logs -> verdict, into one run directory.

The episode flies in lock-step over an in-process World (episodes.local_flight: the default;
deterministic, faster than real time), or against an AirSim-compatible server (`sim_url`,
episodes.hil: the HIL path), or as a fleet (episodes.fleet_episode); each drone's runtime is wired by
the composition root, onboard.assembly. The episode's log files (docs/logs.md) go into its directory
and, written atomically last, `result.json` with the verdict, the configuration that determined the
outcome and the code version (episodes.run_config): a directory with result.json is complete.
Suites of episodes: episodes.runner (local processes) and episodes.ray_runner (a Ray cluster).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from common.errors import ConfigError
from episodes.records import EpisodeRecord, record_to_json
from episodes.run_config import code_version, run_configuration
from episodes.run_options import RunOptions

if TYPE_CHECKING:
    from models.pilot import Pilot
    from onboard.recorder import FlightRecorder
    from onboard.runtime_config import RuntimeConfig

RESULT_FILE = "result.json"


# ---- one episode ----------------------------------------------------------------------------------
def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def runtime_config(record: EpisodeRecord, options: RunOptions) -> RuntimeConfig:
    """Every drone's RuntimeConfig for this record under these options."""
    from episodes.scenario import takeoff_altitude_m
    from onboard.recorder import RecorderConfig
    from onboard.runtime_config import RuntimeConfig

    return RuntimeConfig(
        instruction=record.instruction,
        delta_m=record.delta_m,
        t_max_s=options.t_max_s or record.t_max_s,
        flight_profile=record.flight_profile,
        camera=record.camera,
        takeoff_altitude_m=takeoff_altitude_m(record),
        min_decision_period_s=options.min_decision_period_s,
        stop_on_declaration=not options.fly_on,
        save_frames=options.save_frames,
        recorder=RecorderConfig(save_frames=options.save_frames),
    )


def episode_configuration(record: EpisodeRecord, options: RunOptions) -> dict[str, Any]:
    """What determines this episode's outcome under these options (compared on resume)."""
    return run_configuration(record, options, runtime_config(record, options))


def _episode_metadata(record: EpisodeRecord, options: RunOptions, run_name: str) -> dict[str, Any]:
    data = json.loads(record_to_json(record))
    data["run"] = {
        "config": episode_configuration(record, options),
        "code_version": code_version(),
        "run_name": run_name,
        "pilot_spec": options.pilot,
        "structure": options.structure or record.structure,
        "commander": options.commander,
        "latency": str(options.latency),
        "lockstep": options.sim_url is None,
        "sim": options.sim_url or "local",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if options.t_max_s:
        data["t_max_s"] = options.t_max_s
    return data


def run_episode(record: EpisodeRecord, out: Path, options: RunOptions, run_name: str | None = None) -> dict:
    """Fly one episode into `out` (which must not hold a previous run) and return its result."""
    from episodes.logs import read_episode
    from episodes.verifier import VerifierSettings, verify
    from models.serve import make_pilot
    from onboard.recorder import FlightRecorder

    structure = options.structure or record.structure
    if structure == "single" and len(record.drones) != 1:
        raise ConfigError(
            f"episode {record.id}: {len(record.drones)} drones; fly it with --structure multi or commander"
        )
    if structure != "single" and options.sim_url:
        raise ConfigError(f"episode {record.id}: --sim (HIL) flies single-drone episodes only")
    run_name = run_name or out.name
    wall0 = time.monotonic()
    cpu0 = time.process_time()  # this process's CPU: what the run needs of a core, load aside
    config = runtime_config(record, options)
    recorder = FlightRecorder(out, config.recorder)
    recorder.write_metadata(**_episode_metadata(record, options, run_name))
    seed = _seed(record.id, run_name)
    fleet: dict[str, Any] = {}
    result: dict[str, Any]
    injected: list[float] = []
    try:
        if structure != "single":
            from episodes.fleet_episode import fly_fleet_local

            outcome = fly_fleet_local(record, config, options, recorder, structure, seed)
            result = {"reason": outcome.reason, "steps": outcome.steps, "sim_time_s": outcome.sim_time_s}
            injected = outcome.injected_latencies_s
            fleet = {"structure_summary": outcome.structure, "per_drone": outcome.per_drone}
        elif options.sim_url:
            from episodes.hil import fly_hil

            pilot = make_pilot(options.pilot, delta_m=record.delta_m, camera=record.camera)
            result = fly_hil(
                record, config, pilot, recorder, options.sim_url, latency=options.latency.model(seed)
            )
            injected = result.pop("injected", [])
        else:
            pilot = make_pilot(options.pilot, delta_m=record.delta_m, camera=record.camera)
            result, injected = _fly_local(record, config, pilot, recorder, options, seed)
    finally:
        recorder.close()
    wall_s = time.monotonic() - wall0
    cpu_s = time.process_time() - cpu0
    verdict = verify(read_episode(out), VerifierSettings(t_max_s=options.t_max_s))
    summary = {
        "episode": record.id,
        "run_name": run_name,
        "task_type": record.task_type,
        "scene": record.scene,
        "environment": record.environment,
        "pilot": options.pilot,
        "structure": structure,
        "latency": str(options.latency),
        "sim": options.sim_url or "local",
        "end_reason": result["reason"],
        "steps": result["steps"],
        "sim_time_s": round(result["sim_time_s"], 2),
        "wall_time_s": round(wall_s, 2),
        "cpu_time_s": round(cpu_s, 2),
        "real_time_factor": round(result["sim_time_s"] / wall_s, 2) if wall_s > 0 else None,
        "injected_latency_p50_s": _median(injected),
        # lock-step with injected latency: what each step cost in episode time (steps log the measured)
        "injected_latencies_s": [round(x, 4) for x in injected],
        "verdict": msgspec.to_builtins(verdict),
        **fleet,
        "config": episode_configuration(record, options),
        "code_version": code_version(),
    }
    atomic_write(out / RESULT_FILE, json.dumps(summary, indent=1).encode() + b"\n")
    return summary


def _seed(*parts: str) -> int:
    import zlib

    return zlib.crc32("/".join(parts).encode())


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)
    return round(ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2]), 4)


def _fly_local(
    record: EpisodeRecord,
    config: RuntimeConfig,
    pilot: Pilot,
    recorder: FlightRecorder,
    options: RunOptions,
    seed: int,
) -> tuple[dict, list[float]]:
    from episodes.local_flight import fly_record
    from episodes.preflight import check_or_refuse
    from episodes.scenario import build_world

    world = build_world(record)
    try:
        check_or_refuse(world, record, recorder)
        run = fly_record(world, record, config, pilot, recorder, latency=options.latency.model(seed))
    finally:
        world.close()
    result = run.flown.result
    return {"reason": result.reason, "steps": result.steps, "sim_time_s": run.sim_time_s}, (
        run.flown.injected_latencies_s
    )
