"""`dronecats SUBCOMMAND ...`: one entry point whose subcommands import only what they need.

Each subcommand is a module with `add_arguments(parser)` and `run(args) -> int`, named here by
string so that `dronecats parse` never imports the simulator, Qt or ZeroMQ.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dronecats import __version__

# name -> (module, one-line help). Keep sorted by name.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "bench-model": ("dronecats.cli_bench_model", "model latency benchmark on simulator frames"),
    "calibrate": ("calibration.cli", "checkerboard camera calibration to a camera profile YAML"),
    "demo": ("dronecats.demo", "fly one approach episode on the built-in simulator and print the verdict"),
    "demo-fleet": (
        "dronecats.demo_fleet",
        "four drones on the built-in simulator with the ground station (GUI, or headless without a display)",
    ),
    "episodes": ("episodes.cli", "episode tools: verify (AGENT.md §6)"),
    "explain": ("onboard.cli_explain", "print the controller's plan for one action (AGENT.md §3)"),
    "gs": (
        "ground_station.cli",
        "the ground station: PyQt6 app, or --headless for scripts (fleet structures)",
    ),
    "keys": ("common.cli_keys", "generate and list CURVE keypairs for the drone/ground-station link"),
    "onboard": ("onboard.cli", "fly one drone: vehicle URL + pilot URL (+ ground-station link)"),
    "parse": ("models.cli_parse", "parse a model reply into the normalised action (AGENT.md §3)"),
    "quantize": (
        "dronecats.cli_quantize",
        "W4A16 (GPTQ) checkpoint + serving profile, flight-domain calibration",
    ),
    "serve-pilot": (
        "models.cli_serve",
        "OpenAI-compatible server in front of a pilot (baseline, scripted, model)",
    ),
    "serve-model": (
        "models.cli_serve_model",
        "start a model engine (serving profile), wait, warm it up",
    ),
    "sim": ("sim_bridge.cli", "the built-in simulator with an AirSim-compatible RPC server"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dronecats", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"dronecats {__version__}")
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING (default), ERROR")
    parser.add_argument("--log-file", default=None, help="also write the log to this file")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in sorted(SUBCOMMANDS.items()):
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    # Parse once to find the subcommand, then let its module add its own arguments.
    # (-h is held back from this first pass, so that a subcommand's help lists its own arguments)
    pre, _ = parser.parse_known_args([a for a in argv if a not in ("-h", "--help")])
    if pre.command is None:
        if "-h" in argv or "--help" in argv:
            parser.print_help()
            return 0
        parser.print_help()
        return 2
    module = importlib.import_module(SUBCOMMANDS[pre.command][0])
    sub_action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    module.add_arguments(sub_action.choices[pre.command])
    args = parser.parse_args(argv)

    from common.logsetup import configure_logging

    configure_logging(args.log_level, args.log_file)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
