"""Rate-jitter benchmark in real time, process-separated (issue 25): bench_jitter's scenario, flown
by the programs a deployment runs.

Per episode, three processes on this host, all on the wall clock:
  `dronecats sim`          the built-in simulator at real time (clock speed 1), the episode seed's
                           residential scene, the red car spawned 14 m ahead (AirSim RPC);
  `dronecats serve-pilot`  the baseline pilot behind its OpenAI-compatible server, each reply held
                           back to the seed's drawn latency (`--latency-draws`: the same draws as
                           the lock-step run, so the pairing holds);
  `dronecats onboard`      the runtime, flying Drone1 over AirSim RPC with `--pilot openai://...`
                           and bench_jitter's runtime configuration (loop, latency goal, δ, floor),
                           measuring the car with `--truth-target` (the simulator's truth).
The car's route (bench_jitter.target_route) is set over RPC (dcSetObjectPath) when the drone leaves
the ground, as the lock-step run starts it with the climb. Scored as bench_jitter, from the
runtime's logs, whose distances and visibility are the simulator's: mean distance to the target's
centre from t = 15 s, time inside δ, SR by the scripted declaration; with the measured decision
periods and the served control rate and its jitter.

Serial by default (one episode at a time: its three real-time processes share the host with nothing
else of ours; --jobs N flies N at once where cores are free); about T_max + 10 s of wall time per
episode (process start, climb).

    .venv/bin/python benchmarks/bench_jitter_processes.py --seed-from 10 --seeds 8 --json rt.json
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_jitter as bench  # the scenario, the latency draws, the scoring
import bench_jitter_realtime as realtime  # the report and the decision periods

from common import procs
from common.procs import dronecats_cmd, stop_process, subprocess_env

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 60.0
LIFTOFF_M = 0.2  # the drone has left the ground once this far up: the car's route starts then
MODEL_PROFILE = "qwen3.5-2b"  # the openai:// client's prompt and reply format (the baseline answers any)


def start_and_read(argv: list[str], marker: str, log: IO[str]) -> tuple[subprocess.Popen, str]:
    """common.procs.start_and_read with stderr to `log` as well."""
    return procs.start_and_read(argv, marker, log, STARTUP_TIMEOUT_S, stderr=log)


def start_route_at_liftoff(
    port: int, seed: int, t_max_s: float, speed_m_s: float, stop: threading.Event
) -> None:
    """Set the car's route over RPC once Drone1 is LIFTOFF_M up (until `stop`)."""
    import airsim

    client = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=30)
    route = [list(p) for p in bench.target_route(seed, t_max_s, speed_m_s)]
    while not stop.is_set():
        if -client.simGetVehiclePose(vehicle_name="Drone1").position.z_val >= LIFTOFF_M:
            client.client.call("dcSetObjectPath", "target", route, speed_m_s)
            return
        stop.wait(0.02)


