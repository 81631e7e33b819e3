"""World NED (the project's frame) <-> PyBullet's Z-up frame.

PyBullet axes here: X = north, Y = west, Z = up (right-handed), so (x, y, z)_ned -> (x, -y, -z).
NED yaw is clockwise seen from above; PyBullet yaw about +Z is counter-clockwise, hence the sign flip.
"""

from __future__ import annotations

import math

import numpy as np

from common.pose import Pose


def ned_to_pb(x_m: float, y_m: float, z_m: float) -> tuple[float, float, float]:
    return (float(x_m), -float(y_m), -float(z_m))


def pb_to_ned(x: float, y: float, z: float) -> tuple[float, float, float]:
    return (float(x), -float(y), -float(z))


def yaw_quat_pb(yaw_deg: float) -> tuple[float, float, float, float]:
    """PyBullet (x, y, z, w) quaternion for an NED yaw."""
    half = -math.radians(yaw_deg) / 2.0
    return (0.0, 0.0, math.sin(half), math.cos(half))


def yaw_quat_ned_wxyz(yaw_deg: float) -> tuple[float, float, float, float]:
    """AirSim's (w, x, y, z) NED quaternion for a yaw-only attitude."""
    half = math.radians(yaw_deg) / 2.0
    return (math.cos(half), 0.0, 0.0, math.sin(half))


def yaw_from_ned_quat(w: float, x: float, y: float, z: float) -> float:
    """Yaw in degrees from an NED (w, x, y, z) quaternion (ZYX Tait-Bryan, as airsim.to_eularian_angles)."""
    siny = 2.0 * (w * z + x * y)
    cosy = 1.0 - 2.0 * (y * y + z * z)
    return math.degrees(math.atan2(siny, cosy))


def yaw_rotation_ned(yaw_deg: float) -> np.ndarray:
    """3x3 rotation body(FRD, yaw only) -> world NED."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def body_to_world(pose: Pose, offset_frd: tuple[float, float, float]) -> np.ndarray:
    """World NED position of a point given in the body frame (yaw only)."""
    return np.array([pose.x_m, pose.y_m, pose.z_m]) + yaw_rotation_ned(pose.yaw_deg) @ np.asarray(offset_frd)
