"""The built-in simulator's camera calibrated through the real pipeline: `dronecats sim` as a separate
process, the real `airsim` client, a checkerboard spawned in the scene, the vehicle moved around it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from common.camera import CameraProfile, camera_profile
from tests.support.processes import run_dronecats, sim_server

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")


def _max_ray_error_deg(profile: CameraProfile, hfov_deg: float) -> float:
    """Worst angle, over a grid spanning the whole image, between the ray the profile back-projects a
    pixel to (distortion included) and the ray of the simulator's true pinhole (what the controller uses)."""
    f_px = (profile.width_px / 2) / math.tan(math.radians(hfov_deg) / 2)
    us, vs = np.meshgrid(np.linspace(0, profile.width_px - 1, 33), np.linspace(0, profile.height_px - 1, 19))
    pixels = np.stack([us.ravel(), vs.ravel()], axis=1).reshape(-1, 1, 2)
    k = np.array([[profile.fx_px, 0, profile.cx_px], [0, profile.fy_px, profile.cy_px], [0, 0, 1]])
    fitted = cv2.undistortPoints(pixels, k, np.array(profile.distortion)).reshape(-1, 2)
    # OpenCV pixel centres are integers: the true centre of a W-pixel-wide image is (W - 1) / 2.
    true = np.stack(
        [(us.ravel() - (profile.width_px - 1) / 2) / f_px, (vs.ravel() - (profile.height_px - 1) / 2) / f_px],
        1,
    )
    a = np.column_stack([fitted, np.ones(len(fitted))])
    b = np.column_stack([true, np.ones(len(true))])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).max())


@pytest.fixture(params=[90.0, 70.0], ids=["hfov90", "hfov70"])
def sim(request, tmp_path_factory) -> Iterator[tuple[int, float]]:
    hfov = float(request.param)
    if hfov == 90.0:
        camera = "sim"  # the built-in profile: 640x360, 90°
    else:
        path = tmp_path_factory.mktemp("simcam") / "sim70.yaml"
        CameraProfile.from_hfov("sim70", 640, 360, hfov).save(path)
        camera = str(path)
    with sim_server("--scene", "residential", "--paused", "--camera", camera) as port:
        yield port, hfov


def test_sim_camera_recovered(sim: tuple[int, float], tmp_path: Path) -> None:
    port, hfov = sim
    client = airsim.VehicleClient(ip="127.0.0.1", port=port, timeout_value=30)
    start = airsim.Pose(airsim.Vector3r(0.0, 0.0, -8.0), airsim.to_quaternion(0.0, 0.0, 0.0))
    # Above the street, clear of houses and trees, looking north along it.
    client.simSetVehiclePose(start, True, vehicle_name="Drone1")
    out = tmp_path / "sim_camera.yaml"
    proc = run_dronecats(
        "calibrate",
        "--source",
        f"airsim://127.0.0.1:{port}/Drone1",
        "--sim-board",
        "--pattern",
        "9x6",
        "--square-mm",
        "100",
        "--out",
        str(out),
        timeout_s=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    profile = camera_profile(str(out))
    assert (profile.width_px, profile.height_px) == (640, 360)
    # TinyRenderer does not anti-alias: each corner carries ~0.35 px of noise, which costs more focal
    # accuracy the narrower the lens (less perspective at the distance the board fills the frame).
    tolerance_deg = 0.5 if hfov == 90.0 else 1.0
    assert abs(profile.hfov_deg - hfov) < tolerance_deg, profile
    f_px = 320.0 / math.tan(math.radians(hfov) / 2)
    assert profile.fx_px == pytest.approx(f_px, rel=0.01 if hfov == 90.0 else 0.02)
    assert profile.fy_px == pytest.approx(f_px, rel=0.01 if hfov == 90.0 else 0.02)
    assert abs(profile.cx_px - 320) < 3 and abs(profile.cy_px - 180) < 3
    # The controller back-projects pixels through the profile: every pixel's ray must match the
    # simulator's true pinhole (the fitted distortion included, which should be near zero).
    ray_error_deg = _max_ray_error_deg(profile, hfov)
    print(
        f"HFOV {profile.hfov_deg:.3f} (configured {hfov}), fx {profile.fx_px:.2f}, "
        f"ray error {ray_error_deg:.2f}°"
    )
    assert ray_error_deg < 1.0
    provenance = yaml.safe_load(out.read_text())["provenance"]
    assert provenance["views_used"] >= 12 and float(provenance["rms_px"]) < 1.0
    assert "checkerboard:10x7:100" in provenance["source"]
    # The sweep cleans up: board gone, vehicle back where it was.
    assert not [n for n in client.simListSceneObjects(".*") if "calibration_board" in n]
    pose = client.simGetVehiclePose(vehicle_name="Drone1")
    assert pose.position.z_val == pytest.approx(-8.0, abs=1e-3) and pose.position.x_val == pytest.approx(
        0, abs=1e-3
    )
