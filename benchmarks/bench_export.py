"""Export benchmark: a whole run directory to MCAP and to Rerun, timed per episode (issue 46: a
90-episode suite in at most a minute on this machine).

With no RUNDIR it flies one first (`dronecats episodes run episodes/suites/single.json --jobs 2`,
frames saved: about 2-5 minutes here) into a temporary directory. Prints (JSON) per format: the
total and per-episode seconds (p50, max), file size per episode (p50, max, total), messages, and
the saved frames' size for comparison; per episode with --per-episode.

    .venv/bin/python benchmarks/bench_export.py [RUNDIR] [--to mcap,rrd] [--per-episode]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from episodes.export.batch import Target, episode_dirs, writer  # noqa: E402
from episodes.export.timeline import build_timeline  # noqa: E402

FORMATS: dict[str, Target] = {"mcap": "mcap", "rrd": "rrd"}


def fly_suite(out: Path) -> None:
    command = [
        str(ROOT / ".venv/bin/dronecats"),
        "episodes",
        "run",
        str(ROOT / "episodes/suites/single.json"),
        "--jobs",
        "2",
        "--out",
        str(out),
    ]
    print(f"flying the suite into {out} ...", file=sys.stderr, flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


@dataclass(frozen=True)
class Row:
    episode: str
    seconds: float  # reading the logs included
    bytes: int
    frames_bytes: int  # the episode's saved JPEGs, for comparison
    messages: int


def bench(run: Path, to: Target, out: Path, per_episode: bool) -> dict[str, object]:
    write = writer(to)
    rows: list[Row] = []
    started = time.perf_counter()
    for directory in episode_dirs(run):
        t0 = time.perf_counter()
        summary = write(build_timeline(directory), out / f"{directory.name}.{to}")
        frames_bytes = sum(p.stat().st_size for p in (directory / "frames").glob("*.jpg"))
        rows.append(
            Row(
                directory.name,
                round(time.perf_counter() - t0, 4),
                summary.bytes,
                frames_bytes,
                sum(summary.messages.values()),
            )
        )
    if not rows:
        return {"to": to, "episodes": 0}
    seconds = [r.seconds for r in rows]
    sizes = [r.bytes for r in rows]
    result: dict[str, object] = {
        "to": to,
        "episodes": len(rows),
        "total_s": round(time.perf_counter() - started, 2),
        "per_episode_s_p50": round(statistics.median(seconds), 4),
        "per_episode_s_max": round(max(seconds), 4),
        "size_mb_p50": round(statistics.median(sizes) / 1e6, 3),
        "size_mb_max": round(max(sizes) / 1e6, 3),
        "size_mb_total": round(sum(sizes) / 1e6, 1),
        "frames_mb_total": round(sum(r.frames_bytes for r in rows) / 1e6, 1),
        "messages_total": sum(r.messages for r in rows),
    }
    if per_episode:
        result["per_episode"] = [asdict(r) for r in rows]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", nargs="?", default=None, help="a run directory (default: fly one)")
    parser.add_argument("--to", default="mcap,rrd", help="formats, comma-separated (default mcap,rrd)")
    parser.add_argument("--per-episode", action="store_true", help="also print every episode's figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        run = Path(args.run) if args.run else Path(tmp) / "run"
        if args.run is None:
            fly_suite(run)
        for name in args.to.split(","):
            if name not in FORMATS:
                parser.error(f"--to: {name!r} is not one of {', '.join(FORMATS)}")
            to = FORMATS[name]
            print(json.dumps(bench(run, to, Path(tmp) / f"export-{to}", args.per_episode)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
