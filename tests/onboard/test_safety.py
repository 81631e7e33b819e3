"""The safety governor on its own: plain code, plain tests (a clamp returns what it actually sent)."""

from __future__ import annotations

import math
import threading

import pytest

from common.interfaces import Telemetry
from common.pose import Pose
from onboard.safety import LINK, PILOT, TELEMETRY, VIDEO, Mode, SafetyConfig, SafetyGovernor, Transition
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


class SimFlight:
    """The real actuation loop (Actuator.tick) on the built-in simulator's vehicle, in lock-step:
    simulated time advances one period between ticks, and the pose is the simulator's own."""

    def __init__(self, **safety) -> None:
        from onboard.actuation import Actuator
        from sim_bridge.local import LocalVehicle
        from sim_bridge.sim.world import World

        self.world = World("residential", vehicles=1, seed=0)
        self.world.pause(True)
        self.vehicle = LocalVehicle(self.world, "Drone1")
        self.vehicle.connect()
        self.vehicle.arm()
        self.vehicle.takeoff(3.0)
        self.world.advance(6.0)  # the climb
        self.governor = SafetyGovernor(
            SafetyConfig(**safety), home=Pose(0.0, 0.0, 0.0, 0.0), clock=self.world.clock.now
        )
        self.transitions: list[Transition] = []
        self.governor.on_transition = self.transitions.append
        self.actuator = Actuator(self.vehicle, self.governor)
        self.period_s = 0.05

    def now(self) -> float:
        return self.world.clock.now()

    def fly_forward(self, speed_m_s: float = 2.0, duration_s: float = 60.0) -> None:
        from onboard.controller import ControlPlan, PlanKind
        from onboard.setpoints import MotionSchedule

        plan = ControlPlan(
            kind=PlanKind.GO,
            yaw_deg=0.0,
            yaw_rate_deg_s=0.0,
            yaw_duration_s=0.0,
            forward_m_s=speed_m_s,
            right_m_s=0.0,
            up_m_s=0.0,
            duration_s=duration_s,
            step_m=speed_m_s * duration_s,
            hold=False,
        )
        self.actuator.set_schedule(MotionSchedule(plan, self.now()))

    def run(self, duration_s: float, each_tick=None) -> None:
        end_s = self.now() + duration_s
        while self.now() < end_s - 1e-9:
            self.actuator.tick(self.now())
            self._wait_for_landing_command()
            if each_tick is not None:
                each_tick(self)
            self.world.advance(self.period_s)

    @staticmethod
    def _wait_for_landing_command() -> None:
        # The actuator lands from a thread (landing blocks on some vehicles); in lock-step the tick's
        # simulated instant is when it reaches the vehicle, however late a loaded machine runs it.
        for thread in threading.enumerate():
            if thread.name == "land":
                thread.join(timeout=30.0)

    def pose(self) -> Pose:
        return self.world.vehicle_pose("Drone1")

    def close(self) -> None:
        self.world.close()


@pytest.fixture
def flight():
    flights: list[SimFlight] = []

    def make(**safety) -> SimFlight:
        flights.append(SimFlight(**safety))
        return flights[-1]

    yield make
    for f in flights:
        f.close()


def test_link_loss_holds_then_lands_through_the_actuation_loop(flight) -> None:
    """The ground station is heard once, then never again: the ticks alone (no further link event)
    hold the drone link_lost_hold_s after that last-heard time and land it link_lost_land_s after."""
    f = flight(link_lost_hold_s=1.0, link_lost_land_s=4.0)
    heard: list[float | None] = [None]
    f.governor.watch(LINK, f.now(), poll=lambda: heard[0])
    f.fly_forward()
    f.run(0.5)
    heard[0] = f.now()  # the last heartbeat
    last_heard_s = heard[0]
    modes: list[tuple[float, Mode]] = []
    f.run(12.0, lambda fl: modes.append((fl.now(), fl.governor.mode)))
    hold_s = next(t for t, m in modes if m == Mode.HOLD)
    land_s = next(t for t, m in modes if m == Mode.LANDING)
    assert hold_s - last_heard_s == pytest.approx(1.0, abs=f.period_s + 1e-6)
    assert land_s - last_heard_s == pytest.approx(4.0, abs=f.period_s + 1e-6)
    assert [t.mode for t in f.transitions] == [Mode.HOLD, Mode.LANDING]
    assert all(t.source == LINK and t.last_heard_s == last_heard_s for t in f.transitions)
    assert "ground-station link lost" in f.transitions[0].reason
    # what the vehicle did: moving north until the hold, stopped by the landing, on the ground at the end
    assert f.pose().x_m > 2.0 and f.world.vehicle("Drone1").model.landed
    assert f.pose().z_m == pytest.approx(0.0, abs=0.3)


