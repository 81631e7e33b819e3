"""settings.json for a suite (`dronecats episodes airsim-settings`) and `dronecats sim --settings`
reading the same file: vehicles with their names and poses, the camera's resolution and FOV, ClockSpeed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.processes import run_dronecats, sim_server

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

SUITES = Path(__file__).resolve().parents[2] / "episodes" / "suites"


def test_suite_settings_configure_dronecats_sim(tmp_path: Path) -> None:
    out = tmp_path / "settings.json"
    made = run_dronecats(
        "episodes",
        "airsim-settings",
        str(SUITES / "commanding.json"),
        "--out",
        str(out),
        "--clock-speed",
        "4",
    )
    assert made.returncode == 0, made.stderr[-2000:]
    settings = json.loads(out.read_text())
    first = json.loads((SUITES / "commanding.json").read_text())["episodes"][0]["record"]
    assert settings["SimMode"] == "Multirotor" and settings["ClockSpeed"] == 4
    assert list(settings["Vehicles"]) == [d["name"] for d in first["drones"]]
    # a smaller camera than the suite's 1280x720 keeps the renders cheap here; the reader takes it
    for vehicle in settings["Vehicles"].values():
        for capture in vehicle["Cameras"]["front_center"]["CaptureSettings"]:
            assert (capture["Width"], capture["Height"], capture["FOV_Degrees"]) == (1280, 720, 90.0)
            capture.update(Width=320, Height=180, FOV_Degrees=70.0)
    out.write_text(json.dumps(settings))
    with sim_server("--scene", "residential", "--settings", str(out)) as port:
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=30)
        assert c.listVehicles() == [d["name"] for d in first["drones"]]
        for drone in first["drones"]:
            p = c.simGetObjectPose(drone["name"]).position
            assert (p.x_val, p.y_val, p.z_val) == pytest.approx(drone["start_pose"][:3], abs=1e-6)
        assert c.simGetCameraInfo("0", "Drone2").fov == pytest.approx(70.0, abs=1e-3)
        image = c.simGetImages([airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)], "Drone2")[0]
        assert (image.width, image.height) == (320, 180)
        t0, wall0 = c.getMultirotorState("Drone1").timestamp / 1e9, time.monotonic()
        time.sleep(1.0)
        rate = (c.getMultirotorState("Drone1").timestamp / 1e9 - t0) / (time.monotonic() - wall0)
        assert rate > 2.0  # ClockSpeed 4 (a loaded machine may fall behind somewhat)


def test_bad_settings_get_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for text, message in (
        ('{"SimMode": "Boat"}', "SimMode 'Boat': the built-in simulator flies Multirotor"),
        ('{"Vehicles": {"A": {"X": "far"}}}', "Vehicles.A.X: expected a finite number"),
        ("{not json", "is not valid JSON"),
    ):
        bad.write_text(text)
        run = run_dronecats("sim", "--port", "0", "--settings", str(bad))
        assert run.returncode == 2, run.stderr
        assert message in run.stderr and "Traceback" not in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_a_suite_mixing_camera_profiles_is_refused_and_only_picks_one(tmp_path: Path) -> None:
    out = tmp_path / "settings.json"

    def settings(*only: str):
        return run_dronecats(
            "episodes", "airsim-settings", str(SUITES / "single.json"), "--out", str(out), *only
        )

    mixed = settings()
    assert mixed.returncode == 2 and not out.exists(), mixed.stderr
    assert "mixes camera profiles ['indoor', 'outdoor']" in mixed.stderr and "--only IDS" in mixed.stderr
    picked = settings("--only", "indoor-approach-01,indoor-search-02")
    assert picked.returncode == 0, picked.stderr
    assert json.loads(picked.stdout.strip().splitlines()[-1])["camera"] == "indoor"
    typo = settings("--only", "indoor-aproach-01")
    assert typo.returncode == 2 and "did you mean indoor-approach-01" in typo.stderr, typo.stderr
