"""`dronecats episodes ACTION ...`: the benchmark's episode tools.

Actions are listed in ACTIONS as name -> (module, one-line help); each module defines
`add_arguments(parser)` and `run(args) -> int`, like the top-level subcommands. To add one
(run, new, report, replay ...), add a module and one line here. Action modules must stay light at
import time: all of them are imported to build the parser.
"""

from __future__ import annotations

import argparse
import importlib

# name -> (module, one-line help). Keep sorted by name.
ACTIONS: dict[str, tuple[str, str]] = {
    "airsim-settings": (
        "episodes.cli_airsim_settings",
        "write the AirSim settings.json a suite needs (vehicles, camera, ClockSpeed)",
    ),
    "export": ("episodes.cli_export", "an episode's logs as a Foxglove (MCAP) or Rerun (.rrd) recording"),
    "new": (
        "episodes.cli_new",
        "author an episode record (or generate a built-in suite), pre-flight checked",
    ),
    "report": (
        "episodes.cli_report",
        "tables (SR with Wilson intervals, failure modes), CSV and plots of a run",
    ),
    "replay": ("episodes.cli_replay", "step through an episode's frames with the chosen points drawn"),
    "run": ("episodes.cli_run", "fly a suite: lock-step or HIL, parallel, resumable, scored"),
    "verify": ("episodes.cli_verify", "score episode logs: verdict, NE, OSR, diagnostics (docs/verifier.md)"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="episodes_action", metavar="ACTION", required=True)
    for name, (module_name, help_text) in sorted(ACTIONS.items()):
        module = importlib.import_module(module_name)
        action_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(action_parser)
        action_parser.set_defaults(_episodes_run=module.run)


def run(args: argparse.Namespace) -> int:
    return int(args._episodes_run(args) or 0)
