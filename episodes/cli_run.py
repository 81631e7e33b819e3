"""`dronecats episodes run SUITE --pilot SPEC [--out DIR] [--repeat K] [--latency L] [--jobs J]
[--sim airsim://HOST:PORT] [--fly-on] [--ray ADDRESS [--sim-pool URLS] [--pilot-pool URLS]]`: fly a
suite (or one record) and score every episode.

SUITE is a suite file (episodes new --suite writes one), an episode record file, or a built-in suite
name (generated on the fly from --seed). Lock-step time on the in-process simulator by default;
--sim flies the same runtime in real time against an AirSim-compatible server. Re-running the same
command resumes: complete episodes flown with the same configuration are kept, interrupted ones are
flown again; complete ones flown with another pilot, latency, structure, record ... are refused
with the difference named (--force flies them again).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite", metavar="SUITE", help="suite file, record file, or built-in suite name")
    parser.add_argument("--pilot", default="baseline", help="baseline, scripted:FILE or a backend URL")
    parser.add_argument(
        "--structure",
        default=None,
        choices=["single", "multi", "commander"],
        help="default: each record's own. multi: one call of --pilot (a model URL) for all drones; "
        "commander: --commander orders, --pilot flies each drone (lock-step only)",
    )
    parser.add_argument(
        "--commander", default=None, help="rule (default) or a commander model URL (commander structure)"
    )
    parser.add_argument("--out", default=None, help="run directory (default runs/SUITE-TIME)")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="K", help="fly each episode K times (default 1)"
    )
    parser.add_argument(
        "--latency", default="measured", help="measured | fixed:S | lognormal:MEDIAN,P95 (seconds)"
    )
    parser.add_argument("--jobs", type=int, default=1, metavar="J", help="episodes in parallel processes")
    parser.add_argument("--sim", default=None, metavar="URL", help="airsim://HOST:PORT: fly against a server")
    ray = parser.add_argument_group("Ray cluster (the ray extra)")
    ray.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="fly each episode as a Ray task: local (a cluster in this process), auto (the running "
        "cluster) or ray://HOST:PORT; --jobs then caps the episodes in flight (default: the cluster's CPUs)",
    )
    ray.add_argument(
        "--sim-pool",
        default=None,
        metavar="URL,URL",
        help="HIL servers (airsim://HOST:PORT,...), one episode at a time each (with --ray)",
    )
    ray.add_argument(
        "--pilot-pool",
        default=None,
        metavar="URL,URL",
        help="pilot endpoints (model URLs), one episode at a time each, instead of --pilot (with --ray)",
    )
    ray.add_argument(
        "--ray-retries",
        type=int,
        default=2,
        metavar="N",
        help="times an episode whose worker or node died is flown again (default 2)",
    )
    ray.add_argument(
        "--no-ship-code",
        action="store_true",
        help="use the dronecats installed on the cluster instead of sending this checkout with each task "
        "(the run refuses if the versions differ)",
    )
    parser.add_argument(
        "--fly-on", action="store_true", help="fly on to T_max after a qualifying declaration"
    )
    parser.add_argument("--no-frames", action="store_true", help="do not save frames (replay needs them)")
    parser.add_argument("--t-max", type=float, default=None, metavar="S", help="override the records' T_max")
    parser.add_argument(
        "--only", default=None, metavar="IDS", help="comma-separated episode ids to run (a subset)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="fly again the complete runs in --out that were flown with another configuration",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of a built-in suite")
    parser.add_argument("--quiet", action="store_true", help="no progress lines; only the final summary")


def run(args: argparse.Namespace) -> int:
    from common.errors import DroneCatsError
    from episodes.run_options import LatencySpec, RunOptions
    from episodes.runner import run_suite
    from episodes.suites import open_suite

    say = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
    try:
        if args.structure in ("multi", "commander") and args.sim:
            print("dronecats episodes run: --sim flies single-drone episodes only", file=sys.stderr)
            return 2
        if args.commander and args.structure not in (None, "commander"):
            print("dronecats episodes run: --commander needs --structure commander", file=sys.stderr)
            return 2
        if (args.sim_pool or args.pilot_pool) and not args.ray:
            print("dronecats episodes run: --sim-pool and --pilot-pool need --ray", file=sys.stderr)
            return 2
        if args.sim and args.sim_pool:
            print("dronecats episodes run: give --sim or --sim-pool, not both", file=sys.stderr)
            return 2
        if args.sim:  # the URL's rules once, before any episode (not once per episode, each failing)
            from episodes.hil import parse_sim_url

            parse_sim_url(args.sim)
        if args.sim and args.jobs > 1 and not args.ray:
            # One server has one Drone1 and one set of object names: its episodes fly one at a time.
            print("dronecats episodes run: --sim flies one episode at a time (--jobs 1)", file=sys.stderr)
            return 2
        if args.repeat < 1 or args.jobs < 1:
            print("dronecats episodes run: --repeat and --jobs must be >= 1", file=sys.stderr)
            return 2
        suite = open_suite(args.suite, args.seed, args.only, say)
        options = RunOptions(
            pilot=args.pilot,
            latency=LatencySpec.parse(args.latency),
            sim_url=args.sim,
            fly_on=args.fly_on,
            save_frames=not args.no_frames,
            t_max_s=args.t_max,
            structure=args.structure,
            commander=args.commander,
        )
        out = Path(args.out or f"runs/{suite.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        say(
            f"{len(suite.episodes)} episodes x {args.repeat}, pilot {args.pilot}, "
            f"structure {args.structure or 'per record'}"
            + (f", commander {args.commander or 'rule'}" if args.structure == "commander" else "")
            + f", latency {options.latency}, "
            f"{'HIL ' + (args.sim or args.sim_pool) if args.sim or args.sim_pool else 'lock-step'}, "
            f"{'Ray ' + args.ray if args.ray else f'{args.jobs} job(s)'} -> {out}"
        )
        flyer = _flyer(args)
        errors: list[tuple[str, str]] = []
        results = run_suite(
            suite,
            out,
            options,
            repeat=args.repeat,
            jobs=args.jobs,
            say=say,
            errors=errors,
            force=args.force,
            flyer=flyer,
        )
    except KeyboardInterrupt:
        print("\ninterrupted: re-run the same command to resume", file=sys.stderr)
        return 130
    except DroneCatsError as exc:
        print(f"dronecats episodes run: {exc}", file=sys.stderr)
        return 2
    successes = sum(bool((r.get("verdict") or {}).get("success")) for r in results)
    for run_name, message in errors:
        print(f"dronecats episodes run: {run_name} could not run: {message}", file=sys.stderr)
    print(
        json.dumps(
            {"out": str(out), "episodes": len(results), "successes": successes, "not_run": len(errors)}
        )
    )
    return 1 if errors else 0


def _flyer(args: argparse.Namespace) -> Any:
    """How the suite's episodes are flown: with --ray, Ray tasks on a cluster (--sim alone is a pool
    of one); None without it: run_suite's local processes (--jobs)."""
    if not args.ray:
        return None
    from episodes.ray_runner import RayFlyer, RayOptions, parse_pool

    return RayFlyer(
        RayOptions(
            address=args.ray,
            sim_pool=parse_pool(args.sim_pool) or ((args.sim,) if args.sim else ()),
            pilot_pool=parse_pool(args.pilot_pool),
            slots=args.jobs if args.jobs > 1 else None,
            max_retries=args.ray_retries,
            ship_code=not args.no_ship_code,
        )
    )
