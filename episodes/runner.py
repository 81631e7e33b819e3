"""The episode runner: one episode (record -> simulator -> onboard runtime -> logs -> verdict) and a
suite of them across processes, resumable.

One episode runs the same OnboardRuntime either in lock-step over an in-process World
(sim_bridge.local + onboard.lockstep; the default: deterministic, faster than real time) or in real
time against an AirSim-compatible server (`sim_url`, episodes.hil: the HIL path).

Run directory layout: OUT/<episode id>[-rK]/ holds the episode's log files (docs/logs.md) and,
written atomically last, `result.json` with the verdict, the configuration that determined the
outcome and the code version (episodes.run_config). A directory with result.json is complete: a
resume keeps it when its configuration is the one asked for, and otherwise refuses, naming the
difference (--force flies it again). One without result.json was interrupted and is moved aside to
OUT/.partial/ and flown again, so no episode is lost or counted twice. OUT/run.json records the last
invocation's options and code version.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import shutil
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from common.errors import ConfigError
from episodes.records import EpisodeRecord, record_to_json
from episodes.run_config import code_version, config_differences, run_configuration
from episodes.suites import Suite, SuiteEntry, iter_ids

if TYPE_CHECKING:
    from episodes.ray_runner import RayOptions

log = logging.getLogger(__name__)

RESULT_FILE = "result.json"
PARTIAL_DIR = ".partial"
MIN_DECISION_PERIOD_S = 0.5  # a 5 ms pilot needs no 20 decisions (20 renders) per second


# ---- latency models -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LatencySpec:
    """`measured` (the pilot's own wall time), `fixed:S`, or `lognormal:MEDIAN,P95` (seconds)."""

    kind: str = "measured"
    median_s: float = 0.0
    p95_s: float = 0.0

    @classmethod
    def parse(cls, text: str | None) -> LatencySpec:
        if not text or text == "measured":
            return cls()
        kind, _, rest = text.partition(":")
        try:
            values = [float(v) for v in rest.split(",")] if rest else []
        except ValueError:
            raise ConfigError(f"--latency {text!r}: numbers expected after '{kind}:'") from None
        if kind == "fixed" and len(values) == 1 and values[0] >= 0:
            return cls("fixed", values[0], values[0])
        if kind == "lognormal" and len(values) == 2 and 0 < values[0] <= values[1]:
            return cls("lognormal", values[0], values[1])
        raise ConfigError(
            f"--latency {text!r}: use measured, fixed:S (S >= 0) or lognormal:MEDIAN,P95 (0 < MEDIAN <= P95)"
        )

    def __str__(self) -> str:
        if self.kind == "fixed":
            return f"fixed:{self.median_s:g}"
        if self.kind == "lognormal":
            return f"lognormal:{self.median_s:g},{self.p95_s:g}"
        return "measured"

    def model(self, seed: int) -> Callable[[Any], float] | None:
        """A LockstepDriver latency callable (None: the driver's measured latency)."""
        if self.kind == "fixed":
            value = self.median_s
            return lambda pending: value
        if self.kind == "lognormal":
            rng = random.Random(seed)
            mu = math.log(self.median_s)
            sigma = math.log(self.p95_s / self.median_s) / 1.6448536269514722  # z of the 95th percentile
            return lambda pending: rng.lognormvariate(mu, sigma)
        return None


@dataclass(frozen=True)
class RunOptions:
    pilot: str = "baseline"
    latency: LatencySpec = LatencySpec()
    sim_url: str | None = None  # airsim://HOST:PORT: fly against a server in real time (HIL)
    fly_on: bool = False  # go on to T_max after the first qualifying declaration
    save_frames: bool = True
    min_decision_period_s: float = MIN_DECISION_PERIOD_S
    t_max_s: float | None = None  # override the records' T_max (short test runs)
    structure: str | None = None  # single | multi | commander (None: each record's own)
    commander: str | None = None  # commander structure: "rule" (default) or a commander model URL


# ---- one episode ----------------------------------------------------------------------------------
def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _runtime_config(record: EpisodeRecord, options: RunOptions) -> Any:
    from episodes.scenario import takeoff_altitude_m
    from onboard.recorder import RecorderConfig
    from onboard.runtime import RuntimeConfig

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
    return run_configuration(record, options, _runtime_config(record, options))


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
    recorder = FlightRecorder(out, _recorder_config(options))
    recorder.write_metadata(**_episode_metadata(record, options, run_name))
    config = _runtime_config(record, options)
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
    _atomic_write(out / RESULT_FILE, json.dumps(summary, indent=1).encode() + b"\n")
    return summary


def _recorder_config(options: RunOptions) -> Any:
    from onboard.recorder import RecorderConfig

    return RecorderConfig(save_frames=options.save_frames)


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
    record: EpisodeRecord, config: Any, pilot: Any, recorder: Any, options: RunOptions, seed: int
) -> tuple[dict, list[float]]:
    from episodes.preflight import check_or_refuse
    from episodes.scenario import build_world
    from onboard.lockstep import LockstepDriver, measured_latency
    from onboard.runtime import OnboardRuntime
    from sim_bridge.local import LocalCamera, LocalTruth, LocalVehicle

    world = build_world(record)
    try:
        check_or_refuse(world, record, recorder)
        drone = record.drones[0].name
        camera = LocalCamera(world, drone)
        runtime = OnboardRuntime(
            config,
            LocalVehicle(world, drone),
            camera,
            pilot,
            world.clock,
            recorder,
            truth=LocalTruth(world, record.targets[0].id, {drone: camera}),
        )
        driver = LockstepDriver(runtime, world, latency=options.latency.model(seed) or measured_latency)
        result = driver.run()
        injected = [] if options.latency.kind == "measured" else driver.injected_latencies_s
        return {"reason": result.reason, "steps": result.steps, "sim_time_s": runtime.t()}, injected
    finally:
        world.close()


