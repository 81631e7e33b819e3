"""A `go` projected from a pitched or rolled camera (a body-fixed camera on a tilting body).

The ray through the pixel at the model's planar depth (along the optical axis, as for a level
camera) is turned by the camera's attitude at capture into the level frame at the frame's heading.
Expected values are worked by hand in the comments; a level camera's results are the level formula's,
to the bit.
"""

from __future__ import annotations

import json
import math

import pytest

from common.actions import Go
from common.camera import BUILTIN_CAMERAS
from common.frames import quaternion_euler_deg
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose
from onboard import latency_compensation as lc
from onboard.controller import back_project, go_world_point, plan_action, plan_go
from onboard.decision import make_plan
from onboard.profiles import BUILTIN_FLIGHT_PROFILES
from tests.support.processes import run_dronecats

OUTDOOR = BUILTIN_FLIGHT_PROFILES["outdoor"]
CAMERA = BUILTIN_CAMERAS["outdoor"]  # 1280x720, fx = fy = 640, centre (640, 360)
S30, C30 = 0.5, math.sqrt(3.0) / 2.0


def test_pitched_down_camera_centre_pixel_points_down_the_optical_axis() -> None:
    # Nose (and camera) 30° down, the image centre at planar depth 10 m: the point is 10 m along the
    # optical axis, which points 30° below the horizon: forward 10·cos30 = 8.660, up −10·sin30 = −5.
    right, forward, up = back_project((500, 500), 10.0, CAMERA, CameraAttitude(pitch_deg=-30.0))
    assert right == pytest.approx(0.0, abs=1e-12)
    assert forward == pytest.approx(10.0 * C30)
    assert up == pytest.approx(-5.0)


def test_pitched_camera_off_axis_pixel() -> None:
    # Pixel (500, 250): p_y = 180, (cy − p_y)/fy = 180/640 = 0.28125, so in the camera's own frame
    # the point is (right 0, forward 8, up 8·0.28125 = 2.25) at planar depth 8. Pitched 30° down:
    # forward = 8·cos30 + 2.25·sin30 = 6.9282 + 1.125 = 8.0532; up = 2.25·cos30 − 8·sin30 = 1.9486 − 4.
    right, forward, up = back_project((500, 250), 8.0, CAMERA, CameraAttitude(pitch_deg=-30.0))
    assert right == pytest.approx(0.0, abs=1e-12)
    assert forward == pytest.approx(8.0 * C30 + 2.25 * S30)
    assert up == pytest.approx(2.25 * C30 - 8.0 * S30)


def test_rolled_camera_turns_a_rightward_ray_downward() -> None:
    # Pixel (750, 500): p_x = 960, (p_x − cx)/fx = 320/640 = 0.5, so 5 m right at depth 10. Rolled
    # 30° right side down: the camera's right axis points 30° below the horizon, so right 5·cos30,
    # up −5·sin30, forward unchanged.
    right, forward, up = back_project((750, 500), 10.0, CAMERA, CameraAttitude(roll_deg=30.0))
    assert forward == pytest.approx(10.0)
    assert right == pytest.approx(5.0 * C30)
    assert up == pytest.approx(-2.5)


def test_pitched_and_rolled_camera_against_the_rotation_matrix() -> None:
    # Roll 20°, pitch −10° (down), a mount yaw of 15°, pixel (750, 250) at depth 12: the camera-frame
    # (forward, right, down) ray is 12·(1, 0.5, −0.28125); R = Rz(15°)·Ry(−10°)·Rx(20°), written
    # out element by element here (not the code's sequence of turns).
    r, p, y = (math.radians(a) for a in (20.0, -10.0, 15.0))
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rot = [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]
    ray_frd = (12.0, 6.0, -3.375)
    fwd, rgt, down = (sum(rot[i][k] * ray_frd[k] for k in range(3)) for i in range(3))
    right, forward, up = back_project((750, 250), 12.0, CAMERA, CameraAttitude(20.0, -10.0, 15.0))
    assert (right, forward, up) == pytest.approx((rgt, fwd, -down), abs=1e-12)
    # The planar depth is the distance along the optical axis, whatever the attitude: the point's
    # component along the camera's forward axis (R's first column) is the model's depth.
    axis = (rot[0][0], rot[1][0], rot[2][0])
    assert axis[0] * forward + axis[1] * right - axis[2] * up == pytest.approx(12.0)


