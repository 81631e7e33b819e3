"""`dronecats episodes export LOGDIR --to mcap|rrd [--out PATH] [--failures]`: an episode's logs as a
recording for Foxglove (MCAP) or Rerun (.rrd), every episode of a run directory its own file.

Needs the `review` extra (pip install "dronecats[review]"). What goes in: docs/review.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", metavar="LOGDIR", help="an episode directory, or a run directory of many"
    )
    parser.add_argument("--to", choices=("mcap", "rrd"), required=True, help="mcap: Foxglove; rrd: Rerun")
    parser.add_argument(
        "--out",
        default=None,
        help="a file (one episode, ending .mcap/.rrd) or a directory; default LOGDIR (one episode) "
        "or LOGDIR/review (a run)",
    )
    parser.add_argument(
        "--failures", action="store_true", help="only the episodes whose result.json says they failed"
    )


def run(args: argparse.Namespace) -> int:
    from episodes.export.batch import export

    root = Path(args.directory)
    if not root.is_dir():
        print(f"dronecats episodes export: {root} is not a directory", file=sys.stderr)
        return 2
    try:
        summaries, selection = export(root, args.to, Path(args.out) if args.out else None, args.failures)
    except ImportError as exc:
        print(
            f"dronecats episodes export: {exc.name or exc} is missing: "
            'install the review extra (pip install "dronecats[review]")',
            file=sys.stderr,
        )
        return 2
    if not summaries and not selection.unscored:
        what = "failed episodes" if args.failures else "episode directories"
        print(f"dronecats episodes export: no {what} in {root}", file=sys.stderr)
    for s in summaries:
        print(f"{s.path}  {s.bytes / 1e6:.2f} MB  {sum(s.messages.values())} messages  {s.seconds:.2f} s")
    summary = {
        "to": args.to,
        "episodes": len(summaries),
        "unscored_left_out": [p.name for p in selection.unscored],
        "bytes": sum(s.bytes for s in summaries),
        "seconds": round(sum(s.seconds for s in summaries), 3),
    }
    print(json.dumps(summary))
    return 0 if summaries or selection.unscored or args.failures else 2