def test_estop_kill_stops_the_motors_of_the_simulated_drone(flight) -> None:
    """estop_action=kill through the real actuation loop: the vehicle's emergency_stop (the protocol's,
    no probing) puts the drone on its floor, disarmed, and it stays there while the loop ticks on."""
    f = flight(estop_action="kill")
    f.fly_forward()
    f.run(1.0)
    assert f.pose().z_m < -2.0  # flying, 3 m up
    assert f.governor.estop("test")
    f.run(0.1)
    model = f.world.vehicle("Drone1").model
    stopped = f.pose()
    assert model.landed and not model.armed and stopped.z_m == pytest.approx(model.floor_z_m, abs=1e-6)
    f.fly_forward()  # a plan after the e-stop moves nothing
    f.run(2.0)
    assert f.pose().x_m == pytest.approx(stopped.x_m, abs=1e-6) and model.landed


def test_estop_land_lands_the_simulated_drone(flight) -> None:
    f = flight(estop_action="land")
    f.fly_forward()
    f.run(1.0)
    assert f.governor.estop("test")
    f.run(8.0)
    model = f.world.vehicle("Drone1").model
    assert model.landed and model.armed  # landed by the landing, not by killing the motors


def test_a_link_that_never_comes_up_holds_and_lands_from_when_it_was_bound(flight) -> None:
    f = flight(link_lost_hold_s=1.0, link_lost_land_s=4.0)
    bound_s = f.now()
    f.governor.watch(LINK, bound_s, poll=lambda: None)
    f.fly_forward()
    f.run(14.0)
    assert [t.mode for t in f.transitions] == [Mode.HOLD, Mode.LANDING]
    assert f.transitions[0].now_s - bound_s == pytest.approx(1.0, abs=f.period_s + 1e-6)
    assert f.transitions[1].now_s - bound_s == pytest.approx(4.0, abs=f.period_s + 1e-6)
    assert "never heard" in f.transitions[0].reason
    assert f.world.vehicle("Drone1").model.landed


def test_a_link_that_comes_back_leaves_the_hold_to_the_operator(flight) -> None:
    f = flight(link_lost_hold_s=1.0, link_lost_land_s=30.0)
    heard = [f.now()]
    f.governor.watch(LINK, f.now(), poll=lambda: heard[0])
    f.fly_forward()
    f.run(1.5)
    assert f.governor.mode == Mode.HOLD
    x_held = f.pose().x_m
    heard[0] = f.now()  # heartbeats again
    f.run(0.1)
    f.run(3.0, lambda fl: heard.__setitem__(0, fl.now()))
    assert f.governor.mode == Mode.HOLD and "back" in f.transitions[-1].reason
    assert abs(f.pose().x_m - x_held) < 1.0  # braked and held, not flying on
    assert f.governor.resume("operator: new instruction") and f.governor.mode == Mode.FLYING


def test_telemetry_silence_lands(flight) -> None:
    f = flight(telemetry_stale_land_s=2.0)
    f.fly_forward()
    f.run(1.0)
    assert f.governor.mode == Mode.FLYING
    real_telemetry = f.vehicle.telemetry
    f.vehicle.telemetry = lambda: (_ for _ in ()).throw(ConnectionError("telemetry link down"))
    lost_s = f.now()
    f.run(3.0)
    f.vehicle.telemetry = real_telemetry
    landing = [t for t in f.transitions if t.mode == Mode.LANDING]
    assert landing and landing[0].source == TELEMETRY
    assert landing[0].now_s - lost_s == pytest.approx(2.0, abs=2 * f.period_s)


def test_a_non_finite_setpoint_becomes_a_hold_and_is_logged(flight) -> None:
    f = flight()
    f.fly_forward(speed_m_s=float("nan"))
    f.run(1.0)
    assert f.governor.mode == Mode.HOLD and "non-finite" in f.governor.reason
    assert f.transitions[0].mode == Mode.HOLD and "non-finite" in f.transitions[0].reason
    pose = f.pose()
    assert all(math.isfinite(v) for v in pose.as_list()) and abs(pose.x_m) < 0.5
    assert f.actuator.schedule() is None  # the plan that produced it is dropped


