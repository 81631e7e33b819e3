"""The geometric controller against docs/controller.md.

Expected values come from `spec_go`, a straight transcription of the seven steps of `go` written
for this test (no code shared with onboard.controller), and from the worked-example table
(docs/controller.md#worked-examples).
"""

from __future__ import annotations

import json
import math

import cv2
import numpy as np
import pytest

from common.actions import Finished, Go, Rotate, Think
from common.camera import BUILTIN_CAMERAS, CameraProfile
from common.errors import ConfigError
from common.frames import heading_to_ned, ned_to_heading
from common.pose import Pose
from onboard.controller import (
    ControlPlan,
    PlanKind,
    back_project,
    go_world_goal,
    hold_plan,
    plan_action,
    plan_go,
    plan_rotate,
    plan_toward,
    undistort_pixel,
)
from onboard.profiles import BUILTIN_FLIGHT_PROFILES, flight_profile, load_flight_profile
from tests.support.processes import run_dronecats

OUTDOOR = BUILTIN_FLIGHT_PROFILES["outdoor"]
INDOOR = BUILTIN_FLIGHT_PROFILES["indoor"]
TELLO = BUILTIN_FLIGHT_PROFILES["tello"]
SPEC_CONSTANTS = {  # docs/controller.md#flight-profiles: cap, speed, slow band, stop band
    "outdoor": (3.0, 1.2, 5.0, 2.0),
    "indoor": (1.5, 0.6, 2.5, 1.0),
    "tello": (1.5, 0.6, 2.5, 1.0),
}


def spec_go(u, v, d, w_px, h_px, fx, fy, cx, cy, cap, speed, slow, stop):
    """docs/controller.md#go, undistorted camera: (yaw_deg, step, (fwd, right, up) velocity, duration)."""
    px, py = u * w_px / 1000, v * h_px / 1000
    right, forward, up = d * (px - cx) / fx, d, d * (cy - py) / fy
    b = math.degrees(math.atan2(right, forward))
    yaw = 0.0
    h = math.sqrt(right**2 + forward**2)
    if abs(b) > 8:
        yaw = b
        right, forward = 0.0, h
    if abs(up) < 0.15 * h:
        up = 0.0
    dist = math.sqrt(h**2 + up**2)
    step = min(dist, cap)
    if d < slow:
        step *= 0.6
    if d < stop:
        step = 0.0
    if step == 0:
        return yaw, 0.0, (0.0, 0.0, 0.0), 0.0
    vel = (speed * forward / dist, speed * right / dist, speed * up / dist)
    return yaw, step, vel, step / speed


def spec_for(profile_name, camera, u, v, d):
    cap, speed, slow, stop = SPEC_CONSTANTS[profile_name]
    return spec_go(
        u, v, d, camera.width_px, camera.height_px, camera.fx_px, camera.fy_px, camera.cx_px, camera.cy_px,
        cap, speed, slow, stop,
    )  # fmt: skip


def assert_plan_matches(plan, expected):
    yaw, step, (vf, vr, vu), duration = expected
    assert plan.yaw_deg == pytest.approx(yaw, abs=1e-9)
    assert plan.step_m == pytest.approx(step, abs=1e-9)
    assert (plan.forward_m_s, plan.right_m_s, plan.up_m_s) == pytest.approx((vf, vr, vu), abs=1e-9)
    assert plan.duration_s == pytest.approx(duration, abs=1e-9)
    if yaw:
        assert plan.yaw_rate_deg_s == pytest.approx(math.copysign(60.0, yaw))
        assert plan.yaw_duration_s == pytest.approx(abs(yaw) / 60.0)
    else:
        assert plan.yaw_rate_deg_s == 0 and plan.yaw_duration_s == 0
    assert plan.hold == (step == 0 and yaw == 0)


