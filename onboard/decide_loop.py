"""The decide loop, once, for real time and lock-step (docs/safety.md#two-loops, #lock-step-time).

Every run has the same shape: until a stop reason, capture a frame and ask the pilot, let the
pilot's latency pass, apply the reply, wait for the next decision; a failed capture holds and waits.
What differs is only how time passes and how latency is charged, and that is a `Pacer`:
`RealTimePacer` sleeps on the runtime's clock (latency has already passed while the pilot thought);
onboard.lockstep's pacer advances the paused simulation, ticking the actuation loop, by the measured
or injected latency. Several drones in one world (onboard.lockstep.MultiLockstepDriver) run their
rounds through the same `run_loop` with the same per-drone pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from onboard.controller import ControlPlan
from onboard.pilot_call import PilotCallAbandoned
from onboard.safety import Mode

if TYPE_CHECKING:
    from onboard.runtime import OnboardRuntime, PendingDecision

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

    def after_step(self, rt: OnboardRuntime, started_s: float, plan: ControlPlan | None) -> None:
        """The reply was applied (plan: what the actuation loop flies, None if discarded)."""
        ...


class RealTimePacer:
    """Real time: the pilot's latency has passed already; waits sleep on the runtime's clock."""

    def __init__(self, rt: OnboardRuntime) -> None:
        self.rt = rt

    def idle(self) -> None:
        self.rt.clock.sleep(IDLE_S)  # hold and wait for an operator (new instruction or resume)

    def after_stream(self, started_s: float) -> None:
        self.rt.clock.sleep_until(started_s + max(self.rt.config.min_decision_period_s, STREAM_PERIOD_S))

    def after_capture_failure(self, started_s: float) -> None:
        self.rt.clock.sleep_until(started_s + max(self.rt.config.min_decision_period_s, CAPTURE_RETRY_S))

    def charge(self, pending: PendingDecision) -> None:
        pass

    def after_step(self, rt: OnboardRuntime, started_s: float, plan: ControlPlan | None) -> None:
        if plan is not None and rt.config.loop == "naive":  # the naive loop waits for the plan to finish
            rt.clock.sleep_until(rt.clock.now() + plan_duration_s(plan))
        rt.clock.sleep_until(started_s + rt.config.min_decision_period_s)


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


def ask_pilot(rt: OnboardRuntime) -> PendingDecision | None:
    """Capture and ask the pilot; None when the camera failed (the drone holds, counted, said why)."""
    try:
        return rt.capture_and_decide()
    except PilotCallAbandoned:
        raise  # not the camera: the run is ending
    except Exception as exc:  # the camera failed (video lost, stale frame refused)
        rt.capture.failed(exc)
        return None


def decide_step(rt: OnboardRuntime, pacer: Pacer) -> ControlPlan | None:
    """One decision: capture -> decide -> latency -> apply -> wait."""
    started_s = rt.clock.now()
    pending = ask_pilot(rt)
    if pending is None:
        pacer.after_capture_failure(started_s)
        return None
    pacer.charge(pending)
    plan = rt.apply_decision(pending)
    pacer.after_step(rt, started_s, plan)
    return plan


def loop_step(rt: OnboardRuntime, pacer: Pacer) -> None:
    """One pass of a single drone's loop: stream (remote mode), wait (nothing to decide), or decide."""
    if rt.config.remote and rt.governor.mode == Mode.FLYING:
        started_s = rt.clock.now()
        try:
            rt.capture.stream()
        except Exception as exc:  # video lost: nothing to send, and no motion on old frames
            rt.capture.failed(exc)
        pacer.after_stream(started_s)
    elif not rt.can_decide():
        pacer.idle()
    else:
        decide_step(rt, pacer)
