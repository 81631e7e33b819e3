"""AirLib's argument rules of the multirotor motion calls (AirLib/src/vehicles/multirotor/api/
MultirotorApiBase.cpp, SimpleFlightApi.hpp): the drivetrain's effect on the yaw, moveOnPath's lookahead.

- DrivetrainType::ForwardOnly with an angle yaw mode (adjustYaw): the yaw is the mode's angle plus the
  direction of travel, when the heading (velocity for the velocity calls, the vector to the point flown
  to for the position and path calls) is longer than getDistanceAccuracy() (0.5); otherwise a yaw rate
  of 0. The velocity calls take it once, at the start; the position and path calls every tick.
  ForwardOnly with a rate yaw mode: the velocity calls ignore the drivetrain, moveOnPath (and so
  moveToPosition, moveToGPS) refuse it.
- moveOnPath's lookahead: 0 is refused; a positive one must be at least velocity * the command period
  (1/50 s) and the distance accuracy; a negative one is getAutoLookahead: velocity / 50 * (30 with an
  adaptive lookahead > 0, else 40), at least 1.5 * the distance accuracy.
"""

from __future__ import annotations

import math

from common.errors import VehicleError
from common.pose import wrap_deg
from sim_bridge.sim.multirotor import DISTANCE_ACCURACY_M, YawMode

MAX_DEGREE_OF_FREEDOM, FORWARD_ONLY = 0, 1  # DrivetrainType
COMMAND_PERIOD_S = 1.0 / 50  # SimpleFlightApi::getCommandPeriod
AUTO_LOOKAHEAD_FACTORS = (40.0, 30.0)  # getAutoLookahead's max_factor, min_factor (adaptive)


def drivetrain(value: object) -> int:
    try:
        d = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise VehicleError(
            f"drivetrain must be 0 (MaxDegreeOfFreedom) or 1 (ForwardOnly), got {value!r}"
        ) from None
    if d not in (MAX_DEGREE_OF_FREEDOM, FORWARD_ONLY):
        raise VehicleError(f"drivetrain must be 0 (MaxDegreeOfFreedom) or 1 (ForwardOnly), got {d}")
    return d


def velocity_yaw(yaw: YawMode, drive: int, vx_m_s: float, vy_m_s: float) -> YawMode:
    """adjustYaw(vx, vy, drivetrain, yaw_mode) for the velocity calls (world-frame velocity)."""
    if drive != FORWARD_ONLY or yaw.is_rate:
        return yaw
    if math.hypot(vx_m_s, vy_m_s) > DISTANCE_ACCURACY_M:
        return YawMode(False, wrap_deg(yaw.value + math.degrees(math.atan2(vy_m_s, vx_m_s))))
    return YawMode(True, 0.0)  # setZeroRate: keep the heading


def path_yaw(yaw: YawMode, drive: int) -> YawMode:
    """moveOnPath's yaw mode: ForwardOnly re-aims every tick; a rate with ForwardOnly is refused."""
    if drive != FORWARD_ONLY:
        return yaw
    if yaw.is_rate:
        raise VehicleError("Yaw cannot be specified as rate if drivetrain is ForwardOnly")
    return YawMode(False, yaw.value, forward_only=True)


def lookahead_m(lookahead: float, adaptive_lookahead: float, velocity_m_s: float) -> float:
    """moveOnPath's lookahead checks and its automatic value."""
    command_period_dist = velocity_m_s * COMMAND_PERIOD_S
    if lookahead == 0:
        raise VehicleError("lookahead distance cannot be 0")
    if lookahead > 0:
        if command_period_dist > lookahead:
            raise VehicleError(
                f"lookahead value {lookahead:f} is too small for velocity {velocity_m_s:f}. "
                f"It must be at least {command_period_dist:f}"
            )
        if lookahead < DISTANCE_ACCURACY_M:
            raise VehicleError(
                f"lookahead value {lookahead:f} is smaller than drone's distance accuracy "
                f"{DISTANCE_ACCURACY_M:f}."
            )
        return float(lookahead)
    factor = AUTO_LOOKAHEAD_FACTORS[1] if adaptive_lookahead > 0 else AUTO_LOOKAHEAD_FACTORS[0]
    return max(command_period_dist * factor, DISTANCE_ACCURACY_M * 1.5)
