"""The tolerant loop's "in-view" reading of a late `go` (onboard.latency_compensation): the point the
model aimed at, fixed in the world at capture, and a move that stops where that point would sink
below the image's BOTTOM_SHARE (a level camera: a point below the drone sinks as the drone nears it)."""

from __future__ import annotations

import math

import pytest

from common.actions import Go, Rotate
from common.camera import BUILTIN_CAMERAS
from common.pose import Pose
from onboard import latency_compensation as lc
from onboard.controller import ControlPlan, go_world_point, plan_go, plan_toward_point
from onboard.decision import LATENCY_GOALS, make_plan
from onboard.profiles import BUILTIN_FLIGHT_PROFILES

OUTDOOR = BUILTIN_FLIGHT_PROFILES["outdoor"]  # cap 3 m, 1.2 m/s, slow band 5 m (x0.6), stop band 2 m
CAMERA = BUILTIN_CAMERAS["outdoor"]  # 1280x720, fx = fy = 640, cx 640, cy 360


def test_image_row_share_of_a_level_camera() -> None:
    pose = Pose(0.0, 0.0, -3.0, 90.0)  # facing east, 3 m up
    assert lc.image_row_share((0.0, 10.0, -3.0), pose, CAMERA) == pytest.approx(0.5)  # on the axis
    # 3 m below, 6 m ahead: 360 + 640 * 3 / 6 = 680 px of 720
    assert lc.image_row_share((0.0, 6.0, 0.0), pose, CAMERA) == pytest.approx(680 / 720)
    assert lc.image_row_share((0.0, -6.0, 0.0), pose, CAMERA) is None  # behind the camera


def test_a_far_point_gets_the_full_step_of_the_point_reading() -> None:
    capture, later = Pose(0.0, 0.0, -3.0, 0.0), Pose(2.0, 0.0, -3.0, 0.0)
    go = Go((500, 600), 15.0)  # ahead and a little below, far
    in_view = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "in-view")
    assert in_view == make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "point")
    assert in_view.step_m == pytest.approx(3.0)


def test_a_move_along_the_ray_keeps_the_point_where_it_is() -> None:
    # A go toward a point below keeps its descent (outside the altitude hold): flown along the ray,
    # the point stays on the same image row, so with no floor in the way nothing is cut.
    capture, later = Pose(0.0, 0.0, -3.0, 0.0), Pose(1.0, 0.0, -3.0, 0.0)
    go = Go((500, 800), 8.0)
    before = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "point")
    assert before.move_up_m < 0.0
    assert make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "in-view") == before


def test_at_the_floor_the_move_stops_where_the_point_would_leave_the_image() -> None:
    # At the altitude floor the planned descent is not flown: level, the point sinks in the image.
    capture, later = Pose(0.0, 0.0, -3.0, 0.0), Pose(1.0, 0.0, -3.0, 0.0)
    go = Go((500, 800), 8.0)  # 8 m ahead and 8 * 216 / 640 = 2.7 m below the camera
    point = go_world_point(go, capture, CAMERA)
    before = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "point")
    plan = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "in-view", floor_z_m=-3.0)
    assert 0.0 < plan.step_m < before.step_m
    assert plan.forward_m_s == before.forward_m_s and plan.duration_s == pytest.approx(plan.step_m / 1.2)
    # At the end of the shortened (levelled) move the point sits on the limit row.
    end = Pose(later.x_m + plan.move_forward_m, 0.0, -3.0, 0.0)
    assert lc.image_row_share(point, end, CAMERA) == pytest.approx(lc.BOTTOM_SHARE, abs=1e-6)
    limit_forward_m = 2.7 * CAMERA.fy_px / ((lc.BOTTOM_SHARE * 720) - 360)  # ahead of the point
    assert end.x_m == pytest.approx(8.0 - limit_forward_m, abs=1e-3)
    # Above the floor the descent is flown as far as the floor allows: a shorter cut than none at all.
    half = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "in-view", floor_z_m=-2.5)
    assert plan.step_m < half.step_m <= before.step_m


def test_a_point_already_below_the_limit_gets_no_move() -> None:
    capture, later = Pose(0.0, 0.0, -3.0, 0.0), Pose(0.5, 0.0, -3.0, 0.0)
    go = Go((500, 990), 6.0)  # straight ahead (no turn), at the very bottom of the frame
    before = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "point")
    plan = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "in-view", floor_z_m=-3.0)
    assert before.step_m > 0 and before.yaw_deg == 0.0
    assert plan.hold and plan.step_m == 0.0 and plan.duration_s == 0.0


