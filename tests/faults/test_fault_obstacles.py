"""Fault rows: the obstacles the simulator knows are kept clear below the pilot. Real processes
(`dronecats sim`, `dronecats onboard` over AirSim RPC, the server's dcGetObstacles); judged on the
vehicle's pose read through the airsim client, and on the simulator's collision record.

1. A scripted pilot flies straight at the long side of a red car 12 m ahead at 1.5 m (its roof's
   height), 20 m deep, over and over: the drone stops beside the car, never inside its margin below
   its top plus the clearance, and never touches it (without the clearance it hits the car).
2. A car driven at a drone hovering at 1.2 m: the drone climbs over it, untouched.
"""

from __future__ import annotations

import time

import pytest

from common.obstacles import Obstacle
from tests.support.failsafe import PoseRecorder, describe, events, jsonl, onboard, reset_world, wait_until
from tests.support.processes import stop_process

pytestmark = pytest.mark.slow

CAR_X_M = 12.0
MARGIN_M = 1.0  # the defaults: 1.0 m off the footprint, 1.0 m above the top
CLEARANCE_M = 1.0
TOLERANCE_M = 0.15  # the vehicle's braking past a cut setpoint (its pose at 20 Hz)


def footprint(client, name: str) -> Obstacle:
    """The object's footprint and top from the simulator's own object info (its bounding box)."""
    info = client.client.call("dcGetObjectInfo", name)
    (n, e, d), (half_fwd, half_right, half_down) = info["bbox_centre"], info["bbox_half_m"]
    return Obstacle(name, n, e, info["pose"][3], half_fwd, half_right, d - half_down)


def collision_stamp_ns(client) -> int:
    """The newest collision's time stamp (simGetCollisionInfo's has_collided is cleared by whichever
    client reads it first, and onboard reads it every poll: the time stamp is what lasts)."""
    return int(client.simGetCollisionInfo("Drone1").time_stamp)


def intrusions(samples, car: Obstacle):
    """Pose samples within the margin of the car's footprint and below its top plus the clearance."""
    return [
        (round(x, 2), round(y, 2), round(-z, 2))
        for _, x, y, z in samples
        if car.offset_m(x, y)[0] < MARGIN_M - TOLERANCE_M and z > car.top_z_m - CLEARANCE_M + TOLERANCE_M
    ]


def test_a_flight_straight_at_a_car_stops_beside_it_and_never_touches_it(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=CAR_X_M)
    before_ns = collision_stamp_ns(client)
    log_dir = tmp_path / "flight"
    replies = tmp_path / "replies.txt"
    replies.write_text('{"action": "go", "point": [500, 500], "depth_m": 20, "angle_deg": null}\n' * 200)
    with PoseRecorder(port) as poses:
        drone = onboard(
            port,
            log_dir,
            "--pilot",
            f"scripted:{replies}",
            "--set",
            "takeoff_altitude_m=1.5",
            "--set",
            "t_max_s=30",
        )
        try:
            assert drone.wait(timeout=120) == 0, describe(log_dir)
        finally:
            stop_process(drone)
        samples = list(poses.samples)
    car = footprint(client, "target")
    closest_m = min(car.offset_m(x, y)[0] for _, x, y, z in samples)
    assert not intrusions(samples, car), (intrusions(samples, car)[:5], describe(log_dir))
    assert collision_stamp_ns(client) == before_ns, describe(log_dir)
    clamps = [e for e in events(log_dir, "clamp") if e.get("rule") == "obstacle"]
    assert clamps and "target" in clamps[0]["detail"], describe(log_dir)
    steps = jsonl(log_dir / "steps.jsonl")
    print(
        "ROW obstacle approach",
        {"closest_to_its_footprint_m": round(closest_m, 2), "clamps": len(clamps), "steps": len(steps)},
    )


def test_a_car_driven_at_a_low_hovering_drone_is_climbed_over(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=40.0)  # the red car far away; the drone hovers waiting for work
    before_ns = collision_stamp_ns(client)
    log_dir = tmp_path / "flight"
    with PoseRecorder(port) as poses:
        drone = onboard(
            port, log_dir, "--set", "takeoff_altitude_m=1.2", "--set", "t_max_s=60", instruction=""
        )
        try:
            assert wait_until(lambda: poses.samples and -poses.latest()[2] > 1.1, 90.0), describe(log_dir)
            time.sleep(1.0)  # settled at its take-off altitude
            x, y, _ = poses.latest()
            # The target car turned toward the drone and driven through where it hovers at 2 m/s.
            client.client.call("dcSetObjectPath", "target", [[CAR_X_M, y, 0.0], [x - 20.0, y, 0.0]], 2.0)
            car = footprint(client, "target")
            driven_s = time.time()
            assert wait_until(lambda: client.simGetObjectPose("target").position.x_val < x - 8.0, 60.0)
            passed_s = time.time() - driven_s
            samples = list(poses.samples)
        finally:
            stop_process(drone)
    peak_m = max(-z for _, _, _, z in samples)
    assert collision_stamp_ns(client) == before_ns, describe(log_dir)
    assert peak_m >= -car.top_z_m + CLEARANCE_M - TOLERANCE_M, (peak_m, describe(log_dir))
    print(
        "ROW obstacle driven", {"peak_altitude_m": round(peak_m, 2), "car_passed_after_s": round(passed_s, 1)}
    )