# docs/controller.md#worked-examples, with the values as printed there (3 decimals).
# (profile, point, depth, yaw, step, (forward, right, up) or None for hold, duration or None)
WORKED = [
    ("outdoor", (500, 500), 8.0, 0.0, 3.0, (1.200, 0.0, 0.0), 2.5),
    ("outdoor", (900, 500), 12.0, 38.66, 3.0, (1.200, 0.0, 0.0), 2.5),
    ("outdoor", (530, 500), 12.0, 0.0, 3.0, (1.198, 0.072, 0.0), 2.5),
    ("outdoor", (500, 300), 8.0, 0.0, 3.0, (1.171, 0.0, 0.263), 2.5),
    ("outdoor", (500, 150), 8.0, 0.0, 3.0, (1.117, 0.0, 0.440), 2.5),
    ("outdoor", (500, 500), 3.0, 0.0, 1.8, (1.200, 0.0, 0.0), 1.5),
    ("outdoor", (500, 500), 1.2, 0.0, 0.0, None, None),
    ("tello", (500, 500), 4.0, 0.0, 1.5, (0.600, 0.0, 0.0), 2.5),
]


@pytest.mark.parametrize("row", WORKED, ids=lambda r: f"{r[0]}-{r[1]}-d{r[2]}")
def test_worked_example_table(row):
    name, point, depth, yaw, step, velocity, duration = row
    profile = BUILTIN_FLIGHT_PROFILES[name]
    camera = profile.camera_profile()
    plan = plan_go(Go(point, depth), camera, profile)
    # Against the independent transcription of the formulas ...
    assert_plan_matches(plan, spec_for(name, camera, point[0], point[1], depth))
    # ... and against the printed table, to its 3 decimals.
    assert round(plan.yaw_deg, 2) == yaw
    assert round(plan.step_m, 3) == step
    if velocity is None:
        assert plan.hold and plan.duration_s == 0
    else:
        got = (round(plan.forward_m_s, 3), round(plan.right_m_s, 3), round(plan.up_m_s, 3))
        assert got == pytest.approx(velocity, abs=1e-12)
        assert round(plan.duration_s, 3) == duration


def test_worked_example_rotate_120():
    plan = plan_rotate(Rotate(120.0), OUTDOOR)
    assert (plan.yaw_deg, plan.yaw_rate_deg_s, plan.yaw_duration_s) == (90.0, 60.0, 1.5)
    assert plan.step_m == 0 and not plan.hold
    left = plan_rotate(Rotate(-200.0), OUTDOOR)
    assert (left.yaw_deg, left.yaw_rate_deg_s, left.yaw_duration_s) == (-90.0, -60.0, 1.5)
    small = plan_rotate(Rotate(-30.0), OUTDOOR)
    assert (small.yaw_deg, small.yaw_rate_deg_s, small.yaw_duration_s) == pytest.approx((-30.0, -60.0, 0.5))
    assert plan_rotate(Rotate(0.0), OUTDOOR).hold


@pytest.mark.parametrize("action", [Think(), Finished(), None])
def test_think_finished_and_discarded_replies_hold(action):
    plan = plan_action(action, OUTDOOR.camera_profile(), OUTDOOR)
    assert plan.hold and plan.step_m == 0 and plan.duration_s == 0 and plan.yaw_deg == 0


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        (Go(point=(500, 500), depth_m=10.0), PlanKind.GO),
        (Rotate(angle_deg=30.0), PlanKind.ROTATE),
        (Think(), PlanKind.THINK),
        (Finished(), PlanKind.FINISHED),
        (None, PlanKind.NO_ACTION),
    ],
)
def test_plans_say_what_they_are_for(action, kind):
    assert plan_action(action, OUTDOOR.camera_profile(), OUTDOOR).kind is kind


def test_plans_are_built_with_keywords_and_holds_say_why():
    with pytest.raises(TypeError):
        ControlPlan(PlanKind.GO, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, False)  # type: ignore[misc]
    for why in (PlanKind.MISSED, PlanKind.NO_FRAME):
        plan = hold_plan(why)
        assert plan.kind is why and plan.hold and plan.step_m == 0 and plan.duration_s == 0


def _edge_camera(bearing_deg: float) -> CameraProfile:
    # W = 1000 px so point x == pixel x; fx chosen so x = 600 lies exactly at bearing_deg.
    fx = 100.0 / math.tan(math.radians(bearing_deg))
    return CameraProfile("edge", 1000, 1000, fx, fx, 500.0, 500.0)


