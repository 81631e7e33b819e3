"""The safety governor on its own: plain code, plain tests (a clamp returns what it actually sent)."""

from __future__ import annotations

import math

import pytest

from common.interfaces import Telemetry
from common.pose import Pose
from onboard.safety import Mode, SafetyConfig, SafetyGovernor
from onboard.setpoints import HOLD, Setpoint


def telemetry(x=0.0, y=0.0, alt=5.0, yaw=0.0, collided=False, battery=None) -> Telemetry:
    return Telemetry(0.0, Pose(x, y, -alt, yaw), (0.0, 0.0, 0.0), battery, True, True, False, collided)


def governor(**kw) -> SafetyGovernor:
    return SafetyGovernor(SafetyConfig(**kw), home=Pose(0.0, 0.0, 0.0, 0.0))


def test_inside_limits_passes_unchanged() -> None:
    g = governor()
    sp = Setpoint(1.2, 0.0, 0.0, 0.0)
    sent, clamps = g.filter(sp, telemetry())
    assert sent == sp and clamps == []


def test_speed_caps_keep_direction() -> None:
    g = governor(max_horizontal_m_s=2.0, max_vertical_m_s=1.0, max_yaw_rate_deg_s=45)
    sent, clamps = g.filter(Setpoint(3.0, 4.0, -2.0, 100.0), telemetry())
    assert math.hypot(sent.forward_m_s, sent.right_m_s) == pytest.approx(2.0)
    assert sent.forward_m_s / sent.right_m_s == pytest.approx(0.75)
    assert sent.up_m_s == -1.0 and sent.yaw_rate_deg_s == 45
    assert clamps[0].rule == "speed" and clamps[0].asked == Setpoint(3.0, 4.0, -2.0, 100.0)


def test_geofence_cuts_outward_motion_only() -> None:
    g = governor(geofence_radius_m=50.0)
    # At 49.8 m north of home facing north: forward is outward, right (east) is tangential.
    sent, clamps = g.filter(Setpoint(1.2, 0.5, 0.0, 0.0), telemetry(x=49.8))
    assert sent.forward_m_s == pytest.approx(0.0, abs=1e-9)
    assert sent.right_m_s == pytest.approx(0.5)
    assert clamps and clamps[0].rule == "fence" and "geofence" in clamps[0].detail
    # Flying back toward home is always allowed.
    sent, clamps = g.filter(Setpoint(-1.2, 0.0, 0.0, 0.0), telemetry(x=49.8))
    assert sent.forward_m_s == pytest.approx(-1.2) and clamps == []
    # Facing east at the same spot, the same fence cuts the body-frame "left" motion.
    sent, _ = g.filter(Setpoint(0.0, -1.0, 0.0, 0.0), telemetry(x=49.8, yaw=90.0))
    assert sent.right_m_s == pytest.approx(0.0, abs=1e-9)


def test_altitude_floor_and_ceiling() -> None:
    g = governor(altitude_floor_m=1.0, altitude_ceiling_m=10.0)
    sent, clamps = g.filter(Setpoint(0.0, 0.0, -1.0, 0.0), telemetry(alt=1.2))
    assert sent.up_m_s == 0.0 and "floor" in clamps[0].detail
    sent, clamps = g.filter(Setpoint(0.0, 0.0, 1.0, 0.0), telemetry(alt=9.9))
    assert sent.up_m_s == 0.0 and "ceiling" in clamps[0].detail
    sent, clamps = g.filter(Setpoint(0.0, 0.0, 1.0, 0.0), telemetry(alt=5.0))
    assert sent.up_m_s == 1.0 and clamps == []


def test_collision_holds_and_reports() -> None:
    g = governor()
    sent, clamps = g.filter(Setpoint(1.0, 0, 0, 0), telemetry(collided=True))
    assert sent == HOLD and g.mode == Mode.HOLD and g.reason == "collision"
    assert clamps[0].rule == "mode"


def test_consecutive_failures_hold_and_reset() -> None:
    g = governor(max_consecutive_failures=3)
    g.pilot_failed("malformed")
    g.pilot_failed("malformed")
    g.pilot_ok()
    g.pilot_failed("malformed")
    g.pilot_failed("malformed")
    assert g.mode == Mode.FLYING
    g.pilot_failed("stale")
    assert g.mode == Mode.HOLD and "3 consecutive" in g.reason
    assert g.resume("new instruction") and g.mode == Mode.FLYING


def test_link_loss_holds_then_lands() -> None:
    g = governor(link_lost_hold_s=2.0, link_lost_land_s=10.0)
    g.link_state(False, 100.0)
    assert g.mode == Mode.FLYING
    g.link_state(False, 102.5)
    assert g.mode == Mode.HOLD and "link lost" in g.reason
    g.link_state(False, 110.5)
    assert g.mode == Mode.LANDING
    assert g.land_requested() and not g.land_requested()  # asked once


