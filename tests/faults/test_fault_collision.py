"""Fault row: a collision the vehicle reports ends the run at once. Real processes (`dronecats sim`,
`dronecats onboard` over AirSim RPC); the real fault: the vehicle swept into a parked car through the
airsim client (simSetVehiclePose with ignore_collision=False stops at the first thing in its way and
reports it, as AirSim's PawnSimApi does). Judged on the vehicle's pose in the simulator and on the
logs: the run ends well before T_max with the end reason naming what was hit, and the drone lands."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.failsafe import (
    PoseRecorder,
    describe,
    events,
    first,
    flying,
    reset_world,
    safety_events,
    wait_steps,
)

T_MAX_S = 120.0


@pytest.mark.slow
def test_a_collision_ends_the_run_at_once_naming_what_was_hit(sim, tmp_path) -> None:
    import airsim

    port, client = sim
    reset_world(client, target_x_m=40.0)
    log_dir = tmp_path / "flight"
    try:
        with PoseRecorder(port) as poses, flying(port, log_dir, "--set", f"t_max_s={T_MAX_S:g}") as drone:
            wait_steps(log_dir, 2)
            x, y, _ = poses.latest()
            car = airsim.Pose(airsim.Vector3r(x + 3.0, y, 0.0), airsim.to_quaternion(0, 0, 1.5708))
            assert client.simSpawnObject("obstacle", "car@blue", car, airsim.Vector3r(1, 1, 1)) == "obstacle"
            into_car = airsim.Pose(airsim.Vector3r(x + 3.0, y, -0.8), airsim.to_quaternion(0, 0, 0))
            hit_wall = time.time()
            client.simSetVehiclePose(into_car, False, vehicle_name="Drone1")
            rc = drone.wait(timeout=60)
            ended_s = time.time() - hit_wall
    finally:
        for name in client.simListSceneObjects("obstacle.*"):
            client.simDestroyObject(name)
    assert rc == 0, describe(log_dir)
    run = json.loads((log_dir / "episode.json").read_text())["run"]
    assert run["end_reason"].startswith("collided: collision with obstacle"), run
    finished = first(events(log_dir, "finished_run"))
    assert finished is not None and finished["t"] < T_MAX_S / 2, describe(log_dir)
    hold = first(safety_events(log_dir), mode="hold")
    assert hold is not None and hold["reason"].startswith("collision with obstacle at ("), describe(log_dir)
    # Landed as far down as it can go: the drone came down onto the car it hit (its roof 1.5 m up),
    # where the simulator does not call it landed (the touchdown event then says "not seen in time").
    touchdown = first(events(log_dir, "touchdown"))
    assert touchdown is not None, describe(log_dir)
    final_m = -poses.latest()[2]
    assert final_m < 2.0, poses.latest()
    print(
        "ROW collision",
        {
            "ended_after_s": round(ended_s, 2),
            "reason": run["end_reason"],
            "final_altitude_m": round(final_m, 2),
        },
    )
