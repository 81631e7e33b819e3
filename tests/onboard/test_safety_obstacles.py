"""Clearance from known obstacles (onboard.safety_obstacles) through the governor's filter: the floor
raised over a car, its sides kept (its footprint, not a circle around it), a climb out when inside or
when it drives closer, never above the ceiling; the feed refuses values it cannot use and keeps the
last list when a read fails."""

from __future__ import annotations

import math

import pytest

from common.interfaces import Telemetry
from common.obstacles import Obstacle
from common.pose import Pose
from onboard.safety import Mode, SafetyConfig, SafetyGovernor
from onboard.safety_obstacles import MAX_CARRY_S, ObstacleFeed, ObstacleMap
from onboard.setpoints import HOLD, Setpoint

# A car 10 m north of home, its length along north: 4.5 x 1.8 m, top 1.5 m up (NED z -1.5); its south end
# at 7.75 m. The defaults keep the drone 1.0 m above its top and 1.0 m off its footprint.
CAR = Obstacle("car_1", 10.0, 0.0, 0.0, 2.25, 0.9, -1.5)


def telemetry(x: float = 0.0, y: float = 0.0, alt: float = 5.0, yaw: float = 0.0) -> Telemetry:
    return Telemetry(0.0, Pose(x, y, -alt, yaw), (0.0, 0.0, 0.0), None, True, True, False, False)


def governor(*obstacles: Obstacle, now_s: list[float] | None = None, **kw: float) -> SafetyGovernor:
    clock = now_s if now_s is not None else [0.0]
    g = SafetyGovernor(SafetyConfig(**kw), home=Pose(0.0, 0.0, 0.0, 0.0), clock=lambda: clock[0])
    g.obstacles.set(obstacles)
    return g


def test_far_from_every_obstacle_nothing_changes() -> None:
    sp = Setpoint(1.0, 0.5, -1.0, 10.0)
    assert governor(CAR).filter(sp, telemetry(x=-10.0, alt=1.2)) == (sp, [])


def test_a_descent_over_a_car_levels_off_at_its_clearance() -> None:
    g = governor(CAR)
    # 3.0 m up over the car's roof: the descent that would reach 2.5 m within the 0.5 s look-ahead is cut
    # to the one that stops there (-1 m/s), and a slower one passes.
    sent, clamps = g.filter(Setpoint(0.0, 0.0, -1.5, 0.0), telemetry(x=10.0, alt=3.0))
    assert sent.up_m_s == pytest.approx(-1.0)
    assert clamps[0].rule == "obstacle" and "over car_1" in clamps[0].detail
    assert g.filter(Setpoint(0.0, 0.0, -0.5, 0.0), telemetry(x=10.0, alt=3.0))[1] == []
    # At its clearance: no descent at all, while horizontal motion over it goes on.
    sent, _ = g.filter(Setpoint(1.0, 0.0, -1.0, 0.0), telemetry(x=10.0, alt=2.5))
    assert (sent.forward_m_s, sent.up_m_s) == (pytest.approx(1.0), pytest.approx(0.0))
    # Approaching from outside its keep-out while descending: cut as soon as it would be over it.
    sent, _ = g.filter(Setpoint(1.0, 0.0, -1.5, 0.0), telemetry(x=6.6, alt=2.6))
    assert sent.up_m_s == pytest.approx(-0.2)


def test_beside_a_car_below_its_top_motion_toward_it_is_cut_and_along_it_kept() -> None:
    g = governor(CAR)
    # 1.35 m short of its south end at 1.2 m, facing north: forward closes on it within the look-ahead.
    sent, clamps = g.filter(Setpoint(1.0, 0.7, 0.0, 0.0), telemetry(x=6.4, alt=1.2))
    assert sent.forward_m_s == pytest.approx(0.0, abs=1e-9) and sent.right_m_s == pytest.approx(0.7)
    assert sent.up_m_s == 0.0 and "beside car_1" in clamps[0].detail
    # Facing east (yaw 90) the same closing motion is the body's "left": the cut is in the world frame.
    sent, _ = g.filter(Setpoint(0.0, -1.0, 0.0, 0.0), telemetry(x=6.4, alt=1.2, yaw=90.0))
    assert sent.right_m_s == pytest.approx(0.0, abs=1e-9)
    # Moving away is never cut.
    assert g.filter(Setpoint(-1.0, 0.0, 0.0, 0.0), telemetry(x=6.4, alt=1.2))[1] == []


