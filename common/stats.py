"""The nearest-rank quantile, as the benchmarks and the ground station's metrics report it."""

from __future__ import annotations

from collections.abc import Sequence


def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The value at rank round(q * (n - 1)) of sorted, non-empty `ordered` (q from 0 to 1)."""
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
