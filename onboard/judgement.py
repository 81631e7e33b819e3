"""A declaration on a run without ground truth waits for the operator's verdict (docs/safety.md#real-flight).

In a simulator the runtime measures a declaration itself (distance, visibility) and the episode stops
at the first that qualifies. In real flight, and on any vehicle without ground truth (the PX4,
ArduPilot and Tello emulators, a simulator flown without --truth-target), nothing on board can tell:
the operator at the ground station judges. Without this wait the pilot reached the car and declared
again every step until T_max (101 and 57 declarations on the PX4 and Tello emulators).

`JudgementWait` owns the wait: when it began, and how long the run has been held for verdicts in all,
which the spec excludes from T_max. The runtime holds the drone while it waits (RuntimeConfig
on_declaration, judgement_wait_s).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class JudgementWait:
    """Thread-safe: the decision loop begins a wait, the link's judgement ends it, the stop checks read it."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since_s: float | None = None
        self._held_s = 0.0  # completed waits
        self.accepted = False  # the operator accepted a declaration: the run ends

    def begin(self) -> bool:
        """Start waiting (False when already waiting: a second declaration joins the first's wait)."""
        with self._lock:
            if self._since_s is not None:
                return False
            self._since_s = self._clock()
            return True

    def end(self, accepted: bool = False) -> bool:
        """A verdict (or new work) came: stop waiting (False when nothing was waiting)."""
        with self._lock:
            self.accepted = self.accepted or accepted
            if self._since_s is None:
                return False
            self._held_s += self._clock() - self._since_s
            self._since_s = None
            return True

    def waiting_s(self) -> float | None:
        """How long the current wait has lasted; None when not waiting."""
        with self._lock:
            return None if self._since_s is None else self._clock() - self._since_s

    def held_s(self) -> float:
        """All the time held for verdicts, the current wait included."""
        with self._lock:
            current = 0.0 if self._since_s is None else self._clock() - self._since_s
            return self._held_s + current
