"""`dronecats sim --spawn` and `--episode`: the objects are where the command line or the record says,
as seen by the real airsim client (simGetObjectPose) against a real `dronecats sim` process; bad
specs are one line and exit 2."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from episodes.preflight import expectation_for
from episodes.suites import Suite, SuiteEntry, save_suite
from tests.support.episodes import short_record
from tests.support.processes import run_dronecats, sim_server

pytest.importorskip("pybullet")
airsim = pytest.importorskip("airsim")


def _pose(client, name: str) -> tuple[float, float, float, float]:
    pose = client.simGetObjectPose(name)
    _, _, yaw = airsim.to_eularian_angles(pose.orientation)
    p = pose.position
    return p.x_val, p.y_val, p.z_val, math.degrees(yaw)


def test_spawned_objects_stand_where_the_command_line_says() -> None:
    startup: list[str] = []
    spawns = ("--spawn", "target=car@red:25,0,90", "--spawn", "walker=person@blue:10,-3")
    with sim_server(*spawns, wait_for=(), startup=startup) as port:
        client = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        x, y, z, yaw = _pose(client, "target")
        assert (x, y, z) == pytest.approx((25.0, 0.0, 0.0), abs=1e-3) and yaw == pytest.approx(90.0, abs=0.1)
        x, y, _, yaw = _pose(client, "walker")
        assert (x, y) == pytest.approx((10.0, -3.0), abs=1e-3) and yaw == pytest.approx(0.0, abs=0.1)
        assert "walker" in client.simListSceneObjects("walk.*")
    assert any(line.startswith("spawned target: car@red at (25, 0) yaw 90") for line in startup), startup


def test_episode_builds_the_records_scene(tmp_path: Path) -> None:
    record = short_record("spawn-check", start_x_m=-4.0)
    path = tmp_path / "ep.json"
    save_suite(Suite(record.id, [SuiteEntry(record, expectation_for(record))]), path)
    with sim_server("--episode", str(path), "--spawn", "extra=van@white:0,8") as port:
        client = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        for obj in (*record.targets, *record.distractors):
            x, y, z, yaw = _pose(client, obj.id)
            assert (x, y, z) == pytest.approx(obj.pose[:3], abs=1e-3), obj.id
            assert yaw == pytest.approx(obj.pose[3], abs=0.1), obj.id
        assert _pose(client, "extra")[:2] == pytest.approx((0.0, 8.0), abs=1e-3)
        spawn = client.client.call("dcGetVehicleSpawn", "Drone1")["position"]
        assert (spawn["x_val"], spawn["y_val"]) == pytest.approx(record.drones[0].start_pose[:2], abs=1e-3)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--spawn", "target=tank@red:25,0"], "unknown asset kind 'tank'"),
        (["--spawn", "target=car@red:25"], "two or three finite numbers"),
        (["--spawn", "car@red:25,0"], "use NAME=KIND[@COLOUR]:X,Y[,YAW]"),
        (["--spawn", "t=car@red:nan,0"], "finite numbers"),
        (["--episode", "/nonexistent/ep.json"], "cannot read suite"),
    ],
)
def test_bad_specs_are_one_line_and_exit_2(argv: list[str], says: str) -> None:
    done = run_dronecats("sim", "--port", "0", *argv)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
