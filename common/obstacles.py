"""Obstacles a vehicle's world knows (a simulator's cars and people), for the safety envelope.

A vehicle adapter whose world knows what stands in it (the built-in simulator in process, or over its
RPC) is also an `ObstacleSource`; a real vehicle is not, and then only the altitude floor keeps the
drone off what it cannot see. Each obstacle is an upright box: its footprint (a rectangle turned
by its heading) from the ground to its top, with its horizontal velocity (cars drive), all in the
episode's world NED frame. Values from a source are outside the process: `check_obstacle` refuses
any it cannot use.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import msgspec

from common.frames import forward_right_to_north_east, north_east_to_forward_right

# Nothing the simulator places is wider or faster than this: a larger value is a broken source.
MAX_OBSTACLE_HALF_M = 100.0
MAX_OBSTACLE_SPEED_M_S = 50.0
MAX_OBSTACLES = 1000  # per refresh; the rest are dropped and counted


class Obstacle(msgspec.Struct, frozen=True):
    """One obstacle: the world NED centre of its footprint, the footprint's heading (its length along
    it) and half extents, the world NED z of its top (negative: above the world origin) and its
    horizontal velocity."""

    name: str
    north_m: float
    east_m: float
    yaw_deg: float
    half_length_m: float
    half_width_m: float
    top_z_m: float
    velocity_ne_m_s: tuple[float, float] = (0.0, 0.0)

    def offset_m(self, north_m: float, east_m: float) -> tuple[float, float, float]:
        """How far a point is outside the footprint (0 inside), and the unit vector (north, east) from
        the footprint toward it (inside: from the centre, along the nearer side's normal)."""
        dn, de = north_m - self.north_m, east_m - self.east_m
        along, across = north_east_to_forward_right(dn, de, self.yaw_deg)  # in the footprint's own axes
        out_along = along - max(-self.half_length_m, min(self.half_length_m, along))
        out_across = across - max(-self.half_width_m, min(self.half_width_m, across))
        distance_m = math.hypot(out_along, out_across)
        if distance_m > 1e-9:
            ua, uc = out_along / distance_m, out_across / distance_m
        elif self.half_length_m - abs(along) < self.half_width_m - abs(across):
            ua, uc = math.copysign(1.0, along), 0.0
        else:
            ua, uc = 0.0, math.copysign(1.0, across)
        return distance_m, *forward_right_to_north_east(ua, uc, self.yaw_deg)


@runtime_checkable
class ObstacleSource(Protocol):
    def known_obstacles(self) -> list[Obstacle]:
        """The obstacles now, as the vehicle's world knows them (an empty list: none there)."""
        ...


def check_obstacle(obstacle: Obstacle) -> str | None:
    """Why this obstacle cannot be used (a non-finite or out-of-range number), or None."""
    o = obstacle
    values = (o.north_m, o.east_m, o.yaw_deg, o.half_length_m, o.half_width_m, o.top_z_m, *o.velocity_ne_m_s)
    if not all(math.isfinite(v) for v in values):
        return f"{o.name}: non-finite value in {values}"
    for half_m in (o.half_length_m, o.half_width_m):
        if not 0 < half_m <= MAX_OBSTACLE_HALF_M:
            return f"{o.name}: half extent {half_m} m outside (0, {MAX_OBSTACLE_HALF_M}]"
    if math.hypot(*obstacle.velocity_ne_m_s) > MAX_OBSTACLE_SPEED_M_S:
        return f"{obstacle.name}: speed above {MAX_OBSTACLE_SPEED_M_S} m/s"
    return None
