"""A pinhole camera with OpenCV's lens distortion: what a calibration estimates and what the synthetic
views are rendered through."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.camera import FieldOfView


@dataclass(frozen=True)
class PinholeCamera(FieldOfView):
    width_px: int
    height_px: int
    fx_px: float
    fy_px: float
    cx_px: float
    cy_px: float
    # OpenCV order (k1, k2, p1, p2, k3).
    distortion: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)

    @property
    def camera_matrix(self) -> np.ndarray:
        return np.array([[self.fx_px, 0, self.cx_px], [0, self.fy_px, self.cy_px], [0, 0, 1]], np.float64)