def test_the_turn_is_kept_when_the_move_is_cut() -> None:
    # A plan that turns, then moves level toward a point that sinks out of view on the way.
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    point = (6.0, 6.0, 0.0)  # 45° right, 8.49 m away, 3 m below
    plan = plan_toward_point(point, pose, OUTDOOR)
    assert plan.yaw_deg == pytest.approx(45.0) and plan.step_m > 0
    cut = lc.keep_in_view(plan, point, pose, CAMERA, floor_z_m=-3.0)
    assert 0.0 < cut.step_m < plan.step_m
    assert (cut.yaw_deg, cut.yaw_rate_deg_s, cut.yaw_duration_s) == (
        plan.yaw_deg,
        plan.yaw_rate_deg_s,
        plan.yaw_duration_s,
    )


def test_rotations_holds_and_the_naive_loop_are_untouched() -> None:
    capture, turned = Pose(0.0, 0.0, -3.0, 0.0), Pose(0.0, 0.0, -3.0, 20.0)
    for goal in LATENCY_GOALS:
        assert make_plan(Rotate(45.0), capture, turned, CAMERA, OUTDOOR, None, True, goal).yaw_deg == (
            pytest.approx(25.0)
        )
    brake = make_plan(Go((500, 900), 1.5), capture, turned, CAMERA, OUTDOOR, None, True, "in-view")
    assert brake.hold
    # compensate=False (the naive loop): the plan as made at capture, whatever the goal.
    go = Go((500, 800), 8.0)
    assert make_plan(go, capture, Pose(5.0, 0.0, -3.0, 0.0), CAMERA, OUTDOOR, None, False) == plan_go(
        go, CAMERA, OUTDOOR
    )


def test_a_cut_that_keeps_the_drone_still_is_let_go_after_release_after_s() -> None:
    # The same frame, the same `go` at the bottom edge, again and again (a still drone sees what it
    # saw): the cut alone would hold it there for good.
    capture = later = Pose(0.0, 0.0, -3.0, 0.0)
    go = Go((500, 990), 6.0)
    uncut = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "point")
    release = lc.InViewState(release=lc.InViewRelease(after_s=4.0))

    def plan_at(t_s: float):
        return make_plan(
            go, capture, later, CAMERA, OUTDOOR, None, True, "in-view", -3.0, in_view=release, now_s=t_s
        )

    assert [plan_at(t).step_m for t in (10.0, 11.0, 13.9)] == [0.0, 0.0, 0.0]
    assert plan_at(14.0) == uncut  # still for 4 s: flown as the point reading, once
    assert plan_at(14.5).step_m == 0.0  # a new run of cuts starts
    assert plan_at(18.4).step_m == 0.0 and plan_at(18.5) == uncut


def test_a_move_or_another_action_between_starts_the_release_over() -> None:
    capture = later = Pose(0.0, 0.0, -3.0, 0.0)
    stuck, far = Go((500, 990), 6.0), Go((500, 600), 15.0)
    release = lc.InViewState(release=lc.InViewRelease(after_s=4.0))

    def plan_at(go: Go | Rotate, t_s: float):
        return make_plan(
            go, capture, later, CAMERA, OUTDOOR, None, True, "in-view", -3.0, in_view=release, now_s=t_s
        )

    assert plan_at(stuck, 0.0).step_m == 0.0
    assert plan_at(far, 2.0).step_m > 0.0  # the cut left a move: not stuck
    assert plan_at(stuck, 3.0).step_m == 0.0 and plan_at(stuck, 6.9).step_m == 0.0  # 3.9 s still
    assert plan_at(Rotate(30.0), 7.0).yaw_deg == pytest.approx(30.0)  # a turn between
    assert plan_at(stuck, 8.0).step_m == 0.0 and plan_at(stuck, 11.9).step_m == 0.0
    assert plan_at(stuck, 12.0).step_m > 0.0


