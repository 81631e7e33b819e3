"""`dronecats demo`: one approach episode ("go to the red car") on the built-in simulator.

The real stack end to end, with no GPU and no downloads: the PyBullet world, the onboard runtime
(actuation loop with safety, decision loop, flight recorder) flying the baseline vision pilot in
lock-step time, then the verifier's verdict on the logs it wrote. The episode runner's own path: the
world from build_world(record), the runner's configuration of the record, the drone wired and flown
by episodes.local_flight. --scene and --instruction build
a matching scene and target (dronecats.demo_scene), or are refused with the choices.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from common.actions import action_name
from common.checks import positive_float
from sim_bridge.scene_flags import add_scene_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--instruction",
        default=None,
        help="what to fly to; the demo spawns the target it names, e.g. 'go to the blue van' (default: "
        "'go to the red car' outdoors, 'go to the blue person' indoors)",
    )
    add_scene_arguments(
        parser, "residential street, blocks plaza, or indoor living room (δ 2.5 m, indoor flight profile)"
    )
    parser.add_argument(
        "--distance-m",
        type=positive_float,
        default=None,
        help="start distance to the target (default 25 m outdoors, 6 m for people and bicycles, 4 m indoors)",
    )
    parser.add_argument(
        "--t-max-s", type=positive_float, default=120.0, help="give up after this long (simulated s)"
    )
    parser.add_argument("--out", default=None, help="episode log directory (default runs/demo-TIME)")
    parser.add_argument(
        "--loop",
        default="tolerant",
        choices=["tolerant", "naive"],
        help="tolerant: keep flying the current plan while the model thinks (default); naive: wait "
        "for each reply, then execute it fully (for comparison)",
    )
    parser.add_argument(
        "--headless",
        action="store_true",
        default=True,
        help="no GUI (the default; the ground-station GUI is not part of the demo yet)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the verdict")
    parser.add_argument(
        "--pilot",
        default="baseline",
        help="baseline (default), or a model backend URL with profile=, e.g. "
        "'hf://qwen3.5-tiny?random_init=1&device=cpu&dtype=float32&profile=qwen3.5-2b' "
        "(random weights: a timing run, not a trained pilot)",
    )


def run(args: argparse.Namespace) -> int:
    import msgspec

    from common.errors import BackendError, ConfigError
    from dronecats.demo_pilot import DecisionLog, is_random_weights, make_demo_pilot
    from dronecats.demo_scene import demo_record
    from episodes.episode import runtime_config
    from episodes.local_flight import fly_record
    from episodes.logs import read_episode
    from episodes.preflight import check
    from episodes.records import record_to_json
    from episodes.run_options import RunOptions
    from episodes.scenario import build_world
    from episodes.verifier import VerifierSettings, verify
    from onboard.recorder import FlightRecorder
    from onboard.runtime import OnboardRuntime

    out = Path(args.out or f"runs/demo-{time.strftime('%Y%m%d-%H%M%S')}")
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    try:
        demo = demo_record(out.name, args.scene, args.instruction, args.distance_m, args.t_max_s, args.seed)
    except ConfigError as exc:
        print(f"dronecats demo: {exc}", file=sys.stderr)
        return 2
    record = demo.record
    target = record.targets[0]
    delta_m = record.delta_m
    try:
        pilot = make_demo_pilot(args.pilot, delta_m, record.camera)
    except (ConfigError, BackendError) as exc:
        print(f"dronecats demo: --pilot {args.pilot}: {exc}", file=sys.stderr)
        return 2
    random_weights = is_random_weights(pilot)
    decisions = DecisionLog()
    say(
        f"building the {args.scene} scene (PyBullet): a {target.colour} {target.class_} "
        f"{demo.distance_m:g} m ahead ..."
    )
    world = build_world(record)
    try:
        report = check(world, record)
        if not report.ok:
            problems = "; ".join(report.problems)
            print(
                f"dronecats demo: pre-flight checks failed: {problems} (try another --distance-m)",
                file=sys.stderr,
            )
            return 2
        # The runner's configuration of this record (episodes.episode), with the demo's --loop.
        config = msgspec.structs.replace(runtime_config(record, RunOptions()), loop=args.loop)
        recorder = FlightRecorder(out, config.recorder)
        recorder.write_metadata(**json.loads(record_to_json(record)))

        def progress(rt: OnboardRuntime) -> None:
            decisions.add(rt.state)
            flight = rt.state.snapshot()
            last = flight.last_action
            if last is None:
                return
            t = rt.actuator.last_telemetry
            pose = t.pose if t else None
            sample = rt.truth.sample(rt.config.drone) if rt.truth else None
            dist = f"{sample.distance_m:5.1f} m" if sample and sample.distance_m is not None else "?"
            where = f"({pose.x_m:5.1f}, {pose.y_m:5.1f}, alt {pose.altitude_m:4.1f})" if pose else ""
            name = action_name(last)
            say(f"t={rt.t():5.1f} s  step {flight.steps:3d}  {name:8s} target at {dist}  drone {where}")

        say(f"flying: {record.instruction!r} (pilot {pilot.name}, lock-step time, log in {out})")
        if random_weights:
            say("the pilot has RANDOM WEIGHTS: its actions are noise (valid by the schema); timing only")
        wall0 = time.monotonic()
        flight = fly_record(world, record, config, pilot, recorder, on_step=progress)
        wall_s = time.monotonic() - wall0
        runtime, result = flight.runtime, flight.flown.result
        recorder.close()
    finally:
        world.close()
        pilot.close()
    verdict = verify(read_episode(out), VerifierSettings(delta_m=delta_m, t_max_s=args.t_max_s))
    summary = {
        "success": verdict.success,
        "ne_m": None if verdict.ne_m is None else round(verdict.ne_m, 2),
        "decisive_t": None if verdict.decisive_t is None else round(verdict.decisive_t, 2),
        "declarations": verdict.declarations,
        "failure_mode": verdict.failure_mode,
        "end_reason": result.reason,
        "steps": result.steps,
        "sim_time_s": round(runtime.t(), 1),
        "wall_time_s": round(wall_s, 1),
        "log_dir": str(out),
        "pilot": pilot.name,
        "random_weights": random_weights,
        # setpoints to the vehicle (in lock-step the driver ticks them: none measured), and
        # decisions per second of episode time (lock-step time advances by each call's latency)
        "served_control_rate_hz": round(result.served_rate_hz, 2) or None,
        "decision_rate_hz": round(result.steps / runtime.t(), 3) if runtime.t() > 0 else None,
        **decisions.summary(),
    }
    say("")
    say(
        "verdict: "
        + ("SUCCESS" if verdict.success else "FAILURE")
        + f" (ne {summary['ne_m']} m, δ {delta_m} m)"
    )
    print(json.dumps(summary))
    return 0 if verdict.success else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(argparse.ArgumentParser().parse_args()))
