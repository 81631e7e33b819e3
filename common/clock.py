"""Injectable clocks. Simulation time is not wall time, so everything that waits or stamps takes a Clock."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on this clock's time line (monotonic)."""
        ...

    def sleep_until(self, t_s: float) -> None:
        """Block until now() >= t_s."""
        ...

    def sleep(self, duration_s: float) -> None: ...


class WallClock:
    """Monotonic wall time. Sleeping to absolute deadlines keeps fixed-rate loops from drifting."""

    def now(self) -> float:
        return time.monotonic()

    def sleep_until(self, t_s: float) -> None:
        remaining_s = t_s - time.monotonic()
        if remaining_s > 0:
            time.sleep(remaining_s)

    def sleep(self, duration_s: float) -> None:
        self.sleep_until(self.now() + duration_s)


class SimClock:
    """Time advanced explicitly by a simulator or a lock-step runner; sleepers wake as it advances.

    Thread-safe: one thread advances, any number wait.
    """

    def __init__(self, start_s: float = 0.0) -> None:
        self._now_s = start_s
        self._cond = threading.Condition()

    def now(self) -> float:
        with self._cond:
            return self._now_s

    def advance(self, duration_s: float) -> float:
        if duration_s < 0:
            raise ValueError(f"cannot advance a clock backwards (duration_s={duration_s})")
        with self._cond:
            self._now_s += duration_s
            self._cond.notify_all()
            return self._now_s

    def set(self, t_s: float) -> None:
        with self._cond:
            if t_s < self._now_s:
                raise ValueError(f"cannot set clock back from {self._now_s} to {t_s}")
            self._now_s = t_s
            self._cond.notify_all()

    def sleep_until(self, t_s: float, timeout_wall_s: float | None = None) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._now_s >= t_s, timeout=timeout_wall_s)

    def sleep(self, duration_s: float) -> None:
        self.sleep_until(self.now() + duration_s)