def test_without_a_release_the_cut_alone() -> None:
    capture = later = Pose(0.0, 0.0, -3.0, 0.0)
    go = Go((500, 990), 6.0)
    for t_s in (0.0, 100.0):
        plan = make_plan(go, capture, later, CAMERA, OUTDOOR, None, True, "in-view", -3.0, now_s=t_s)
        assert plan.step_m == 0.0


def test_a_go_far_beyond_the_tracked_target_is_held_until_the_gate_has_grown() -> None:
    # The car a sliver at the frame's bottom edge, then the pilot takes a look-alike 40 m out.
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    car, far = Go((500, 950), 6.0), Go((500, 520), 40.0)
    state = lc.InViewState(track=lc.TargetTrack(gate_m=8.0, gate_speed_m_s=2.0))

    def plan_at(go: Go | Rotate, t_s: float):
        return make_plan(
            go, pose, pose, CAMERA, OUTDOOR, None, True, "in-view", -3.0, in_view=state, now_s=t_s, seen_s=t_s
        )

    assert plan_at(car, 0.0).step_m > 0.0
    held = plan_at(far, 1.0)
    assert held.hold and held.step_m == 0.0 and held.yaw_deg == 0.0  # not flown toward
    assert plan_at(far, 10.0).hold  # 34 m beyond the track: more than 8 + 2 * 10 s
    assert plan_at(far, 13.1).step_m > 0.0  # the gate has grown past it: taken as the target now
    assert plan_at(car, 13.5).step_m > 0.0  # nearer than the track: always taken
    assert plan_at(far, 14.0).hold  # and the track is the car's again


def test_a_search_turn_starts_a_new_track() -> None:
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    state = lc.InViewState()

    def plan_at(go: Go | Rotate, t_s: float):
        return make_plan(
            go, pose, pose, CAMERA, OUTDOOR, None, True, "in-view", -3.0, in_view=state, now_s=t_s, seen_s=t_s
        )

    plan_at(Go((500, 950), 6.0), 0.0)
    assert plan_at(Go((500, 520), 40.0), 1.0).hold
    plan_at(Rotate(60.0), 2.0)  # the pilot searched: what it finds next is the target
    assert plan_at(Go((500, 520), 40.0), 3.0).step_m > 0.0


def test_the_track_follows_a_moving_target_and_uses_the_capture_time() -> None:
    track = lc.TargetTrack(gate_m=1.0, gate_speed_m_s=0.0, gate_range_share=0.0)
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    for i in range(20):  # a target driving north at 1 m/s, seen every 0.5 s
        assert track.consistent((10.0 + 0.5 * i, 0.0, 0.0), 0.5 * i, pose)
        track.update((10.0 + 0.5 * i, 0.0, 0.0), 0.5 * i, row_share=0.95, speed_m_s=1.2)  # a sliver
    assert track.velocity[0] == pytest.approx(1.0, rel=0.01) and track.velocity[1] == pytest.approx(0.0)
    guess = track.predicted(12.0)
    assert guess is not None and guess[0] == pytest.approx(10.0 + 12.0, rel=0.01)
    assert not track.consistent((25.0, 0.0, 0.0), 12.0, pose)  # 3 m beyond where it should be
    track.last_row_share = 0.5
    assert track.consistent((25.0, 0.0, 0.0), 12.0, pose)  # well inside its frame: no gate
    before = track.velocity
    track.update((100.0, 0.0, 0.0), 12.5, row_share=0.5, speed_m_s=1.2)  # a wild jump: taken as the
    assert track.last == (100.0, 0.0, 0.0) and track.velocity == before  # target, but not as its motion


def test_a_depth_blunder_of_a_near_slow_target_leaves_its_velocity_and_the_near_gate() -> None:
    # A car 5 m ahead, still; one reply puts it 5 m farther (another depth of the same box), the next
    # ones bring it back. Those steps are faster than the drone flies (1.2 m/s): not the car's motion,
    # so the track stays slow, and the look-alike 24 m out that the pilot takes next is held by the
    # near gate. Read as motion, the blunder made the track a fast one, and the look-alike was flown to.
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    car, look_alike = (5.0, 0.0, -0.7), (24.0, 0.0, -0.3)
    seen = [car, car, (10.0, 0.0, -0.7), (9.0, 0.0, -0.7), (6.5, 0.0, -0.7), car]

    def track_after(speed_m_s: float) -> lc.TargetTrack:
        track = lc.TargetTrack()
        for i, point in enumerate(seen):
            track.update(point, 0.5 * i, row_share=0.85, speed_m_s=speed_m_s)
        return track

    steady = track_after(1.2)
    assert steady.velocity == (0.0, 0.0)
    assert not steady.consistent(look_alike, 3.0, pose)
    assert lc.sight_angle_deg(look_alike, car, pose) > lc.GATE_NEAR_SAME_SIGHT_DEG
    fooled = track_after(20.0)  # every step taken as motion
    assert math.hypot(*fooled.velocity) > lc.GATE_NEAR_MAX_SPEED_M_S
    assert fooled.consistent(look_alike, 3.0, pose)


