"""A controller plan placed on the clock: turn in place, then move, then hold.

The actuation loop asks `setpoint_at(now)` on every tick, so a plan executes the same way whether
the loop runs on wall time in a thread or is ticked by a lock-step simulator.
"""

from __future__ import annotations

from typing import NamedTuple

from onboard.controller import ControlPlan


class Setpoint(NamedTuple):
    """A body-frame velocity setpoint (forward, right, up) with a yaw rate (positive = clockwise)."""

    forward_m_s: float
    right_m_s: float
    up_m_s: float
    yaw_rate_deg_s: float

    @property
    def is_zero(self) -> bool:
        return not any(self)


HOLD = Setpoint(0.0, 0.0, 0.0, 0.0)


class MotionSchedule:
    """One plan started at `start_s`: the turn, then the move; HOLD before and after."""

    def __init__(self, plan: ControlPlan, start_s: float) -> None:
        self.plan = plan
        self.start_s = start_s
        self.turn_end_s = start_s + (0.0 if plan.hold else plan.yaw_duration_s)
        self.end_s = self.turn_end_s + (0.0 if plan.hold else plan.duration_s)

    def setpoint_at(self, now_s: float) -> Setpoint:
        if self.plan.hold or now_s < self.start_s or now_s >= self.end_s:
            return HOLD
        if now_s < self.turn_end_s:
            return Setpoint(0.0, 0.0, 0.0, self.plan.yaw_rate_deg_s)
        return Setpoint(self.plan.forward_m_s, self.plan.right_m_s, self.plan.up_m_s, 0.0)

    def done(self, now_s: float) -> bool:
        return now_s >= self.end_s

    def remaining_s(self, now_s: float) -> float:
        return max(0.0, self.end_s - now_s)
