"""Real-time scheduling for the actuation thread, best effort.

Under CPU load a normally scheduled thread that wakes for its tick waits behind other runnable work
(the simulator's renderer, the decision loop, anything else on the board) for a scheduler slice or
more: that is where the period error's long tail comes from. SCHED_FIFO lets the woken thread
preempt normal work at once. It needs root or CAP_SYS_NICE (give the onboard service that
capability on a Jetson); without it the loop runs normally and says so.
"""

from __future__ import annotations

import logging
import os

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
