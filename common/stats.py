"""The nearest-rank quantile, as the benchmarks and the ground station's metrics report it."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The value at rank round(q * (n - 1)) of sorted, non-empty `ordered` (q from 0 to 1)."""
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def latency_line(durations_s: Sequence[float], q: float = 0.95) -> str:
    """Durations as a benchmark prints them: "median M ms   pQ P ms   max X ms   (n=N)"."""
    if not durations_s:
        return "no samples"
    ms = sorted(d * 1e3 for d in durations_s)
    return (
        f"median {statistics.median(ms):7.2f} ms   p{round(q * 100)} {nearest_rank(ms, q):7.2f} ms   "
        f"max {ms[-1]:7.2f} ms   (n={len(ms)})"
    )
