"""The governor's flight mode and its transition log: normal flight, hold (with a reason), landing,
e-stop.

Modes only escalate (FLYING < HOLD < LANDING < ESTOP); only a resume goes back, and only from HOLD.
Every change is appended to the status's events, logged once with why, and queued as a `Transition`
that the governor hands to its sink after releasing its lock (the sink writes events.jsonl, which
must not happen under the lock the actuation tick waits on).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum


class Mode(str, Enum):
    FLYING = "flying"  # the pilot's plans are executed (within the limits)
    HOLD = "hold"  # position hold; the pilot's plans are not executed
    LANDING = "landing"
    ESTOP = "estop"


# The escalation order: a mode change to an earlier mode than the current one is refused.
ORDER = (Mode.FLYING, Mode.HOLD, Mode.LANDING, Mode.ESTOP)

# The hold cause of everything that is not a failsafe source (operator, pilot failures, collision,
# a non-finite setpoint, ...): a hold with this cause is never lifted by the pilot.
OTHER = "other"


@dataclass(frozen=True)
class Transition:
    """A mode change, as events.jsonl records it."""

    mode: Mode
    previous: Mode
    reason: str
    now_s: float
    source: str | None = None  # the failsafe source, when one caused it
    last_heard_s: float | None = None  # that source's last-heard time (runtime clock), None: never


TransitionSink = Callable[[Transition], None]


@dataclass(frozen=True)
class TrippedBy:
    """The failsafe source whose silence asks for a mode change, and when it was last heard (runtime
    clock; None: never)."""

    source: str
    last_heard_s: float | None


@dataclass
class SafetyStatus:
    mode: Mode = Mode.FLYING
    reason: str = ""
    consecutive_failures: int = 0
    clamps: int = 0
    events: list[str] = field(default_factory=list)


class ModeMachine:
    """The mode, why it is what it is, and the transitions not yet handed out.

    Not thread-safe on its own: SafetyGovernor calls every method under its one lock, and hands
    `take_pending()` to its sink after releasing it."""

    def __init__(self, clock: Callable[[], float], log: logging.Logger, estop_action: str) -> None:
        """`log`: the governor's logger, so that every safety line keeps the one logger name operators
        filter on. `estop_action`: "land" or "kill" (SafetyConfig.estop_action)."""
        self._clock = clock
        self._log = log
        self._estop_action = estop_action
        self.status = SafetyStatus()
        # Why the current hold holds: failsafe source names, or OTHER: only a hold made of sources
        # that are back again can be lifted by the pilot.
        self.hold_causes: set[str] = set()
        self._pending: list[Transition] = []
        self._land_requested = False

    @property
    def mode(self) -> Mode:
        return self.status.mode

    def set_mode(self, mode: Mode, reason: str, now_s: float | None = None, planned: bool = False) -> bool:
        """A change asked for by anything but a failsafe source (the operator, pilot failures, a
        collision, ...); `planned`: the end of a run (logged at INFO). True when the mode or its reason
        changed."""
        return self._change(mode, reason, now_s, planned, None)

    def trip(self, mode: Mode, reason: str, now_s: float, by: TrippedBy) -> bool:
        """A change asked for by a failsafe source's silence (onboard.safety_watchdogs)."""
        return self._change(mode, reason, now_s, False, by)

    def _change(
        self, mode: Mode, reason: str, now_s: float | None, planned: bool, by: TrippedBy | None
    ) -> bool:
        """Change the mode unless that would de-escalate."""
        source = None if by is None else by.source
        if ORDER.index(mode) < ORDER.index(self.status.mode):
            return False
        if mode == Mode.HOLD:
            self.hold_causes.add(OTHER if source is None else source)
        if mode == self.status.mode and (reason == self.status.reason or source is not None):
            return False  # (a failsafe joins a hold that holds already: the first reason stays)
        previous = self.status.mode
        self.status.mode = mode
        self.status.reason = reason
        self.status.events.append(f"{mode.value}: {reason}")
        # a planned landing (the run is over) is news, not a warning: successful runs print none
        self._log.log(logging.INFO if planned else logging.WARNING, "safety: %s (%s)", mode.value, reason)
        self._pending.append(
            Transition(
                mode,
                previous,
                reason,
                self._clock() if now_s is None else now_s,
                source,
                None if by is None else by.last_heard_s,
            )
        )
        return True

    def resume(self, reason: str, now_s: float) -> bool:
        """Back to FLYING from HOLD (never from landing or e-stop); the failure count starts afresh."""
        if self.status.mode != Mode.HOLD:
            return False
        previous = self.status.mode
        self.status.mode = Mode.FLYING
        self.status.reason = ""
        self.status.consecutive_failures = 0
        self.status.events.append(f"flying: {reason}")
        self.hold_causes.clear()
        self._pending.append(Transition(Mode.FLYING, previous, reason, now_s))
        self._log.info("safety: resume flying (%s)", reason)
        return True

    def source_back(self, source: str, last_heard_s: float | None, now_s: float, lifted_by: str) -> None:
        """A failsafe source heard again after it tripped: logged as a transition to the same mode
        (nothing when flying); the mode stays until `lifted_by` lifts it."""
        mode = self.status.mode
        if mode == Mode.FLYING:
            return
        self._pending.append(
            Transition(
                mode,
                mode,
                f"{source} back; {mode.value} stays until the {lifted_by} lifts it",
                now_s,
                source,
                last_heard_s,
            )
        )
        self._log.info("safety: %s back; %s stays", source, mode.value)

    def take_pending(self) -> list[Transition]:
        """The transitions made since the last call, oldest first."""
        pending, self._pending = self._pending, []
        return pending

    def land_requested(self) -> bool:
        """True once when the mode asks the vehicle to land (LANDING, or ESTOP configured to land)."""
        mode = self.status.mode
        wants = mode == Mode.LANDING or (mode == Mode.ESTOP and self._estop_action == "land")
        if wants and not self._land_requested:
            self._land_requested = True
            return True
        return False
