"""`dronecats sim`: sim_bridge's simulator server, with `--episode` records read by the episodes package.

The simulator imports nothing of episodes (docs/architecture.md#dependency-rules); this subcommand
is where the two meet: it hands sim_bridge a reader that turns `EP.json[#ID]` into the scene to build.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from sim_bridge.cli import EpisodeScene, add_arguments

if TYPE_CHECKING:
    from episodes.records import EpisodeRecord
    from sim_bridge.sim.world import World

__all__ = ["add_arguments", "read_episode", "run"]


def run(args: argparse.Namespace) -> int:
    from sim_bridge import cli

    return cli.run(args, read_episode)


def read_episode(text: str) -> EpisodeScene:
    """The scene of one episode of a suite file: `EP.json` (it must hold one) or `EP.json#ID`."""
    from episodes.scenario import spawn_objects, start_pose

    record = _episode_record(text)

    def populate(world: World) -> list[str]:
        spawn_objects(world, record)
        return [o.id for o in (*record.targets, *record.distractors)]

    return EpisodeScene(
        label=record.id,
        scene=record.scene,
        seed=record.seed,
        vehicles=[(d.name, start_pose(record, i)) for i, d in enumerate(record.drones)],
        populate=populate,
    )


def _episode_record(text: str) -> EpisodeRecord:
    from common.errors import ConfigError
    from episodes.suites import load_suite

    path, _, wanted = text.partition("#")
    suite = load_suite(path)
    ids = [e.record.id for e in suite.episodes]
    if wanted:
        for entry in suite.episodes:
            if entry.record.id == wanted:
                return entry.record
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        raise ConfigError(f"--episode {text}: no episode {wanted!r} in {path} ({shown})")
    if len(ids) != 1:
        raise ConfigError(f"--episode {path} holds {len(ids)} episodes: pick one with {path}#{ids[0]} ...")
    return suite.episodes[0].record
