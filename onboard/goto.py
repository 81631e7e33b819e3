"""An operator's GoTo: the checks a target must pass before the drone acks it, and the closed loop
that flies it there.

A plan (onboard.controller) is one capped, open-loop move; a GoTo is farther than one cap and must
end where it was aimed, so `GoToFlight` re-plans toward the fixed world point from the measured
pose each time the previous plan is done (on the actuation tick), until the drone is within
`arrive_m` of it. Every setpoint still goes through the safety governor's filter on that tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from common.pose import Pose
from onboard.controller import plan_toward
from onboard.profiles import FlightProfile
from onboard.safety_config import SafetyConfig
from onboard.setpoints import MotionSchedule

ARRIVE_M = 0.5  # within this of the target (3-D) the GoTo has arrived
# Give up after this many times the straight-line flight time, plus turns and settling: a target the
# governor keeps the drone from reaching (fleet traffic in the way) must not be chased forever.
TIMEOUT_FACTOR = 3.0
TIMEOUT_EXTRA_S = 20.0


def goto_refusal(target_ned_m: tuple[float, float, float], home: Pose, safety: SafetyConfig) -> str:
    """Why the drone must not fly to this target ("" when it may): non-finite, outside the geofence
    around home, or above the ceiling / below the floor (altitudes above home)."""
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in target_ned_m):
        return f"target {target_ned_m} is not finite"
    north, east, down = target_ned_m
    radius_m = math.hypot(north - home.x_m, east - home.y_m)
    if radius_m > safety.geofence_radius_m:
        return f"outside the geofence: {radius_m:.1f} m from home (limit {safety.geofence_radius_m:g} m)"
    altitude_m = home.z_m - down
    if altitude_m > safety.altitude_ceiling_m:
        return f"above the ceiling: altitude {altitude_m:.1f} m (limit {safety.altitude_ceiling_m:g} m)"
    if altitude_m < safety.altitude_floor_m:
        return f"below the floor: altitude {altitude_m:.1f} m (limit {safety.altitude_floor_m:g} m)"
    return ""


@dataclass
class GoToFlight:
    """One accepted GoTo being flown; the actuator asks it for the next plan when one is done."""

    goto_id: str
    target: Pose  # yaw unused: the drone turns to face its way, as for any move
    profile: FlightProfile
    started_s: float
    deadline_s: float
    plans: int = 0

    @classmethod
    def start(
        cls,
        goto_id: str,
        target_ned_m: tuple[float, float, float],
        pose: Pose,
        profile: FlightProfile,
        now_s: float,
    ) -> GoToFlight:
        north, east, down = target_ned_m
        distance_m = math.dist((north, east, down), (pose.x_m, pose.y_m, pose.z_m))
        timeout_s = TIMEOUT_FACTOR * distance_m / profile.speed_m_s + TIMEOUT_EXTRA_S
        return cls(goto_id, Pose(north, east, down, pose.yaw_deg), profile, now_s, now_s + timeout_s)

    def distance_m(self, pose: Pose) -> float:
        t = self.target
        return math.dist((t.x_m, t.y_m, t.z_m), (pose.x_m, pose.y_m, pose.z_m))

    def next_schedule(self, pose: Pose, now_s: float) -> MotionSchedule | None:
        """The next plan toward the target from `pose`, or None once arrived."""
        if self.distance_m(pose) <= ARRIVE_M:
            return None
        self.plans += 1
        plan = plan_toward(self.target, pose, self.profile, arrive_tolerance_m=ARRIVE_M)
        return MotionSchedule(plan, now_s)
