"""`dronecats episodes verify DIR [--delta M] [--t-max S]`: the verdict and diagnostics as JSON.

DIR is one episode directory (it holds episode.json, steps.jsonl or trace.jsonl): one JSON object.
Otherwise every sub-directory that is an episode directory is scored, and the output is one JSON
object {"episodes": [...], "aggregate": {...}}. Unparsable log lines are listed under `problems`
of their episode. Exit status 2 (one line on stderr) when DIR holds no episode or an episode
cannot be scored (no usable episode.json and no --delta/--t-max).

δ and the time cap come from --delta/--t-max, else the episode record, else the run metadata that
`dronecats onboard` writes into episode.json ("run" -> "onboard" -> delta_m, t_max_s): a plain
onboard flight has no episode record, and its episode.json is then not a problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


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
    from episodes.logs import is_episode_dir
    from episodes.verifier import aggregate

    root = Path(args.directory)
    if not root.is_dir():
        print(f"dronecats episodes verify: {root} is not a directory", file=sys.stderr)
        return 2
    try:
        if is_episode_dir(root):
            output: object = msgspec.to_builtins(_verify_dir(root, args.delta, args.t_max))
        else:
            dirs = sorted(p for p in root.iterdir() if p.is_dir() and is_episode_dir(p))
            if not dirs:
                print(f"dronecats episodes verify: no episode directories in {root}", file=sys.stderr)
                return 2
            verdicts = [_verify_dir(d, args.delta, args.t_max) for d in dirs]
            output = {"episodes": msgspec.to_builtins(verdicts), "aggregate": aggregate(verdicts)}
    except RecordError as exc:
        print(f"dronecats episodes verify: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    print(json.dumps(output, indent=args.indent))
    return 0


def _verify_dir(directory: Path, delta_m: float | None, t_max_s: float | None) -> Any:
    from episodes.logs import EPISODE_FILE, read_episode
    from episodes.verifier import VerifierSettings, verify

    logs = read_episode(directory)
    if logs.record is None:
        run_only = _onboard_run_settings(directory / EPISODE_FILE)
        if run_only is not None:
            # an onboard flight's episode.json: run metadata only, by design
            logs.problems = [p for p in logs.problems if not (p.file == EPISODE_FILE and p.line == 0)]
            delta_m = run_only[0] if delta_m is None else delta_m
            t_max_s = run_only[1] if t_max_s is None else t_max_s
    return verify(logs, VerifierSettings(delta_m=delta_m, t_max_s=t_max_s))


def _onboard_run_settings(path: Path) -> tuple[float | None, float | None] | None:
    """(delta_m, t_max_s) recorded by the onboard runtime in an episode.json that holds its run
    metadata and no episode record; None otherwise (a record with errors stays an error)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    # an episode record always has an id: without one the file is a flight's metadata, not a record
    if not isinstance(data, dict) or "id" in data or not isinstance(data.get("run"), dict):
        return None
    onboard = data["run"].get("onboard")
    if not isinstance(onboard, dict):
        return None

    def number(key: str) -> float | None:
        value = onboard.get(key)
        # verify() refuses values that are not > 0, naming them
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    return number("delta_m"), number("t_max_s")