def fly_processes(seed: int, latency_kind: str, loop_name: str, t_max_s: float, speed_m_s: float) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"jitter-proc-{speed_m_s}-{latency_kind}-{loop_name}-{seed}-"))
    work = Path(tempfile.mkdtemp(prefix="jitter-proc-work-"))
    draws = work / "latency_draws.json"
    draws.write_text(json.dumps(bench.latency_draws(latency_kind, seed)))
    config = work / "onboard.yaml"  # JSON is YAML
    import msgspec

    runtime_config = bench.runtime_config(
        loop_name, t_max_s, actuation_rt_priority=0, nice=0, prearm_check=False
    )
    config.write_text(json.dumps(msgspec.to_builtins(runtime_config)))
    procs: list[subprocess.Popen] = []
    stop = threading.Event()
    with (work / "sim.log").open("w") as sim_log, (work / "pilot.log").open("w") as pilot_log:
        try:
            spawn = f"target={bench.TARGET_ASSET}:{bench.TARGET_START_N_M:g},0"
            sim, line = start_and_read(
                dronecats_cmd(
                    "sim", "--scene", "residential", "--seed", str(seed), "--port", "0",
                    "--clock-speed", "1", "--camera-gimbal", "level", "--spawn", spawn,
                ),
                "listening on",
                sim_log,
            )  # fmt: skip
            procs.append(sim)
            sim_port = int(line.rsplit(":", 1)[1])
            pilot, line = start_and_read(
                dronecats_cmd(
                    "serve-pilot", "--pilot", "baseline", "--port", "0", "--delta-m", f"{bench.DELTA_M:g}",
                    "--latency-draws", str(draws),
                ),
                "listening on",
                pilot_log,
            )  # fmt: skip
            procs.append(pilot)
            pilot_url = line.rsplit(" ", 1)[1]  # http://127.0.0.1:PORT/v1
            router = threading.Thread(
                target=start_route_at_liftoff, args=(sim_port, seed, t_max_s, speed_m_s, stop), daemon=True
            )
            router.start()
            wall0 = time.monotonic()
            onboard = subprocess.run(
                dronecats_cmd(
                    "onboard",
                    "--vehicle", f"airsim://127.0.0.1:{sim_port}/Drone1",
                    "--pilot", f"openai{pilot_url.removeprefix('http')}?profile={MODEL_PROFILE}&retries=0",
                    "--instruction", runtime_config.instruction,
                    "--log-dir", str(out),
                    "--config", str(config),
                    "--truth-target", "target",
                ),
                env=subprocess_env(),
                capture_output=True,
                text=True,
                timeout=t_max_s + 120.0,
            )  # fmt: skip
            wall_s = time.monotonic() - wall0
        finally:
            stop.set()
            for proc in reversed(procs):
                stop_process(proc)
    (work / "onboard.log").write_text(onboard.stdout + onboard.stderr)
    if onboard.returncode != 0:
        raise SystemExit(
            f"dronecats onboard exited {onboard.returncode} (logs in {work}): {onboard.stderr[-800:]}"
        )
    summary = json.loads(onboard.stdout.strip().splitlines()[-1])
    episode = json.loads((out / "episode.json").read_text())["run"]
    periods = realtime._decision_periods_s(out)
    condition = (seed, latency_kind, loop_name, t_max_s, speed_m_s)
    stale = int(episode["counters"]["stale"])
    return {
        **bench.episode_row(condition, out, summary["steps"], stale, wall_s, t_max_s),
        "served_control_rate_hz": summary["served_rate_hz"],
        "served_control_jitter_ms": episode.get("served_control_jitter_ms", math.nan),
        "decision_period_median_s": realtime.quantile(periods, 0.5),
        "decision_period_p95_s": realtime.quantile(periods, 0.95),
        "injected_median_s": realtime.quantile(
            bench.latency_draws(latency_kind, seed)[: summary["steps"]], 0.5
        ),
        "work_dir": str(work),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    realtime.add_arguments(parser)
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="episodes flown at once, each with its own three processes (default 1: a real-time run "
        "measures its host; more only where the cores are idle)",
    )
    args = parser.parse_args()
    loops, latencies, results = realtime.checked(args)
    if args.jobs < 1:
        raise SystemExit("--jobs must be >= 1")
    if results is None:
        from concurrent.futures import ThreadPoolExecutor

        results = []
        conditions = [
            (seed, lat, loop, args.t_max, args.target_speed)
            for seed in range(args.seed_from, args.seed_from + args.seeds)
            for lat in latencies
            for loop in loops
        ]
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # each episode is its own processes
            for result in pool.map(lambda c: fly_processes(*c), conditions):
                results.append(result)
                if args.json:  # rewritten as episodes finish: an interrupted run keeps what it flew
                    Path(args.json).write_text(json.dumps(results, indent=1))
    print("process-separated: dronecats sim + serve-pilot + onboard")
    realtime.print_report(results, loops, latencies, args.target_speed, args.t_max)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
