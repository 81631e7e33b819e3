"""Clearance from the obstacles the vehicle's world knows (common.obstacles): the altitude floor raised
over each one, and its sides kept, on every tick below the pilot.

Each obstacle is a keep-out box: its footprint widened by `obstacle_margin_m` on every side, from the
ground to `obstacle_clearance_m` above its top (the drone's centre may not be lower than that over
it). The governor applies `keep_clear` after the fence and separation, flying or holding:

- above a keep-out (or about to be over one within the look-ahead): a descent into it is cut to what
  stops at its top, so a descent toward a target below the horizon levels off over the cars on the
  way, and over the target itself;
- beside one and below its top: the drone's own motion toward it is cut (as separation cuts motion
  toward a fleet mate), and it climbs at `recover_m_s` when the obstacle itself comes closer (a car
  driving at a low drone);
- inside one (a car drove under it, or nothing kept it out before): it climbs out at `recover_m_s`.

A climb never goes above the ceiling: there the cut motion is all that holds. Obstacles are fed by
`ObstacleFeed` from the vehicle (an `ObstacleSource`) every `obstacle_refresh_s` and carried forward
by their velocity in between (at most MAX_CARRY_S: a source that stopped answering leaves its last
obstacles where they were then).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import msgspec

from common.frames import heading_to_ned
from common.obstacles import MAX_OBSTACLES, Obstacle, ObstacleSource, check_obstacle
from common.pose import Pose
from onboard.safety_config import SafetyConfig
from onboard.safety_envelope import Clamp, world_clamp
from onboard.setpoints import Setpoint
from onboard.vehicle_failures import FailureStreak

log = logging.getLogger(__name__)

MAX_CARRY_S = 2.0


class ObstacleMap:
    """The obstacles last read, stamped on the governor's clock. Thread-safe: the feed sets them (the
    telemetry poller's thread in real time), the actuation tick reads them."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._obstacles: tuple[Obstacle, ...] = ()
        self._set_s = 0.0

    def set(self, obstacles: Sequence[Obstacle]) -> None:
        with self._lock:
            self._obstacles, self._set_s = tuple(obstacles), self._clock()

    def now(self) -> list[Obstacle]:
        """The obstacles carried forward by their velocity to now (for at most MAX_CARRY_S)."""
        with self._lock:
            obstacles, set_s = self._obstacles, self._set_s
        dt_s = min(MAX_CARRY_S, max(0.0, self._clock() - set_s))
        return [
            o
            if o.velocity_ne_m_s == (0.0, 0.0)
            else msgspec.structs.replace(
                o,
                north_m=o.north_m + o.velocity_ne_m_s[0] * dt_s,
                east_m=o.east_m + o.velocity_ne_m_s[1] * dt_s,
            )
            for o in obstacles
        ]


class ObstacleFeed:
    """Reads a vehicle's known obstacles every `refresh_s` into an `ObstacleMap`; an obstacle with a
    value it cannot use is dropped (counted, its first reason logged), a failed read keeps the last."""

    def __init__(
        self, source: ObstacleSource, into: ObstacleMap, refresh_s: float, clock: Callable[[], float]
    ) -> None:
        self.source = source
        self.into = into
        self.refresh_s = refresh_s
        self.next_s: float | None = None
        self.refused = 0
        self.failures = FailureStreak("obstacle read", log, clock)

    def refresh(self, now_s: float) -> None:
        if self.next_s is not None and now_s < self.next_s:
            return
        self.next_s = now_s + self.refresh_s
        try:
            read = self.source.known_obstacles()
        except Exception as exc:
            self.failures.failed(exc)
            return
        self.failures.ok()
        usable = []
        for obstacle in read[:MAX_OBSTACLES]:
            why = check_obstacle(obstacle)
            if why is None:
                usable.append(obstacle)
                continue
            if self.refused == 0:
                log.warning("obstacle refused: %s", why)
            self.refused += 1
        self.refused += max(0, len(read) - MAX_OBSTACLES)
        self.into.set(usable)


def keep_clear(
    sp: Setpoint, pose: Pose, home: Pose, obstacles: Sequence[Obstacle], c: SafetyConfig, clamps: list[Clamp]
) -> Setpoint:
    """The setpoint with every motion into an obstacle's keep-out cut, and a climb where one closes in
    or the drone is inside one (see the module docstring)."""
    if not obstacles:
        return sp
    fwd, right, up, _ = sp
    vn, ve, _ = heading_to_ned(fwd, right, 0.0, pose.yaw_deg)  # linear: velocities as well
    lookahead_s = max(c.lookahead_s, 1e-3)
    climb_m_s = min(c.recover_m_s, c.max_vertical_m_s)
    details = []
    for o in obstacles:
        lowest_z_m = o.top_z_m - c.obstacle_clearance_m  # NED: the drone's centre stays above this
        off_m, un, ue = o.offset_m(pose.x_m, pose.y_m)  # (un, ue): from its footprint to the drone
        own_m_s = vn * un + ve * ue  # > 0: the drone moves away
        its_m_s = o.velocity_ne_m_s[0] * un + o.velocity_ne_m_s[1] * ue  # > 0: it comes at the drone
        inside = off_m < c.obstacle_margin_m
        if not inside and off_m - (its_m_s - own_m_s) * lookahead_s >= c.obstacle_margin_m:
            continue  # not over its keep-out now, nor within the look-ahead
        if pose.z_m <= lowest_z_m:  # above it: no descent below its clearance within the look-ahead
            floor_up_m_s = (pose.z_m - lowest_z_m) / lookahead_s  # <= 0: the fastest descent that stops there
            if up < floor_up_m_s:
                up = floor_up_m_s
                top_m = home.z_m - o.top_z_m
                details.append(f"over {o.name} alt={home.z_m - pose.z_m:.1f} m (its top {top_m:.1f} m)")
            continue
        if own_m_s < 0:  # no motion of its own toward (or deeper into) it
            vn, ve = vn - own_m_s * un, ve - own_m_s * ue
            details.append(f"beside {o.name} {off_m:.1f} m off it (margin {c.obstacle_margin_m:g} m)")
        below_ceiling = home.z_m - pose.z_m + climb_m_s * lookahead_s <= c.altitude_ceiling_m
        if (inside or its_m_s > 0) and below_ceiling and up < climb_m_s:
            up = climb_m_s
            details.append(f"{'inside' if inside else 'closing'} {o.name}: climbing")
    if not details:
        return sp
    return world_clamp("obstacle", sp, (vn, ve), up, pose, "; ".join(details), clamps)
