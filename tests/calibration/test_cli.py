"""`dronecats calibrate` end to end on a folder of synthetic views, through a subprocess."""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from calibration.pattern import BoardPattern
from calibration.synthetic import BoardRenderer, SyntheticCamera, spread_poses
from common.camera import camera_profile
from common.schemes import CAMERA_SOURCES_GROUP
from tests.support.plugins import installed
from tests.support.processes import run_dronecats

PATTERN = BoardPattern(9, 6, 30.0)
CAMERA = SyntheticCamera.from_hfov(640, 480, 75.0, (-0.2, 0.05, 0.0, 0.0, 0.0))


@pytest.fixture(scope="module")
def view_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("views")
    renderer = BoardRenderer(PATTERN, CAMERA)
    rng = np.random.default_rng(5)
    for i, pose in enumerate(spread_poses(PATTERN, CAMERA, 12, seed=5)):
        cv2.imwrite(str(folder / f"view_{i:02d}.png"), renderer.render(pose, rng))
    cv2.imwrite(str(folder / "view_99_blurred.png"), cv2.GaussianBlur(renderer.render(pose, rng), (0, 0), 3))
    return folder


def _calibrate(source: object, out: Path, *more: str, pattern: str = "9x6") -> subprocess.CompletedProcess:
    """`dronecats calibrate` of `source` against a board of 30 mm squares, the profile to `out`."""
    args = ["--source", str(source), "--pattern", pattern, "--square-mm", "30", "--out", str(out)]
    return run_dronecats("calibrate", *args, *more, timeout_s=120)


def test_folder_calibration_writes_a_camera_profile(view_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "cam.yaml"
    proc = _calibrate(view_folder, out, "--min-views", "8", "--name", "testcam")
    assert proc.returncode == 0, proc.stderr
    assert "accepted as view 1" in proc.stdout
    assert "blurry" in proc.stdout  # the blurred copy is judged and refused
    assert "|" in proc.stdout and "#" in proc.stdout  # the coverage grid
    assert "HFOV" in proc.stdout and "RMS reprojection error" in proc.stdout
    profile = camera_profile(str(out))
    assert profile.name == "testcam"
    assert (profile.width_px, profile.height_px) == (640, 480)
    assert profile.fx_px == pytest.approx(CAMERA.fx_px, rel=0.01)
    assert abs(profile.hfov_deg - 75.0) < 0.5
    assert profile.distortion[0] < 0
    raw = yaml.safe_load(out.read_text())
    assert raw["provenance"]["pattern"] == "9x6 inner corners"
    assert raw["provenance"]["square_mm"] == 30.0
    assert raw["provenance"]["views_used"] >= 8
    assert str(view_folder) in raw["provenance"]["source"]


def test_wrong_pattern_exits_2_with_a_hint(view_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "cam.yaml"
    proc = _calibrate(view_folder, out, "--max-frames", "1", pattern="10x7")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "board not found" in proc.stderr and "9x6 inner corners was detected" in proc.stderr
    assert not out.exists()


def test_too_few_views_exits_2(view_folder: Path, tmp_path: Path) -> None:
    proc = _calibrate(view_folder, tmp_path / "c.yaml", "--min-views", "20")
    assert proc.returncode == 2
    assert "too few views" in proc.stderr and "need at least 20" in proc.stderr


def test_tello_source_not_available_yet(tmp_path: Path) -> None:
    proc = _calibrate("tello://192.168.10.1", tmp_path / "c.yaml")
    assert proc.returncode == 2
    assert "not available yet" in proc.stderr


def test_profile_drives_the_controller(view_folder: Path, tmp_path: Path) -> None:
    """The written YAML is what `--camera` takes: the controller turns toward the undistorted pixel."""
    out = tmp_path / "cam.yaml"
    proc = _calibrate(view_folder, out, "--min-views", "8")
    assert proc.returncode == 0, proc.stderr
    action = '{"action":"go","point":[100,100],"depth_m":5}'
    explained = run_dronecats("explain", "--camera", str(out), action)
    assert explained.returncode == 0, explained.stderr
    plan = json.loads(explained.stdout)
    profile = camera_profile(str(out))
    k = np.array([[profile.fx_px, 0, profile.cx_px], [0, profile.fy_px, profile.cy_px], [0, 0, 1]])
    # Point 100/1000 of a 640x480 frame = pixel (64, 48), seen through the calibrated barrel lens.
    x, _y = cv2.undistortPoints(np.array([[[64.0, 48.0]]]), k, np.array(profile.distortion)).ravel()
    assert plan["yaw_deg"] == pytest.approx(math.degrees(math.atan(x)), abs=0.05)


# Stands in for a webcam (none exists in CI): a camera source of a third party's distribution, as a
# Tello or webcam adapter would declare one; its frames come from the test (FRAME).
REHEARSAL_CAMERA = """
FRAME = None  # count -> BGR frame, set by the test


class RehearsalCamera:
    description = "rehearsal camera"
    live = True

    def __init__(self, src):
        self.count = 0

    def read(self):
        self.count += 1
        return FRAME(self.count)

    def close(self):
        pass
"""
REHEARSAL_ENTRY_POINTS = f"[{CAMERA_SOURCES_GROUP}]\nrehearsal = rehearsal_camera:RehearsalCamera\n"


def test_live_source_stops_once_enough(monkeypatch, capsys, tmp_path: Path) -> None:
    """A live camera never ends: capture stops as soon as views and coverage suffice."""
    import argparse

    from calibration import cli

    renderer = BoardRenderer(PATTERN, CAMERA)
    poses = spread_poses(PATTERN, CAMERA, 30, seed=9)
    rng = np.random.default_rng(9)

    def frame(count: int) -> np.ndarray:
        """The count-th frame (from 1): the board moved around, out of view between poses."""
        if count % 3 == 0:
            return np.full((CAMERA.height_px, CAMERA.width_px, 3), 90, np.uint8)
        return renderer.render(poses[(count - 1) % len(poses)], rng)

    camera = installed(
        monkeypatch, tmp_path / "plugin", "rehearsal_camera", REHEARSAL_CAMERA, REHEARSAL_ENTRY_POINTS
    )
    camera.FRAME = frame
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    out = tmp_path / "live.yaml"
    args = parser.parse_args(
        [
            "--source",
            "rehearsal://0",
            "--pattern",
            "9x6",
            "--square-mm",
            "30",
            "--out",
            str(out),
            "--min-views",
            "8",
        ]
    )
    assert cli.run(args) == 0
    printed = capsys.readouterr().out
    stop = re.search(r"enough views: views (\d+)/8 .*coverage (\d+)% .*frames (\d+)", printed)
    assert stop is not None, printed
    accepted, coverage, frames = (int(g) for g in stop.groups())
    assert accepted >= 8 and coverage >= 60 and frames < len(poses)
    assert "no 9x6 board found" in printed  # the empty frames are reported, at most once a second
    assert camera_profile(str(out)).fx_px == pytest.approx(CAMERA.fx_px, rel=0.02)
