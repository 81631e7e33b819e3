"""Report figures (matplotlib, Agg backend; imported only when a report is drawn), sized to be read
in a paper: each figure is written as PNG (for the markdown report) and PDF (vector, for print).

- top-down trace of one episode, north up and east right in metres (world NED x up, y right): the
  drone's path and start, the target in its colour (a moving target leaves its track), the record's
  distractors in theirs (triangles; look-alikes, same class and colour as the target, as crosses),
  the δ ring around the target where the episode was decided (or where it ended), every declaration
  (★, gold = qualifying);
- a grid of such traces with one shared legend;
- success rate per task type, one bar per run and pilot side by side, 95% Wilson intervals as error
  bars, and the reference run's interval shaded behind each task's bars: the noise band, inside which
  another run's SR is not a demonstrated difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from common.declarations import qualifies
from episodes.logs import read_episode
from episodes.report import EpisodeRow, GroupStats

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# The simulator's colour names in matplotlib's (white and silver keep a dark edge to be seen).
_COLOURS = {"grey": "grey", "silver": "silver", "white": "white", "pink": "hotpink"}
# drones' paths: blues and dark hues, apart from the named colours targets and look-alikes wear
DRONE_COLOURS = ("tab:blue", "navy", "tab:cyan", "slategrey", "teal", "midnightblue")
PANEL_IN = 3.4  # one trace panel, inches (at 100 dpi: 340 px)
DPI = 100


def _pyplot() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 9, "legend.fontsize": 8, "pdf.fonttype": 42})
    return plt


def _colour(name: str | None, default: str) -> str:
    if not name:
        return default
    return _COLOURS.get(name, name)


def save(fig: Figure, path: Path, dpi: int = DPI) -> list[Path]:
    """`path` (PNG) and the same figure as PDF next to it; the paths written."""
    fig.savefig(path, dpi=dpi)
    vector = path.with_suffix(".pdf")
    fig.savefig(vector)
    return [path, vector]


def draw_trace(ax: Axes, row: EpisodeRow, delta_m: float | None = None, compact: bool = False) -> None:
    from matplotlib.patches import Circle

    logs = read_episode(Path(row.directory))
    record = logs.record
    delta = delta_m or (record.delta_m if record else 5.0)
    poses_by_drone: dict[str, list[Sequence[float]]] = {}
    for line in logs.trace:
        if line.pose is not None:
            poses_by_drone.setdefault(line.drone, []).append(line.pose)
    targets = [t.target_pose for t in logs.trace if t.target_pose is not None]
    target = record.targets[0] if record and record.targets else None
    target_colour = _colour(target.colour if target else None, "tab:red")
    # Plot east (y) to the right and north (x) up.
    for obj in record.distractors if record else []:
        look_alike = target is not None and obj.class_ == target.class_ and obj.colour == target.colour
        ax.plot(
            obj.pose[1],
            obj.pose[0],
            marker="X" if look_alike else "^",
            ms=8,
            color=_colour(obj.colour, "grey"),
            markeredgecolor="black",
            markeredgewidth=0.6,
            linestyle="none",
            label="look-alike" if look_alike else "distractor",
        )
        if not compact:
            ax.annotate(
                obj.class_, (obj.pose[1], obj.pose[0]), fontsize=7, xytext=(4, 4), textcoords="offset points"
            )
    # One line a drone: the trace interleaves a fleet's samples, and one polyline through all of
    # them would draw a fan between the drones instead of their paths.
    fleet = len(poses_by_drone) > 1
    for i, (drone, poses) in enumerate(sorted(poses_by_drone.items())):
        colour = DRONE_COLOURS[i % len(DRONE_COLOURS)]
        label = drone if fleet else "drone"
        ax.plot([p[1] for p in poses], [p[0] for p in poses], "-", color=colour, lw=1.2, label=label)
        ax.plot(poses[0][1], poses[0][0], "o", color=colour, ms=5, label="start")
    if len(targets) > 1 and targets[0][:2] != targets[-1][:2]:
        ax.plot(
            [p[1] for p in targets], [p[0] for p in targets], ":", color="black", lw=1.0, label="target track"
        )
    verdict_t = None
    for d in logs.declarations:
        if d.pose is None:
            continue
        ok = qualifies(d.distance_m, d.visible, delta, d.judged)
        if ok and verdict_t is None:
            verdict_t = d.t
        ax.plot(
            d.pose[1],
            d.pose[0],
            marker="*",
            ms=12 if ok else 10,
            color="gold" if ok else "none",
            markeredgecolor="black",
            linestyle="none",
            label="declaration, qualifying" if ok else "declaration",
        )
    decisive = targets[-1] if targets else (list(target.pose) if target else None)
    if targets and verdict_t is not None:
        near = min(logs.trace, key=lambda t: abs(t.t - verdict_t) if t.target_pose else 1e9)
        decisive = near.target_pose or decisive
    if decisive is not None:
        ax.add_patch(
            Circle(
                (decisive[1], decisive[0]),
                delta,
                fill=False,
                ls="--",
                color="black",
                lw=0.9,
                label="δ ring",
            )
        )
        ax.plot(
            decisive[1],
            decisive[0],
            "s",
            color=target_colour,
            markeredgecolor="black",
            ms=7,
            linestyle="none",
            label="target",
        )
    ax.set_aspect("equal", adjustable="datalim")
    outcome = "success" if row.success else (row.failure_mode or "failure").replace("_", " ")
    ne = f", NE {row.ne_m:.1f} m" if row.ne_m is not None else ""
    ne += f" (δ {delta:g} m)"
    noun = f"{target.colour or ''} {target.class_}".strip() if target else "?"
    ax.set_title(f"{row.run_name} ({noun})\n{outcome}{ne}")
    ax.set_xlabel("east (m)")
    ax.set_ylabel("north (m)")
    if not compact:
        _legend(ax)
    ax.grid(True, lw=0.3)


def _handles(axes: Sequence[Axes]) -> tuple[list[Artist], list[str]]:
    """One handle per label over all panels; objects drawn in their own colours get a grey stand-in
    (the colour is the object's, not the legend entry's)."""
    from matplotlib.lines import Line2D

    stand_in = {"distractor": "^", "look-alike": "X", "target": "s"}
    seen: dict[str, Artist] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label in stand_in:
                handle = Line2D(
                    [],
                    [],
                    marker=stand_in[label],
                    color="lightgrey",
                    markeredgecolor="black",
                    linestyle="none",
                    ms=8,
                )
                label = f"{label} (in its colour)"
            seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def _legend(ax: Axes) -> None:
    handles, labels = _handles([ax])
    ax.legend(handles, labels, loc="best", framealpha=0.8)


def trace_png(row: EpisodeRow, path: Path, dpi: int = DPI) -> list[Path]:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 5.0))
    try:
        draw_trace(ax, row)
        fig.tight_layout()
        return save(fig, path, dpi)
    finally:
        plt.close(fig)


def traces_grid_png(rows: Sequence[EpisodeRow], path: Path, columns: int = 4, dpi: int = DPI) -> list[Path]:
    plt = _pyplot()
    n = max(1, len(rows))
    cols = min(columns, n)
    lines = (n + cols - 1) // cols
    fig, axes = plt.subplots(lines, cols, figsize=(PANEL_IN * cols, PANEL_IN * lines + 0.5), squeeze=False)
    try:
        for ax, row in zip(axes.flat, rows, strict=False):
            draw_trace(ax, row, compact=True)
        for ax in list(axes.flat)[len(rows) :]:
            ax.axis("off")
        handles, labels = _handles(list(axes.flat))
        fig.legend(handles, labels, loc="lower center", ncol=min(8, len(labels)), frameon=False)
        fig.tight_layout(rect=(0, 0.5 / (PANEL_IN * lines + 0.5), 1, 1))
        return save(fig, path, dpi)
    finally:
        plt.close(fig)


def bar_series(
    stats: Sequence[GroupStats], others: Sequence[tuple[str, Sequence[GroupStats]]] = (), name: str = ""
) -> list[tuple[str, dict[str, GroupStats]]]:
    """The bars' series: (legend label, task type -> group), this run's pilots first, then each --vs
    run's; labelled "RUN: pilot" when there are several runs."""
    runs = [(name, list(stats)), *[(n, list(s)) for n, s in others]]
    series: list[tuple[str, dict[str, GroupStats]]] = []
    for run_name, run_stats in runs:
        for pilot in sorted({g.pilot for g in run_stats}):
            label = f"{run_name}: {pilot}" if others else pilot
            series.append((label, {g.task_type: g for g in run_stats if g.pilot == pilot}))
    return series


