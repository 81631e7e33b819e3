"""World NED (the project's frame, common.frames) <-> PyBullet's Z-up frame: the built-in simulator's
own detail (its physics and renderers are the only users), so it stays here, beside them.

PyBullet axes here: X = north, Y = west, Z = up (right-handed), so (x, y, z)_ned -> (x, -y, -z).
NED yaw is clockwise seen from above; PyBullet yaw about +Z is counter-clockwise, hence the sign flip.
PyBullet's quaternions are (x, y, z, w); common.frames' are AirSim's (w, x, y, z).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from common.frames import rotation_from_unit_quat


def ned_to_pb(x_m: float, y_m: float, z_m: float) -> tuple[float, float, float]:
    return (float(x_m), -float(y_m), -float(z_m))


def pb_to_ned(x: float, y: float, z: float) -> tuple[float, float, float]:
    return (float(x), -float(y), -float(z))


def yaw_quat_pb(yaw_deg: float) -> tuple[float, float, float, float]:
    """PyBullet (x, y, z, w) quaternion for an NED yaw."""
    half = -math.radians(yaw_deg) / 2.0
    return (0.0, 0.0, math.sin(half), math.cos(half))


def rotation_from_pb_quat(q_xyzw: Sequence[float]) -> np.ndarray:
    """3x3 rotation of a PyBullet (x, y, z, w) quaternion (in PyBullet's axes)."""
    x, y, z, w = q_xyzw
    return rotation_from_unit_quat(w, x, y, z)
