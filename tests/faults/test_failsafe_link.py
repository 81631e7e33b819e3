"""Fault rows: the ground-station link. Real processes (`dronecats sim`, `dronecats onboard --gs`,
`dronecats gs --headless`); the ground station is killed with SIGKILL mid-flight, or never started.
Judged by the vehicle's pose in the simulator and by the safety lines in the drone's events.jsonl."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.support.failsafe import (
    TICK_S,
    PoseRecorder,
    describe,
    first,
    insecure_flag,
    onboard,
    reset_world,
    safety_events,
    wait_until,
)
from tests.support.ports import free_base_port
from tests.support.processes import dronecats_cmd, stop_process, subprocess_env

HOLD_S, LAND_S = 1.0, 4.0
SCHEDULER_SLACK_S = 0.05
LANDING_TIME_S = 15.0  # from 3 m at the simulator's landing speed, with margin for a loaded machine
SAFETY = ["--set", f"safety.link_lost_hold_s={HOLD_S}", "--set", f"safety.link_lost_land_s={LAND_S}"]


def fresh_flight(sim, tmp_path: Path) -> tuple[int, int, Path]:
    """The world reset with the car 40 m ahead; the simulator's port, a free base port for the link
    and the drone's log dir."""
    port, client = sim
    reset_world(client, target_x_m=40.0)
    return port, free_base_port(), tmp_path / "flight"


def ground_station(base: int, out) -> subprocess.Popen:
    return subprocess.Popen(
        dronecats_cmd(
            "gs",
            "--headless",
            "--drones",
            f"Drone1=tcp://127.0.0.1:{base}",
            "--instruction",
            "go to the red car",
            "--duration-s",
            "90",
            "--until",
            "none",
            *insecure_flag("gs"),
        ),
        env=subprocess_env(),
        stdout=out,
        stderr=subprocess.STDOUT,
    )


def assert_held_then_landed(log_dir, poses, ground_z: float, reference_t: float | None) -> dict:
    """hold link_lost_hold_s after the last-heard time (± one tick), landing link_lost_land_s after it,
    the vehicle stopped between the two and on the ground after; the figures for the report."""
    safety = safety_events(log_dir)
    hold = first(safety, mode="hold", source="link")
    land = first(safety, mode="landing", source="link")
    assert hold and land, describe(log_dir)
    heard_t = hold["last_heard_t"] if reference_t is None else reference_t
    assert heard_t is not None and land["last_heard_t"] == hold["last_heard_t"]
    # Never early; late by at most one tick (the first tick past the limit), plus what a shared
    # machine's scheduler adds to a thread that did not get SCHED_FIFO (CI without CAP_SYS_NICE).
    for transition, limit_s in ((hold, HOLD_S), (land, LAND_S)):
        after_s = transition["t"] - heard_t
        assert limit_s - 0.002 <= after_s <= limit_s + TICK_S + SCHEDULER_SLACK_S, (
            after_s,
            describe(log_dir),
        )
    # Held: no more than braking distance covered between the hold (+0.5 s to brake) and the landing.
    x0, y0, _ = poses.at(hold["wall_time"] + 0.5)
    x1, y1, z1 = poses.at(land["wall_time"])
    assert abs(x1 - x0) < 0.5 and abs(y1 - y0) < 0.5, (x0, y0, x1, y1)
    assert wait_until(lambda: abs(poses.latest()[2] - ground_z) < 0.3, LANDING_TIME_S), poses.latest()
    landed_wall = next(s[0] for s in poses.samples if s[0] > land["wall_time"] and abs(s[3] - ground_z) < 0.3)
    return {
        "hold_after_heard_s": round(hold["t"] - heard_t, 3),
        "land_after_heard_s": round(land["t"] - heard_t, 3),
        "pose_at_hold": poses.at(hold["wall_time"]),
        "pose_at_land": (x1, y1, z1),
        "on_ground_after_land_s": round(landed_wall - land["wall_time"], 2),
        "hold_reason": hold["reason"],
        "land_reason": land["reason"],
    }


@pytest.mark.slow
def test_failsafe_link_killed_mid_flight_holds_then_lands(sim, tmp_path) -> None:
    port, base, log_dir = fresh_flight(sim, tmp_path)
    with PoseRecorder(port) as poses, open(tmp_path / "gs.out", "w") as gs_out:
        ground_z = poses.wait_first()[2]
        drone = onboard(
            port, log_dir, "--gs", f"tcp://127.0.0.1:{base}", *SAFETY, "--set", "t_max_s=90", instruction=""
        )
        gs = ground_station(base, gs_out)
        try:
            # flying toward the car on the ground station's instruction
            assert wait_until(lambda: poses.latest()[0] > 3.0, 90.0), describe(log_dir)
            x_kill = poses.latest()[0]
            kill_wall = time.time()
            gs.kill()  # SIGKILL: no goodbye on the link
            gs.wait()
            assert drone.wait(timeout=60) == 0, describe(log_dir)
            figures = assert_held_then_landed(log_dir, poses, ground_z, None)
        finally:
            stop_process(gs)
            stop_process(drone)
    hold = first(safety_events(log_dir), mode="hold", source="link")
    assert hold is not None
    heard_wall = hold["wall_time"] - (hold["t"] - hold["last_heard_t"])
    # the last-heard time is the ground station's last message before the kill (heartbeats: 2 Hz)
    assert kill_wall - 0.8 <= heard_wall <= kill_wall + 0.05
    print("ROW link-killed", {"x_at_kill": round(x_kill, 2), **figures})


@pytest.mark.slow
def test_failsafe_link_that_never_comes_up_holds_then_lands(sim, tmp_path) -> None:
    port, base, log_dir = fresh_flight(sim, tmp_path)
    with PoseRecorder(port) as poses:
        ground_z = poses.wait_first()[2]
        drone = onboard(port, log_dir, "--gs", f"tcp://127.0.0.1:{base}", *SAFETY, "--set", "t_max_s=90")
        try:
            assert drone.wait(timeout=90) == 0, describe(log_dir)
            # never heard: timed from the start of the flight (episode time 0, after the take-off)
            figures = assert_held_then_landed(log_dir, poses, ground_z, 0.0)
        finally:
            stop_process(drone)
    hold = first(safety_events(log_dir), mode="hold", source="link")
    assert hold is not None and hold["last_heard_t"] is None and "never heard" in hold["reason"]
    print("ROW link-never-up", figures)