def test_battery_low_lands_and_estop_wins() -> None:
    g = governor(battery_land_fraction=0.2)
    g.filter(Setpoint(1, 0, 0, 0), telemetry(battery=0.19))
    assert g.mode == Mode.LANDING
    assert g.estop("button") and g.mode == Mode.ESTOP
    assert not g.resume("cannot resume from e-stop") and g.mode == Mode.ESTOP
    assert not g.hold("lower modes never override") and g.mode == Mode.ESTOP


def test_fleet_separation_cuts_closing_motion_only() -> None:
    g = governor(separation_m=1.5, lookahead_s=0.5)
    g.set_traffic([(2.0, 0.0, -5.0)])  # a fleet drone 2 m north, same height; we face north
    sent, clamps = g.filter(Setpoint(2.0, 1.0, 0.0, 0.0), telemetry())
    # 2 m - 2 m/s * 0.5 s < 1.5 m: the northward (closing) part goes, the sideways part stays
    assert sent.forward_m_s == pytest.approx(0.0, abs=1e-9) and sent.right_m_s == pytest.approx(1.0)
    assert clamps[0].rule == "separation" and "2.0 m" in clamps[0].detail
    # moving away, or slowly enough to stay outside 1.5 m within the look-ahead: untouched
    assert g.filter(Setpoint(-1.0, 0.0, 0.0, 0.0), telemetry())[1] == []
    assert g.filter(Setpoint(0.8, 0.0, 0.0, 0.0), telemetry())[1] == []
    # facing east: the drone to the north is on the left; the leftward part is cut
    sent, _ = g.filter(Setpoint(1.0, -2.0, 0.0, 0.0), telemetry(yaw=90.0))
    assert sent.forward_m_s == pytest.approx(1.0) and sent.right_m_s == pytest.approx(0.0, abs=1e-9)


def test_fleet_separation_ignores_drones_at_another_height_and_a_cleared_picture() -> None:
    g = governor(separation_m=1.5, separation_vertical_m=1.0)
    g.set_traffic([(1.0, 0.0, -7.0)])  # 2 m above us
    assert g.filter(Setpoint(2.0, 0.0, 0.0, 0.0), telemetry(alt=5.0))[1] == []
    g.set_traffic([(1.0, 0.0, -5.0)])
    assert g.filter(Setpoint(2.0, 0.0, 0.0, 0.0), telemetry(alt=5.0))[1][0].rule == "separation"
    g.set_traffic([])
    assert g.filter(Setpoint(2.0, 0.0, 0.0, 0.0), telemetry(alt=5.0))[1] == []


def test_fleet_separation_stops_descending_onto_a_drone_below() -> None:
    g = governor(separation_m=1.5, separation_vertical_m=1.0, lookahead_s=0.5)
    g.set_traffic([(0.5, 0.0, -3.8)])  # 0.5 m ahead horizontally, 1.2 m below (we are at 5 m)
    sent, clamps = g.filter(Setpoint(0.0, 0.0, -1.0, 0.0), telemetry(alt=5.0))  # descending 1 m/s
    assert sent.up_m_s == 0.0 and clamps[0].rule == "separation"
    assert g.filter(Setpoint(0.0, 0.0, 1.0, 0.0), telemetry(alt=5.0))[1] == []  # climbing away: fine
    g.set_traffic([(3.0, 0.0, -3.8)])  # horizontally clear: descending is fine
    assert g.filter(Setpoint(0.0, 0.0, -1.0, 0.0), telemetry(alt=5.0))[1] == []


def test_relayed_traffic_is_carried_forward_by_its_velocity_and_dropped_when_old() -> None:
    now = [100.0]
    g = SafetyGovernor(SafetyConfig(traffic_max_age_s=1.0), Pose(0.0, 0.0, 0.0, 0.0), clock=lambda: now[0])
    # reported 0.2 s ago 5 m north, flying south at 2 m/s: 4.6 m north now, 3.6 m in another 0.5 s
    g.set_traffic([(5.0, 0.0, -5.0)], [(-2.0, 0.0, 0.0)], [0.2])
    assert g.traffic_now() == [pytest.approx((4.6, 0.0, -5.0))]
    now[0] += 0.5
    assert g.traffic_now() == [pytest.approx((3.6, 0.0, -5.0))]
    now[0] += 0.31  # 0.2 + 0.81 s old: past traffic_max_age_s, a relay that stopped
    assert g.traffic_now() == []
    assert g.filter(Setpoint(3.0, 0.0, 0.0, 0.0), telemetry())[1] == []
    with pytest.raises(ValueError, match="velocities"):
        g.set_traffic([(1.0, 0.0, 0.0)], [], [0.0])
