"""`--scene` and `--seed`: how every command that builds a built-in scene names it and its layout."""

from __future__ import annotations

import argparse


def add_scene_arguments(
    parser: argparse.ArgumentParser, scene_help: str = "the built-in scene (default residential)"
) -> None:
    from sim_bridge.sim.scenes import SCENES  # the scenes' names, one list for every command

    parser.add_argument("--scene", default="residential", choices=list(SCENES), help=scene_help)
    parser.add_argument("--seed", type=int, default=0, help="seed of the scene's random layout (default 0)")