def test_pilot_silence_holds_after_the_replys_deadline_and_a_valid_action_lifts_it() -> None:
    now = [0.0]
    g = SafetyGovernor(SafetyConfig(pilot_silence_hold_s=3.0), Pose(0, 0, 0, 0), clock=lambda: now[0])
    seen: list[Transition] = []
    g.on_transition = seen.append
    g.pilot_asked(0.0, deadline_s=12.0)  # a plan step after a think: 12 s allowed
    for t in (1.0, 5.0, 11.9):
        g.check_failsafes(t)
    assert g.mode == Mode.FLYING  # a slow reply within its deadline is not silence
    g.check_failsafes(12.0)
    assert g.mode == Mode.HOLD and seen[-1].source == PILOT and "pilot silent" in seen[-1].reason
    assert g.pilot_may_lift()  # no ground station: the loop keeps asking while it holds
    now[0] = 13.0
    assert g.pilot_ok(13.0) and g.mode == Mode.FLYING
    assert "fresh valid pilot action after pilot back" in seen[-1].reason
    # answered in time: never silent, however long between requests (a naive plan, an idle wait)
    g.check_failsafes(100.0)
    g.pilot_asked(100.0, deadline_s=3.0)
    g.check_failsafes(102.9)
    assert g.pilot_ok(102.9) is False and g.mode == Mode.FLYING


def test_stale_video_holds_and_only_a_valid_action_on_fresh_video_lifts_it() -> None:
    g = SafetyGovernor(SafetyConfig(frame_stale_hold_s=1.0), Pose(0, 0, 0, 0), clock=lambda: 0.0)
    g.heard(VIDEO, 10.0)
    g.video_stale(10.4)
    g.check_failsafes(10.9)
    assert g.mode == Mode.FLYING
    g.check_failsafes(11.0)
    assert g.mode == Mode.HOLD and "video stale" in g.reason
    g.video_stale(11.5)
    assert not g.pilot_ok(11.5) and g.mode == Mode.HOLD  # the video is not back
    g.heard(VIDEO, 12.0)
    g.check_failsafes(12.0)
    assert g.mode == Mode.HOLD  # back, but it never resumes by itself
    assert g.pilot_ok(12.1) and g.mode == Mode.FLYING


def test_with_a_ground_station_only_the_operator_lifts_a_failsafe_hold() -> None:
    g = SafetyGovernor(SafetyConfig(), Pose(0, 0, 0, 0), clock=lambda: 0.0)
    g.watch(LINK, 0.0, poll=lambda: 10.0)
    g.heard(VIDEO, 10.0)
    g.video_stale(10.1)
    g.check_failsafes(11.1)
    assert g.mode == Mode.HOLD and not g.pilot_may_lift()
    g.heard(VIDEO, 11.5)
    assert not g.pilot_ok(11.6) and g.mode == Mode.HOLD
    assert g.resume("new instruction") and g.mode == Mode.FLYING


def test_other_holds_are_never_lifted_by_the_pilot() -> None:
    g = governor(max_consecutive_failures=2)
    g.pilot_failed("malformed")
    g.pilot_failed("malformed")
    assert g.mode == Mode.HOLD and not g.pilot_may_lift() and not g.pilot_ok()
    assert g.mode == Mode.HOLD


@pytest.mark.parametrize("field", ["pilot_silence_hold_s", "frame_stale_hold_s", "telemetry_stale_land_s"])
@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_failsafe_times_must_be_finite_and_positive(field, value) -> None:
    with pytest.raises(ValueError, match=field):
        SafetyConfig(**{field: value})


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


def test_lockstep_replies_slower_than_the_silence_time_but_within_deadline_never_hold(tmp_path) -> None:
    """Lock-step injects the model's latency as simulated time while the actuation loop ticks: a reply
    in time (2.9 s of a 3 s deadline; pilot_silence_hold_s 1 s) is never silence."""
    import json

    from onboard.lockstep import LockstepDriver
    from sim_bridge.sim.world import World
    from tests.support.runtime import make_runtime

    world = World("residential", vehicles=1, seed=0)
    world.pause(True)
    try:
        rt = make_runtime(
            world, tmp_path, max_steps=4, land_at_end=False, safety=SafetyConfig(pilot_silence_hold_s=1.0)
        )
        LockstepDriver(rt, world, latency=lambda pending: 2.9).run()
    finally:
        world.close()
    assert rt.state.counters.executed == 4 and rt.governor.mode == Mode.FLYING
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert not [e for e in lines if e["event"] == "safety"]


