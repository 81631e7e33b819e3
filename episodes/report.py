"""Run reports: per-episode rows, per (task type, pilot) tables with 95% Wilson intervals, the
failure-mode breakdown, and a comparison of two runs.

Rows come from each episode directory's result.json (written by the runner) or, for directories
without one, from the verifier run here on the logs. Latency p50 is over every step's `latency_s`
of the group; the coordinate-copying rate (docs/protocol.md#several-drones) is over multi-drone
calls and is empty for single-drone runs. When a lock-step run injected latency, the injected
values (what each step cost in episode time) stand in for the measured ones.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from episodes.logs import is_episode_dir, read_episode
from episodes.verifier import FAILURE_MODES, verify

RESULT_FILE = "result.json"
Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (0, 1 when n = 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At k = 0 and k = n the bound is exactly 0 or 1; say so rather than 0.9999999999999999.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def median(values: Iterable[float | None]) -> float | None:
    xs = sorted(v for v in values if v is not None and math.isfinite(v))
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


@dataclass
class EpisodeRow:
    run_name: str
    episode: str
    task_type: str
    scene: str
    pilot: str
    success: bool
    osr: bool
    ne_m: float | None
    declarations: int
    declared_start_ratio: float | None
    start_distance_m: float | None
    min_distance_m: float | None
    failure_mode: str | None
    end_reason: str | None
    steps: int
    sim_time_s: float | None
    wall_time_s: float | None
    cpu_time_s: float | None = None
    latencies_s: list[float] = field(default_factory=list, repr=False)
    multi_go_calls: int = 0
    copied_calls: int = 0
    directory: str = ""


def _step_stats(directory: Path) -> tuple[list[float], int, int]:
    """Step latencies and, over multi-drone calls where every drone got `go`, (calls, copied calls)."""
    logs = read_episode(directory)
    latencies = [s.latency_s for s in logs.steps if s.latency_s is not None]
    calls: dict[Any, list[Any]] = defaultdict(list)
    for s in logs.steps:
        # A multi-drone call's steps share its string call_id; a drone's own pilot numbers its steps
        # (ints that repeat across drones, and are not one call).
        if isinstance(s.call_id, str):
            calls[s.call_id].append(s.action)
    multi = copied = 0
    for actions in calls.values():
        if len(actions) < 2 or not all(type(a).__name__ == "Go" for a in actions):
            continue
        multi += 1
        keys = {(tuple(a.point), a.depth_m) for a in actions}
        copied += len(keys) == 1
    return latencies, multi, copied


def incomplete_dirs(root: Path) -> list[Path]:
    """Episode directories of a runner's output without result.json (being flown, or interrupted)."""
    if is_episode_dir(root):
        return []
    dirs = [p for p in root.iterdir() if p.is_dir() and is_episode_dir(p)]
    if not any((p / RESULT_FILE).exists() for p in dirs):
        return []  # not a runner's output: every directory is scored from its logs
    return sorted(p for p in dirs if not (p / RESULT_FILE).exists())


def load_rows(root: Path) -> list[EpisodeRow]:
    """Every episode directory under root (root itself when it is one), in name order. In a runner's
    output, directories without result.json (being flown, or interrupted) are left out."""
    dirs = (
        [root]
        if is_episode_dir(root)
        else sorted(p for p in root.iterdir() if p.is_dir() and is_episode_dir(p))
    )
    skip = set(incomplete_dirs(root))
    dirs = [d for d in dirs if d not in skip]
    rows = []
    for d in dirs:
        result: dict[str, Any] = {}
        try:
            result = json.loads((d / RESULT_FILE).read_text())
            verdict = result["verdict"]
        except (OSError, ValueError, KeyError):
            verdict = msgspec.to_builtins(verify(read_episode(d)))
        meta = _episode_meta(d)
        latencies, multi, copied = _step_stats(d)
        if result.get("injected_latencies_s"):
            latencies = [float(x) for x in result["injected_latencies_s"]]
        rows.append(
            EpisodeRow(
                run_name=d.name,
                episode=verdict.get("episode") or d.name,
                task_type=verdict.get("task_type") or meta.get("task_type") or "?",
                scene=result.get("scene") or meta.get("scene") or "?",
                pilot=_pilot_label(result, meta),
                success=bool(verdict["success"]),
                osr=bool(verdict["osr"]),
                ne_m=verdict.get("ne_m"),
                declarations=int(verdict.get("declarations") or 0),
                declared_start_ratio=verdict.get("declared_start_ratio"),
                start_distance_m=verdict.get("start_distance_m"),
                min_distance_m=verdict.get("min_distance_m"),
                failure_mode=verdict.get("failure_mode"),
                end_reason=result.get("end_reason") or (meta.get("run") or {}).get("end_reason"),
                steps=int(result.get("steps") or len(latencies)),
                sim_time_s=result.get("sim_time_s"),
                wall_time_s=result.get("wall_time_s"),
                cpu_time_s=result.get("cpu_time_s"),
                latencies_s=latencies,
                multi_go_calls=multi,
                copied_calls=copied,
                directory=str(d),
            )
        )
    return rows


