"""Fault rows: take-off and every altitude obey the envelope, and a stall of the onboard process is
named for what it is. Real processes (`dronecats sim`, `dronecats onboard` with the baseline pilot
over AirSim RPC); the real faults: a config whose take-off is above the ceiling, the vehicle lifted
above the ceiling from outside the runtime (simSetVehiclePose through the airsim client), and the
onboard process stopped with SIGSTOP then continued. Judged on the vehicle's pose in the simulator."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.support.failsafe import (
    PoseRecorder,
    describe,
    events,
    first,
    flying,
    jsonl,
    output_file,
    reset_world,
    safety_events,
    wait_steps,
    wait_until,
)

CEILING_M = 4.0


def test_a_takeoff_above_the_ceiling_is_refused_before_anything_flies(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client)
    log_dir = tmp_path / "flight"
    ceiling = ("--set", "takeoff_altitude_m=10", "--set", f"safety.altitude_ceiling_m={CEILING_M}")
    with PoseRecorder(port) as poses:
        with flying(port, log_dir, *ceiling) as drone:
            rc = drone.wait(timeout=60)
        time.sleep(0.5)
        highest_m = max(-z for _, _, _, z in poses.between(0.0, time.time()))
    out = output_file(log_dir).read_text().strip()
    assert rc == 2, out
    assert out.splitlines()[-1] == (
        "dronecats onboard: takeoff_altitude_m=10 is above safety.altitude_ceiling_m=4: "
        "lower the take-off or raise the ceiling"
    ), out
    assert "Traceback" not in out
    assert highest_m < 0.1, highest_m  # never left the ground


@pytest.mark.slow
def test_a_vehicle_put_above_the_ceiling_is_brought_back_under_it(sim, tmp_path) -> None:
    import airsim

    port, client = sim
    reset_world(client, target_x_m=40.0)
    log_dir = tmp_path / "flight"
    ceiling = ("--set", "t_max_s=60", "--set", f"safety.altitude_ceiling_m={CEILING_M}")
    with PoseRecorder(port) as poses, flying(port, log_dir, *ceiling):
        wait_steps(log_dir, 2)
        x, y, _ = poses.latest()
        lifted = airsim.Pose(airsim.Vector3r(x, y, -(CEILING_M + 3.0)), airsim.to_quaternion(0, 0, 0))
        client.simSetVehiclePose(lifted, True, vehicle_name="Drone1")
        lift_wall = time.time()
        assert wait_until(lambda: -poses.latest()[2] > CEILING_M + 2.0, 5.0), poses.latest()
        back = wait_until(lambda: -poses.latest()[2] < CEILING_M, 30.0)
        back_s = time.time() - lift_wall
        assert back, (poses.latest(), describe(log_dir))
    recover = first(events(log_dir, "clamp"), rule="recover")
    assert recover is not None and "above the ceiling" in recover["detail"], describe(log_dir)
    assert recover["sent"][2] < 0  # descending
    print(
        "ROW lifted-above-ceiling",
        {"lifted_to_m": CEILING_M + 3.0, "under_ceiling_after_s": round(back_s, 2)},
    )


@pytest.mark.slow
def test_a_stall_of_the_onboard_process_is_named_and_the_flight_goes_on(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=40.0)
    log_dir = tmp_path / "flight"
    stall_s = 3.0
    with PoseRecorder(port) as poses, flying(port, log_dir, "--set", "t_max_s=60") as drone:
        try:
            wait_steps(log_dir, 3)
            os.kill(drone.pid, signal.SIGSTOP)
            stop_wall = time.time()
            time.sleep(stall_s)
            os.kill(drone.pid, signal.SIGCONT)
            resumed = wait_until(lambda: first(safety_events(log_dir), mode="flying", previous="hold"), 30.0)
            steps_at_resume = len(jsonl(log_dir / "steps.jsonl"))
            flew_on = wait_until(lambda: len(jsonl(log_dir / "steps.jsonl")) > steps_at_resume + 1, 30.0)
            lowest_m = min(-z for _, _, _, z in poses.between(stop_wall, time.time()))
        finally:
            os.kill(drone.pid, signal.SIGCONT)  # a stopped process would take a SIGTERM only once resumed
    stall = first(events(log_dir, "stall"))
    assert stall is not None and stall_s - 0.5 <= stall["gap_s"] <= stall_s + 3.0, describe(log_dir)
    hold = first(safety_events(log_dir), mode="hold", source="onboard")
    assert hold is not None and hold["reason"].startswith("onboard stalled"), describe(log_dir)
    assert not [e for e in safety_events(log_dir) if "telemetry stale" in e.get("reason", "")], describe(
        log_dir
    )
    assert not first(safety_events(log_dir), mode="landing", previous="flying") or (
        "end of run" in first(safety_events(log_dir), mode="landing")["reason"]
    )
    assert resumed and "onboard stall over" in resumed["reason"], describe(log_dir)
    assert flew_on, describe(log_dir)
    assert lowest_m > 1.0, lowest_m  # never came down
    print(
        "ROW onboard-sigstop",
        {
            "stopped_s": stall_s,
            "stall_event_gap_s": stall["gap_s"],
            "resumed_after_stall_s": round(resumed["wall_time"] - stop_wall - stall_s, 2),
            "lowest_m": round(lowest_m, 2),
        },
    )