def test_a_far_point_after_a_target_well_inside_the_frame_is_followed() -> None:
    # A fast car 10 m ahead, mid-frame, then a far point along its road: flown toward, not held.
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    state = lc.InViewState()

    def plan_at(go: Go, t_s: float):
        return make_plan(
            go, pose, pose, CAMERA, OUTDOOR, None, True, "in-view", -3.0, in_view=state, now_s=t_s, seen_s=t_s
        )

    assert plan_at(Go((500, 700), 10.0), 0.0).step_m > 0.0
    assert plan_at(Go((500, 520), 45.0), 0.5).step_m == pytest.approx(3.0)


def test_a_far_point_while_the_target_is_near_is_held_even_well_inside_the_frame() -> None:
    # The car 5 m ahead, well inside the frame (row 0.85), then the pilot takes a look-alike 24 m
    # out on the same line: the car cannot be 19 m farther half a second later. Farther off than
    # GATE_NEAR_M (here: the rule switched off), or with a track faster than GATE_NEAR_MAX_SPEED_M_S,
    # the same jump is followed, as a far or fast target's may be.
    near, far = Go((500, 850), 5.5), Go((500, 550), 24.0)
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    assert 0.0 < go_world_point(near, pose, CAMERA)[0] < lc.GATE_NEAR_M

    def flown(state: lc.InViewState) -> list[bool]:
        out = []
        for go, t in ((near, 0.0), (far, 0.5), (near, 1.0)):
            plan = make_plan(
                go, pose, pose, CAMERA, OUTDOOR, None, True, "in-view", -3.0, in_view=state, now_s=t, seen_s=t
            )
            out.append(plan.step_m > 0.0)
        return out

    assert flown(lc.InViewState()) == [True, False, True]
    assert flown(lc.InViewState(track=lc.TargetTrack(near_m=0.0))) == [True, True, True]
    assert flown(lc.InViewState(track=lc.TargetTrack(velocity=(0.6, 0.0)))) == [True, True, True]


def test_a_far_point_on_the_line_of_sight_to_a_near_target_is_followed() -> None:
    # A target 4 m ahead, 1.6 m below the camera; then the pilot's depth for about the same point
    # jumps to 16 m (a red sign in the commanding suite, blocks-sign-08): the same object with
    # another depth, not a look-alike behind it, so the near gate lets it through. A look-alike on
    # the ground 40 m out on the same line is seen 18 degrees higher, and is held.
    pose = Pose(0.0, 0.0, -3.0, 0.0)
    near, longer, behind = Go((500, 850), 4.0), Go((490, 855), 16.0), Go((500, 560), 40.0)
    assert go_world_point(behind, pose, CAMERA)[2] == pytest.approx(-0.3, abs=0.05)  # 0.3 m above ground
    track = lc.TargetTrack()
    track.update(go_world_point(near, pose, CAMERA), 0.0, row_share=0.85, speed_m_s=1.2)
    assert track.last is not None
    sight = [lc.sight_angle_deg(go_world_point(g, pose, CAMERA), track.last, pose) for g in (longer, behind)]
    assert sight[0] < 3.0 < lc.GATE_NEAR_SAME_SIGHT_DEG < 12.0 < sight[1]
    assert track.consistent(go_world_point(longer, pose, CAMERA), 0.5, pose)
    assert not track.consistent(go_world_point(behind, pose, CAMERA), 0.5, pose)
    # With no tolerance for the line of sight, the longer depth is held as a look-alike would be.
    strict = lc.TargetTrack(near_same_sight_deg=0.0, last=track.last, last_row_share=track.last_row_share)
    assert not strict.consistent(go_world_point(longer, pose, CAMERA), 0.5, pose)