def short_pilot(spec: str) -> str:
    """A pilot's name for tables and legends: the model profile, else the served model's name, else
    the spec itself ("baseline"); a scripted pilot by its file's name. The full URL is in the run's
    configuration (result.json)."""
    if spec.startswith("scripted:"):
        return "scripted " + Path(spec.partition(":")[2]).stem
    if "://" not in spec:
        return spec
    from urllib.parse import parse_qs

    query = parse_qs(spec.partition("?")[2])
    for key in ("profile", "model"):
        if query.get(key):
            name = query[key][0].rsplit("/", 1)[-1]  # a profile file's name, a model id's last part
            for suffix in (".yaml", ".yml", ".toml"):
                name = name.removesuffix(suffix)
            return name
    return spec.partition("?")[0]


def _pilot_label(result: dict[str, Any], meta: dict[str, Any]) -> str:
    """The pilot, with the injected latency when there was one (another condition, another group)."""
    run = meta.get("run") or {}
    pilot = short_pilot(str(result.get("pilot") or run.get("pilot_spec") or run.get("pilot") or "?"))
    latency = result.get("latency") or run.get("latency")
    structure = result.get("structure") or run.get("structure")
    if structure == "commander":  # another structure, another group: "commander rule + baseline"
        commander = short_pilot(
            str((result.get("structure_summary") or {}).get("commander") or run.get("commander") or "?")
        )
        pilot = f"commander {commander} + {pilot}"
    elif structure == "multi":
        pilot = f"one-context {pilot}"
    return f"{pilot} ({latency})" if latency and latency != "measured" else str(pilot)


def _episode_meta(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / "episode.json").read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


@dataclass
class GroupStats:
    task_type: str
    pilot: str
    n: int
    successes: int
    sr: float
    sr_low: float
    sr_high: float
    osr: float
    ne_median_m: float | None
    declaration_rate: float
    declared_start_ratio_median: float | None
    latency_p50_s: float | None
    coordinate_copying_rate: float | None
    failure_modes: dict[str, int]


def group_stats(rows: Sequence[EpisodeRow], task_type: str, pilot: str) -> GroupStats:
    n = len(rows)
    k = sum(r.success for r in rows)
    low, high = wilson(k, n)
    latencies = [x for r in rows for x in r.latencies_s]
    multi = sum(r.multi_go_calls for r in rows)
    copied = sum(r.copied_calls for r in rows)
    return GroupStats(
        task_type=task_type,
        pilot=pilot,
        n=n,
        successes=k,
        sr=k / n if n else 0.0,
        sr_low=low,
        sr_high=high,
        osr=sum(r.osr for r in rows) / n if n else 0.0,
        ne_median_m=median(r.ne_m for r in rows),
        declaration_rate=sum(r.declarations > 0 for r in rows) / n if n else 0.0,
        declared_start_ratio_median=median(r.declared_start_ratio for r in rows),
        latency_p50_s=median(latencies),
        coordinate_copying_rate=copied / multi if multi else None,
        failure_modes=dict(Counter(r.failure_mode for r in rows if not r.success and r.failure_mode)),
    )


TASK_ORDER = ("approach", "search", "track", "search+track", "plate", "sign", "sign_sum")


def groups(rows: Sequence[EpisodeRow], by_scene: bool = False) -> list[GroupStats]:
    """One group per (task type, pilot) — with by_scene, per (task type in scene, pilot), labelled
    "approach in blocks" — then one per pilot over all task types ("all")."""
    by: dict[tuple[str, str], list[EpisodeRow]] = defaultdict(list)
    for r in rows:
        by[(f"{r.task_type} in {r.scene}" if by_scene else r.task_type, r.pilot)].append(r)

    def order(key: tuple[str, str]) -> tuple[int, str, str]:
        task, pilot = key
        base = task.split(" in ")[0]
        return (TASK_ORDER.index(base) if base in TASK_ORDER else len(TASK_ORDER), task, pilot)

    out = [group_stats(by[key], *key) for key in sorted(by, key=order)]
    for pilot in sorted({r.pilot for r in rows}):
        out.append(group_stats([r for r in rows if r.pilot == pilot], "all", pilot))
    return out


def _fmt(value: float | None, digits: int = 2, pct: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:.0%}" if pct else f"{value:.{digits}f}"


