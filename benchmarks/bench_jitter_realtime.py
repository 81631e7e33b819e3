"""Rate-jitter benchmark in real time (issue 25): bench_jitter's scenario, flown on the clock.

The same scene and paired seeds as benchmarks/bench_jitter.py (a red car on a zig-zag route, the
baseline pilot, δ 5 m, altitude floor 2.5 m) and the same latency draws (fixed / jittered / slow),
but nothing is frozen: the built-in simulator's world runs in its own real-time thread (what
`dronecats sim` runs behind its RPC server), and the onboard runtime runs its threaded loops as
`dronecats onboard` does (actuation thread at 20 Hz, decision loop), while the pilot's reply is
held back by the drawn latency on the runtime's clock. Capture, rendering, detection and planning
then cost real time on top of the injected latency, and the host's load shows in both loops.
Scored as bench_jitter (mean distance to the target's centre from t = 15 s, time inside δ, SR by
the scripted declaration), with the measured decision periods and the served control rate and its jitter.

Runs serially (one episode at a time: a real-time run shares the machine with nothing of its own);
about T_max + 10 s of wall time per episode.

    .venv/bin/python benchmarks/bench_jitter_realtime.py --seed-from 10 --seeds 8 --json rt.json

Not the process-separated variant (that is benchmarks/bench_jitter_processes.py): here the
simulator is in-process (no AirSim RPC between the drone and the world) and so is the pilot (no
serve-pilot HTTP hop).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_jitter as bench  # the scenario, the latency draws, the scoring

CLIMB_TIMEOUT_S = 30.0


class DelayedPilot:
    """A pilot whose reply comes `next(draws)` seconds (on `clock`) after it was asked."""

    def __init__(self, inner: Any, clock: Any, draws: list[float]) -> None:
        self.inner = inner
        self.clock = clock
        self.draws = iter(draws)
        self.name = f"{inner.name}+latency"
        self.injected_s: list[float] = []

    def decide(self, observation: Any) -> Any:
        asked_s = self.clock.now()
        decision = self.inner.decide(observation)
        delay_s = next(self.draws)
        self.injected_s.append(delay_s)
        self.clock.sleep_until(asked_s + delay_s)
        return decision

    def identity(self) -> Any:  # the rest of the Pilot protocol: the wrapped pilot's
        return self.inner.identity()

    def canonical_focal_px(self, camera: Any) -> float | None:
        return self.inner.canonical_focal_px(camera)

    def close(self) -> None:
        self.inner.close()


def climbing_vehicle(world: Any, name: str) -> Any:
    """The in-process vehicle with a take-off that returns once up, as a real-time AirSim take-off
    does (its future is joined): the in-process one only starts the climb, for lock-step drivers."""
    from sim_bridge.local import LocalVehicle

    class ClimbingVehicle(LocalVehicle):
        def takeoff(self, altitude_m: float) -> None:
            home_alt = self.telemetry().pose.altitude_m
            super().takeoff(altitude_m)
            deadline = time.monotonic() + CLIMB_TIMEOUT_S
            while self.telemetry().pose.altitude_m - home_alt < 0.95 * altitude_m:
                if time.monotonic() > deadline:
                    raise SystemExit(f"take-off did not reach {altitude_m:.1f} m in {CLIMB_TIMEOUT_S:.0f} s")
                time.sleep(0.05)

    return ClimbingVehicle(world, name)


def fly_realtime(seed: int, latency_kind: str, loop_name: str, t_max_s: float, speed_m_s: float) -> dict:
    from models.baseline.pilot import BaselinePilot
    from onboard.assembly import assemble
    from onboard.recorder import FlightRecorder, RecorderConfig
    from sim_bridge.local import LocalCamera, LocalTruth

    world, target = bench.build_scene(seed, t_max_s, speed_m_s)
    out = Path(tempfile.mkdtemp(prefix=f"jitter-rt-{speed_m_s}-{latency_kind}-{loop_name}-{seed}-"))
    try:
        camera = LocalCamera(world, "Drone1")
        # bench_jitter's configuration; in addition, no real-time priority or negative nice for the
        # runtime's threads (the benchmark shares its host: it must not starve other work on it).
        config = bench.runtime_config(loop_name, t_max_s, actuation_rt_priority=0, nice=0, prearm_check=False)
        pilot = DelayedPilot(
            BaselinePilot(delta_m=bench.DELTA_M), world.clock, bench.latency_draws(latency_kind, seed)
        )
        runtime = assemble(
            config,
            climbing_vehicle(world, "Drone1"),
            pilot,
            world.clock,
            FlightRecorder(out, RecorderConfig(save_frames=False)),
            camera=camera,
            truth=LocalTruth(world, target.name, {"Drone1": camera}),
        )
        world.start()  # the simulator's real-time loop
        wall0 = time.monotonic()
        runtime.start()  # returns once up; episode time starts there, as after a lock-step climb
        result = runtime.run()
        wall_s = time.monotonic() - wall0
        sim_s = runtime.t()
        served_jitter_ms = runtime.actuation.served_jitter_ms()
        runtime.recorder.close()
    finally:
        world.close()
    periods = _decision_periods_s(out)
    condition = (seed, latency_kind, loop_name, t_max_s, speed_m_s)
    return {
        **bench.episode_row(condition, out, result.steps, result.counters.stale, wall_s, sim_s),
        "served_control_rate_hz": result.served_rate_hz,
        "served_control_jitter_ms": served_jitter_ms,
        "decision_period_median_s": statistics.median(periods) if periods else math.nan,
        "decision_period_p95_s": quantile(periods, 0.95),
        "injected_median_s": statistics.median(pilot.injected_s) if pilot.injected_s else math.nan,
    }


def _decision_periods_s(out: Path) -> list[float]:
    """Seconds between consecutive replies applied (steps.jsonl), on the runtime's clock."""
    times = []
    for line in (out / "steps.jsonl").read_text().splitlines():
        if line.strip():
            times.append(float(json.loads(line)["t"]))
    return [b - a for a, b in itertools.pairwise(times)]


def quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The real-time variants' shared command line (this one's and bench_jitter_processes')."""
    parser.add_argument("--seeds", type=int, default=8, help="how many seeds")
    parser.add_argument("--seed-from", type=int, default=10, help="first seed (the report seeds start at 10)")
    parser.add_argument("--t-max", type=float, default=45.0, help="episode length, s (default 45)")
    parser.add_argument("--target-speed", type=float, default=0.3, help="m/s")
    parser.add_argument(
        "--loops", default="tolerant,naive", help=f"comma-separated, of {', '.join(bench.LOOPS)}"
    )
    parser.add_argument("--latencies", default=",".join(bench.LATENCIES), help="comma-separated")
    parser.add_argument(
        "--json", default=None, help="also write every episode's figures here (as they finish)"
    )
    parser.add_argument("--from-json", default=None, help="print the report of an earlier --json run")


def checked(args: argparse.Namespace) -> tuple[list[str], list[str], list[dict] | None]:
    """The loops and latencies asked for, and the --from-json results (None: fly them); a bad
    argument exits with one line."""
    loops, latencies = args.loops.split(","), args.latencies.split(",")
    bad = [x for x in loops if x not in bench.LOOPS] + [x for x in latencies if x not in bench.LATENCIES]
    if bad:
        raise SystemExit(
            f"unknown loop(s)/latency(ies) {bad}: "
            f"loops {list(bench.LOOPS)}, latencies {list(bench.LATENCIES)}"
        )
    if args.seeds < 1 or args.seed_from < 0:
        raise SystemExit("--seeds must be >= 1 and --seed-from >= 0")
    if not (math.isfinite(args.t_max) and args.t_max > bench.DECLARE_FROM_S):
        raise SystemExit(
            f"--t-max {args.t_max}: must be > {bench.DECLARE_FROM_S:.0f} s (scoring starts there)"
        )
    if not (math.isfinite(args.target_speed) and args.target_speed > 0):
        raise SystemExit(f"--target-speed {args.target_speed}: must be > 0")
    if not args.from_json:
        return loops, latencies, None
    try:
        return loops, latencies, json.loads(Path(args.from_json).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--from-json {args.from_json}: {exc}") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()
    loops, latencies, results = checked(args)
    if results is None:
        results = []
        for seed in range(args.seed_from, args.seed_from + args.seeds):
            for lat in latencies:
                for loop in loops:
                    results.append(fly_realtime(seed, lat, loop, args.t_max, args.target_speed))
                    if args.json:
                        Path(args.json).write_text(json.dumps(results, indent=1))
    print_report(results, loops, latencies, args.target_speed, args.t_max)
    return 0


def print_report(
    results: list[dict], loops: list[str], latencies: list[str], speed_m_s: float, t_max_s: float
) -> None:
    seeds = len({r["seed"] for r in results})
    print(f"{len(results)} real-time episodes, {seeds} seeds, T_max {t_max_s:.0f} s")
    print(f"\n=== real time, target at {speed_m_s} m/s ===")
    bench.report(results, loops, speed_m_s)
    print("\nreal time: decision period median / p95 s, served control rate and its jitter (means)")
    for lat in latencies:
        for loop in loops:
            rs = [r for r in results if r["latency"] == lat and r["loop"] == loop]
            if not rs:
                continue
            print(
                f"  {lat:9s} {loop:14s} {statistics.fmean(r['decision_period_median_s'] for r in rs):5.2f} / "
                f"{statistics.fmean(r['decision_period_p95_s'] for r in rs):5.2f}   "
                f"{statistics.fmean(r['served_control_rate_hz'] for r in rs):5.1f} Hz "
                f"± {statistics.fmean(r.get('served_control_jitter_ms', math.nan) for r in rs):5.1f} ms"
            )


if __name__ == "__main__":
    raise SystemExit(main())
