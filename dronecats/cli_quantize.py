"""`dronecats quantize`: W4A16 (GPTQ) for the onboard model, calibrated on flight-domain samples.

    dronecats quantize --model /models/qwen3.5-2b --out /models/qwen3.5-2b-w4a16 --profile qwen3.5-2b
    dronecats quantize --model qwen3.5-tiny --random-init --out /tmp/q --group-size 32 --samples 6

The calibration frames are rendered here from the episode suite's scenes (this module may import
the simulator; models.quantize may not): each episode's drone at its start pose and further
along toward its target, the view turned to it, at the 1280x720 camera (the pilot shrinks it
to 640 wide as in flight). Writes the checkpoint, quantize_report.json and serving-profile.yaml.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

DEFAULT_SUITE = Path(__file__).resolve().parents[1] / "episodes" / "suites" / "single.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", required=True, help="model directory, or with --random-init a built-in architecture"
    )
    parser.add_argument("--out", required=True, help="checkpoint directory to write")
    parser.add_argument(
        "--random-init", action="store_true", help="random weights (timing only): for tests and GPU checks"
    )
    parser.add_argument(
        "--profile", default="qwen3.5-2b", help="model profile: the prompts (default qwen3.5-2b)"
    )
    parser.add_argument(
        "--method",
        default="gptq",
        choices=["gptq", "rtn"],
        help="gptq (llm-compressor, calibrated; default) or rtn (round to nearest, no calibration)",
    )
    parser.add_argument(
        "--group-size", type=int, default=128, help="weights sharing one scale per group (default 128)"
    )
    parser.add_argument("--samples", type=int, default=32, help="calibration samples (default 32)")
    parser.add_argument("--suite", default=str(DEFAULT_SUITE), help="episode suite for the frames")
    parser.add_argument(
        "--dtype",
        default="bfloat16",
        choices=["bfloat16", "float16", "float32"],
        help="dtype of the 16-bit parts and of the calibration run (default bfloat16)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the random weights (--random-init) and of the calibration views and prompts",
    )
    parser.add_argument("--serving-name", default=None, help="serving profile name (default OUT's name)")


def views_per_episode(samples: int) -> int:
    return max(1, min(4, samples // 2))


def flight_views(suite_path: str, samples: int, seed: int = 0) -> list[Any]:
    """`samples` frames from the suite's episodes, spread over its scenes."""
    from common.pose import Pose
    from episodes.scenario import build_world, object_pose, start_pose, takeoff_altitude_m
    from episodes.suites import load_suite
    from models.quantize import FlightView

    entries = load_suite(suite_path).episodes
    by_scene: dict[str, list[Any]] = {}
    for entry in entries:
        by_scene.setdefault(entry.record.scene, []).append(entry.record)
    order = [
        records[i]
        for i in range(max(map(len, by_scene.values())))
        for records in by_scene.values()
        if i < len(records)
    ]
    per = views_per_episode(samples)
    views: list[Any] = []
    for record in order:
        if len(views) >= samples:
            break
        world = build_world(record)
        try:
            start = start_pose(record)
            goal = object_pose(record.targets[0]) if record.targets else start
            altitude = takeoff_altitude_m(record)
            for k in range(min(per, samples - len(views))):
                frac = 0.6 * k / max(1, per - 1)
                x = start.x_m + frac * (goal.x_m - start.x_m)
                y = start.y_m + frac * (goal.y_m - start.y_m)
                yaw = math.degrees(math.atan2(goal.y_m - y, goal.x_m - x)) + 15.0 * math.sin(seed + k)
                pose = Pose(x, y, -altitude, yaw)
                image = world.render(record.drones[0].name, segmentation=False, vehicle_pose=pose).image_bgr
                views.append(FlightView(image, record.instruction))
        finally:
            world.close()
    return views


def run(args: argparse.Namespace) -> int:
    from common.errors import ConfigError

    if args.samples < 3:
        print("quantize: --samples must be >= 3 (two are held out to measure the error)", file=sys.stderr)
        return 2
    try:
        from models.profile import load_profile
        from models.quantize import (
            calibration_requests,
            check_group_size,
            check_recipe,
            load_for_quantization,
            quantize,
            write_serving_profile,
        )

        profile = load_profile(args.profile)
        # The model (torch, llm-compressor, triton) before the simulator: triton's LLVM loaded
        # after Mesa's (the simulator's EGL renderer) crashes the process; the other order works.
        loaded = load_for_quantization(args.model, args.random_init, args.dtype, args.seed)
        check_recipe(args.method, args.group_size)  # before the frames are rendered: a misfit is seconds
        check_group_size(loaded.model, args.group_size)
        views = flight_views(args.suite, args.samples, args.seed)
        requests = calibration_requests(profile, views, args.seed)
        if len(views) < args.samples:
            print(
                f"quantize: the suite gave {len(views)} of the {args.samples} samples asked", file=sys.stderr
            )
        report = quantize(loaded, requests, args.out, args.method, args.group_size)
        print(
            f"quantize: calibrated on {report.samples} samples; {report.held_out} more held out to "
            f"measure the logits' error ({len(requests)} drawn)",
            file=sys.stderr,
        )
        name = args.serving_name or Path(args.out).resolve().name
        serving = write_serving_profile(args.out, name, profile.name, report)
    except ImportError as exc:
        print(f"quantize: needs the hf extra ({exc}): pip install 'dronecats[hf]'", file=sys.stderr)
        return 2
    except (ConfigError, OSError) as exc:
        print(f"quantize: {exc}", file=sys.stderr)
        return 2
    import msgspec

    print(
        json.dumps({**msgspec.to_builtins(report), "checkpoint": args.out, "serving_profile": str(serving)})
    )
    return 0
