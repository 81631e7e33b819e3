"""`dronecats episodes report DIR [--vs DIR2] [--out OUTDIR]`: tables, CSV and plots of a run.

Writes OUTDIR (default DIR/report): report.md (per task type and pilot: SR with 95% Wilson interval,
OSR, NE median, declaration rate, declared/start ratio, latency p50, coordinate-copying rate; the
failure-mode breakdown; with --vs the comparison), summary.csv, episodes.csv, bars.png (with --vs:
every run side by side over the first run's noise band), one traces-TASK.png grid per task type (up
to --grid episodes each) and, with --all-traces, traces/RUN.png for every episode; every figure also
as PDF (vector) next to its PNG.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episodes.report import EpisodeRow

# The issue's floors for the baseline pilot on the built-in simulator.
BASELINE_FLOORS = {"approach": 0.8, "search": 0.6, "track": 0.6, "search+track": 0.4}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="a run directory (episode directories inside)")
    parser.add_argument(
        "--vs",
        action="append",
        default=[],
        metavar="DIR2",
        help="another run to compare against (repeatable): tables per run, bars side by side",
    )
    parser.add_argument("--out", default=None, help="report directory (default DIR/report)")
    parser.add_argument("--title", default=None, help="report heading (default: the run directory's name)")
    parser.add_argument("--grid", type=int, default=8, help="episodes per task-type trace grid (0: none)")
    parser.add_argument("--all-traces", action="store_true", help="one trace PNG per episode")
    parser.add_argument("--floors", action="store_true", help="mark the baseline's floors on the bars")


def _round_robin(rows: list, limit: int) -> list:
    """Up to `limit` rows taking each scene in turn (a grid shows every scene, not the first one)."""
    by_scene: dict[str, list] = {}
    for r in rows:
        by_scene.setdefault(r.scene, []).append(r)
    out: list = []
    while len(out) < limit and any(by_scene.values()):
        for queue in by_scene.values():
            if queue and len(out) < limit:
                out.append(queue.pop(0))
    return out


def write_report(args: argparse.Namespace) -> dict:
    from episodes.plots import bars_png, trace_png, traces_grid_png
    from episodes.report import (
        compare_markdown,
        episodes_csv,
        failure_markdown,
        groups,
        incomplete_dirs,
        load_rows,
        summary_csv,
        summary_markdown,
    )

    root = Path(args.directory)
    out = Path(args.out) if args.out else root / "report"
    out.mkdir(parents=True, exist_ok=True)
    rows = load_rows(root)
    skipped = incomplete_dirs(root)
    if not rows:
        raise FileNotFoundError(f"no episode directories in {root}")
    stats = groups(rows)
    (out / "summary.csv").write_text(summary_csv(stats))
    (out / "episodes.csv").write_text(episodes_csv(rows))
    others = []
    mismatches: dict[str, str] = {}
    for other_dir in args.vs:
        other_rows = load_rows(Path(other_dir))
        if not other_rows:
            raise FileNotFoundError(f"--vs {other_dir}: no episode directories")
        others.append((Path(other_dir).name, groups(other_rows)))
        if mismatch := episode_set_mismatch(rows, other_rows):
            # SR over different episodes compares the episodes, not the runs: say so where it is read
            mismatches[other_dir] = mismatch
            print(f"dronecats episodes report: --vs {other_dir}: {mismatch}", file=sys.stderr)
    bars_png(
        stats,
        out / "bars.png",
        floors=BASELINE_FLOORS if args.floors else None,
        others=others,
        name=root.name,
    )
    grids = []
    if args.grid > 0:
        for task in dict.fromkeys(r.task_type for r in rows):
            chosen = _round_robin([r for r in rows if r.task_type == task], args.grid)
            name = f"traces-{task.replace('+', '_')}.png"
            traces_grid_png(chosen, out / name)
            grids.append((task, name))
    if args.all_traces:
        (out / "traces").mkdir(exist_ok=True)
        for r in rows:
            trace_png(r, out / "traces" / f"{r.run_name}.png")
    sim_s = sum(r.sim_time_s or 0.0 for r in rows)
    wall_s = sum(r.wall_time_s or 0.0 for r in rows)
    cpu_s = sum(r.cpu_time_s or 0.0 for r in rows)
    lines = [
        f"# {args.title or 'Episode report: ' + root.name}",
        "",
        f"{len(rows)} episodes from `{root}`"
        + (f" ({len(skipped)} incomplete episode directories left out)" if skipped else "")
        + ". SR intervals are 95% Wilson score intervals: differences inside them are not demonstrated.",
        "",
        "## Results per task type and pilot",
        "",
        summary_markdown(stats),
        "",
        "### Per scene",
        "",
        summary_markdown([g for g in groups(rows, by_scene=True) if g.task_type != "all"]),
        "",
        "## Failure modes (failed episodes; the first that applies, docs/verifier.md)",
        "",
        failure_markdown(stats),
        "",
    ]
    for other_dir, (other_name, other_stats) in zip(args.vs, others, strict=True):
        lines += [
            f"## Comparison with `{other_dir}`",
            "",
            *([f"**Not like for like:** {mismatches[other_dir]}.", ""] if other_dir in mismatches else []),
            compare_markdown(stats, other_stats, root.name, other_name),
            "",
        ]
    caption = "success rate per task type" + (", runs side by side over the noise band" if others else "")
    lines += ["## Plots", "", f"![{caption}](bars.png)", "", "Vector copy: [bars.pdf](bars.pdf).", ""]
    for task, name in grids:
        lines += [
            f"### {task}: top-down traces",
            "",
            "North up, east right, metres. Drone path blue from the start (●; a fleet: one shade of blue "
            "a drone, named in the legend); target ■ in its colour "
            "with the δ ring (dashed) where the episode was decided; distractors ▲ and look-alikes ✖ in "
            "their colours; declarations ★ (gold: qualifying).",
            "",
            f"![{task}]({name})",
            "",
            f"Vector copy: [{Path(name).with_suffix('.pdf')}]({Path(name).with_suffix('.pdf')}).",
            "",
        ]
    if wall_s:
        lines += [
            "## Run time",
            "",
            f"Summed over episodes: {sim_s:.0f} s simulated, {wall_s:.0f} s wall (per-process), "
            f"real-time factor {sim_s / wall_s:.2f} per process (on a shared, loaded machine).",
            "",
        ]
        if cpu_s:
            lines += [
                f"CPU time used by the episodes: {cpu_s:.0f} s, i.e. {sim_s / cpu_s:.1f} simulated seconds "
                f"per CPU second; on two otherwise idle cores the run needs about {cpu_s / 2 / 60:.1f} min.",
                "",
            ]
    (out / "report.md").write_text("\n".join(lines))
    return {"out": str(out), "episodes": len(rows), "groups": len(stats)}


def episode_set_mismatch(rows: list[EpisodeRow], other_rows: list[EpisodeRow]) -> str:
    """'' when both runs hold the same episodes (by directory name); else how they differ."""
    here, there = {r.run_name for r in rows}, {r.run_name for r in other_rows}
    if here == there:
        return ""
    only_here, only_there = sorted(here - there), sorted(there - here)

    def few(names: list[str]) -> str:
        return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    parts = [
        f"{len(only_here)} episodes only in this run ({few(only_here)})" if only_here else "",
        f"{len(only_there)} only in the other ({few(only_there)})" if only_there else "",
    ]
    return "the runs hold different episodes: " + "; ".join(p for p in parts if p)


def run(args: argparse.Namespace) -> int:
    from common.errors import DroneCatsError

    try:
        summary = write_report(args)
    except (DroneCatsError, FileNotFoundError) as exc:
        print(f"dronecats episodes report: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0
