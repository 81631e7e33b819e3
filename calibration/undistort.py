"""Undistort frames and pixels for a camera profile, so a pilot can work on an ideal pinhole image.

The output keeps the profile's camera matrix (no rescaling or cropping): the undistorted frame is
exactly the profile's pinhole with zero distortion, which is what the controller's back-projection
assumes (docs/controller.md#the-camera-model).
"""

from __future__ import annotations

import functools

import cv2
import msgspec
import numpy as np

from common.camera import CameraProfile

# Pixels go through the one implementation the controller uses too (re-exported for pilots).
from common.camera import undistort_pixels as undistort_pixels

_Key = tuple[int, int, float, float, float, float, tuple[float, ...]]


def _key(profile: CameraProfile) -> _Key:
    return (
        profile.width_px,
        profile.height_px,
        profile.fx_px,
        profile.fy_px,
        profile.cx_px,
        profile.cy_px,
        tuple(profile.distortion),
    )


def _matrix(key: _Key) -> tuple[np.ndarray, np.ndarray]:
    _w, _h, fx, fy, cx, cy, dist = key
    k = np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1]], np.float64)
    return k, np.array(dist, np.float64)


@functools.lru_cache(maxsize=8)
def _maps(key: _Key) -> tuple[np.ndarray, np.ndarray]:
    """Built once per profile: initUndistortRectifyMap is the costly half of undistortion."""
    k, dist = _matrix(key)
    return cv2.initUndistortRectifyMap(k, dist, None, k, (key[0], key[1]), cv2.CV_16SC2)


def pinhole(profile: CameraProfile) -> CameraProfile:
    """The profile that describes frames after `undistort_frame`: same intrinsics, no distortion."""
    return msgspec.structs.replace(profile, distortion=())


def undistort_frame(image: np.ndarray, profile: CameraProfile) -> np.ndarray:
    """The frame as the distortion-free pinhole of `profile` would see it (profile rescaled if needed)."""
    if not profile.has_distortion:
        return image
    height, width = image.shape[:2]
    if (width, height) != (profile.width_px, profile.height_px):
        profile = profile.scaled_to(width, height)
    map1, map2 = _maps(_key(profile))
    return cv2.remap(image, map1, map2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