def test_level_camera_is_the_level_formula_bit_for_bit() -> None:
    for point, depth in (((500, 500), 8.0), ((900, 500), 12.0), ((530, 300), 3.3), ((123, 987), 41.7)):
        px, py = point[0] * 1280 / 1000.0, point[1] * 720 / 1000.0
        fx, fy = CAMERA.fx_px, CAMERA.fy_px  # 640 up to tan(45°)'s last bit
        level = (depth * (px - 640.0) / fx, depth, depth * (360.0 - py) / fy)
        assert back_project(point, depth, CAMERA) == level
        assert back_project(point, depth, CAMERA, LEVEL_CAMERA) == level
        assert back_project(point, depth, CAMERA, CameraAttitude(0.0, -0.0, 0.0)) == level
        go = Go(point, depth)
        assert plan_go(go, CAMERA, OUTDOOR, attitude=LEVEL_CAMERA) == plan_go(go, CAMERA, OUTDOOR)


def test_plan_from_a_pitched_camera_descends_toward_the_point() -> None:
    # The image centre at depth 8 from a camera pitched 30° down is 6.928 m ahead and 4 m below: the
    # bearing is 0 (no turn), |up| = 4 > 0.15·h, dist = 8, step = cap 3, velocity 1.2·(6.928, 0, −4)/8.
    plan = plan_go(Go((500, 500), 8.0), CAMERA, OUTDOOR, attitude=CameraAttitude(pitch_deg=-30.0))
    assert plan.yaw_deg == 0.0 and plan.step_m == pytest.approx(3.0)
    assert plan.forward_m_s == pytest.approx(1.2 * C30)
    assert plan.right_m_s == pytest.approx(0.0, abs=1e-12)
    assert plan.up_m_s == pytest.approx(-0.6)
    # A level camera flies the same reply straight ahead (the error the tilt used to cause).
    level = plan_go(Go((500, 500), 8.0), CAMERA, OUTDOOR)
    assert level.forward_m_s == pytest.approx(1.2) and level.up_m_s == 0.0


def test_the_world_point_and_the_late_replan_use_the_frame_attitude() -> None:
    capture = Pose(10.0, 5.0, -6.0, 90.0)  # facing east
    attitude = CameraAttitude(pitch_deg=-30.0)
    # From the camera 30° down, the image centre at depth 10: 8.660 m east, 5 m below.
    n, e, d = go_world_point(Go((500, 500), 10.0), capture, CAMERA, None, attitude)
    assert (n, e, d) == pytest.approx((10.0, 5.0 + 10.0 * C30, -1.0))
    go = Go((500, 500), 10.0)
    on_time = make_plan(go, capture, None, CAMERA, OUTDOOR, None, False, frame_attitude=attitude)
    assert on_time == plan_action(go, CAMERA, OUTDOOR, None, attitude)
    # A late reply re-planned from where the drone got to flies toward that same point (the "point"
    # goal; "in-view" would hold here: 4 m below and 6.7 m ahead is out of a level camera's view).
    here = Pose(10.0, 7.0, -5.0, 90.0)
    late = make_plan(go, capture, here, CAMERA, OUTDOOR, None, True, "point", frame_attitude=attitude)
    forward, down = 5.0 + 10.0 * C30 - 7.0, 4.0  # east 6.660 m, 4 m below: no turn, the descent kept
    dist = math.hypot(forward, down)
    assert late.yaw_deg == 0.0 and late.step_m == pytest.approx(3.0)
    assert late.forward_m_s == pytest.approx(1.2 * forward / dist)
    assert late.up_m_s == pytest.approx(-1.2 * down / dist)


def test_to_camera_frame_undoes_to_heading_frame() -> None:
    attitude = CameraAttitude(roll_deg=12.0, pitch_deg=-25.0, yaw_deg=40.0)
    there = attitude.to_heading_frame(3.0, -1.5, 2.0)
    assert attitude.to_camera_frame(*there) == pytest.approx((3.0, -1.5, 2.0), abs=1e-12)
    # 30° down: a point 5 m below and 5·cot30 ahead lies on the optical axis.
    forward, right, down = CameraAttitude(pitch_deg=-30.0).to_camera_frame(5.0 * C30 / S30, 0.0, 5.0)
    assert (forward, right, down) == pytest.approx((10.0, 0.0, 0.0), abs=1e-12)


