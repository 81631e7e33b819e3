"""The decide loop, once, for real time and lock-step (docs/safety.md#two-loops, #lock-step-time).

Every run has the same shape: until a stop reason, capture a frame and ask the pilot, let the
pilot's latency pass, apply the reply, wait for the next decision; a failed capture holds and waits.
What differs is only how time passes and how latency is charged, and that is a `Pacer`:
`RealTimePacer` sleeps on the runtime's clock (latency has already passed while the pilot thought);
onboard.lockstep's pacer advances the paused simulation, ticking the actuation loop, by the measured
or injected latency. Several drones in one world (onboard.lockstep.MultiLockstepDriver) run their
rounds through the same `run_loop` with the same per-drone pieces. The loop holds a drone's
`DecisionStep` (onboard.decision_step) and the question whether it may decide, never its runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from common.clock import Clock
from onboard.controller import ControlPlan
from onboard.decision import PendingDecision
from onboard.decision_step import DecisionStep
from onboard.pilot_call import PilotCallAbandoned
from onboard.runtime_config import RuntimeConfig
from onboard.safety import Mode

STREAM_PERIOD_S = 0.05  # remote mode: frames go out at most this often
IDLE_S = 0.1  # nothing to decide (holding, no instruction): time passes in steps of this
CAPTURE_RETRY_S = 0.1  # after a failed capture, the next try comes at least this much later


def plan_duration_s(plan: ControlPlan) -> float:
    return 0.0 if plan.hold else plan.yaw_duration_s + plan.duration_s


class Pacer(Protocol):
    """How time passes between the steps of a decide loop."""

    def idle(self) -> None:
        """Nothing to decide now: let IDLE_S pass."""
        ...

    def after_stream(self, started_s: float) -> None:
        """Remote mode: a frame went out (or failed) at started_s."""
        ...

    def after_capture_failure(self, started_s: float) -> None:
        """The camera failed for the decision started at started_s (the drone holds)."""
        ...

    def charge(self, pending: PendingDecision) -> None:
        """The pilot has answered: its latency costs episode time before the reply is applied."""
        ...

    def after_step(self, started_s: float, plan: ControlPlan | None) -> None:
        """The reply was applied (plan: what the actuation loop flies, None if discarded)."""
        ...


class RealTimePacer:
    """Real time: the pilot's latency has passed already; waits sleep on the runtime's clock."""

    def __init__(self, clock: Clock, config: RuntimeConfig) -> None:
        self.clock = clock
        self.config = config

    def idle(self) -> None:
        self.clock.sleep(IDLE_S)  # hold and wait for an operator (new instruction or resume)

    def after_stream(self, started_s: float) -> None:
        self.clock.sleep_until(started_s + max(self.config.min_decision_period_s, STREAM_PERIOD_S))

    def after_capture_failure(self, started_s: float) -> None:
        self.clock.sleep_until(started_s + max(self.config.min_decision_period_s, CAPTURE_RETRY_S))

    def charge(self, pending: PendingDecision) -> None:
        pass

    def after_step(self, started_s: float, plan: ControlPlan | None) -> None:
        if plan is not None and self.config.loop == "naive":  # the naive loop waits for the plan to finish
            self.clock.sleep_until(self.clock.now() + plan_duration_s(plan))
        self.clock.sleep_until(started_s + self.config.min_decision_period_s)


def run_loop(
    stop_reason: Callable[[], str | None], step: Callable[[], None], finish: Callable[[str], None]
) -> str:
    """step() until stop_reason() names one; finish(reason) always runs (a crash ends as "stopped").
    A step whose pilot call was abandoned (the run had to end while it thought) ends with its reason."""
    reason = "stopped"
    try:
        while True:
            why = stop_reason()
            if why is not None:
                reason = why
                break
            try:
                step()
            except PilotCallAbandoned as exc:
                reason = exc.reason
                break
    finally:
        finish(reason)
    return reason


def ask_pilot(step: DecisionStep) -> PendingDecision | None:
    """Capture and ask the pilot; None when the camera failed (the drone holds, counted, said why)."""
    try:
        return step.capture_and_decide()
    except PilotCallAbandoned:
        raise  # not the camera: the run is ending
    except Exception as exc:  # the camera failed (video lost, stale frame refused)
        step.capture.failed(exc)
        return None


def decide_step(step: DecisionStep, pacer: Pacer) -> ControlPlan | None:
    """One decision: capture -> decide -> latency -> apply -> wait."""
    started_s = step.clock.now()
    pending = ask_pilot(step)
    if pending is None:
        pacer.after_capture_failure(started_s)
        return None
    pacer.charge(pending)
    plan = step.apply_decision(pending)
    pacer.after_step(started_s, plan)
    return plan


def loop_step(step: DecisionStep, can_decide: Callable[[], bool], pacer: Pacer) -> None:
    """One pass of a single drone's loop: stream (remote mode), wait (nothing to decide), or decide."""
    if step.config.remote and step.governor.mode == Mode.FLYING:
        started_s = step.clock.now()
        try:
            step.capture.stream()
        except Exception as exc:  # video lost: nothing to send, and no motion on old frames
            step.capture.failed(exc)
        pacer.after_stream(started_s)
    elif not can_decide():
        pacer.idle()
    else:
        decide_step(step, pacer)
