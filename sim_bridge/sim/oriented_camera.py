"""A camera in any orientation: its view matrix and the analytic ground under it.

The level cameras (sim_bridge.sim.world, ground.fill_background) fill the ground row by row, which
holds only while the camera has no pitch or roll. A camera that AirSim's settings mount at an angle
(bottom_center looks down), that `simSetCameraPose` turns, or a named camera from settings.json is
drawn here: PyBullet's view matrix from the camera's full rotation, and the ground (the plane NED
z = 0) filled per pixel from each empty pixel's ray, with the level fill's colours, haze and
segmentation value. Camera axes are AirSim's: x forward, y right, z down (FRD), turned into world
NED by `rotation` (3x3, camera -> world).
"""

from __future__ import annotations

import math

import numpy as np

from sim_bridge.sim.frames import ned_to_pb
from sim_bridge.sim.ground import GROUND_SEG_ID, MAX_GROUND_RANGE_M, SKY_BGR, GroundMap


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


def view_matrix(p: object, client: int, eye_ned: np.ndarray, rotation: np.ndarray) -> list[float]:
    """PyBullet's view matrix for a camera at eye_ned looking along the rotation's x, its z down."""
    eye = np.asarray(eye_ned, float)
    fwd, down = rotation[:, 0], rotation[:, 2]
    up_pb = ned_to_pb(*(-down))
    return list(p.computeViewMatrix(ned_to_pb(*eye), ned_to_pb(*(eye + fwd)), up_pb, physicsClientId=client))  # type: ignore[attr-defined]


def _pack(bgr: np.ndarray) -> np.ndarray:
    rgba = np.empty((*bgr.shape[:-1], 4), np.uint8)
    rgba[..., 0], rgba[..., 1], rgba[..., 2], rgba[..., 3] = bgr[..., 2], bgr[..., 1], bgr[..., 0], 255
    return rgba.view(np.uint32)[..., 0]


def fill_background_oriented(
    rgba: np.ndarray,
    seg: np.ndarray,
    depth: np.ndarray | None,
    ground: GroundMap,
    eye_ned: np.ndarray,
    rotation: np.ndarray,
    fx: float,
    fy: float,
    cx: float,
    cy: float,
) -> None:
    """Sky and ground into the pixels no body covered (seg == -1), in place (ground.fill_background for
    any camera rotation): ground pixels take GROUND_SEG_ID and their planar depth."""
    empty = seg == -1
    if not empty.any():
        return
    h, w = seg.shape
    pixels = rgba.view(np.uint32).reshape(h, w)
    rows, cols = np.nonzero(empty)
    # the pixel's ray in camera FRD with unit forward component: planar depth = ray length factor t
    ray_cam = np.stack(
        [np.ones(rows.size), (cols - cx) / fx, (rows - cy) / fy], axis=1
    )  # pixel corners as the renderers sample
    ray = ray_cam @ np.asarray(rotation, float).T
    height_m = -float(eye_ned[2])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(ray[:, 2] > 1e-9, height_m / ray[:, 2], np.inf)
    hits = (height_m > 0) & np.isfinite(t) & (t > 0)
    sky = _pack(np.asarray(SKY_BGR, np.uint8))
    pixels[rows[~hits], cols[~hits]] = sky
    if not hits.any():
        return
    r, c, th = rows[hits], cols[hits], t[hits]
    x = eye_ned[0] + th * ray[hits, 0]
    y = eye_ned[1] + th * ray[hits, 1]
    # haze by planar depth, as the level fill (where it is the forward distance to the ground)
    haze = np.clip(th / MAX_GROUND_RANGE_M, 0.0, 1.0)[:, None] * 0.6
    palette = ground.palette().astype(np.float32)
    base = palette[ground.index_at(x, y).astype(np.intp)]
    colour = (base * (1 - haze) + np.asarray(SKY_BGR, np.float32) * haze).astype(np.uint8)
    pixels[r, c] = _pack(colour)
    seg[r, c] = GROUND_SEG_ID
    if depth is not None:
        depth[r, c] = th.astype(depth.dtype)


__all__ = [
    "fill_background_oriented",
    "quat_from_rotation",
    "rotation_from_quat",
    "rotation_pry_deg",
    "view_matrix",
]
