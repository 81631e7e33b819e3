"""Rendering a tilted body and a tilted camera (one that no level gimbal holds; see gimbal.py).

The level camera keeps its own fast paths (camera.py, ground.fill_background by rows below the
horizon); these are the general ones: a view matrix from a full camera rotation, and the sky/ground
fill by intersecting each empty pixel's ray with the ground plane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from common.camera import CameraProfile
from common.frames import euler_to_quaternion
from sim_bridge.sim.attitude import AttitudeModel
from sim_bridge.sim.frames import ned_to_pb, yaw_quat_pb
from sim_bridge.sim.ground import GROUND_SEG_ID, MAX_GROUND_RANGE_M, SKY_BGR, GroundMap, _pack_rgba


def body_quat_pb(attitude: AttitudeModel, yaw_deg: float) -> tuple[float, float, float, float]:
    """PyBullet (x, y, z, w) orientation of a multirotor's body at its roll and pitch (`attitude`) and
    yaw_deg: NED (w, x, y, z) -> (x, -y, -z, w)."""
    a = attitude
    if a.roll_rad == 0.0 and a.pitch_rad == 0.0:
        return yaw_quat_pb(yaw_deg)  # level: exactly the yaw-only body of the kinematic model
    w, x, y, z = euler_to_quaternion(a.roll_rad, a.pitch_rad, math.radians(yaw_deg))
    return (x, -y, -z, w)


def view_matrix_rotated(
    p: ModuleType, client: int, eye_ned: np.ndarray, rotation: np.ndarray
) -> tuple[float, ...]:
    """PyBullet's view matrix for a camera at eye_ned whose FRD axes are rotation's columns (world NED)."""
    fwd, down = rotation[:, 0], rotation[:, 2]
    return p.computeViewMatrix(
        ned_to_pb(*eye_ned), ned_to_pb(*(eye_ned + fwd)), ned_to_pb(*(-down)), physicsClientId=client
    )


HAZE_LEVELS = 64  # the haze (a function of distance) in steps: one hazed palette per step


@dataclass(frozen=True)
class TiltedView:
    """Where a tilted camera is and how it points: its FRD axes are rotation's columns (world NED)."""

    eye_ned: tuple[float, float, float]
    rotation: np.ndarray
    camera: CameraProfile


def fill_background_rotated(
    rgba: np.ndarray, seg: np.ndarray, depth: np.ndarray | None, ground: GroundMap, view: TiltedView
) -> None:
    """ground.fill_background for a camera of any orientation: each empty pixel's ray (camera FRD
    (1, (u - cx)/fx, (v - cy)/fy)) turned into the world; a ray going down meets the ground (NED z = 0)
    there, any other shows sky. Planar depth is the ray's parameter (its forward component is 1). Whole
    frame arrays and uint32 pixels, as the level fill, with the haze in HAZE_LEVELS steps."""
    empty = seg == -1
    if not empty.any():
        return
    pixels = rgba.view(np.uint32).reshape(seg.shape)
    cam_ned, r, cam = view.eye_ned, view.rotation, view.camera
    height_m = -cam_ned[2]
    right = ((np.arange(seg.shape[1]) - cam.cx_px) / cam.fx_px)[None, :]
    down = ((np.arange(seg.shape[0]) - cam.cy_px) / cam.fy_px)[:, None]
    sky = _pack_rgba(np.asarray(SKY_BGR, np.uint8))
    ray_z = r[2, 0] + r[2, 1] * right + r[2, 2] * down  # (H, W)
    hits = (ray_z > 1e-9) & empty if height_m > 0 else np.zeros_like(empty)
    np.copyto(pixels, sky, where=empty & ~hits)
    if not hits.any():
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(hits, height_m / ray_z, 0.0)  # planar depth of the ground point
    x = cam_ned[0] + t * (r[0, 0] + r[0, 1] * right + r[0, 2] * down)
    y = cam_ned[1] + t * (r[1, 0] + r[1, 1] * right + r[1, 2] * down)
    haze = np.linspace(0.0, 0.6, HAZE_LEVELS, dtype=np.float32)[:, None, None]  # (L, 1, 1)
    palette = ground.palette().astype(np.float32)[None, :, :]  # (1, K, 3)
    palettes = _pack_rgba((palette * (1 - haze) + np.asarray(SKY_BGR, np.float32) * haze).astype(np.uint8))
    level = np.minimum((t * ((HAZE_LEVELS - 1) / MAX_GROUND_RANGE_M)).astype(np.intp), HAZE_LEVELS - 1)
    colour = palettes[level, ground.index_at(x, y).astype(np.intp)]
    np.copyto(pixels, colour, where=hits)
    seg[hits] = GROUND_SEG_ID
    if depth is not None:
        np.copyto(depth, t.astype(depth.dtype), where=hits)
