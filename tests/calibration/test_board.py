"""`dronecats calibrate-board`: the PDF rasterised at a known DPI measures the asked square size (within
0.5%), on A4 and Letter; the PNG carries its scale; and the PNG textured onto the built-in simulator's
board (a real `dronecats sim` process, the real airsim client) and photographed from the sweep's poses
calibrates the simulator's camera to within 1% in fx. `--sim-board` works with a 25 mm board."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from common.camera import camera_profile
from tests.support.processes import run_dronecats, sim_server

RASTER_DPI = 300.0


def _board(tmp_path: Path, *extra: str) -> dict:
    done = run_dronecats("calibrate-board", "--pattern", "9x6", "--out", str(tmp_path / "board.pdf"), *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _square_mm(gray: np.ndarray, px_per_mm: float) -> tuple[float, float]:
    """Mean and worst side of the squares between detected inner corners, mm."""
    found, corners = cv2.findChessboardCorners(gray, (9, 6))
    assert found, "no 9x6 board in the raster"
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-3)
    grid = cv2.cornerSubPix(gray, corners, (11, 11), (-1, -1), criteria).reshape(6, 9, 2)
    across = np.linalg.norm(np.diff(grid, axis=1), axis=2).ravel()
    down = np.linalg.norm(np.diff(grid, axis=0), axis=2).ravel()
    sides = np.concatenate([across, down])
    return float(sides.mean() / px_per_mm), float(np.abs(sides / px_per_mm - sides.mean() / px_per_mm).max())


@pytest.mark.parametrize(("page", "size_pt"), [("a4", (841.89, 595.28)), ("letter", (792.0, 612.0))])
def test_the_pdf_prints_25_mm_squares_at_true_scale(tmp_path: Path, page: str, size_pt: tuple) -> None:
    import pypdfium2 as pdfium

    summary = _board(tmp_path, "--square-mm", "25", "--page", page)
    assert summary["orientation"] == "landscape"  # 250 x 175 mm of squares fit only that way
    document = pdfium.PdfDocument(str(tmp_path / "board.pdf"))
    try:
        assert len(document) == 1
        pdf_page = document[0]
        assert pdf_page.get_size() == pytest.approx(size_pt, abs=0.5)  # the paper size, in points
        raster = pdf_page.render(scale=RASTER_DPI / 72.0).to_numpy()
    finally:
        document.close()
    gray = cv2.cvtColor(raster[:, :, :3], cv2.COLOR_RGB2GRAY)
    mean_mm, worst_mm = _square_mm(gray, RASTER_DPI / 25.4)
    assert mean_mm == pytest.approx(25.0, rel=0.005), mean_mm
    assert worst_mm < 0.25, worst_mm  # every square, not only on average (< 1 px at 300 dpi)


def test_the_png_carries_its_scale_and_a_board_too_big_for_the_page_is_refused(tmp_path: Path) -> None:
    from PIL import Image

    summary = _board(tmp_path, "--square-mm", "20", "--dpi", "254")
    with Image.open(tmp_path / "board.png") as image:
        dpi = image.info["dpi"]
        gray = np.asarray(image.convert("L"))
    assert dpi[0] == pytest.approx(254.0, abs=0.1)
    assert gray.shape == (9 * 200, 12 * 200)  # 10 x 7 squares of 200 px on a one-square margin
    mean_mm, _ = _square_mm(gray, dpi[0] / 25.4)
    assert mean_mm == pytest.approx(20.0, rel=0.005) and summary["png_square_mm"] == 20.0
    refused = run_dronecats(
        "calibrate-board", "--pattern", "9x6", "--square-mm", "40", "--out", str(tmp_path / "b.pdf")
    )
    assert refused.returncode == 2 and "does not fit on A4; at most 25.1 mm squares do" in refused.stderr
    assert "Traceback" not in refused.stderr


def _calibrate_sim(port: int, out: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = ["--source", f"airsim://127.0.0.1:{port}/Drone1", "--sim-board", "--pattern", "9x6"]
    return run_dronecats("calibrate", *argv, "--square-mm", "25", "--out", str(out), *extra, timeout_s=180)


def test_the_png_on_the_simulators_board_calibrates_its_camera(tmp_path: Path) -> None:
    airsim = pytest.importorskip("airsim")
    pytest.importorskip("pybullet")
    _board(tmp_path, "--square-mm", "25")
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((9 * 50, 12 * 50), 255, np.uint8))  # the board's shape, no squares
    f_px = 320.0 / math.tan(math.radians(90.0) / 2)  # the built-in `sim` camera: 640x360, 90°
    with sim_server("--scene", "residential", "--paused") as port:
        client = airsim.VehicleClient(ip="127.0.0.1", port=port, timeout_value=30)
        start = airsim.Pose(airsim.Vector3r(0.0, 0.0, -8.0), airsim.to_quaternion(0.0, 0.0, 0.0))
        client.simSetVehiclePose(start, True, vehicle_name="Drone1")
        for image in (None, tmp_path / "board.png"):  # the drawn board at 25 mm, then calibrate-board's PNG
            out = tmp_path / f"cam-{image.stem if image else 'drawn'}.yaml"
            done = _calibrate_sim(port, out, *(["--sim-board-image", str(image)] if image else []))
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr
            profile = camera_profile(str(out))
            assert profile.fx_px == pytest.approx(f_px, rel=0.01), (image, profile)
            assert profile.fy_px == pytest.approx(f_px, rel=0.01), (image, profile)
        # The texture is what the camera sees: a board without squares gives nothing to calibrate on.
        done = _calibrate_sim(port, tmp_path / "none.yaml", "--sim-board-image", str(blank))
        assert done.returncode == 2 and "board not found" in done.stderr, done.stderr
