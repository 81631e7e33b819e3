"""Orientation messages of the AirSim wire (Quaternionr maps, NED): a vehicle's attitude and
rates (Kinematics::State), a camera's rotation."""

from __future__ import annotations

import math

import numpy as np

from common.frames import euler_from_matrix, euler_to_quaternion, quat_from_rotation
from sim_bridge.sim.world import World


def quat_msg(w: float, x: float, y: float, z: float) -> dict[str, float]:
    return {"w_val": float(w), "x_val": float(x), "y_val": float(y), "z_val": float(z)}


def rotation_quat_msg(rotation: np.ndarray) -> dict[str, float]:
    """The Quaternionr of a rotation matrix (camera FRD -> NED)."""
    w, x, y, z = quat_from_rotation(rotation)
    return {"w_val": w, "x_val": x, "y_val": y, "z_val": z}


def camera_orientation_msg(rotation: np.ndarray | None, yaw_deg: float) -> dict[str, float] | None:
    """A tilted camera's orientation (NED quaternion of its rotation); None for a level one (the
    caller's yaw-only message, unchanged)."""
    if rotation is None:
        return None
    return quat_msg(*euler_to_quaternion(*euler_from_matrix(rotation)))


def attitude_msgs(
    world: World, vehicle_name: str
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """The vehicle's orientation (NED quaternion), body angular velocity and acceleration (rad/s,
    rad/s^2, FRD: AirSim's Kinematics::State twist.angular and accelerations.angular)."""
    with world.lock:
        m = world.vehicle(str(vehicle_name)).model
        a = m.attitude
        roll, pitch, yaw = a.roll_rad, a.pitch_rad, math.radians(m.pose().yaw_deg)
        rates, accel = list(a.rates_body), list(a.accel_body)
    q = quat_msg(*euler_to_quaternion(roll, pitch, yaw))
    vec = ("x_val", "y_val", "z_val")
    return q, dict(zip(vec, rates, strict=True)), dict(zip(vec, accel, strict=True))