SUMMARY_COLUMNS = (
    "task_type",
    "pilot",
    "n",
    "successes",
    "sr",
    "sr_low95",
    "sr_high95",
    "osr",
    "ne_median_m",
    "declaration_rate",
    "declared_start_ratio_median",
    "latency_p50_s",
    "coordinate_copying_rate",
)


def _csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    w.writerows(rows)
    return buf.getvalue()


def summary_csv(stats: Sequence[GroupStats]) -> str:
    return _csv(
        SUMMARY_COLUMNS,
        (
            [
                g.task_type,
                g.pilot,
                g.n,
                g.successes,
                f"{g.sr:.4f}",
                f"{g.sr_low:.4f}",
                f"{g.sr_high:.4f}",
                f"{g.osr:.4f}",
                "" if g.ne_median_m is None else f"{g.ne_median_m:.3f}",
                f"{g.declaration_rate:.4f}",
                "" if g.declared_start_ratio_median is None else f"{g.declared_start_ratio_median:.4f}",
                "" if g.latency_p50_s is None else f"{g.latency_p50_s:.4f}",
                "" if g.coordinate_copying_rate is None else f"{g.coordinate_copying_rate:.4f}",
            ]
            for g in stats
        ),
    )


EPISODE_COLUMNS = (
    "run_name",
    "task_type",
    "scene",
    "pilot",
    "success",
    "osr",
    "ne_m",
    "declarations",
    "declared_start_ratio",
    "start_distance_m",
    "min_distance_m",
    "failure_mode",
    "end_reason",
    "steps",
    "sim_time_s",
    "wall_time_s",
    "cpu_time_s",
)


def _cell(value: Any) -> Any:
    return f"{value:.3f}" if isinstance(value, float) else ("" if value is None else value)


def episodes_csv(rows: Sequence[EpisodeRow]) -> str:
    return _csv(EPISODE_COLUMNS, ([_cell(getattr(r, c)) for c in EPISODE_COLUMNS] for r in rows))


def summary_markdown(stats: Sequence[GroupStats]) -> str:
    lines = [
        "| task | pilot | n | SR [95% CI] | OSR | NE median (m) | decl. rate | decl./start "
        "| latency p50 (s) | coord. copying |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for g in stats:
        lines.append(
            f"| {g.task_type} | {g.pilot} | {g.n} | {g.sr:.0%} ({g.successes}/{g.n}) "
            f"[{g.sr_low:.0%}, {g.sr_high:.0%}] | {g.osr:.0%} | {_fmt(g.ne_median_m)} | "
            f"{g.declaration_rate:.0%} | {_fmt(g.declared_start_ratio_median)} | "
            f"{_fmt(g.latency_p50_s, 3)} | {_fmt(g.coordinate_copying_rate, pct=True)} |"
        )
    return "\n".join(lines)


def failure_markdown(stats: Sequence[GroupStats]) -> str:
    modes = [m for m in FAILURE_MODES if any(m in g.failure_modes for g in stats)]
    modes += sorted({m for g in stats for m in g.failure_modes} - set(modes))
    if not modes:
        return "No failed episodes."
    lines = [
        "| task | pilot | failures | " + " | ".join(modes) + " |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in modes) + " |",
    ]
    for g in stats:
        lines.append(
            f"| {g.task_type} | {g.pilot} | {g.n - g.successes} | "
            + " | ".join(str(g.failure_modes.get(m, 0)) for m in modes)
            + " |"
        )
    return "\n".join(lines)


def compare_markdown(a: Sequence[GroupStats], b: Sequence[GroupStats], name_a: str, name_b: str) -> str:
    """SR of two runs per task type, side by side, with whether their 95% intervals overlap."""
    index_b = {(g.task_type, g.pilot): g for g in b}
    tasks_b: dict[str, list[GroupStats]] = defaultdict(list)
    for g in b:
        tasks_b[g.task_type].append(g)
    lines = [
        f"| task | {name_a}: pilot, SR [95% CI] | {name_b}: pilot, SR [95% CI] "
        "| difference | intervals overlap |",
        "| --- | --- | --- | ---: | --- |",
    ]
    for ga in a:
        same_task = tasks_b.get(ga.task_type) or []
        gb = index_b.get((ga.task_type, ga.pilot)) or (same_task[0] if same_task else None)
        if gb is None:
            continue
        overlap = ga.sr_low <= gb.sr_high and gb.sr_low <= ga.sr_high
        lines.append(
            f"| {ga.task_type} | {ga.pilot}: {ga.sr:.0%} [{ga.sr_low:.0%}, {ga.sr_high:.0%}] | "
            f"{gb.pilot}: {gb.sr:.0%} [{gb.sr_low:.0%}, {gb.sr_high:.0%}] | {gb.sr - ga.sr:+.0%} | "
            f"{'yes: not a demonstrated difference' if overlap else 'no'} |"
        )
    return "\n".join(lines)