@pytest.mark.parametrize(("bearing_deg", "turns"), [(7.9, False), (8.1, True), (-7.9, False), (-8.1, True)])
def test_deadband_edges(bearing_deg, turns):
    camera = _edge_camera(abs(bearing_deg))
    x = 600 if bearing_deg > 0 else 400
    plan = plan_go(Go((x, 500), 12.0), camera, OUTDOOR)
    expected = spec_go(x, 500, 12.0, 1000, 1000, camera.fx_px, camera.fy_px, 500.0, 500.0, 3.0, 1.2, 5.0, 2.0)
    assert_plan_matches(plan, expected)
    if turns:
        assert plan.yaw_deg == pytest.approx(bearing_deg)
        assert plan.right_m_s == 0
    else:
        assert plan.yaw_deg == 0
        assert math.copysign(1, plan.right_m_s) == math.copysign(1, bearing_deg)
        assert abs(plan.right_m_s) > 0.1


@pytest.mark.parametrize(("x", "turns"), [(570, False), (571, True)])
def test_deadband_edge_on_the_default_camera(x, turns):
    camera = BUILTIN_CAMERAS["outdoor"]
    bearing = math.degrees(math.atan((x * 1.28 - 640) / 640))
    assert (bearing > 8) == turns
    plan = plan_go(Go((x, 500), 12.0), camera, OUTDOOR)
    assert_plan_matches(plan, spec_for("outdoor", camera, x, 500, 12.0))
    assert (plan.yaw_deg != 0) == turns


@pytest.mark.parametrize(
    ("profile_name", "depth", "expected_step"),
    [
        ("outdoor", 5.0, 3.0),  # at the slow band: not scaled (d < 5 is strict)
        ("outdoor", 4.99, 3.0 * 0.6),  # just inside: cap first, then x0.6
        ("outdoor", 2.0, 2.0 * 0.6),  # at the stop band: only slowed
        ("outdoor", 1.99, 0.0),  # just inside: brake
        ("indoor", 2.5, 1.5),
        ("indoor", 2.49, 1.5 * 0.6),
        ("indoor", 1.0, 1.0 * 0.6),
        ("indoor", 0.99, 0.0),
        ("tello", 2.49, 1.5 * 0.6),
        ("tello", 0.99, 0.0),
    ],
)
def test_depth_band_edges(profile_name, depth, expected_step):
    profile = BUILTIN_FLIGHT_PROFILES[profile_name]
    camera = profile.camera_profile()
    plan = plan_go(Go((500, 500), depth), camera, profile)
    assert plan.step_m == pytest.approx(expected_step)
    assert_plan_matches(plan, spec_for(profile_name, camera, 500, 500, depth))


@pytest.mark.parametrize(("y", "held"), [(367, True), (366, False), (633, True), (634, False)])
def test_altitude_hold_edge(y, held):
    camera = BUILTIN_CAMERAS["outdoor"]
    ratio = abs(360 - y * 0.72) / 640  # |up| / h on the centre column
    assert (ratio < 0.15) == held
    plan = plan_go(Go((500, y), 8.0), camera, OUTDOOR)
    assert_plan_matches(plan, spec_for("outdoor", camera, 500, y, 8.0))
    assert (plan.up_m_s == 0) == held


def test_altitude_hold_uses_horizontal_distance_after_turn():
    # Off-axis point: h includes the lateral part, so an |up| that fails against d alone is held.
    camera = BUILTIN_CAMERAS["outdoor"]
    plan = plan_go(Go((1000, 355), 8.0), camera, OUTDOOR)
    assert_plan_matches(plan, spec_for("outdoor", camera, 1000, 355, 8.0))
    assert plan.yaw_deg == pytest.approx(45.0)
    assert plan.up_m_s == 0  # up = 8*0.163=1.31 < 0.15*h = 0.15*11.31 = 1.70


