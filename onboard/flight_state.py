"""The one owner of a flight's state: its tasking, its pilot's memory, its tallies, its start.

What the drone was told (the instruction, a commander's order and its steps left, the last GoTo),
what its pilot remembers (the last actions and frames), what the flight counted (steps,
declarations, the first qualifying one, the decision counters, the last stage latencies) and when
the flight began. The link's I/O thread (commands), the decision loop and the readers (the
telemetry publisher, a fleet episode, the run's result) all meet here, so every change is one named
method under one lock, and readers take a frozen `FlightSnapshot` rather than the live object.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from common.actions import Action
from common.clock import Clock
from onboard.decision import DecisionCounters, StageLatencies
from onboard.judgement import JudgementWait

HISTORY_LENGTH = 5  # actions and frames the pilot is shown
# Actions kept for the pilot's prompt and the snapshot's readers (a commander reads the last few).
KEPT_ACTIONS = HISTORY_LENGTH * 4


class FlightAlreadyStarted(RuntimeError):
    """A flight starts once: a second start would restart its episode time and its failsafes' clocks."""


@dataclass(frozen=True)
class FlightSnapshot:
    """The flight's state at one instant, for readers on any thread."""

    instruction: str
    order_id: str | None
    order_steps_left: int | None
    steps: int
    declarations: int
    qualifying_t: float | None
    history: tuple[Action, ...]  # oldest first, at most KEPT_ACTIONS
    started: bool
    t0_s: float

    @property
    def last_action(self) -> Action | None:
        return self.history[-1] if self.history else None


class FlightState:
    """Thread-safe: commands (the link's thread) and the decision loop change it through its methods."""

    def __init__(self, clock: Clock, instruction: str = "") -> None:
        self._lock = threading.Lock()
        self._instruction = instruction
        self._order_id: str | None = None
        self._order_steps_left: int | None = None  # executed steps left on the current order
        self._goto_s = -float("inf")  # when the last GoTo was accepted (runtime clock)
        # the order of the step being recorded: (order_id, steps left after it)
        self._step_order: tuple[str | None, int | None] = (None, None)
        self._history: list[Action] = []
        self._history_images: list[object] = []  # HxWx3 frames (None for a remote step's)
        self._steps = 0
        self._declarations = 0
        self._qualifying_t: float | None = None
        # Events before the take-off are timed from the runtime's construction.
        self._t0_s = clock.now()
        self._started = False
        self.counters = DecisionCounters()  # counted by the decision step and the frame capture
        self.last_stages = StageLatencies()  # of the last decision (published with telemetry)
        self.judgement = JudgementWait(clock.now)  # a declaration without truth waits for a verdict

    # ---- reading -------------------------------------------------------------------------------
    @property
    def instruction(self) -> str:
        """What the pilot is asked to do (the operator's instruction or order; "" after a GoTo)."""
        return self._instruction

    @property
    def order_id(self) -> str | None:
        return self._order_id

    @property
    def goto_s(self) -> float:
        return self._goto_s

    @property
    def step_order(self) -> tuple[str | None, int | None]:
        return self._step_order

    @property
    def steps(self) -> int:
        return self._steps

    @property
    def declarations(self) -> int:
        return self._declarations

    @property
    def qualifying_t(self) -> float | None:
        return self._qualifying_t

    @property
    def t0_s(self) -> float:
        """When the flight started (episode time 0), on the runtime's clock."""
        return self._t0_s

    def last_action(self) -> Action | None:
        with self._lock:
            return self._history[-1] if self._history else None

    def recent(self) -> tuple[tuple[Action, ...], tuple[object, ...]]:
        """The pilot's memory: its last HISTORY_LENGTH actions and frames."""
        with self._lock:
            return tuple(self._history[-HISTORY_LENGTH:]), tuple(self._history_images[-HISTORY_LENGTH:])

    def snapshot(self) -> FlightSnapshot:
        with self._lock:
            return FlightSnapshot(
                self._instruction,
                self._order_id,
                self._order_steps_left,
                self._steps,
                self._declarations,
                self._qualifying_t,
                tuple(self._history),
                self._started,
                self._t0_s,
            )

    # ---- the flight's start ----------------------------------------------------------------------
    def start_flight(self, t0_s: float) -> None:
        """Episode time runs from t0_s (after the take-off, or the lock-step climb)."""
        with self._lock:
            if self._started:
                raise FlightAlreadyStarted(f"the flight started at {self._t0_s:.3f} s already")
            self._started = True
            self._t0_s = t0_s

    # ---- tasking (the operator's commands) -------------------------------------------------------
    def new_task(self, instruction: str, order_id: str | None = None, steps_left: int | None = None) -> None:
        """A new instruction or order: the pilot starts over (no history from the previous task)."""
        with self._lock:
            self._instruction = instruction
            self._order_id = order_id
            self._order_steps_left = steps_left
            self._history.clear()
            self._history_images.clear()

    def stop_tasking(self) -> None:
        """The pilot's instruction is dropped (a return home flies without decisions)."""
        with self._lock:
            self._instruction = ""

    def take_over(self, now_s: float) -> None:
        """An operator's GoTo: instruction and order dropped; replies captured before now_s are stale."""
        with self._lock:
            self._instruction = ""
            self._order_id = None
            self._order_steps_left = None
            self._goto_s = now_s

    def count_order_step(self) -> bool:
        """An executed step under a commander's order (docs/protocol.md#several-drones): True when the
        order has run out of steps (then the drone holds until the next one)."""
        with self._lock:
            if self._order_steps_left is None:
                self._step_order = (None, None)
                return False
            self._order_steps_left -= 1
            self._step_order = (self._order_id, self._order_steps_left)
            if self._order_steps_left > 0:
                return False
            self._order_steps_left = None
            self._instruction = ""
            return True

    # ---- the decision step ---------------------------------------------------------------------
    def count_decision(self) -> int:
        """A pilot's (or a remote) reply is being applied: returns its step number."""
        with self._lock:
            self.counters.decisions += 1
            self._steps += 1
            return self._steps

    def remember(self, action: Action, image: object) -> None:
        """An executed action and the frame it was chosen on, for the pilot's next prompts."""
        with self._lock:
            self._history.append(action)
            self._history_images.append(image)
            del self._history[:-KEPT_ACTIONS], self._history_images[:-HISTORY_LENGTH]

    def declared(self, t: float, qualifies: bool, t_max_s: float) -> None:
        """A `finished` was measured at episode time t; the first qualifying one within T_max counts."""
        with self._lock:
            self._declarations += 1
            if qualifies and self._qualifying_t is None and t <= t_max_s:
                self._qualifying_t = t

    def accepted(self, t: float) -> None:
        """The operator accepted the declaration made at t."""
        with self._lock:
            self._qualifying_t = t