def test_the_motion_is_a_least_squares_line_through_the_in_frame_points() -> None:
    motion = lc.TargetMotion()
    for i in range(9):  # a car driving north at 0.6 m/s, seen every 0.5 s for 4 s, mid-frame
        motion.add((10.0 + 0.3 * i, 2.0, 0.0), 0.5 * i, row_share=0.8, speed_m_s=1.2)
    vn, ve = motion.velocity(4.0, max_speed_m_s=1.2)
    assert vn == pytest.approx(0.6) and ve == pytest.approx(0.0, abs=1e-9)
    # Points at the frame's bottom edge do not enter the fit (their depths run away).
    motion.add((13.5, 2.0, 0.0), 4.5, row_share=0.95, speed_m_s=1.2)  # 1.1 m on in 0.5 s
    assert motion.velocity(4.5, max_speed_m_s=1.2)[0] == pytest.approx(0.6)
    # Capped at the speed the drone can fly: a faster fit is noise.
    assert math.hypot(*motion.velocity(4.0, max_speed_m_s=0.4)) == pytest.approx(0.4)


def test_too_few_points_a_short_span_or_a_jump_give_no_motion() -> None:
    motion = lc.TargetMotion()
    motion.add((10.0, 0.0, 0.0), 0.0, 0.8, 1.2)
    motion.add((10.5, 0.0, 0.0), 0.5, 0.8, 1.2)
    assert motion.velocity(0.5, 1.2) == (0.0, 0.0)  # two points
    motion.add((10.8, 0.0, 0.0), 1.0, 0.8, 1.2)
    assert motion.velocity(1.0, 1.2) == (0.0, 0.0)  # three, but over 1 s: less than MOTION_MIN_SPAN_S
    motion.add((11.5, 0.0, 0.0), 2.0, 0.8, 1.2)
    assert motion.velocity(2.0, 1.2)[0] > 0.0
    motion.add((30.0, 0.0, 0.0), 2.5, 0.8, 1.2)  # 18.5 m on in 0.5 s: another object, the fit starts over
    assert motion.points == [(2.5, 30.0, 0.0)] and motion.velocity(2.5, 1.2) == (0.0, 0.0)
    motion.add((30.2, 0.0, 0.0), 3.0, 0.8, 1.2)
    motion.add((30.4, 0.0, 0.0), 5.0, 0.8, 1.2)
    motion.add((30.6, 0.0, 0.0), 7.5, 0.8, 1.2)  # the older points leave the 4 s window
    assert [p[0] for p in motion.points] == [5.0, 7.5] and motion.velocity(7.5, 1.2) == (0.0, 0.0)


def test_the_lead_is_capped() -> None:
    assert lc.led_point((1.0, 2.0, 0.5), (0.6, 0.0), 2.0) == pytest.approx((2.2, 2.0, 0.5))
    far = lc.led_point((0.0, 0.0, 0.0), (3.0, 4.0), 10.0)  # 50 m of motion
    assert math.hypot(far[0], far[1]) == pytest.approx(lc.MOTION_MAX_LEAD_M)


def _moving_car_state(pose: Pose, speed_m_s: float, until_s: float) -> lc.InViewState:
    """An InViewState that has seen a car drive north from 5.75 m ahead, mid-frame, every 0.5 s."""
    state = lc.InViewState()
    t_s = 0.0
    while t_s <= until_s + 1e-9:
        point = (5.75 + speed_m_s * t_s, 0.0, 0.0)
        plan = plan_toward_point(point, pose, OUTDOOR)
        row = lc.image_row_share(point, pose, CAMERA)
        assert row is not None and row < lc.GATE_EDGE_ROW_SHARE
        lc.in_view_plan(plan, point, pose, CAMERA, pose.z_m, state, t_s, t_s, row, profile=OUTDOOR)
        t_s += 0.5
    return state


