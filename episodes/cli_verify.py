"""`dronecats episodes verify DIR [--delta M] [--t-max S]`: the verdict and diagnostics as JSON.

DIR is one episode directory (it holds episode.json, steps.jsonl or trace.jsonl): one JSON object.
Otherwise every sub-directory that is an episode directory is scored, and the output is one JSON
object {"episodes": [...], "aggregate": {...}}. Unparsable log lines are listed under `problems`
of their episode. Exit status 2 (one line on stderr) when DIR holds no episode or an episode
cannot be scored (no usable episode.json and no --delta/--t-max).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="an episode directory, or a directory of them")
    parser.add_argument(
        "--delta", type=float, default=None, metavar="M", help="success radius (default: record's)"
    )
    parser.add_argument("--t-max", type=float, default=None, metavar="S", help="time cap (default: record's)")
    parser.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")


def run(args: argparse.Namespace) -> int:
    import msgspec

    from common.errors import RecordError
    from episodes.logs import is_episode_dir, read_episode
    from episodes.verifier import VerifierSettings, aggregate, verify

    root = Path(args.directory)
    settings = VerifierSettings(delta_m=args.delta, t_max_s=args.t_max)
    if not root.is_dir():
        print(f"dronecats episodes verify: {root} is not a directory", file=sys.stderr)
        return 2
    try:
        if is_episode_dir(root):
            output: object = msgspec.to_builtins(verify(read_episode(root), settings))
        else:
            dirs = sorted(p for p in root.iterdir() if p.is_dir() and is_episode_dir(p))
            if not dirs:
                print(f"dronecats episodes verify: no episode directories in {root}", file=sys.stderr)
                return 2
            verdicts = [verify(read_episode(d), settings) for d in dirs]
            output = {"episodes": msgspec.to_builtins(verdicts), "aggregate": aggregate(verdicts)}
    except RecordError as exc:
        print(f"dronecats episodes verify: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    print(json.dumps(output, indent=args.indent))
    return 0
