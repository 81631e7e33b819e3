"""Report plots (matplotlib, Agg backend; imported only when a report is drawn).

- top-down trace of one episode: the drone's path, the target's (moving targets leave a line), the δ
  ring around the target where the episode was decided (or where it ended), every declaration marked
  (filled: qualifying), the start; north up, east right (world NED x up, y right);
- a grid of such traces (a handful of episodes in one small image, for committed reports);
- per-pilot bars: SR per task type with the 95% Wilson interval as error bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from episodes.logs import read_episode
from episodes.report import EpisodeRow, GroupStats


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def draw_trace(ax: Any, row: EpisodeRow, delta_m: float | None = None, compact: bool = False) -> None:
    from matplotlib.patches import Circle

    logs = read_episode(Path(row.directory))
    delta = delta_m or (logs.record.delta_m if logs.record else 5.0)
    poses = [t.pose for t in logs.trace if t.pose is not None]
    targets = [t.target_pose for t in logs.trace if t.target_pose is not None]
    # Plot east (y) to the right and north (x) up.
    if poses:
        ax.plot([p[1] for p in poses], [p[0] for p in poses], "-", color="tab:blue", lw=1.2, label="drone")
        ax.plot(poses[0][1], poses[0][0], "o", color="tab:blue", ms=5, label="start")
    if targets:
        ax.plot([p[1] for p in targets], [p[0] for p in targets], "-", color="tab:red", lw=1.0, alpha=0.7)
    decisive = None
    verdict_t = None
    for d in logs.declarations:
        if d.pose is None:
            continue
        ok = d.visible and d.distance_m is not None and d.distance_m <= delta
        if ok and verdict_t is None:
            verdict_t = d.t
        ax.plot(
            d.pose[1],
            d.pose[0],
            marker="*",
            ms=11 if ok else 9,
            color="gold" if ok else "none",
            markeredgecolor="black",
            linestyle="none",
        )
    if targets:
        decisive = targets[-1]
        if verdict_t is not None:
            near = min(logs.trace, key=lambda t: abs(t.t - verdict_t) if t.target_pose else 1e9)
            decisive = near.target_pose or decisive
        ax.add_patch(Circle((decisive[1], decisive[0]), delta, fill=False, ls="--", color="tab:red", lw=1.0))
        ax.plot(decisive[1], decisive[0], "s", color="tab:red", ms=5, label="target")
    ax.set_aspect("equal", adjustable="datalim")
    outcome = "success" if row.success else (row.failure_mode or "failure").replace("_", " ")
    ne = f", NE {row.ne_m:.1f} m" if row.ne_m is not None else ""
    ax.set_title(f"{row.run_name}\n{outcome}{ne}", fontsize=7 if compact else 9)
    ax.tick_params(labelsize=6 if compact else 8)
    if not compact:
        ax.set_xlabel("east (m)")
        ax.set_ylabel("north (m)")
        ax.legend(fontsize=7, loc="best")
    ax.grid(True, lw=0.3)


def trace_png(row: EpisodeRow, path: Path, dpi: int = 80) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    try:
        draw_trace(ax, row)
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


def traces_grid_png(rows: Sequence[EpisodeRow], path: Path, columns: int = 4, dpi: int = 70) -> None:
    plt = _pyplot()
    n = max(1, len(rows))
    cols = min(columns, n)
    lines = (n + cols - 1) // cols
    fig, axes = plt.subplots(lines, cols, figsize=(2.6 * cols, 2.7 * lines), squeeze=False)
    try:
        for ax, row in zip(axes.flat, rows, strict=False):
            draw_trace(ax, row, compact=True)
        for ax in list(axes.flat)[len(rows) :]:
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


def bars_png(
    stats: Sequence[GroupStats], path: Path, dpi: int = 80, floors: dict[str, float] | None = None
) -> None:
    """SR per task type, one bar per pilot, 95% Wilson intervals; optional floor marks per task."""
    plt = _pyplot()
    tasks = [t for t in dict.fromkeys(g.task_type for g in stats)]
    pilots = sorted({g.pilot for g in stats})
    index = {(g.task_type, g.pilot): g for g in stats}
    width = 0.8 / max(1, len(pilots))
    fig, ax = plt.subplots(figsize=(1.3 * len(tasks) + 2.0, 3.4))
    try:
        for i, pilot in enumerate(pilots):
            xs, ys, lo, hi = [], [], [], []
            for j, task in enumerate(tasks):
                g = index.get((task, pilot))
                if g is None:
                    continue
                xs.append(j + (i - (len(pilots) - 1) / 2) * width)
                ys.append(g.sr)
                lo.append(g.sr - g.sr_low)
                hi.append(g.sr_high - g.sr)
            ax.bar(xs, ys, width * 0.9, yerr=[lo, hi], capsize=3, label=pilot)
        for j, task in enumerate(tasks):
            if floors and task in floors:
                ax.plot([j - 0.45, j + 0.45], [floors[task]] * 2, "k--", lw=1)
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels(tasks, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("success rate (95% CI)")
        ax.legend(fontsize=7)
        ax.grid(True, axis="y", lw=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)
