"""`dronecats episodes new`: author one episode record, or generate a built-in suite, checked before
it is written.

    dronecats episodes new --scene residential --target car@red --task approach --distance 18 \\
        --bearing 5 --out ep.json [--distractor suv@red:30,-1 ...]
    dronecats episodes new --suite single --seed 0 --out episodes/suites/single.json

One record: the drone starts at --start x,y (the scene's first spawn by default) with its yaw chosen so
that the target lies at --bearing (search types: turned a further 180° away); the target is placed
--distance metres away along that line. The pre-flight checks (episodes.preflight) must pass, else
the problems are printed and nothing is written (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from common.checks import finite_float, positive_float
from sim_bridge.scene_flags import add_scene_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--suite", default=None, help="generate a built-in suite instead (single, commanding, smoke, ...)"
    )
    add_scene_arguments(parser)
    parser.add_argument("--target", default="car@red", help="asset string KIND[@COLOUR], e.g. car@red")
    parser.add_argument(
        "--task",
        default="approach",
        choices=["approach", "search", "track", "search+track"],
        help="approach: the target ahead; search: the drone starts facing away; track: the target "
        "drives off (search+track: both)",
    )
    parser.add_argument("--distance", type=positive_float, default=15.0, metavar="M", help="start distance")
    parser.add_argument(
        "--bearing", type=finite_float, default=0.0, metavar="DEG", help="target bearing (+ right)"
    )
    parser.add_argument("--start", default=None, metavar="X,Y", help="drone start (world NED metres)")
    parser.add_argument(
        "--heading", type=finite_float, default=0.0, metavar="DEG", help="direction to the target"
    )
    parser.add_argument("--instruction", default=None, help='default: "go to the COLOUR KIND"')
    parser.add_argument(
        "--distractor", action="append", default=[], metavar="ASSET:X,Y", help="e.g. person@red:20,5"
    )
    parser.add_argument("--id", default=None, help="episode id (default: SCENE-TASK)")
    parser.add_argument("--out", required=True, help="file to write (record or suite JSON)")
    parser.add_argument("--force", action="store_true", help="write even when a pre-flight check fails")


def _object(obj_id: str, asset: str, pose: tuple[float, float, float, float], **kw: object):
    from episodes.records import SceneObject

    kind, _, colour = asset.partition("@")
    kind, _, text = kind.partition(":")
    return SceneObject(obj_id, kind, pose, colour=colour or None, inscription=text or None, **kw)  # type: ignore[arg-type]


def run(args: argparse.Namespace) -> int:
    from common.errors import DroneCatsError
    from common.pose import wrap_deg
    from episodes.preflight import Expectation, check
    from episodes.records import DEFAULT_DELTA_M, DEFAULT_T_MAX_S, DroneStart, EpisodeRecord
    from episodes.scenario import build_world
    from episodes.suites import ROUTE_MARGIN, SPEED_M_S, SUITES, Suite, SuiteEntry, generate, save_suite

    try:
        if args.suite:
            if args.suite == "commanding":
                from episodes.commanding_suite import generate_commanding

                suite = generate_commanding(args.seed)
                save_suite(suite, args.out)
                print(json.dumps({"out": args.out, "episodes": len(suite.episodes)}))
                return 0
            if args.suite not in SUITES:
                print(
                    f"dronecats episodes new: unknown suite {args.suite!r} ({sorted(SUITES)})",
                    file=sys.stderr,
                )
                return 2
            rejected: list[str] = []
            suite = generate(
                SUITES[args.suite](),
                seed=args.seed,
                name=args.suite,
                on_reject=lambda record, problems: rejected.append(record.id),
            )
            save_suite(suite, args.out)
            print(
                json.dumps(
                    {"out": args.out, "episodes": len(suite.episodes), "rejected_layouts": len(rejected)}
                )
            )
            return 0
        environment = "indoor" if args.scene == "indoor" else "outdoor"
        if args.start:
            sx, sy = (float(v) for v in args.start.split(","))
        else:
            sx, sy = {"residential": (0.0, 0.0), "blocks": (0.0, 0.0), "indoor": (-5.5, 0.0)}[args.scene]
        h = math.radians(args.heading)
        tx, ty = sx + args.distance * math.cos(h), sy + args.distance * math.sin(h)
        search = args.task.startswith("search")
        yaw = wrap_deg(args.heading - args.bearing + (180.0 if search else 0.0))
        moving = args.task in ("track", "search+track")
        path = speed = None
        if moving:
            speed = SPEED_M_S[environment]
            length = speed * DEFAULT_T_MAX_S[environment] * ROUTE_MARGIN  # longer than it can cover
            path = [(tx, ty, 0.0), (tx + length * math.cos(h), ty + length * math.sin(h), 0.0)]
        target = _object("ep_target", args.target, (tx, ty, 0.0, args.heading), path=path, speed_m_s=speed)
        distractors = []
        for i, spec in enumerate(args.distractor, 1):
            asset, _, where = spec.rpartition(":")
            dx, dy = (float(v) for v in where.split(","))
            distractors.append(_object(f"ep_distractor_{i}", asset, (dx, dy, 0.0, 0.0)))
        noun = " ".join(p for p in (target.colour, target.class_) if p)
        record = EpisodeRecord(
            id=args.id or f"{args.scene}-{args.task.replace('+', '_')}",
            scene=args.scene,
            task_type=args.task,
            instruction=args.instruction or f"go to the {noun}",
            environment=environment,  # type: ignore[arg-type]
            delta_m=DEFAULT_DELTA_M[environment],
            t_max_s=DEFAULT_T_MAX_S[environment],
            drones=[DroneStart("Drone1", (sx, sy, 0.0, yaw))],
            targets=[target],
            distractors=distractors,
            flight_profile=environment,
            camera=environment,
            seed=args.seed,
        )
        expect = Expectation(args.distance, wrap_deg(args.bearing + (180.0 if search else 0.0)), not search)
        world = build_world(record)
        try:
            report = check(world, record, expect)
        finally:
            world.close()
    except (DroneCatsError, ValueError) as exc:
        print(f"dronecats episodes new: {exc}", file=sys.stderr)
        return 2
    for problem in report.problems:
        print(f"pre-flight: {problem}", file=sys.stderr)
    if not report.ok and not args.force:
        return 1
    save_suite(Suite(record.id, [SuiteEntry(record, expect)], args.seed), args.out)
    print(
        json.dumps(
            {"out": args.out, "id": record.id, "occupancy": round(report.occupancy, 4), "ok": report.ok}
        )
    )
    return 0
