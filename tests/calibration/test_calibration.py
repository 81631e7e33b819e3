"""Calibration maths on synthetic views rendered through a known pinhole camera with distortion."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from calibration.errors import CalibrationError
from calibration.pattern import BoardPattern
from calibration.solve import calibrate_views
from calibration.synthetic import BoardRenderer, SyntheticCamera, pose_at, spread_poses
from calibration.undistort import pinhole, undistort_frame, undistort_pixels
from calibration.views import CaptureSettings, CornerView, Verdict, ViewCollector
from common.camera import CameraProfile, camera_profile
from common.errors import ConfigError

PATTERN = BoardPattern(9, 6, 25.0)
BARREL = SyntheticCamera.from_hfov(640, 480, 70.0, (-0.25, 0.08, 0.001, -0.0005, 0.0))
PINCUSHION = SyntheticCamera.from_hfov(640, 480, 60.0, (0.12, -0.05, 0.0, 0.0, 0.0))


def _render_set(camera: SyntheticCamera, count: int, seed: int) -> tuple[BoardRenderer, list[np.ndarray]]:
    renderer = BoardRenderer(PATTERN, camera)
    rng = np.random.default_rng(seed)
    return renderer, [renderer.render(p, rng) for p in spread_poses(PATTERN, camera, count, seed=seed)]


@pytest.fixture(scope="module")
def barrel_views() -> tuple[BoardRenderer, list[np.ndarray]]:
    return _render_set(BARREL, 14, seed=0)


@pytest.fixture(scope="module")
def barrel_collector(barrel_views) -> ViewCollector:
    return _collect(barrel_views[1])


def _collect(images: list[np.ndarray], **settings: float) -> ViewCollector:
    collector = ViewCollector(PATTERN, CaptureSettings(**{"min_views": 10, **settings}))  # type: ignore[arg-type]
    for image in images:
        collector.feed(image)
    return collector


def test_pattern_parse_counts_inner_corners() -> None:
    p = BoardPattern.parse("9x6", 25)
    assert (p.cols, p.rows, p.corner_count) == (9, 6, 54)
    obj = p.object_points_m()
    assert obj.shape == (54, 3)
    assert obj[1, 0] == pytest.approx(0.025) and obj[9, 1] == pytest.approx(0.025)
    with pytest.raises(ConfigError, match="COLSxROWS"):
        BoardPattern.parse("9by6", 25)
    with pytest.raises(ConfigError, match="must differ"):
        BoardPattern.parse("7x7", 25)


def test_barrel_lens_recovered(barrel_collector: ViewCollector) -> None:
    collector = barrel_collector
    collector.check_ready()
    assert collector.image_size is not None
    result = calibrate_views(collector.views, PATTERN, collector.image_size, min_views=10)
    assert result.fx_px == pytest.approx(BARREL.fx_px, rel=0.01)
    assert result.fy_px == pytest.approx(BARREL.fy_px, rel=0.01)
    assert abs(result.hfov_deg - BARREL.hfov_deg) < 0.5
    assert abs(result.cx_px - BARREL.cx_px) < 3 and abs(result.cy_px - BARREL.cy_px) < 3
    assert result.distortion[0] < 0, "barrel distortion must come out as negative k1"
    assert result.distortion[0] == pytest.approx(-0.25, abs=0.03)
    assert result.rms_px < 0.5
    assert not result.dropped


def test_pincushion_lens_gives_positive_k1() -> None:
    _renderer, images = _render_set(PINCUSHION, 12, seed=3)
    collector = _collect(images)
    assert collector.image_size is not None
    result = calibrate_views(collector.views, PATTERN, collector.image_size, min_views=10)
    assert result.fx_px == pytest.approx(PINCUSHION.fx_px, rel=0.01)
    assert abs(result.hfov_deg - 60.0) < 0.5
    assert result.distortion[0] > 0


def test_profile_written_and_loaded_back(barrel_collector: ViewCollector, tmp_path) -> None:
    collector = barrel_collector
    assert collector.image_size is not None
    result = calibrate_views(collector.views, PATTERN, collector.image_size)
    path = tmp_path / "lens.yaml"
    result.to_profile("lens", source="synthetic").save(path)
    profile = camera_profile(str(path))
    assert isinstance(profile, CameraProfile)
    assert profile.fx_px == pytest.approx(result.fx_px)
    assert profile.hfov_deg == pytest.approx(result.hfov_deg)
    assert len(profile.distortion) == 5 and profile.distortion[0] < 0
    prov = profile.provenance
    assert prov["views_used"] == len(result.used) and prov["views_dropped"] == 0
    assert prov["pattern"] == "9x6 inner corners" and prov["square_mm"] == 25.0
    assert prov["source"] == "synthetic" and float(prov["rms_px"]) < 0.5
    assert str(prov["date"]).startswith("20")


def test_outlier_view_dropped_and_recalibrated(barrel_collector: ViewCollector) -> None:
    collector = barrel_collector
    views = list(collector.views)
    rng = np.random.default_rng(7)
    # A corrupted detection: corners scattered by ~3 px, as after a mis-ordered or smeared frame.
    bad = views[4]
    views[4] = CornerView(
        bad.frame_index,
        (bad.corners_px + rng.normal(0, 3.0, bad.corners_px.shape)).astype(np.float32),
        bad.sharpness,
        bad.tilt_deg,
    )
    assert collector.image_size is not None
    result = calibrate_views(views, PATTERN, collector.image_size)
    assert [v.frame_index for v in result.dropped] == [bad.frame_index]
    assert result.dropped[0].rms_px > 1.0
    assert len(result.used) == len(views) - 1
    assert result.fx_px == pytest.approx(BARREL.fx_px, rel=0.01)


def test_blurry_view_rejected_with_reason(barrel_views) -> None:
    _renderer, images = barrel_views
    collector = ViewCollector(PATTERN, CaptureSettings(min_views=3))
    blurred = cv2.GaussianBlur(images[2], (0, 0), 2.5)
    verdict = collector.feed(blurred)
    assert verdict.verdict is Verdict.BLURRY
    assert verdict.sharpness is not None and verdict.sharpness < 100
    assert "blurry" in verdict.reason and "< 100" in verdict.reason
    assert collector.feed(images[2]).accepted


def test_duplicate_view_rejected(barrel_views) -> None:
    _renderer, images = barrel_views
    collector = ViewCollector(PATTERN, CaptureSettings(min_views=3))
    assert collector.feed(images[0]).accepted
    shifted = np.roll(images[0], 3, axis=1)  # the same view, 3 px to the right
    verdict = collector.feed(shifted)
    assert verdict.verdict is Verdict.DUPLICATE
    assert "duplicate of frame 0" in verdict.reason


def test_oblique_view_rejected() -> None:
    renderer = BoardRenderer(PATTERN, BARREL)
    pose = pose_at(PATTERN, BARREL, (320, 240), 0.5, tilt_y_deg=68.0)
    collector = ViewCollector(PATTERN, CaptureSettings(min_views=3))
    verdict = collector.feed(renderer.render(pose))
    assert verdict.verdict is Verdict.OBLIQUE
    assert verdict.tilt_deg is not None and verdict.tilt_deg > 60
    assert "too oblique" in verdict.reason


def test_wrong_pattern_size_names_the_detected_size(barrel_views) -> None:
    _renderer, images = barrel_views
    collector = ViewCollector(BoardPattern(8, 6, 25.0), CaptureSettings(min_views=3))
    assert collector.feed(images[1]).verdict is Verdict.NO_BOARD
    with pytest.raises(CalibrationError) as err:
        collector.check_ready()
    message = str(err.value)
    assert "board not found" in message and "8x6" in message
    assert "9x6 inner corners was detected" in message


def test_no_board_at_all() -> None:
    collector = ViewCollector(PATTERN, CaptureSettings(min_views=3))
    rng = np.random.default_rng(0)
    collector.feed(rng.integers(0, 255, (240, 320, 3), dtype=np.uint8))
    with pytest.raises(CalibrationError, match=r"board not found.*nor a board of any nearby size"):
        collector.check_ready()


def test_too_few_views(barrel_views) -> None:
    _renderer, images = barrel_views
    collector = _collect(images[:4], min_views=10)
    assert len(collector.views) == 4
    assert not collector.progress.enough
    with pytest.raises(CalibrationError, match="too few views: 4 accepted of 4 frames, need at least 10"):
        collector.check_ready()
    with pytest.raises(CalibrationError, match="too few views"):
        calibrate_views(collector.views[:2], PATTERN, (640, 480), min_views=3)


def test_views_bunched_in_the_centre_fail_coverage() -> None:
    renderer = BoardRenderer(PATTERN, BARREL)
    collector = ViewCollector(PATTERN, CaptureSettings(min_views=6))
    # Well-spread in pose, but always near the middle of the frame.
    views = [(-40, -30, -30, 0), (40, -30, 30, 0), (-40, 30, 0, -30), (40, 30, 0, 30), (0, 0, 25, 25)]
    views += [(0, -35, -25, -25), (0, 35, 0, 0)]
    for dx, dy, tx, ty in views:
        collector.feed(renderer.render(pose_at(PATTERN, BARREL, (320 + dx, 240 + dy), 0.3, tx, ty)))
    assert len(collector.views) >= 6
    assert collector.coverage < 0.4
    with pytest.raises(CalibrationError, match="views do not cover the image") as err:
        collector.check_ready()
    assert "#" in str(err.value) and "." in str(err.value)  # the grid shows what is missing


def test_progress_and_coverage_grid(barrel_views) -> None:
    _renderer, images = barrel_views
    collector = ViewCollector(PATTERN, CaptureSettings(min_views=3, max_views=5))
    first = collector.feed(images[0])
    assert first.corners_px is not None
    text = collector.coverage_text(first.corners_px)
    assert text.count("\n") == 7 and "*" in text
    for image in images[1:]:
        collector.feed(image)
    progress = collector.progress
    assert progress.accepted == 5 and progress.full
    assert collector.feed(images[0]).verdict is Verdict.FULL
    assert 0 < collector.coverage <= 1 and collector.coverage_grid.shape == (6, 8)


def test_frame_size_change_is_an_error(barrel_views) -> None:
    _renderer, images = barrel_views
    collector = ViewCollector(PATTERN)
    collector.feed(images[0])
    with pytest.raises(CalibrationError, match="one calibration needs one image size"):
        collector.feed(cv2.resize(images[0], (320, 240)))


def test_undistorted_frame_matches_the_pinhole(barrel_views) -> None:
    renderer, _images = barrel_views
    pose = pose_at(PATTERN, BARREL, (250, 190), 0.5, tilt_x_deg=15, tilt_y_deg=-20, roll_deg=5)
    distorted = renderer.render(pose)
    cam = BARREL
    profile = CameraProfile(
        "truth", cam.width_px, cam.height_px, cam.fx_px, cam.fy_px, cam.cx_px, cam.cy_px, cam.distortion
    )
    straight = undistort_frame(distorted, profile)
    found, corners = cv2.findChessboardCornersSB(cv2.cvtColor(straight, cv2.COLOR_BGR2GRAY), PATTERN.size)
    assert found
    ideal, _ = cv2.projectPoints(
        PATTERN.object_points_m().astype(np.float64),
        np.array(pose.rvec),
        np.array(pose.tvec),
        cam.camera_matrix,
        None,
    )
    ideal = ideal.reshape(-1, 2)
    corners = corners.reshape(-1, 2)
    error = min(np.abs(corners - ideal).max(), np.abs(corners[::-1] - ideal).max())
    assert error < 0.6
    assert pinhole(profile).has_distortion is False
    # The pixel helper agrees with the image warp to far below a pixel.
    observed = renderer.project_corners(pose)
    assert np.abs(undistort_pixels(observed, profile) - ideal).max() < 1e-3
    # No distortion: frames and pixels pass through untouched.
    assert undistort_frame(distorted, pinhole(profile)) is distorted


def test_hfov_definition_matches_profile() -> None:
    cam = SyntheticCamera.from_hfov(640, 360, 90.0)
    assert cam.fx_px == pytest.approx(320.0)
    assert math.isclose(cam.hfov_deg, 90.0)


def test_sim_sweep_plan_puts_the_board_where_planned() -> None:
    from calibration.sim_sweep import CAMERA_OFFSET_FRD_M, NedPose, plan_sweep
    from common.frames import yaw_rotation_ned

    pattern = BoardPattern(9, 6, 100.0)
    plan = plan_sweep(pattern, NedPose(3.0, -2.0, -8.0, 30.0), 640, 360, plan_hfov_deg=80.0)
    assert plan.board_asset == "checkerboard:10x7:100"  # the simulator counts squares
    assert plan.board_pose.yaw_deg == pytest.approx(210.0)  # faces the starting vehicle
    assert len(plan.vehicle_poses) == len(plan.targets_px) >= 20
    f_px = 320.0 / math.tan(math.radians(40.0))
    board = np.array([plan.board_pose.x_m, plan.board_pose.y_m, plan.board_pose.z_m])
    board_rot = yaw_rotation_ned(plan.board_pose.yaw_deg)
    normal = board_rot @ np.array([1.0, 0.0, 0.0])
    # The outline of the squares, board frame: left, up.
    half_w, half_h = (pattern.cols + 1) * 0.05, (pattern.rows + 1) * 0.05
    outline = [
        board + board_rot @ np.array([0.0, sy * half_w, -sz * half_h]) for sy in (-1, 1) for sz in (-1, 1)
    ]
    for pose, (u_target, v_target) in zip(plan.vehicle_poses, plan.targets_px, strict=True):
        rot = yaw_rotation_ned(pose.yaw_deg)
        cam = np.array([pose.x_m, pose.y_m, pose.z_m]) + rot @ np.array(CAMERA_OFFSET_FRD_M)

        def project(point: np.ndarray, rot: np.ndarray = rot, cam: np.ndarray = cam) -> tuple[float, float]:
            fwd, right, down = rot.T @ (point - cam)  # body frame: forward, right, down
            assert fwd > 0
            return 320 + f_px * right / fwd, 180 + f_px * down / fwd

        u, v = project(board)
        assert (u, v) == (pytest.approx(u_target, abs=0.5), pytest.approx(v_target, abs=0.5))
        for corner in outline:
            cu, cv = project(corner)
            assert 0 <= cu <= 640 and 0 <= cv <= 360, "the whole board must stay in frame"
        # The camera is on the board's printed side, at most 50° off its normal.
        to_cam = (cam - board) / np.linalg.norm(cam - board)
        assert float(to_cam[:2] @ normal[:2]) / np.linalg.norm(to_cam[:2]) > math.cos(math.radians(50.5))
    us = [t[0] for t in plan.targets_px]
    vs = [t[1] for t in plan.targets_px]
    assert min(us) < 0.3 * 640 and max(us) > 0.7 * 640 and min(vs) < 0.35 * 360 and max(vs) > 0.65 * 360
