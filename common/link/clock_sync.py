"""Clock offset between a ground station and a drone, from heartbeat timestamps (NTP-style).

t1 = ground sends the request, t2 = drone receives it, t3 = drone replies, t4 = ground receives the
reply (t1, t4 on the ground clock; t2, t3 on the drone clock). Then

    rtt    = (t4 - t1) - (t3 - t2)
    offset = ((t2 - t1) + (t3 - t4)) / 2        (drone clock minus ground clock)

The offset's error is at most rtt/2 (when all the delay is on one leg), so of the recent samples the
one with the smallest round trip is the most trustworthy: a min-RTT filter over a sliding window.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class OffsetSample:
    offset_s: float
    rtt_s: float
    t4_s: float


class ClockOffsetEstimator:
    def __init__(self, window: int = 16) -> None:
        if window < 1:
            raise ValueError(f"window {window} must be at least 1 sample")
        self._samples: deque[OffsetSample] = deque(maxlen=window)
        self._best: OffsetSample | None = None

    def add(self, t1_s: float, t2_s: float, t3_s: float, t4_s: float) -> OffsetSample | None:
        """Add one exchange; returns the sample, or None when its timestamps are inconsistent."""
        rtt_s = (t4_s - t1_s) - (t3_s - t2_s)
        if rtt_s < 0 or t3_s < t2_s:
            return None  # a clock stepped backwards or a stamp is corrupt: keep it out of the filter
        sample = OffsetSample(((t2_s - t1_s) + (t3_s - t4_s)) / 2.0, rtt_s, t4_s)
        self._samples.append(sample)
        self._best = min(self._samples, key=lambda s: s.rtt_s)
        return sample

    @property
    def ready(self) -> bool:
        return self._best is not None

    @property
    def offset_s(self) -> float:
        """Drone clock minus ground clock (0.0 until the first sample)."""
        return self._best.offset_s if self._best else 0.0

    @property
    def rtt_s(self) -> float | None:
        return self._best.rtt_s if self._best else None

    @property
    def error_bound_s(self) -> float | None:
        return self._best.rtt_s / 2.0 if self._best else None

    def to_ground_time(self, drone_time_s: float) -> float:
        return drone_time_s - self.offset_s

    def to_drone_time(self, ground_time_s: float) -> float:
        return ground_time_s + self.offset_s