# ---- a suite --------------------------------------------------------------------------------------
@dataclass
class SuiteProgress:
    total: int
    done: int = 0
    skipped: int = 0
    successes: int = 0
    failed_to_run: int = 0
    sim_time_s: float = 0.0
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0

    def line(self, last: dict | None = None) -> str:
        width = 30
        filled = int(width * self.done / max(1, self.total))
        rate = self.successes / self.done if self.done else 0.0
        tail = ""
        if last is not None:
            verdict = last.get("verdict") or {}
            tail = f"  {last['run_name']}: {'success' if verdict.get('success') else 'failure'}"
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}  "
            f"SR {rate:.0%} ({self.successes}/{self.done})" + tail
        )


def _run_summary(options: RunOptions, version: dict[str, Any]) -> dict[str, Any]:
    return {
        "pilot": options.pilot,
        "latency": str(options.latency),
        "structure": options.structure,
        "commander": options.commander,
        "sim": options.sim_url or "local lock-step",
        "fly_on": options.fly_on,
        "t_max_s": options.t_max_s,
        "min_decision_period_s": options.min_decision_period_s,
        "code_version": version,
        "invoked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _complete(directory: Path) -> dict | None:
    try:
        return json.loads((directory / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return None


def _set_aside(out: Path, directory: Path) -> None:
    """An interrupted run's directory: moved under .partial/ (kept for a post-mortem, never scored)."""
    aside = out / PARTIAL_DIR / f"{directory.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(directory), str(aside))
    log.info("interrupted run %s moved to %s", directory.name, aside)


def _worker(record_json: bytes, out: str, options: RunOptions, run_name: str) -> dict:
    # Worker processes log warnings only: the parent prints the progress line.
    logging.basicConfig(level=logging.WARNING)
    from common.errors import DroneCatsError
    from episodes.records import record_from_dict

    record = record_from_dict(json.loads(record_json), run_name)
    try:
        return run_episode(record, Path(out), options, run_name)
    except KeyboardInterrupt:
        return {"run_name": run_name, "interrupted": True}
    except DroneCatsError as exc:  # reported by the parent; the suite goes on
        return {"run_name": run_name, "error": str(exc)}


def run_suite(
    suite: Suite,
    out: Path,
    options: RunOptions,
    repeat: int = 1,
    jobs: int = 1,
    say: Callable[[str], None] = lambda line: None,
    errors: list[tuple[str, str]] | None = None,
    force: bool = False,
    ray: RayOptions | None = None,
) -> list[dict]:
    """Run every episode of the suite not yet complete in `out`; returns every complete result.

    A complete episode is kept only when it was flown with this configuration
    (episode_configuration); otherwise a ConfigError names the differences before anything is
    flown, or, with `force`, the episode is set aside and flown again. Another code version is only
    reported. An episode that cannot be flown (pre-flight checks, a pilot or server that fails: a
    DroneCatsError) is reported through `say`, appended to `errors` and left without result.json, so a
    later resume tries it again; the other episodes go on. With `ray`, the episodes are Ray tasks on a
    cluster (episodes.ray_runner) and `jobs` is ignored in favour of its slots; the layout is the same."""
    from common.errors import DroneCatsError

    keep: list[tuple[str, dict]] = []
    stale: list[tuple[str, list[str]]] = []
    todo: list[tuple[SuiteEntry, str]] = []
    other_code: set[str] = set()
    version = code_version()
    for entry, run_name in iter_ids(suite, repeat):
        done = _complete(out / run_name)
        if done is not None:
            differences = config_differences(done.get("config"), episode_configuration(entry.record, options))
            if not differences:
                keep.append((run_name, done))
                flown_by = done.get("code_version") or {}
                if (flown_by.get("git"), flown_by.get("package")) != (version["git"], version["package"]):
                    other_code.add(str(flown_by.get("git") or flown_by.get("package") or "unknown"))
                continue
            stale.append((run_name, differences))
        todo.append((entry, run_name))
    if stale and not force:
        shown = "\n".join(f"  {name}: {'; '.join(diff)}" for name, diff in stale[:5])
        more = f"\n  ... and {len(stale) - 5} more" if len(stale) > 5 else ""
        raise ConfigError(
            f"{out} holds {len(stale)} complete run(s) flown with another configuration; nothing was "
            f"flown. Use another --out, or --force to fly them again:\n{shown}{more}"
        )

    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / "suite.json", msgspec.json.format(msgspec.json.encode(suite), indent=1) + b"\n")
    _atomic_write(out / "run.json", json.dumps(_run_summary(options, version), indent=1).encode() + b"\n")
    results: list[dict] = []
    progress = SuiteProgress(total=len(keep) + len(todo))
    for _, done in keep:
        results.append(done)
        progress.skipped += 1
        progress.done += 1
        progress.successes += bool((done.get("verdict") or {}).get("success"))
    for _, run_name in todo:
        if (out / run_name).exists():
            _set_aside(out, out / run_name)
    if stale:
        say(f"--force: flying {len(stale)} run(s) again (another configuration; old ones in {PARTIAL_DIR}/)")
    if progress.skipped:
        say(f"resuming: {progress.skipped} of {progress.total} runs already complete in {out}")
    if other_code:
        message = (
            f"warning: kept runs were flown by code version {', '.join(sorted(other_code))}; this is "
            f"{version['git'] or version['package']} (same configuration, so they are kept)"
        )
        log.warning("%s", message)
        say(message)
    wall0 = time.monotonic()

    def account(result: dict) -> None:
        results.append(result)
        progress.done += 1
        progress.successes += bool((result.get("verdict") or {}).get("success"))
        progress.sim_time_s += float(result.get("sim_time_s") or 0.0)
        progress.cpu_time_s += float(result.get("cpu_time_s") or 0.0)
        say(progress.line(result))

    def failed(run_name: str, message: str) -> None:
        progress.failed_to_run += 1
        if errors is not None:
            errors.append((run_name, message))
        say(f"{run_name}: could not run: {message}")

    if ray is not None:
        from episodes.ray_runner import fly_on_ray

        fly_on_ray(todo, out, options, ray, account, failed, say)
    elif jobs <= 1:
        for entry, run_name in todo:
            try:
                account(run_episode(entry.record, out / run_name, options, run_name))
            except DroneCatsError as exc:
                failed(run_name, str(exc))
    else:
        import multiprocessing

        context = multiprocessing.get_context("spawn" if options.sim_url else "fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            pending: dict[Future, str] = {}
            queue = list(todo)
            try:
                while queue or pending:
                    while queue and len(pending) < jobs:
                        entry, run_name = queue.pop(0)
                        future = pool.submit(
                            _worker, record_to_json(entry.record), str(out / run_name), options, run_name
                        )
                        pending[future] = run_name
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        run_name = pending.pop(future)
                        result = future.result()
                        if result.get("interrupted"):
                            raise KeyboardInterrupt
                        if "error" in result:
                            failed(run_name, result["error"])
                        else:
                            account(result)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    progress.wall_time_s = time.monotonic() - wall0
    ran = progress.done - progress.skipped
    if ran:
        rtf = progress.sim_time_s / progress.wall_time_s if progress.wall_time_s else float("nan")
        say(
            f"ran {ran} episodes in {progress.wall_time_s:.0f} s wall for {progress.sim_time_s:.0f} s of "
            f"simulated flight: real-time factor {rtf:.2f} with {'Ray' if ray else f'{jobs} job(s)'}; "
            "the episodes used "
            f"{progress.cpu_time_s:.0f} s of CPU ({progress.cpu_time_s / max(1, jobs):.0f} s per job slot "
            "on an otherwise idle machine)"
        )
    return results
