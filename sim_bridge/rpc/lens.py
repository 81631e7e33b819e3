"""Lens distortion for simSetDistortionParam(s): AirSim's K1, K2, K3 (radial) and P1, P2 (tangential).

AirSim applies a camera's distortion as a post-process material on its captures (APIPCamera's
distortion_param_instance_); here the pinhole render is resampled after the fact, each output pixel
taking the render's value at its Brown-Conrady point, in the camera's normalised coordinates
(x, y) = ((u - cx) / fx, (v - cy) / fy), r^2 = x^2 + y^2:

    x' = x (1 + K1 r^2 + K2 r^4 + K3 r^6) + 2 P1 x y + P2 (r^2 + 2 x^2)
    y' = y (1 + K1 r^2 + K2 r^4 + K3 r^6) + P1 (r^2 + 2 y^2) + 2 P2 x y

(the forward model, as a shader evaluates it per pixel: positive K1 pulls the picture inwards, a
barrel look). Colour is sampled bilinearly; segmentation ids and depth by the nearest pixel, so ids
stay ids and depth edges do not blend; pixels whose point falls outside the render are sky (-1 id,
the far depth, black colour). All zero (the default) leaves the render untouched.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import cv2
import numpy as np

from sim_bridge.sim.camera import FAR_M, Render


def distorted(render: Render, params: tuple[float, ...]) -> Render:
    """`render` seen through the lens `params` (K1, K2, K3, P1, P2); itself when they are all 0."""
    if not any(params):
        return render
    cam = render.camera
    h, w = render.image_bgr.shape[:2]
    map_x, map_y = _maps(w, h, cam.fx_px, cam.fy_px, cam.cx_px, cam.cy_px, tuple(params))
    image = cv2.remap(render.image_bgr, map_x, map_y, cv2.INTER_LINEAR, borderValue=(0, 0, 0))
    seg = render.seg
    if seg is not None:
        seg = cv2.remap(seg.astype(np.float32), map_x, map_y, cv2.INTER_NEAREST, borderValue=-1.0).astype(
            seg.dtype
        )
    depth = render.depth_planar_m
    if depth is not None:
        depth = cv2.remap(
            depth.astype(np.float32), map_x, map_y, cv2.INTER_NEAREST, borderValue=float(FAR_M)
        ).astype(depth.dtype)
    return dataclasses.replace(render, image_bgr=image, seg=seg, depth_planar_m=depth)


@lru_cache(maxsize=16)
def _maps(
    w: int, h: int, fx: float, fy: float, cx: float, cy: float, params: tuple[float, ...]
) -> tuple[np.ndarray, np.ndarray]:
    k1, k2, k3, p1, p2 = params
    x = (np.arange(w, dtype=np.float64)[None, :] - cx) / fx
    y = (np.arange(h, dtype=np.float64)[:, None] - cy) / fy
    x, y = np.broadcast_to(x, (h, w)), np.broadcast_to(y, (h, w))
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2 * r2 + k3 * r2 * r2 * r2
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return (xd * fx + cx).astype(np.float32), (yd * fy + cy).astype(np.float32)