def test_the_keep_out_follows_the_footprint_not_a_circle_around_it() -> None:
    broadside = Obstacle("car_4", 10.0, 0.0, 90.0, 2.25, 0.9, -1.5)  # its length along east
    g = governor(broadside)
    # 2.5 m south of its centre is 1.6 m off its long side: free; off its end (east) the same 2.5 m is
    # inside it, and the drone climbs out.
    assert g.filter(Setpoint(0.5, 0.0, 0.0, 0.0), telemetry(x=7.5, alt=1.2)) == (
        Setpoint(0.5, 0.0, 0.0, 0.0),
        [],
    )
    sent, clamps = g.filter(HOLD, telemetry(x=10.0, y=2.5, alt=1.2))
    assert sent.up_m_s == pytest.approx(1.0) and "inside car_4" in clamps[-1].detail
    assert broadside.offset_m(7.5, 0.0) == pytest.approx((1.6, -1.0, 0.0), abs=1e-9)


def test_inside_a_keep_out_the_drone_climbs_out_flying_or_holding() -> None:
    g = governor(CAR)
    sent, clamps = g.filter(Setpoint(0.0, 0.0, -0.5, 0.0), telemetry(x=8.0, alt=1.2))
    assert sent.up_m_s == pytest.approx(1.0) and "inside car_1: climbing" in clamps[-1].detail
    g.hold("test")
    assert g.mode == Mode.HOLD
    sent, clamps = g.filter(HOLD, telemetry(x=8.0, alt=1.2))
    assert sent.up_m_s == pytest.approx(1.0) and any(c.rule == "obstacle" for c in clamps)


def test_a_car_driving_at_a_low_drone_makes_it_climb() -> None:
    driving = Obstacle("car_2", 10.0, 0.0, 180.0, 2.25, 0.9, -1.5, (-2.0, 0.0))  # 2 m/s south, at the drone
    g = governor(driving)
    sent, clamps = g.filter(HOLD, telemetry(x=6.0, alt=1.2))  # 1.75 m off it: 0.75 m in 0.5 s
    assert sent.up_m_s == pytest.approx(1.0) and "closing car_2" in clamps[-1].detail
    # Driving away: nothing to do.
    away = Obstacle("car_3", 10.0, 0.0, 0.0, 2.25, 0.9, -1.5, (2.0, 0.0))
    assert governor(away).filter(HOLD, telemetry(x=6.0, alt=1.2)) == (HOLD, [])


def test_the_climb_stops_at_the_ceiling() -> None:
    truck = Obstacle("truck_1", 10.0, 0.0, 0.0, 4.0, 1.2, -3.7)  # its clearance (4.7 m) is above this ceiling
    sent, _ = governor(truck, altitude_ceiling_m=4.0).filter(
        Setpoint(0.0, 0.0, 0.0, 0.0), telemetry(x=9.0, alt=3.8)
    )
    assert sent.up_m_s <= 0.0


def test_obstacles_are_carried_forward_by_their_velocity_for_a_bounded_time() -> None:
    now = [0.0]
    obstacles = ObstacleMap(lambda: now[0])
    obstacles.set([Obstacle("car", 0.0, 0.0, 0.0, 2.0, 1.0, -1.5, (1.0, 0.5))])
    now[0] = 1.0
    assert (obstacles.now()[0].north_m, obstacles.now()[0].east_m) == (1.0, 0.5)
    now[0] = 100.0
    assert obstacles.now()[0].north_m == MAX_CARRY_S


class Source:
    def __init__(self) -> None:
        self.read: list[Obstacle] = []
        self.fail = False
        self.calls = 0

    def known_obstacles(self) -> list[Obstacle]:
        self.calls += 1
        if self.fail:
            raise ConnectionError("the server went away")
        return self.read


def test_the_feed_refuses_unusable_values_keeps_the_last_list_on_a_failed_read_and_reads_at_its_rate() -> (
    None
):
    now = [0.0]
    source, into = Source(), ObstacleMap(lambda: now[0])
    feed = ObstacleFeed(source, into, refresh_s=0.5, clock=lambda: now[0])
    source.read = [
        CAR,
        Obstacle("nan", math.nan, 0.0, 0.0, 2.0, 1.0, -1.5),
        Obstacle("huge", 0.0, 0.0, 0.0, 1e9, 1.0, -1.5),
        Obstacle("fast", 0.0, 0.0, 0.0, 2.0, 1.0, -1.5, (500.0, 0.0)),
        Obstacle("flat", 0.0, 0.0, 0.0, 2.0, 0.0, -1.5),
    ]
    feed.refresh(0.0)
    assert [o.name for o in into.now()] == ["car_1"] and feed.refused == 4
    feed.refresh(0.2)  # not due yet
    assert source.calls == 1
    source.fail = True
    feed.refresh(0.5)
    assert [o.name for o in into.now()] == ["car_1"] and feed.failures.count == 1