@pytest.mark.parametrize(
    ("profile_name", "point", "depth"),
    [
        ("indoor", (500, 500), 8.0),
        ("indoor", (800, 400), 6.0),
        ("indoor", (500, 500), 2.0),
        ("tello", (800, 500), 4.0),
        ("tello", (450, 200), 3.0),
        ("tello", (500, 500), 0.5),
    ],
)
def test_indoor_and_tello_profiles(profile_name, point, depth):
    profile = BUILTIN_FLIGHT_PROFILES[profile_name]
    camera = profile.camera_profile()
    plan = plan_go(Go(point, depth), camera, profile)
    assert_plan_matches(plan, spec_for(profile_name, camera, point[0], point[1], depth))
    if not plan.hold:
        assert math.sqrt(plan.forward_m_s**2 + plan.right_m_s**2 + plan.up_m_s**2) == pytest.approx(0.6)
        assert plan.duration_s <= 2.5 + 1e-12


def test_tello_camera_and_takeoff():
    camera = TELLO.camera_profile()
    assert (camera.width_px, camera.height_px) == (960, 720)
    assert camera.fx_px == pytest.approx(480 / math.tan(math.radians(28.2)))
    assert TELLO.takeoff_altitude_m == 1.5
    for profile in BUILTIN_FLIGHT_PROFILES.values():
        assert (profile.slow_factor, profile.deadband_deg, profile.yaw_rate_deg_s) == (0.6, 8.0, 60.0)
        assert (profile.altitude_hold_ratio, profile.rotate_limit_deg) == (0.15, 90.0)


DISTORTED = CameraProfile(
    "distorted", 1280, 720, 650.0, 648.0, 645.0, 355.0, distortion=(-0.28, 0.09, 0.0012, -0.0008, -0.01)
)


@pytest.mark.parametrize("point", [(700, 400), (120, 880), (950, 60), (500, 500)])
def test_distorted_camera_round_trip(point):
    depth = 9.0
    right, forward, up = back_project(point, depth, DISTORTED)
    assert forward == depth
    # Projecting the back-projected 3-D point through the lens must land on the model's pixel.
    k = np.array([[650.0, 0, 645.0], [0, 648.0, 355.0], [0, 0, 1]])
    obj = np.array([[right, -up, forward]], dtype=np.float64)  # OpenCV camera frame: x right, y down
    img, _ = cv2.projectPoints(obj, np.zeros(3), np.zeros(3), k, np.array(DISTORTED.distortion))
    assert img[0, 0] == pytest.approx((point[0] * 1.28, point[1] * 0.72), abs=1e-3)
    if point != (500, 500):  # off-centre, undistortion moves the point
        naive_right = depth * (point[0] * 1.28 - 645.0) / 650.0
        assert abs(right - naive_right) > 0.05
    # and the plan flies that ray with the controller's rules
    plan = plan_go(Go(point, depth), DISTORTED, OUTDOOR)
    bearing = math.degrees(math.atan2(right, forward))
    assert plan.yaw_deg == pytest.approx(bearing if abs(bearing) > 8 else 0.0)


def test_undistortion_converges_at_the_corners_and_is_shared():
    """Undistortion iterates to convergence (docs/controller.md#go, step 1): OpenCV's default 5
    iterations leave ~0.3 px at the corners of this lens; every pixel, corners included, must
    re-project onto itself. Calibration's pixel helper and the controller use the same implementation."""
    from calibration.undistort import undistort_pixels as calibration_undistort_pixels
    from common.camera import undistort_pixels

    observed = np.array([[0, 0], [1279, 719], [1279, 0], [0, 719], [645, 355], [100, 600]], np.float64)
    ideal = undistort_pixels(observed, DISTORTED)
    k = np.array([[650.0, 0, 645.0], [0, 648.0, 355.0], [0, 0, 1]])
    rays = np.column_stack(
        [(ideal[:, 0] - 645.0) / 650.0, (ideal[:, 1] - 355.0) / 648.0, np.ones(len(ideal))]
    )
    reprojected, _ = cv2.projectPoints(rays, np.zeros(3), np.zeros(3), k, np.array(DISTORTED.distortion))
    assert np.abs(reprojected.reshape(-1, 2) - observed).max() < 1e-6
    assert calibration_undistort_pixels is undistort_pixels
    for (px, py), (x, y) in zip(observed, ideal, strict=True):
        assert undistort_pixel(px, py, DISTORTED) == pytest.approx((x, y), abs=1e-9)
    assert undistort_pixel(12.5, 7.0, BUILTIN_CAMERAS["outdoor"]) == (12.5, 7.0)