def test_a_goto_target_is_checked_against_the_fence_and_altitudes_around_home() -> None:
    from onboard.goto import goto_refusal

    home = Pose(10.0, -5.0, -1.0, 0.0)  # a home off the origin, on a 1 m high roof
    safety = SafetyConfig(geofence_radius_m=20.0, altitude_floor_m=0.5, altitude_ceiling_m=15.0)
    assert goto_refusal((10.0 + 19.9, -5.0, -4.0), home, safety) == ""
    assert goto_refusal((10.0 + 12.0, -5.0 + 16.0, -4.0), home, safety) == ""  # 20.0 m: on the fence
    assert "outside the geofence: 20.1 m" in goto_refusal((10.0, -5.0 - 20.1, -4.0), home, safety)
    assert goto_refusal((10.0, -5.0, -1.0 - 15.0), home, safety) == ""  # the ceiling, above home
    assert "above the ceiling: altitude 15.1 m" in goto_refusal((10.0, -5.0, -16.1), home, safety)
    assert "below the floor: altitude 0.3 m" in goto_refusal((10.0, -5.0, -1.3), home, safety)
    assert "not finite" in goto_refusal((math.nan, 0.0, -3.0), home, safety)


def test_every_failsafe_source_records_each_transition_with_its_exact_fields() -> None:
    """The one watchdog rule, source by source: what each trips, when, and what events.jsonl gets."""
    link_heard: list[float | None] = [None]
    g = SafetyGovernor(SafetyConfig(), Pose(0, 0, 0, 0), clock=lambda: 0.0)
    seen: list[Transition] = []
    g.on_transition = seen.append
    g.watch(LINK, 0.0, poll=lambda: link_heard[0])
    g.flight_started(1.0)  # a link never heard is timed from take-off, and so is the telemetry

    def tick(t: float) -> None:  # the telemetry stays fresh: only the link is silent here
        g.heard(TELEMETRY, t)
        g.check_failsafes(t)

    for t in (3.9, 4.0, 4.5):
        tick(t)
    link_heard[0] = 4.6  # the link comes back: logged, the hold stays
    tick(4.7)
    link_heard[0] = None  # (a poll that says nothing new keeps the last time it said)
    tick(34.5)
    tick(34.6)  # 30 s after it was last heard: land, straight from the back-again state
    tick(35.0)
    assert [(x.mode, x.previous, x.reason, x.now_s, x.source, x.last_heard_s) for x in seen] == [
        (
            Mode.HOLD,
            Mode.FLYING,
            "ground-station link lost (never heard in 3.00 s of flight)",
            4.0,
            LINK,
            None,
        ),
        (Mode.HOLD, Mode.HOLD, "link back; hold stays until the operator lifts it", 4.7, LINK, 4.6),
        (Mode.LANDING, Mode.HOLD, "ground-station link lost (last heard 30.00 s ago)", 34.6, LINK, 4.6),
    ]
    assert g.status().events == [
        "hold: ground-station link lost (never heard in 3.00 s of flight)",
        "landing: ground-station link lost (last heard 30.00 s ago)",
    ]
    assert g.land_requested() and not g.land_requested()  # once

    g = SafetyGovernor(SafetyConfig(), Pose(0, 0, 0, 0), clock=lambda: 0.0)
    seen = []
    g.on_transition = seen.append
    g.flight_started(0.0)
    g.heard(TELEMETRY, 0.5)
    g.heard(VIDEO, 0.5)
    g.pilot_asked(0.5, deadline_s=1.0)
    g.video_stale(0.6)
    g.check_failsafes(1.5)  # the video trips first
    g.heard(TELEMETRY, 3.0)
    g.check_failsafes(3.5)  # the pilot's reply is due (3 s after the ask): joins the hold, no event
    g.heard(VIDEO, 3.6)
    g.check_failsafes(3.6)
    g.check_failsafes(4.9)
    g.check_failsafes(5.0)
    assert [(x.mode, x.previous, x.reason, x.now_s, x.source, x.last_heard_s) for x in seen] == [
        (Mode.HOLD, Mode.FLYING, "video stale (last heard 1.00 s ago)", 1.5, VIDEO, 0.5),
        (
            Mode.HOLD,
            Mode.HOLD,
            "video back; hold stays until the operator or a fresh valid pilot action lifts it",
            3.6,
            VIDEO,
            3.6,
        ),
        (Mode.LANDING, Mode.HOLD, "vehicle telemetry stale (last heard 2.00 s ago)", 5.0, TELEMETRY, 3.0),
    ]
    assert g.status().reason == "vehicle telemetry stale (last heard 2.00 s ago)"

    g = SafetyGovernor(SafetyConfig(), Pose(0, 0, 0, 0), clock=lambda: 0.0)
    seen = []
    g.on_transition = seen.append
    g.pilot_asked(1.0, deadline_s=1.0)
    g.pilot_asked(2.0, deadline_s=9.0)  # the first request left unanswered sets the due time
    g.check_failsafes(4.0)
    assert g.pilot_ok(4.5)
    assert [(x.mode, x.previous, x.reason, x.now_s, x.source, x.last_heard_s) for x in seen] == [
        (
            Mode.HOLD,
            Mode.FLYING,
            "pilot silent (no valid action): no valid action in 3.00 s (request unanswered 3.00 s)",
            4.0,
            PILOT,
            None,
        ),
        (Mode.FLYING, Mode.HOLD, "fresh valid pilot action after pilot back", 4.5, None, None),
    ]