def bars_png(
    stats: Sequence[GroupStats],
    path: Path,
    dpi: int = DPI,
    floors: dict[str, float] | None = None,
    others: Sequence[tuple[str, Sequence[GroupStats]]] = (),
    name: str = "",
) -> list[Path]:
    """SR per task type: one bar per (run, pilot), 95% Wilson intervals, optional floor marks.

    With `others` (--vs runs), bars are labelled "RUN: pilot" and the first run's interval is shaded
    behind each task's bars (the noise band)."""
    plt = _pyplot()
    series = bar_series(stats, others, name)
    # The first run's task types: the --vs runs are drawn where they can be compared with it.
    tasks = list(dict.fromkeys(g.task_type for g in stats))
    width = 0.8 / max(1, len(series))
    height_in = 3.8 + (0.25 * (len(series) + 1) if others else 0.0)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(tasks) * max(1, len(series)) ** 0.5 + 2.5), height_in))
    try:
        if others:
            reference = series[0][1]
            for j, task in enumerate(tasks):
                g = reference.get(task)
                if g is not None:
                    ax.fill_between(
                        [j - 0.45, j + 0.45],
                        g.sr_low,
                        g.sr_high,
                        color="grey",
                        alpha=0.2,
                        lw=0,
                        label=f"noise band: 95% CI of {series[0][0]}" if j == 0 else None,
                    )
        for i, (label, by_task) in enumerate(series):
            xs, ys, lo, hi = [], [], [], []
            for j, task in enumerate(tasks):
                g = by_task.get(task)
                if g is None:
                    continue
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(g.sr)
                lo.append(g.sr - g.sr_low)
                hi.append(g.sr_high - g.sr)
            ax.bar(xs, ys, width * 0.9, yerr=[lo, hi], capsize=3, label=label)
            for x, task in zip(xs, [t for t in tasks if t in by_task], strict=True):
                ax.text(x, 0.02, f"n={by_task[task].n}", rotation=90, fontsize=7, ha="center", va="bottom")
        floor_label: str | None = "floor"
        for j, task in enumerate(tasks):
            if floors and task in floors:
                ax.plot([j - 0.45, j + 0.45], [floors[task]] * 2, "k--", lw=1, label=floor_label)
                floor_label = None
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels(tasks)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("success rate (95% Wilson CI)")
        if others:  # long "RUN: pilot" labels: under the axes
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=1, frameon=False)
        else:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.grid(True, axis="y", lw=0.3)
        fig.tight_layout()
        return save(fig, path, dpi)
    finally:
        plt.close(fig)
