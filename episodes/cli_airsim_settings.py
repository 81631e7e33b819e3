"""`dronecats episodes airsim-settings SUITE --out settings.json [--clock-speed X]`: the AirSim
settings.json a suite needs (SimMode Multirotor, its drones' names and start poses, the camera
profile's resolution and FOV, ClockSpeed), for a real AirSim / Cosys-AirSim or `dronecats sim --settings`.

The drones' poses are the first episode's starts (the HIL runner places the drone of every episode
itself; the names must match).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite", metavar="SUITE", help="suite file, record file, or built-in suite name")
    parser.add_argument("--out", required=True, help="settings.json to write")
    parser.add_argument("--clock-speed", type=float, default=1.0, help="ClockSpeed (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of a built-in suite")
    parser.add_argument(
        "--only",
        default=None,
        metavar="IDS",
        help="comma-separated episode ids (a subset of one camera profile)",
    )


def run(args: argparse.Namespace) -> int:
    from common.camera import camera_profile
    from common.errors import DroneCatsError
    from common.pose import Pose
    from episodes.suites import open_suite
    from sim_bridge.settings import settings_for

    try:
        if not args.clock_speed > 0:
            raise ValueError(f"--clock-speed {args.clock_speed} must be > 0")
        suite = open_suite(args.suite, args.seed, args.only)
        if not suite.episodes:
            raise ValueError(f"suite {suite.name!r} has no episodes")
        first = suite.episodes[0].record
        cameras = {e.record.camera for e in suite.episodes}
        if len(cameras) > 1:
            raise ValueError(
                f"suite {suite.name!r} mixes camera profiles {sorted(cameras)}: one settings file each; "
                "choose the episodes of one with --only IDS, or a built-in suite of one profile "
                "(single-outdoor)"
            )
        vehicles = [(d.name, Pose.from_list(list(d.start_pose))) for d in first.drones]
        settings = settings_for(vehicles, camera_profile(first.camera), args.clock_speed)
        Path(args.out).write_text(json.dumps(settings, indent=2) + "\n")
    except (DroneCatsError, ValueError, OSError) as exc:
        print(f"dronecats episodes airsim-settings: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"out": args.out, "vehicles": [n for n, _ in vehicles], "camera": first.camera}))
    return 0