def test_a_late_go_at_a_moving_target_is_led_by_its_motion() -> None:
    # The car drives away at 0.2 m/s; a reply comes 1.5 s after its frame. Without a lead the cut
    # stops the drone where the point *seen* would sink to BOTTOM_SHARE, though the car has moved on.
    pose = Pose(0.0, 0.0, -2.5, 0.0)  # at the altitude floor: the move is level
    seen_s, now_s = 2.5, 4.0
    point = (5.75 + 0.2 * seen_s, 0.0, 0.0)
    row = lc.image_row_share(point, pose, CAMERA)
    assert row is not None and row < lc.GATE_EDGE_ROW_SHARE

    def late_go(state: lc.InViewState) -> ControlPlan:
        plan = plan_toward_point(point, pose, OUTDOOR)
        return lc.in_view_plan(
            plan, point, pose, CAMERA, pose.z_m, state, now_s, seen_s, row, profile=OUTDOOR
        )

    unled = late_go(lc.InViewState())  # no track yet: no motion
    state = _moving_car_state(pose, 0.2, 2.0)
    assert state.motion.velocity(2.0, OUTDOOR.speed_m_s)[0] == pytest.approx(0.2)
    led = late_go(state)
    assert 0.0 < unled.step_m < led.step_m < OUTDOOR.cap_m
    # The led move ends where the car, led on to that instant, sits on the limit row.
    end = Pose(pose.x_m + led.move_forward_m, 0.0, pose.z_m, 0.0)
    end_s = now_s + led.yaw_duration_s + led.duration_s
    car_at_end = lc.led_point(point, (0.2, 0.0), end_s - seen_s)
    assert lc.image_row_share(car_at_end, end, CAMERA) == pytest.approx(lc.BOTTOM_SHARE, abs=2e-3)


def test_a_point_at_the_bottom_edge_gets_no_lead() -> None:
    pose = Pose(0.0, 0.0, -2.5, 0.0)
    point = (4.5, 0.0, 0.0)  # 2.5 m below at 4.5 m: an edge point (nearer than the track: taken)
    row = lc.image_row_share(point, pose, CAMERA)
    assert row is not None and row > lc.GATE_EDGE_ROW_SHARE
    plan = plan_toward_point(point, pose, OUTDOOR)
    state = _moving_car_state(pose, 0.3, 2.0)
    led = lc.in_view_plan(plan, point, pose, CAMERA, pose.z_m, state, 4.0, 2.5, row, profile=OUTDOOR)
    assert led == lc.keep_in_view(plan, point, pose, CAMERA, pose.z_m)


def test_a_late_go_with_no_fit_yet_is_led_by_the_track_a_young_one_is_not() -> None:
    # A car crossing east at 0.6 m/s, 8 m ahead, mid-frame, seen at 0, 0.4, 0.8 and 1.2 s: the track
    # has a velocity, the fit none yet (the points span less than MOTION_MIN_SPAN_S).
    pose = Pose(0.0, 0.0, -2.5, 0.0)  # at the altitude floor
    seen_s = 1.2
    point = (8.0, 0.6 * seen_s, 0.0)
    row = lc.image_row_share(point, pose, CAMERA)
    assert row is not None and row < lc.GATE_EDGE_ROW_SHARE
    plan = plan_toward_point(point, pose, OUTDOOR)

    def reply(age_s: float) -> tuple[lc.InViewState, ControlPlan]:
        state = lc.InViewState()
        for t_s in (0.0, 0.4, 0.8):
            seen = (8.0, 0.6 * t_s, 0.0)
            toward = plan_toward_point(seen, pose, OUTDOOR)
            lc.in_view_plan(toward, seen, pose, CAMERA, pose.z_m, state, t_s, t_s, row, profile=OUTDOOR)
        got = lc.in_view_plan(
            plan, point, pose, CAMERA, pose.z_m, state, seen_s + age_s, seen_s, row, profile=OUTDOOR
        )
        return state, got

    late_age_s = lc.TRACK_LEAD_MIN_AGE_S + 0.5
    state, late = reply(late_age_s)
    assert state.motion.velocity(seen_s, OUTDOOR.speed_m_s) == (0.0, 0.0)  # no fit
    vn, ve = state.track.velocity
    assert ve > 0.2 and vn == pytest.approx(0.0)
    led = plan_toward_point(lc.led_point(point, (vn, ve), late_age_s), pose, OUTDOOR)
    assert late.move_forward_m == pytest.approx(led.move_forward_m)  # far: the whole capped step,
    assert late.move_right_m == pytest.approx(led.move_right_m)  # toward where the car is now
    assert late.move_right_m > plan.move_right_m + 0.1  # farther east, after the car
    _, young = reply(lc.TRACK_LEAD_MIN_AGE_S - 0.2)
    assert young == plan  # a young reply is not led
