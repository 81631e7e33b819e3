"""The pilot's call, where it cannot hold the run's life (docs/safety.md#process-life).

A pilot may take any time to answer: a model server that trickles its reply, hangs, or is
SIGSTOPped holds `Pilot.decide` as long as it likes. In real time the call therefore runs on a
daemon thread of its own while the decision loop waits on it in short slices and asks, between
slices, whether the run must end (T_max, SIGTERM/SIGINT, a ground-station land or e-stop, a
failsafe landing). When it must, the call is abandoned: its reply, if one ever comes, is dropped
unread and never executed, and the thread dies with the process. At most one call is in flight: a
call still running when the next is asked for (one abandoned, the loop gone on) is waited on first,
under the same stop checks.

In lock-step the call stays on the loop's own thread: simulated time is paused while the pilot
thinks, so nothing can come due while it does, and one thread keeps the episode deterministic.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from models.pilot import Decision, Observation

log = logging.getLogger(__name__)

POLL_S = 0.05  # how often a waiting loop asks whether the run must end


class PilotCallAbandoned(Exception):
    """The run must end while the pilot is still thinking; `reason` is the run's stop reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PilotCaller:
    """Runs `decide` on a worker thread, polling `stop_reason` while it waits (threaded), or inline."""

    def __init__(
        self, decide: Callable[[Observation], Decision], stop_reason: Callable[[], str | None]
    ) -> None:
        self._decide = decide
        self._stop_reason = stop_reason
        self.threaded = False  # set by the runtime's start in real time
        self._in_flight: threading.Thread | None = None
        self.abandoned = 0  # calls given up on because the run had to end

    def call(self, observation: Observation) -> Decision:
        """The pilot's decision; raises PilotCallAbandoned when the run must end first."""
        if not self.threaded:
            return self._decide(observation)
        self._wait_for(self._in_flight)  # at most one call in flight
        result: list[Decision] = []
        worker = threading.Thread(
            target=lambda: result.append(self._decide(observation)), name="pilot-call", daemon=True
        )
        self._in_flight = worker
        worker.start()
        self._wait_for(worker)
        self._in_flight = None
        return result[0]

    def _wait_for(self, worker: threading.Thread | None) -> None:
        while worker is not None and worker.is_alive():
            worker.join(POLL_S)
            if not worker.is_alive():
                return
            why = self._stop_reason()
            if why is not None:
                self.abandoned += 1
                log.warning(
                    "the run ends (%s) while the pilot is still thinking: its reply will be dropped", why
                )
                raise PilotCallAbandoned(why)
