"""Frame conventions and rotations, written once for every package.

Frames (PX4's and MAVLink's: MAV_FRAME_LOCAL_NED and MAV_FRAME_BODY_FRD in mavlink common.xml; AirSim's
are the same, docs/apis.md "Coordinate System"):
- world NED: x north, y east, z down (metres; altitude is -z);
- body FRD: x forward, y right, z down, turned into the world by the attitude;
- the heading frame: body FRD at the pose's yaw with roll and pitch left out (what `Pose` describes).

Angles: ZYX Tait-Bryan (yaw about down, then pitch about right, then roll about forward), as AirSim's
airsim.to_quaternion(pitch, roll, yaw) and airsim.to_eularian_angles(q) (PythonClient/airsim/utils.py)
and AirLib's VectorMath::toQuaternion: yaw positive clockwise seen from above (north toward east),
pitch positive nose up, roll positive right side down. Euler angles here are (roll, pitch, yaw) in
that order, radians unless the name says `_deg`. Quaternions are AirSim's Quaternionr order
(w, x, y, z), Hamilton, rotating body vectors into the world (VectorMath::rotateVector: q v q*).

Written with numpy and math: scipy is not a core dependency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Quat = tuple[float, float, float, float]  # (w, x, y, z)


# ---- quaternions


def quat_normalised(w: float, x: float, y: float, z: float) -> Quat:
    """The unit quaternion along (w, x, y, z); a zero or non-finite one is refused."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not math.isfinite(n) or n < 1e-9:
        raise ValueError("quaternion of zero length")
    return (w / n, x / n, y / n, z / n)


def rotation_from_unit_quat(w: float, x: float, y: float, z: float) -> np.ndarray:
    """3x3 rotation (body -> world) of a unit (w, x, y, z) quaternion, taken as given (no normalising:
    a server's or PyBullet's quaternion goes through unchanged, NaN included)."""
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def rotation_from_quat(w: float, x: float, y: float, z: float) -> np.ndarray:
    """3x3 rotation of a (w, x, y, z) quaternion of any non-zero length (normalised here)."""
    return rotation_from_unit_quat(*quat_normalised(w, x, y, z))


def quat_from_rotation(r: np.ndarray) -> Quat:
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
    w, x, y, z = (float(sign * c / n) for c in q)
    return (w, x, y, z)


def euler_to_quaternion(roll: float, pitch: float, yaw: float) -> Quat:
    """(w, x, y, z) of ZYX Euler angles in radians: airsim.to_quaternion(pitch, roll, yaw)'s formula."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    )


def quaternion_euler_deg(w: float, x: float, y: float, z: float) -> tuple[float, float, float]:
    """(roll, pitch, yaw) in degrees of a unit quaternion: airsim.to_eularian_angles's formula (which
    returns them as (pitch, roll, yaw)), pitch clamped at +-90."""
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2.0 * (w * y - z * x))))
    return math.degrees(roll), math.degrees(pitch), yaw_from_ned_quat(w, x, y, z)


def yaw_from_ned_quat(w: float, x: float, y: float, z: float) -> float:
    """Yaw in degrees (clockwise from north) of a (w, x, y, z) quaternion, as airsim.to_eularian_angles."""
    siny = 2.0 * (w * z + x * y)
    cosy = 1.0 - 2.0 * (y * y + z * z)
    return math.degrees(math.atan2(siny, cosy))


def yaw_quat_ned_wxyz(yaw_deg: float) -> Quat:
    """(w, x, y, z) of a yaw-only attitude."""
    half = math.radians(yaw_deg) / 2.0
    return (math.cos(half), 0.0, 0.0, math.sin(half))


# ---- Euler angles and matrices


def rotation_from_euler(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """3x3 body (FRD) -> world NED rotation of ZYX Euler angles in radians: Rz(yaw) Ry(pitch) Rx(roll)."""
    sr, cr = math.sin(roll), math.cos(roll)
    sp, cp = math.sin(pitch), math.cos(pitch)
    sy, cy = math.sin(yaw), math.cos(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def rotation_pry_deg(pitch_deg: float, roll_deg: float, yaw_deg: float) -> np.ndarray:
    """rotation_from_euler of degrees given in AirSim's settings.json and VectorMath::toQuaternion
    argument order (pitch, roll, yaw)."""
    return rotation_from_euler(math.radians(roll_deg), math.radians(pitch_deg), math.radians(yaw_deg))


def euler_from_matrix(r: np.ndarray) -> tuple[float, float, float]:
    """(roll, pitch, yaw) in radians of a body -> world rotation (ZYX), pitch clamped at +-pi/2."""
    pitch = -math.asin(max(-1.0, min(1.0, float(r[2, 0]))))
    return math.atan2(float(r[2, 1]), float(r[2, 2])), pitch, math.atan2(float(r[1, 0]), float(r[0, 0]))


# ---- yaw only: the heading frame and the world


def yaw_rotation_ned(yaw_deg: float) -> np.ndarray:
    """3x3 rotation heading frame (FRD at yaw_deg, level) -> world NED."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def forward_right_to_north_east(forward: float, right: float, yaw_deg: float) -> tuple[float, float]:
    """A horizontal (forward, right) vector at heading yaw_deg as (north, east): a velocity or a
    displacement in any one unit."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return forward * c - right * s, forward * s + right * c


def north_east_to_forward_right(north: float, east: float, yaw_deg: float) -> tuple[float, float]:
    """The inverse of forward_right_to_north_east."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return north * c + east * s, -north * s + east * c


def heading_to_ned(
    forward_m: float, right_m: float, up_m: float, yaw_deg: float
) -> tuple[float, float, float]:
    """A (forward, right, up) displacement or velocity at heading yaw_deg as world NED (north, east,
    down): yaw only, so a level body's command, not a tilted body's. Note up, not down, third."""
    north_m, east_m = forward_right_to_north_east(forward_m, right_m, yaw_deg)
    return north_m, east_m, -up_m


def ned_to_heading(
    north_m: float, east_m: float, down_m: float, yaw_deg: float
) -> tuple[float, float, float]:
    """A world NED displacement or velocity as (forward, right, up) at heading yaw_deg."""
    forward_m, right_m = north_east_to_forward_right(north_m, east_m, yaw_deg)
    return forward_m, right_m, -down_m


# ---- points fixed to a body


def offset_to_ned(
    origin_ned: Sequence[float] | np.ndarray, rotation: np.ndarray, offset_frd: Sequence[float] | np.ndarray
) -> np.ndarray:
    """World NED position of a point fixed at offset_frd in a body at origin_ned turned by `rotation`
    (body -> world: yaw_rotation_ned for the heading frame, rotation_from_euler for the full attitude)."""
    return np.asarray(origin_ned, float) + rotation @ np.asarray(offset_frd, float)
