"""Rotations of AirSim's cameras and sensors: settings.json's (pitch, roll, yaw) degrees and
quaternions to and from 3x3 matrices. Camera axes are AirSim's: x forward, y right, z down (FRD),
turned into world NED (or the body's FRD) by a rotation. Such a camera is drawn by
sim_bridge.sim.camera.Cameras.render_view (tilted.py's view matrix and ground fill).
"""

from __future__ import annotations

import math

import numpy as np


def rotation_pry_deg(pitch_deg: float, roll_deg: float, yaw_deg: float) -> np.ndarray:
    """AirSim's VectorMath::toQuaternion(pitch, roll, yaw) as a 3x3 rotation: Rz(yaw) Ry(pitch) Rx(roll)."""
    p, r, y = (math.radians(a) for a in (pitch_deg, roll_deg, yaw_deg))
    rz = np.array([[math.cos(y), -math.sin(y), 0.0], [math.sin(y), math.cos(y), 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[math.cos(p), 0.0, math.sin(p)], [0.0, 1.0, 0.0], [-math.sin(p), 0.0, math.cos(p)]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, math.cos(r), -math.sin(r)], [0.0, math.sin(r), math.cos(r)]])
    return rz @ ry @ rx


def rotation_from_quat(w: float, x: float, y: float, z: float) -> np.ndarray:
    """3x3 rotation of a (w, x, y, z) quaternion (normalised here)."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not math.isfinite(n) or n < 1e-9:
        raise ValueError("quaternion of zero length")
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_from_rotation(r: np.ndarray) -> tuple[float, float, float, float]:
    """(w, x, y, z), w >= 0, of a 3x3 rotation (Shepperd's method: robust near 180 degrees)."""
    m = np.asarray(r, float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        q = (0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        q = ((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        q = ((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        q = ((m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s)
    n = math.sqrt(sum(c * c for c in q))
    sign = -1.0 if q[0] < 0 else 1.0
    w, x, y, z = (sign * c / n for c in q)
    return (w, x, y, z)


__all__ = [
    "quat_from_rotation",
    "rotation_from_quat",
    "rotation_pry_deg",
]
