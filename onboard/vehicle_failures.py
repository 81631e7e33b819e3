"""A run of failed vehicle calls, logged once and named for what it is (docs/safety.md#fault-matrix).

The actuation loop calls the vehicle 20 times a second from two threads (the tick's setpoint, the
telemetry poll). When the vehicle's connection breaks (the simulator killed, the autopilot's serial
link unplugged) every one of those calls fails: logging each with its traceback buried the one line
that mattered under hundreds (37 tracebacks, 611 lines for one killed simulator). A `FailureStreak`
logs the first failure of a run of them as one line (its traceback only at DEBUG), counts the rest,
says once when the calls work again, and tells how long the calls have been failing: a streak that
outlasts VEHICLE_LOST_S while nothing gets through is the connection gone, and the run ends with a
reason that names it ("vehicle connection lost: ...") rather than as stale telemetry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

VEHICLE_LOST_S = 1.0  # every call failing this long: the connection is gone, not a hiccup


class FailureStreak:
    """Consecutive failures of one kind of vehicle call, on `now_s`'s clock."""

    def __init__(self, what: str, log: logging.Logger, now_s: Callable[[], float]) -> None:
        self.what = what
        self._log = log
        self._now_s = now_s
        self._lock = threading.Lock()
        self.since_s: float | None = None  # the first failure of the current streak
        self.count = 0  # failures in the current streak
        self.total = 0  # failures over the run
        self.last_error = ""

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            first = self.since_s is None
            if first:
                self.since_s = self._now_s()
            self.count += 1
            self.total += 1
            self.last_error = f"{exc}" or type(exc).__name__
        if first:
            self._log.warning("%s failed: %s (repeats are counted, not logged)", self.what, self.last_error)
            self._log.debug("%s failed", self.what, exc_info=exc)

    def ok(self) -> None:
        with self._lock:
            if self.since_s is None:
                return
            count, since_s = self.count, self.since_s
            self.since_s, self.count = None, 0
        self._log.info(
            "%s works again after %d failures over %.2f s", self.what, count, self._now_s() - since_s
        )

    def failing_for_s(self) -> float:
        """How long every call has failed (0 while they work)."""
        with self._lock:
            return 0.0 if self.since_s is None else self._now_s() - self.since_s