def test_canonical_depth_rescales_and_feeds_the_bands():
    camera = BUILTIN_CAMERAS["outdoor"]  # fx = 640
    metric = plan_go(Go((500, 500), 4.0), camera, OUTDOOR)
    assert metric.step_m == pytest.approx(1.8)  # 4 m < slow band
    canonical = plan_go(Go((500, 500), 4.0), camera, OUTDOOR, canonical_focal_px=500.0)
    # d' = 4 * 640 / 500 = 5.12 m: out of the slow band, full capped step.
    assert canonical.step_m == pytest.approx(3.0)
    off_axis = plan_go(Go((530, 500), 10.0), camera, OUTDOOR, canonical_focal_px=320.0)
    assert_plan_matches(off_axis, spec_for("outdoor", camera, 530, 500, 10.0 * 640 / 320))
    stop = plan_go(Go((500, 500), 2.0), camera, OUTDOOR, canonical_focal_px=1000.0)  # 1.28 m
    assert stop.hold


def test_stop_band_keeps_the_turn():
    plan = plan_go(Go((900, 500), 1.0), BUILTIN_CAMERAS["outdoor"], OUTDOOR)
    assert plan.yaw_deg == pytest.approx(38.66, abs=0.01) and plan.step_m == 0 and not plan.hold


def test_frames_round_trip_and_east_heading():
    for yaw in (0.0, 37.0, -120.0, 180.0):
        n, e, d = heading_to_ned(2.0, -1.0, 0.5, yaw)
        assert ned_to_heading(n, e, d, yaw) == pytest.approx((2.0, -1.0, 0.5))
    assert heading_to_ned(1.0, 0.0, 1.0, 90.0) == pytest.approx((0.0, 1.0, -1.0))  # facing east, climbing
    assert heading_to_ned(0.0, 1.0, 0.0, 0.0) == pytest.approx((0.0, 1.0, 0.0))  # right of north is east


def test_latency_compensation_goal_and_replan():
    camera = BUILTIN_CAMERAS["outdoor"]
    capture = Pose(10.0, 5.0, -3.0, 90.0)  # facing east
    plan = plan_go(Go((900, 500), 12.0), camera, OUTDOOR)  # turn 38.66° right, then 3 m
    goal = go_world_goal(plan, capture)
    heading = math.radians(90.0 + plan.yaw_deg)
    assert (goal.x_m, goal.y_m, goal.z_m) == pytest.approx(
        (10.0 + 3 * math.cos(heading), 5.0 + 3 * math.sin(heading), -3.0)
    )
    # From the capture pose itself, the re-plan is the original plan.
    same = plan_toward(goal, capture, OUTDOOR)
    assert (same.yaw_deg, same.step_m, same.forward_m_s, same.right_m_s) == pytest.approx(
        (plan.yaw_deg, plan.step_m, plan.forward_m_s, plan.right_m_s)
    )
    # After drifting 1 m along the path and turning part way, only the rest is flown.
    done = 1.0
    later = Pose(10.0 + done * math.cos(heading), 5.0 + done * math.sin(heading), -3.0, 90.0 + plan.yaw_deg)
    rest = plan_toward(goal, later, OUTDOOR)
    assert rest.yaw_deg == pytest.approx(0.0, abs=1e-9)
    assert rest.step_m == pytest.approx(2.0)
    assert rest.duration_s == pytest.approx(2.0 / 1.2)
    assert rest.forward_m_s == pytest.approx(1.2)
    # A drone that yawed 20° too far turns back before moving.
    overturned = Pose(capture.x_m, capture.y_m, capture.z_m, 90.0 + plan.yaw_deg + 20.0)
    assert plan_toward(goal, overturned, OUTDOOR).yaw_deg == pytest.approx(-20.0)
    assert plan_toward(goal, goal, OUTDOOR).hold


