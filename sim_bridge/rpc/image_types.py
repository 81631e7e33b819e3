"""AirSim image types derived from a frame's planar depth: DisparityNormalized and SurfaceNormals.

- DisparityNormalized (ImageType 4): AirSim's docs (docs/image_apis.md) define each pixel as
  (Xl - Xr) / Xmax, the stereo disparity divided by the image width, between 0 and 1. Disparity is
  f * B / depth (f the focal length in pixels, depth planar); B is AirSim's stereo baseline, 0.25 m,
  the one its own ground-truth example uses to turn this image back into depth
  (Examples/DataCollection/DataCollectorSGM.h: B = 0.25, disparity = normalised * width,
  depth = B f / disparity). As floats (pixels_as_float) that value; as an image, value * 255 grey.
- SurfaceNormals (ImageType 6): the unit normal of the surface seen at each pixel, in the world frame
  with Unreal's axes (x north, y east, z up), coloured (n + 1) / 2 per channel as Unreal's world-normal
  view: R = x, G = y, B = z (the ground is (128, 128, 255)). The normal comes from the depth image
  (the cross product of the back-projected neighbours' differences), so a pixel on a depth edge takes
  the normal across the edge; sky pixels (no surface) are black. As floats: the R channel, (n_x + 1) / 2.
"""

from __future__ import annotations

import numpy as np

from common.camera import CameraProfile

DISPARITY_NORMALIZED, SURFACE_NORMALS = 4, 6
STEREO_BASELINE_M = 0.25  # DataCollectorSGM.h's B
SKY_DEPTH_M = 250.0  # planar depth beyond which a pixel is sky (the renderers' far plane is 300 m)


def disparity_normalized(depth_planar_m: np.ndarray, cam: CameraProfile) -> np.ndarray:
    """(Xl - Xr) / Xmax per pixel, float32 in 0..1 (0 where nothing is seen)."""
    depth = np.asarray(depth_planar_m, np.float64)
    with np.errstate(divide="ignore"):
        d = cam.fx_px * STEREO_BASELINE_M / depth / cam.width_px
    d[depth >= SKY_DEPTH_M] = 0.0
    return np.clip(d, 0.0, 1.0).astype(np.float32)


def surface_normals_bgr(depth_planar_m: np.ndarray, cam: CameraProfile, rotation: np.ndarray) -> np.ndarray:
    """BGR uint8 image of world normals (Unreal axes, (n + 1) / 2); `rotation`: camera FRD -> world NED."""
    depth = np.asarray(depth_planar_m, np.float64)
    h, w = depth.shape
    u = (np.arange(w) - cam.cx_px) / cam.fx_px
    v = (np.arange(h) - cam.cy_px) / cam.fy_px
    # back-projected points in camera FRD: (depth, depth * u, depth * v)
    pts = np.stack([depth, depth * u[None, :], depth * v[:, None]], axis=-1)
    du = np.gradient(pts, axis=1)
    dv = np.gradient(pts, axis=0)
    n = np.cross(du, dv)  # FRD: right x down points forward; flip towards the camera below
    norm = np.linalg.norm(n, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        n = n / norm
    facing = np.sum(n * pts, axis=-1) > 0  # a normal points back at the camera
    n[facing] *= -1.0
    world = n @ np.asarray(rotation, float).T  # NED
    unreal = np.stack([world[..., 0], world[..., 1], -world[..., 2]], axis=-1)
    rgb = np.clip((unreal + 1.0) * 0.5 * 255.0, 0, 255)
    rgb[~np.isfinite(rgb).all(axis=-1) | (depth >= SKY_DEPTH_M)] = 0.0
    return np.ascontiguousarray(rgb[..., ::-1].astype(np.uint8))  # BGR


__all__ = ["DISPARITY_NORMALIZED", "SURFACE_NORMALS", "disparity_normalized", "surface_normals_bgr"]
