"""Real-time scheduling for the actuation thread, best effort.

Under CPU load a normally scheduled thread that wakes for its tick waits behind other runnable work
(the simulator's renderer, the decision loop, anything else on the board) for a scheduler slice or
more: that is where the period error's long tail comes from. SCHED_FIFO lets the woken thread
preempt normal work at once. It needs root or CAP_SYS_NICE (give the onboard service that
capability on a Jetson); without it the loop runs normally and says so.

The rest of the lateness is the interpreter lock: the woken tick waits while another of the
runtime's threads holds it, and that wait grows long when other work preempts the holder.
`set_thread_nice` gives the runtime's own threads a lower nice value so that they are not starved
while they hold it (bench_onboard measures both effects side by side).
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)

MAX_FIFO_PRIORITY = 99


def set_thread_fifo(priority: int) -> str:
    """Make the calling thread SCHED_FIFO at `priority` (Linux applies pid 0 to the calling thread).

    Returns what the thread runs with, e.g. "SCHED_FIFO 10", or "normal (...why...)" when the
    request was off (priority 0) or refused; a refusal is logged and never raised: the loop must fly.
    """
    if not 0 <= priority <= MAX_FIFO_PRIORITY:
        raise ValueError(f"priority={priority} must be 0 (off) or 1..{MAX_FIFO_PRIORITY} (SCHED_FIFO)")
    if priority == 0:
        return "normal (real-time priority off)"
    setter = getattr(os, "sched_setscheduler", None)
    if setter is None or not hasattr(os, "SCHED_FIFO"):
        log.warning("SCHED_FIFO is not available on this platform: the actuation loop runs normally")
        return "normal (SCHED_FIFO not available on this platform)"
    try:
        setter(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError as exc:
        log.warning(
            "SCHED_FIFO %d for the actuation thread not permitted (%s): it runs normally; "
            "run as root or grant CAP_SYS_NICE for a steadier loop under load",
            priority,
            exc,
        )
        return f"normal (SCHED_FIFO {priority} refused: {exc.strerror or exc})"
    return f"SCHED_FIFO {priority}"


def set_thread_nice(nice: int) -> tuple[str, int | None]:
    """Give the calling thread nice value `nice`; threads it starts afterwards inherit it.

    On Linux the nice value is per thread, so this touches only the caller and its future threads.
    Used for the runtime's own Python threads (decision loop, telemetry poller, logging): they hold
    the interpreter lock the actuation thread needs at each tick, and when other work on the board
    preempts them while they hold it, the tick waits (SCHED_FIFO on the actuation thread cannot help
    there). Returns (what the thread runs with, the previous value to restore, or None if unchanged);
    a refusal (no CAP_SYS_NICE for a negative value) is logged and never raised.
    """
    if not -20 <= nice <= 19:
        raise ValueError(f"nice={nice} must be in -20..19")
    if nice == 0:
        return "nice unchanged (0: left as started)", None
    getter, setter = getattr(os, "getpriority", None), getattr(os, "setpriority", None)
    if getter is None or setter is None:
        return "nice unchanged (not available on this platform)", None
    previous = getter(os.PRIO_PROCESS, 0)
    if previous == nice:
        return f"nice {nice}", None
    try:
        setter(os.PRIO_PROCESS, 0, nice)
    except OSError as exc:
        log.warning(
            "nice %d for the onboard threads not permitted (%s): they stay at %d", nice, exc, previous
        )
        return f"nice {previous} (nice {nice} refused: {exc.strerror or exc})", None
    return f"nice {nice}", previous


def restore_thread_nice(previous: int) -> None:
    """Back to the value set_thread_nice replaced (raising a nice value is always permitted)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, previous)
    except OSError as exc:
        log.warning("could not restore nice %d: %s", previous, exc)


class ThreadNice:
    """The nice value of the thread that applied it, and its way back: only that thread restores it
    (on Linux the value is per thread, so another thread's restore would change the wrong one)."""

    def __init__(self) -> None:
        self.label: str | None = None  # what the thread runs with (None until applied)
        self._previous: int | None = None
        self._thread: int | None = None

    def apply(self, nice: int) -> None:
        self.label, self._previous = set_thread_nice(nice)
        self._thread = threading.get_ident()

    def restore(self) -> None:
        if self._previous is not None and self._thread == threading.get_ident():
            restore_thread_nice(self._previous)
            self._previous = None