def test_the_in_view_cut_sees_through_the_camera_as_it_points() -> None:
    # The point 5 m below and 8.66 m ahead: on the axis of a camera 30° down (mid-frame), below the
    # frame of a level camera (360 + 640·5/8.66 = 729.5 px of 720).
    pose = Pose(0.0, 0.0, -6.0, 0.0)
    point = (5.0 * C30 / S30, 0.0, -1.0)
    down_30 = CameraAttitude(pitch_deg=-30.0)
    assert lc.image_row_share(point, pose, CAMERA, down_30) == pytest.approx(0.5)
    assert lc.image_row_share(point, pose, CAMERA) == pytest.approx((360 + 640 * 5.0 / point[0]) / 720)
    # A late go to it, at the altitude floor (no descent): a level camera would lose it at once, so
    # the level cut holds; the camera 30° down keeps it in view for the whole 3 m step.
    go = Go((500, 500), 10.0)
    capture = Pose(-0.5, 0.0, -6.0, 0.0)
    assert go_world_point(go, capture, CAMERA, None, down_30) == pytest.approx((8.16, 0.0, -1.0), abs=0.01)
    args = (go, capture, pose, CAMERA, OUTDOOR, None, True, "in-view")
    pitched = make_plan(*args, floor_z_m=-6.0, frame_attitude=down_30)
    assert not pitched.hold and pitched.step_m == pytest.approx(3.0)
    level = lc.keep_in_view(pitched, go_world_point(go, capture, CAMERA, None, down_30), pose, CAMERA, -6.0)
    assert level.step_m == 0.0


def test_camera_attitude_from_world_angles_and_quaternions() -> None:
    airsim = pytest.importorskip("airsim")
    q = airsim.to_quaternion(math.radians(-12.0), math.radians(7.0), math.radians(100.0))  # pitch, roll, yaw
    roll, pitch, yaw = quaternion_euler_deg(q.w_val, q.x_val, q.y_val, q.z_val)
    assert (roll, pitch, yaw) == pytest.approx((7.0, -12.0, 100.0))
    att = CameraAttitude.from_world(roll, pitch, yaw, heading_deg=95.0)
    assert (att.roll_deg, att.pitch_deg, att.yaw_deg) == pytest.approx((7.0, -12.0, 5.0))
    assert CameraAttitude.from_world(0.0, 0.0, -179.0, heading_deg=179.0).yaw_deg == pytest.approx(2.0)
    assert Frame(image=None, capture_time_s=0.0, pose=Pose(0, 0, 0)).camera_attitude.level


def test_airsim_adapter_reads_the_camera_attitude_from_the_image_pose() -> None:
    airsim = pytest.importorskip("airsim")
    from onboard.vehicles.airsim import camera_heading_attitude

    yaw, att = camera_heading_attitude(airsim.to_quaternion(0.0, 0.0, math.radians(40.0)))
    assert yaw == pytest.approx(40.0) and att is LEVEL_CAMERA  # a level camera: exactly level
    q = airsim.to_quaternion(math.radians(-8.0), math.radians(3.0), math.radians(40.0))
    yaw, att = camera_heading_attitude(q)
    assert yaw == pytest.approx(40.0)
    assert (att.roll_deg, att.pitch_deg, att.yaw_deg) == pytest.approx((3.0, -8.0, 0.0))


def test_explain_cli_takes_the_camera_attitude() -> None:
    go = '{"action": "go", "point": [500, 500], "depth_m": 8}'
    proc = run_dronecats("explain", "--camera-pitch-deg", "-30", go)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["forward_m_s"] == pytest.approx(1.2 * C30) and plan["up_m_s"] == pytest.approx(-0.6)
    for flag, value in (
        ("--camera-pitch-deg", "nan"),
        ("--camera-pitch-deg", "91"),
        ("--camera-roll-deg", "-181"),
    ):
        proc = run_dronecats("explain", flag, value, go)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and flag in lines[0], proc.stderr
