"""AirSim RPC clients (the stock `airsim` package or its `cosysairsim` fork) on a `dronecats sim` a
test started: a two-drone world at a clock speed, clients with both drones armed, a red car spawned."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from tests.support.processes import sim_server

CLOCK_SPEED = 4.0  # the two-drone server's simulated seconds per wall second


@contextlib.contextmanager
def two_drone_sim(clock_speed: float = CLOCK_SPEED) -> Iterator[int]:
    """`dronecats sim` on the residential scene with Drone1 and Drone2 at `clock_speed`; its port."""
    with sim_server("--scene", "residential", "--vehicles", "2", "--clock-speed", str(clock_speed)) as port:
        yield port


def arm_both(client: Any) -> Any:
    """API control and arming for Drone1 and Drone2; the client."""
    for name in ("Drone1", "Drone2"):
        client.enableApiControl(True, name)
        client.armDisarm(True, name)
    return client


def connect(module: ModuleType, port: int) -> Any:
    """A MultirotorClient of `module` (airsim or cosysairsim) on loopback, with a 60 s RPC timeout."""
    return module.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)


def spawn_red_car(client: Any, x_m: float) -> None:
    """A red car named "target" at (x_m, 0) facing +y, through simSpawnObject."""
    import airsim

    pose = airsim.Pose(airsim.Vector3r(x_m, 0.0, 0.0), airsim.to_quaternion(0, 0, 1.5708))
    assert client.simSpawnObject("target", "car@red", pose, airsim.Vector3r(1, 1, 1)) == "target"


def set_pose(
    module: ModuleType, client: Any, name: str, x: float, y: float, z: float, yaw_deg: float
) -> None:
    """Teleport a vehicle (simSetVehiclePose, ignoring collisions) to spawn-relative (x, y, z) at yaw_deg."""
    half = math.radians(yaw_deg) / 2.0  # a yaw-only Quaternionr: (x, y, z, w) in both packages
    pose = module.Pose(
        module.Vector3r(float(x), float(y), float(z)),
        module.Quaternionr(0.0, 0.0, math.sin(half), math.cos(half)),
    )
    client.simSetVehiclePose(pose, True, name)
