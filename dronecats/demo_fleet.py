"""`dronecats demo-fleet`: the main job end to end — the built-in simulator, four real onboard
processes (baseline vision pilot) and the ground station: the GUI when a display exists, headless
otherwise. Either way the run ends at the first declaration within δ of the target and visible (the
GUI a few seconds later, so it can be seen), or after --duration-s, and prints the declarations.

It is `dronecats gs --launch 4` with the demo's choices; `dronecats demo` stays the one-drone,
lock-step episode with the verifier's verdict.
"""

from __future__ import annotations

import argparse
import os

from ground_station.cli import add_structure_argument


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--drones", type=int, default=4, help="number of drones (default 4)")
    parser.add_argument("--instruction", default="go to the red car", help="the fleet's instruction")
    add_structure_argument(
        parser, "command structure: a model per drone, one model call for all, or a commander's orders"
    )
    parser.add_argument("--model", default=None, help="one-context: the model's URL")
    parser.add_argument(
        "--target-distance-m", type=float, default=14.0, help="the red car this far north (default 14 m)"
    )
    parser.add_argument("--duration-s", type=float, default=180.0, help="give up after this long (s)")
    parser.add_argument("--headless", action="store_true", help="no GUI even when a display exists")
    parser.add_argument("--log-dir", default=None, help="directory for the drones' logs (default runs/...)")


def run(args: argparse.Namespace) -> int:
    from ground_station import cli as gs_cli

    display = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    # The gs command's own parser gives every option its default (one place), the demo sets its choices.
    parser = argparse.ArgumentParser(prog="dronecats gs")
    gs_cli.add_arguments(parser)
    gs_args = parser.parse_args([])
    choices = dict(
        drones="",
        launch=args.drones,
        scene="residential",
        target_distance_m=args.target_distance_m,
        headless=args.headless or not display,
        instruction=args.instruction,
        structure=args.structure,
        model=args.model,
        commander="rule",
        expires_after_steps=6,
        mark=[f"{args.target_distance_m},0"],
        duration_s=args.duration_s,
        until="qualifying",
        export=None,
        pilot=None,
        log_dir=args.log_dir,
        screenshot=None,
        screenshot_after_s=20.0,
        map_tiles=None,
        geo_origin=None,
        quit_after_s=args.duration_s,  # the GUI: give up like the headless run
        quit_after_qualifying_s=3.0,
        traffic_hz=10.0,
        keys=None,  # --launch makes this session's CURVE keys itself
        drone_keys=None,
        insecure=False,
    )
    unknown = sorted(choices.keys() - vars(gs_args).keys())
    if unknown:  # a renamed gs option: fail here, not with an AttributeError mid-flight
        raise RuntimeError(f"demo-fleet sets gs options that do not exist: {unknown}")
    vars(gs_args).update(choices)
    return int(gs_cli.run(gs_args))
