"""AirSim image types derived from a frame's depth, segmentation and camera motion (not the Scene).

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

Two more from the segmentation and the camera's motion:

- Infrared (ImageType 7): AirSim's docs (image_apis.md, Infrared) define it as the object ID drawn as
  grey, (42, 42, 42) for a mesh whose ID is 42. An object's ID is the one simSetSegmentationObjectID
  gave it, else AirSim's starting ID for its name (`default_object_id`); the ground takes the ID of
  the name "ground", the sky 0. As floats: the grey / 255.
- OpticalFlow (8) and OpticalFlowVis (9): the motion of each pixel since the camera's previous frame
  served by simGetImages, from the camera's own motion (the scene is taken as still): the pixel's
  surface point (its planar depth; sky points at infinity) projected into the previous camera pose,
  flow = pixel now - pixel then, in pixels (x right, y down). The first frame of a camera has no
  flow (zeros). As floats (pixels_as_float), 2 values per pixel, row by row: vx, vy; as an image,
  128 + vx in R and 128 + vy in G (clipped), B 0. OpticalFlowVis is the usual colour wheel: hue the
  direction, value the magnitude over the frame's largest (at least 1 px), full saturation.
"""

from __future__ import annotations

import cv2
import numpy as np

from common.camera import CameraProfile

DISPARITY_NORMALIZED, SURFACE_NORMALS = 4, 6
INFRARED, OPTICAL_FLOW, OPTICAL_FLOW_VIS = 7, 8, 9
FLOW_VIS_MIN_PX = 1.0  # OpticalFlowVis: full brightness at the frame's largest flow, at least this
GROUND_NAME = "ground"  # the name whose starting object ID the ground's pixels take
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


def default_object_id(name: str) -> int:
    """AirSim's starting segmentation ID of a mesh (AirBlueprintLib.h, InitializeObjectStencilID): 5
    plus the character codes of the lower-case name that are 97 or more, modulo 256."""
    return (5 + sum(ord(c) for c in name.lower() if ord(c) >= 97)) % 256


def infrared_bgr(seg: np.ndarray, object_ids: dict[int, int]) -> np.ndarray:
    """Grey BGR uint8 of each pixel's object ID; `object_ids`: body id -> ID (-2 the ground, -1 sky)."""
    seg = np.asarray(seg, np.int64)
    top = max([int(seg.max()), *object_ids]) if seg.size else 0
    lut = np.zeros(top + 3, np.uint8)  # index: body id + 2 (the sky stays 0)
    lut[0] = default_object_id(GROUND_NAME)
    for body, object_id in object_ids.items():
        if body >= -2:
            lut[body + 2] = object_id
    grey = lut[np.clip(seg + 2, 0, top + 2)]
    return np.ascontiguousarray(np.repeat(grey[..., None], 3, axis=2))


def optical_flow(
    depth_planar_m: np.ndarray,
    cam: CameraProfile,
    now: tuple[np.ndarray, np.ndarray],
    before: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """(H, W, 2) float32 flow in pixels from the camera at `before` to `now`, each (position NED,
    rotation camera FRD -> NED); zeros without a previous frame or where a point was behind it."""
    depth = np.asarray(depth_planar_m, np.float64)
    h, w = depth.shape
    if before is None:
        return np.zeros((h, w, 2), np.float32)
    eye_now, rot_now = (np.asarray(a, float) for a in now)
    eye_then, rot_then = (np.asarray(a, float) for a in before)
    u = (np.arange(w) - cam.cx_px) / cam.fx_px
    v = (np.arange(h) - cam.cy_px) / cam.fy_px
    rays = np.stack(np.broadcast_arrays(np.ones((h, w)), u[None, :], v[:, None]), axis=-1)  # FRD, x = 1
    turn = rot_then.T @ rot_now
    shift = rot_then.T @ (eye_now - eye_then)
    sky = depth >= SKY_DEPTH_M
    # the point in the previous camera: turn p + shift, p = ray x depth (sky: a direction, no shift)
    q = rays @ turn.T * np.where(sky, 1.0, depth)[..., None] + np.where(sky[..., None], 0.0, shift)
    ahead = q[..., 0] > 1e-6
    with np.errstate(divide="ignore", invalid="ignore"):
        col_then = cam.fx_px * q[..., 1] / q[..., 0] + cam.cx_px
        row_then = cam.fy_px * q[..., 2] / q[..., 0] + cam.cy_px
    cols = np.arange(w, dtype=np.float64)[None, :]
    rows = np.arange(h, dtype=np.float64)[:, None]
    flow = np.stack([cols - col_then, rows - row_then], axis=-1)
    flow[~ahead] = 0.0
    return flow.astype(np.float32)


def optical_flow_bgr(flow: np.ndarray) -> np.ndarray:
    """The OpticalFlow image: 128 + vx in R, 128 + vy in G, B 0 (uint8, clipped)."""
    out = np.zeros((*flow.shape[:2], 3), np.uint8)
    out[..., 2] = np.clip(np.rint(128.0 + flow[..., 0]), 0, 255)
    out[..., 1] = np.clip(np.rint(128.0 + flow[..., 1]), 0, 255)
    return out


def optical_flow_vis_bgr(flow: np.ndarray) -> np.ndarray:
    """OpticalFlowVis: hue the flow's direction, value its magnitude over the frame's largest."""
    mag, angle = cv2.cartToPolar(flow[..., 0].astype(np.float32), flow[..., 1].astype(np.float32))
    peak = max(float(mag.max()) if mag.size else 0.0, FLOW_VIS_MIN_PX)
    hsv = np.zeros((*flow.shape[:2], 3), np.uint8)
    hsv[..., 0] = (angle * (90.0 / np.pi)).astype(np.uint8)  # OpenCV's hue: 0-180
    hsv[..., 1] = 255
    hsv[..., 2] = np.clip(mag * (255.0 / peak), 0, 255).astype(np.uint8)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)


__all__ = [
    "DISPARITY_NORMALIZED",
    "INFRARED",
    "OPTICAL_FLOW",
    "OPTICAL_FLOW_VIS",
    "SURFACE_NORMALS",
    "default_object_id",
    "disparity_normalized",
    "infrared_bgr",
    "optical_flow",
    "optical_flow_bgr",
    "optical_flow_vis_bgr",
    "surface_normals_bgr",
]
