"""The verifier (docs/verifier.md): the verdict (Algorithm 1) and the diagnostics, from the logs only.

Verdict: declarations with t <= T_max, pooled across drones, in time order (ties keep file order);
the first that qualifies decides success and NE is its distance. A declaration qualifies when its
distance is <= delta and it is visible; in real flight a declaration carrying the operator's
`judged` is decided by it alone ("accept" stands for within delta and visible, "reject" never
qualifies). No qualifying declaration: failure, NE = the distance at each drone's last step with
t <= T_max, the smallest over drones (drones whose last step has no distance are skipped); no
steps: null.

How each diagnostic is computed (never part of the verdict), all over t <= T_max:
- distance samples: trace lines, step lines and declarations that carry a distance_m.
- osr: some sample is within delta, or some declaration was judged "accept".
- min_distance_m: the smallest sample. start_distance_m: for each drone its earliest sample; the
  smallest of these (the drone that started closest). approach_ratio = 1 - min / start.
- declared_start_ratio: the first declaration's distance / its drone's start distance (null when
  that declaration has no distance, as in real flight).
- moving targets only (task track / search+track, or a target with a route):
  first_acquisition_t = the first trace/step sample with visible true; dwell_within_delta_s = the
  time covered by trace intervals [t_i, t_i+1) that begin within delta (union over drones);
  longest_loss_streak_s = the longest time between first acquisition and the last trace sample
  during which no drone saw the target (trace intervals held from each sample, union over drones).
- collisions: per drone, the number of transitions to `collided: true` over its step and trace
  lines in time order (a line without the field does not break a contact).
- failure_mode (failed episodes only), the first that applies, in this order:
  collided (collisions > 0); declared_prematurely (a declaration, none qualifying);
  arrived_without_declaring (osr, no declaration); ran_out_of_steps (the logs reach
  T_max - t_max_margin_s, and some drone was still closing: its distance fell by at least
  closing_min_m over the last closing_window_s); never_grounded_referent (no `go` step has
  point_on_target true, and either there was no `go` or some `go` has a known point_on_target);
  grounded_but_never_closed_distance (approach_ratio < 0.25); oscillated_without_progress.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from common.actions import Go
from common.declarations import qualifies
from common.errors import RecordError
from episodes.logs import DeclarationLine, EpisodeLogs, LineProblem, StepLine, TraceLine

FAILURE_MODES = (
    "collided",
    "declared_prematurely",
    "arrived_without_declaring",
    "ran_out_of_steps",
    "never_grounded_referent",
    "grounded_but_never_closed_distance",
    "oscillated_without_progress",
)


@dataclass(frozen=True)
class VerifierSettings:
    delta_m: float | None = None  # None: the record's
    t_max_s: float | None = None  # None: the record's
    t_max_margin_s: float = 5.0  # "hit T_max": the logs reach T_max - this
    closing_window_s: float = 20.0
    closing_min_m: float = 1.0
    never_closed_ratio: float = 0.25  # approach ratio below this: never closed distance


class EpisodeVerdict(msgspec.Struct):
    episode: str
    directory: str
    task_type: str | None
    delta_m: float
    t_max_s: float
    success: bool
    ne_m: float | None
    decisive_t: float | None
    decisive_drone: str | None
    osr: bool
    declarations: int
    min_distance_m: float | None
    start_distance_m: float | None
    approach_ratio: float | None
    declared_start_ratio: float | None
    first_acquisition_t: float | None
    dwell_within_delta_s: float | None
    longest_loss_streak_s: float | None
    collisions: int
    failure_mode: str | None
    problems: list[LineProblem]


def _by_time(lines: Iterable[DeclarationLine]) -> list[DeclarationLine]:
    return sorted(lines, key=lambda line: line.t)  # stable: equal times keep file order


def _final_ne(steps: Sequence[StepLine], t_max_s: float) -> float | None:
    last: dict[str, StepLine] = {}
    for step in steps:
        if step.t <= t_max_s and (step.drone not in last or step.t >= last[step.drone].t):
            last[step.drone] = step
    distances = [s.distance_m for s in last.values() if s.distance_m is not None]
    return min(distances) if distances else None


def _intervals(
    samples: Sequence[TraceLine], flag: str, delta_m: float, t_end: float
) -> list[tuple[float, float]]:
    """Per drone, [t_i, t_i+1) for each trace sample whose condition holds (sample-and-hold)."""
    per_drone: dict[str, list[TraceLine]] = {}
    for line in samples:
        per_drone.setdefault(line.drone, []).append(line)
    out: list[tuple[float, float]] = []
    for lines in per_drone.values():
        lines.sort(key=lambda line: line.t)
        for a, b in itertools.pairwise(lines):
            if flag == "within":
                holds = a.distance_m is not None and a.distance_m <= delta_m
            else:
                holds = a.visible is True
            if holds:
                out.append((a.t, min(b.t, t_end)))
    return out


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _longest_gap(covered: list[tuple[float, float]], start: float, end: float) -> float:
    longest, cursor = 0.0, start
    for a, b in covered:
        if b <= cursor:
            continue
        if a > cursor:
            longest = max(longest, min(a, end) - cursor)
        cursor = max(cursor, b)
        if cursor >= end:
            break
    if cursor < end:
        longest = max(longest, end - cursor)
    return longest


def _collisions(steps: Sequence[StepLine], trace: Sequence[TraceLine], t_max_s: float) -> int:
    per_drone: dict[str, list[tuple[float, bool]]] = {}
    lines: list[StepLine | TraceLine] = [*steps, *trace]
    for line in lines:
        if line.collided is not None and line.t <= t_max_s:
            per_drone.setdefault(line.drone, []).append((line.t, line.collided))
    count = 0
    for events in per_drone.values():
        in_contact = False
        for _, collided in sorted(events, key=lambda e: e[0]):
            if collided and not in_contact:
                count += 1
            in_contact = collided
    return count


def _still_closing(samples: dict[str, list[tuple[float, float]]], settings: VerifierSettings) -> bool:
    for series in samples.values():
        if not series:
            continue
        t_last, d_last = series[-1]
        earlier = [d for t, d in series if t <= t_last - settings.closing_window_s]
        if earlier and earlier[-1] - d_last >= settings.closing_min_m:
            return True
    return False


def verify(logs: EpisodeLogs, settings: VerifierSettings | None = None) -> EpisodeVerdict:
    settings = settings or VerifierSettings()
    record = logs.record
    delta_m = settings.delta_m if settings.delta_m is not None else (record.delta_m if record else None)
    t_max_s = settings.t_max_s if settings.t_max_s is not None else (record.t_max_s if record else None)
    if delta_m is None or t_max_s is None:
        raise RecordError(
            f"{logs.directory}: no usable episode.json ({logs.record_error}); give --delta and --t-max"
        )
    if not delta_m > 0 or not t_max_s > 0:
        raise RecordError(f"delta_m={delta_m} and t_max_s={t_max_s} must both be > 0")

    steps = [s for s in logs.steps if s.t <= t_max_s]
    trace = [s for s in logs.trace if s.t <= t_max_s]
    declarations = _by_time(d for d in logs.declarations if d.t <= t_max_s)

    # Verdict (Algorithm 1).
    decisive = next((d for d in declarations if qualifies(d.distance_m, d.visible, delta_m, d.judged)), None)
    success = decisive is not None
    ne_m = decisive.distance_m if decisive is not None else _final_ne(steps, t_max_s)

    # Distance diagnostics.
    per_drone: dict[str, list[tuple[float, float]]] = {}
    measured: list[StepLine | TraceLine | DeclarationLine] = [*trace, *steps, *declarations]
    for line in measured:
        if line.distance_m is not None and math.isfinite(line.distance_m):
            per_drone.setdefault(line.drone, []).append((line.t, line.distance_m))
    for series in per_drone.values():
        series.sort(key=lambda sample: sample[0])
    all_distances = [d for series in per_drone.values() for _, d in series]
    min_distance_m = min(all_distances) if all_distances else None
    start_by_drone = {drone: series[0][1] for drone, series in per_drone.items() if series}
    start_distance_m = min(start_by_drone.values()) if start_by_drone else None
    approach_ratio = None
    if min_distance_m is not None and start_distance_m:
        approach_ratio = 1.0 - min_distance_m / start_distance_m
    osr = (min_distance_m is not None and min_distance_m <= delta_m) or any(
        d.judged == "accept" for d in declarations
    )
    declared_start_ratio = None
    first = declarations[0] if declarations else None
    if first is not None and first.distance_m is not None:
        start = start_by_drone.get(first.drone, start_distance_m)
        if start:
            declared_start_ratio = first.distance_m / start

    # Moving-target diagnostics.
    first_acquisition_t = dwell_s = loss_s = None
    moving = record.moving_target if record is not None else False
    if moving:
        observed: list[StepLine | TraceLine] = [*trace, *steps]
        seen = [line.t for line in observed if line.visible is True]
        first_acquisition_t = min(seen) if seen else None
        t_end = max((line.t for line in trace), default=0.0)
        dwell_s = sum(b - a for a, b in _union(_intervals(trace, "within", delta_m, t_end)))
        if first_acquisition_t is not None and trace:
            covered = _union(_intervals(trace, "visible", delta_m, t_end))
            loss_s = _longest_gap(covered, first_acquisition_t, max(t_end, first_acquisition_t))

    collisions = _collisions(steps, trace, t_max_s)

    failure_mode = None
    if not success:
        failure_mode = _failure_mode(
            logs, steps, declarations, collisions, osr, approach_ratio, per_drone, t_max_s, settings
        )

    return EpisodeVerdict(
        episode=record.id if record is not None else logs.directory.name,
        directory=str(logs.directory),
        task_type=record.task_type if record is not None else None,
        delta_m=delta_m,
        t_max_s=t_max_s,
        success=success,
        ne_m=ne_m,
        decisive_t=decisive.t if decisive is not None else None,
        decisive_drone=decisive.drone if decisive is not None else None,
        osr=osr,
        declarations=len(declarations),
        min_distance_m=min_distance_m,
        start_distance_m=start_distance_m,
        approach_ratio=approach_ratio,
        declared_start_ratio=declared_start_ratio,
        first_acquisition_t=first_acquisition_t,
        dwell_within_delta_s=dwell_s,
        longest_loss_streak_s=loss_s,
        collisions=collisions,
        failure_mode=failure_mode,
        problems=list(logs.problems),
    )


def _failure_mode(
    logs: EpisodeLogs,
    steps: Sequence[StepLine],
    declarations: Sequence[DeclarationLine],
    collisions: int,
    osr: bool,
    approach_ratio: float | None,
    per_drone: dict[str, list[tuple[float, float]]],
    t_max_s: float,
    settings: VerifierSettings,
) -> str:
    if collisions > 0:
        return "collided"
    if declarations:
        return "declared_prematurely"
    if osr:
        return "arrived_without_declaring"
    # The runner may log past T_max; "reaching T_max" looks at every line.
    logged: list[StepLine | TraceLine] = [*logs.steps, *logs.trace]
    t_last = max((line.t for line in logged), default=-math.inf)
    if t_last >= t_max_s - settings.t_max_margin_s and _still_closing(per_drone, settings):
        return "ran_out_of_steps"
    gos = [s for s in steps if isinstance(s.action, Go)]
    grounded = any(s.point_on_target is True for s in gos)
    unknown = bool(gos) and all(s.point_on_target is None for s in gos)
    if not grounded and not unknown:
        return "never_grounded_referent"
    if approach_ratio is not None and approach_ratio < settings.never_closed_ratio:
        return "grounded_but_never_closed_distance"
    return "oscillated_without_progress"


def aggregate(verdicts: Sequence[EpisodeVerdict]) -> dict:
    """SR, OSR, NE, declaration rate and failure-mode counts over several episodes."""
    n = len(verdicts)
    ne = [v.ne_m for v in verdicts if v.ne_m is not None]
    modes = {mode: 0 for mode in FAILURE_MODES}
    for v in verdicts:
        if v.failure_mode is not None:
            modes[v.failure_mode] += 1

    def rate(values: Iterable[bool]) -> float | None:
        values = list(values)
        return sum(values) / len(values) if values else None

    by_task: dict[str, dict] = {}
    for task in sorted({v.task_type or "unknown" for v in verdicts}):
        group = [v for v in verdicts if (v.task_type or "unknown") == task]
        by_task[task] = {
            "episodes": len(group),
            "sr": rate(v.success for v in group),
            "osr": rate(v.osr for v in group),
        }
    ratios = [v.approach_ratio for v in verdicts if v.approach_ratio is not None]
    return {
        "episodes": n,
        "sr": rate(v.success for v in verdicts),
        "osr": rate(v.osr for v in verdicts),
        "mean_ne_m": statistics.fmean(ne) if ne else None,
        "median_ne_m": statistics.median(ne) if ne else None,
        "declaration_rate": rate(v.declarations > 0 for v in verdicts),
        "mean_approach_ratio": statistics.fmean(ratios) if ratios else None,
        "failure_modes": modes,
        "episodes_with_problems": sum(1 for v in verdicts if v.problems),
        "by_task_type": by_task,
    }
