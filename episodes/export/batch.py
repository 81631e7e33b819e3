"""Which episodes an export covers and where each one's file goes.

LOGDIR is one episode directory or a run directory (`dronecats episodes run --out`) of many; every
episode becomes its own file, named by its episode id. Directories whose name starts with a dot
(OUT/.partial/: interrupted or superseded episodes) are never exported.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from episodes.export.timeline import EpisodeTimeline, ExportSummary, build_timeline
from episodes.logs import is_episode_dir

Target = Literal["mcap", "rrd"]
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class Selection:
    episodes: list[Path]
    unscored: list[Path]  # --failures: episodes without a result.json, left out


def episode_dirs(root: Path) -> list[Path]:
    if is_episode_dir(root):
        return [root]
    return sorted(
        p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and is_episode_dir(p)
    )


def failed(directory: Path) -> bool | None:
    """False/True from the verifier's verdict in result.json; None when there is none."""
    try:
        verdict = json.loads((directory / RESULT_FILE).read_text(encoding="utf-8")).get("verdict") or {}
    except (OSError, ValueError, AttributeError):
        return None
    success = verdict.get("success") if isinstance(verdict, dict) else None
    return None if success is None else not bool(success)


def select(root: Path, failures_only: bool) -> Selection:
    chosen: list[Path] = []
    unscored: list[Path] = []
    for directory in episode_dirs(root):
        if not failures_only:
            chosen.append(directory)
            continue
        verdict = failed(directory)
        if verdict is None:
            unscored.append(directory)
        elif verdict:
            chosen.append(directory)
    return Selection(chosen, unscored)


def output_path(root: Path, out: Path | None, timeline: EpisodeTimeline, to: Target, many: bool) -> Path:
    """--out is a file for one episode when it ends in .mcap/.rrd, else a directory (default: LOGDIR
    itself for one episode, LOGDIR/review for a run)."""
    name = f"{timeline.episode_id}.{to}"
    if out is None:
        return (root / "review" / name) if many else (root / name)
    if not many and out.suffix == f".{to}":
        return out
    return out / name


def writer(to: Target) -> Callable[[EpisodeTimeline, Path], ExportSummary]:
    """The writer of one format; raises ImportError when the review extra is not installed."""
    if to == "mcap":
        from episodes.export.mcap_writer import write_mcap

        return write_mcap
    from episodes.export.rerun_writer import write_rrd

    return write_rrd


def export(
    root: Path, to: Target, out: Path | None = None, failures_only: bool = False
) -> tuple[list[ExportSummary], Selection]:
    write = writer(to)
    selection = select(root, failures_only)
    many = not is_episode_dir(root)
    summaries = []
    for directory in selection.episodes:
        timeline = build_timeline(directory)
        summaries.append(write(timeline, output_path(root, out, timeline, to, many)))
    return summaries, selection