def test_a_vehicle_above_the_ceiling_or_outside_the_fence_is_flown_back_flying_or_holding() -> None:
    g = governor(altitude_ceiling_m=4.0, geofence_radius_m=50.0, recover_m_s=1.0)
    sent, clamps = g.filter(Setpoint(1.0, 0.0, 0.5, 0.0), telemetry(alt=7.0))
    assert sent.up_m_s == -1.0 and sent.forward_m_s == 1.0
    assert clamps[-1].rule == "recover" and "above the ceiling" in clamps[-1].detail
    g.hold("operator")
    sent, clamps = g.filter(HOLD, telemetry(x=0.0, y=60.0, alt=3.0, yaw=90.0))  # east of home, facing east
    assert sent.forward_m_s == pytest.approx(-1.0) and sent.right_m_s == pytest.approx(0.0, abs=1e-9)
    assert clamps[-1].rule == "recover" and "outside the geofence" in clamps[-1].detail
    sent, clamps = g.filter(HOLD, telemetry(alt=3.0))  # inside: a hold is a hold
    assert sent == HOLD and clamps == []
    g.land("end")
    sent, _ = g.filter(HOLD, telemetry(alt=7.0))
    assert sent == HOLD  # landing: the vehicle's own descent


def test_a_stall_of_the_process_is_not_the_sources_silence_and_the_flight_resumes_when_fresh() -> None:
    g = SafetyGovernor(SafetyConfig(telemetry_stale_land_s=2.0), Pose(0, 0, 0, 0), clock=lambda: 0.0)
    seen: list[Transition] = []
    g.on_transition = seen.append
    g.flight_started(0.0)
    g.heard(TELEMETRY, 10.0)
    g.stalled(3.0, 13.05)  # stopped from 10.05 to 13.05: the telemetry was last heard "just now"
    g.check_failsafes(13.05)
    assert g.mode == Mode.HOLD and g.reason.startswith("onboard stalled 3.0 s"), g.reason
    assert seen[-1].source == "onboard"
    g.check_failsafes(13.5)
    assert g.mode == Mode.HOLD  # nothing heard since the stall ended
    g.heard(TELEMETRY, 13.6)
    g.check_failsafes(13.6)
    assert g.mode == Mode.FLYING and "onboard stall over" in seen[-1].reason
    g.check_failsafes(15.7)
    assert g.mode == Mode.LANDING and "telemetry stale" in g.reason  # real silence after it still lands


@pytest.mark.parametrize("policy, mode", [("land", Mode.LANDING), ("continue", Mode.FLYING)])
def test_what_follows_a_stall_is_the_configs_choice(policy: str, mode: Mode) -> None:
    g = SafetyGovernor(SafetyConfig(on_stall=policy), Pose(0, 0, 0, 0), clock=lambda: 0.0)
    g.flight_started(0.0)
    g.heard(TELEMETRY, 1.0)
    g.stalled(2.0, 3.0)
    g.check_failsafes(3.0)
    assert g.mode == mode