def test_replan_with_climb_and_cap():
    profile = OUTDOOR
    capture = Pose(0.0, 0.0, -2.0, 0.0)
    plan = plan_go(Go((500, 150), 8.0), BUILTIN_CAMERAS["outdoor"], profile)
    goal = go_world_goal(plan, capture)
    assert goal.z_m < -2.0  # climbed (NED: up is negative z)
    far = Pose(-10.0, 0.0, -2.0, 0.0)  # pushed 10 m back: the re-plan is capped again
    again = plan_toward(goal, far, profile)
    assert again.step_m == pytest.approx(3.0)
    assert math.sqrt(again.forward_m_s**2 + again.right_m_s**2 + again.up_m_s**2) == pytest.approx(1.2)


def test_flight_profile_files(tmp_path):
    path = tmp_path / "hangar.yaml"
    path.write_text("base: indoor\ncap_m: 1.0\n")
    profile = load_flight_profile(path)
    assert (profile.name, profile.cap_m, profile.speed_m_s, profile.stop_band_m) == ("hangar", 1.0, 0.6, 1.0)
    full = tmp_path / "full.yaml"
    full.write_text(
        "name: full\ncamera: tello\ncap_m: 2\nspeed_m_s: 0.5\nslow_band_m: 3\nstop_band_m: 1\n"
        "takeoff_altitude_m: 1.2\n"
    )
    assert flight_profile(str(full)).takeoff_altitude_m == 1.2
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: indoor\nstop_band_m: 5\n")
    with pytest.raises(ConfigError, match="stop_band_m"):
        load_flight_profile(bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text("base: indoor\ncap: 1\n")
    with pytest.raises(ConfigError, match="cap"):
        load_flight_profile(typo)
    with pytest.raises(ConfigError, match="unknown flight profile"):
        flight_profile("nowhere")


def _explain(*args):
    proc = run_dronecats("explain", *args)
    return proc


def test_explain_cli(tmp_path):
    proc = _explain('{"action": "go", "point": [900, 500], "depth_m": 12}')
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {
        "yaw_deg", "yaw_rate_deg_s", "yaw_duration_s", "forward_m_s", "right_m_s", "up_m_s",
        "duration_s", "step_m", "hold",
    }  # fmt: skip
    assert round(out["yaw_deg"], 2) == 38.66 and out["step_m"] == 3.0 and out["hold"] is False

    # yx order: the same target written [y, x]
    proc = _explain("--point-order", "yx", '{"action": "go", "point": [500, 900], "depth_m": 12}')
    assert round(json.loads(proc.stdout)["yaw_deg"], 2) == 38.66

    proc = _explain("--profile", "tello", '{"action": "go", "point": [500, 500], "depth_m": 4}')
    out = json.loads(proc.stdout)
    assert (out["forward_m_s"], out["duration_s"], out["step_m"]) == pytest.approx((0.6, 2.5, 1.5))

    proc = _explain('{"action": "rotate", "angle_deg": 120}')
    out = json.loads(proc.stdout)
    assert (out["yaw_deg"], out["yaw_duration_s"], out["hold"]) == (90.0, 1.5, False)

    assert json.loads(_explain('{"action": "finished"}').stdout)["hold"] is True

    cam = tmp_path / "cam.yaml"
    DISTORTED.save(cam)
    proc = _explain("--camera", str(cam), '{"action": "go", "point": [700, 400], "depth_m": 9}')
    assert proc.returncode == 0, proc.stderr
    right, forward, _ = back_project((700, 400), 9.0, DISTORTED)
    expected_yaw = math.degrees(math.atan2(right, forward))
    assert json.loads(proc.stdout)["yaw_deg"] == pytest.approx(expected_yaw)


@pytest.mark.parametrize(
    "args",
    [
        ['{"action": "go", "point": [500, 1200], "depth_m": 8}'],
        ['{"action": "go", "point": [500, 500], "depth_m": 0}'],
        ['{"action": "fly"}'],
        ["not json"],
        ["--profile", "nowhere", '{"action": "think"}'],
        ["--camera", "nowhere", '{"action": "think"}'],
    ],
)
def test_explain_cli_rejects_bad_input(args):
    proc = _explain(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
