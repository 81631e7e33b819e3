"""The flat ground, drawn analytically under the rendered scene.

TinyRenderer does not clip triangles at the near plane: every ground triangle that crosses the camera
plane is rasterised over the whole screen (~20 ms each at 640x360, measured). The ground is flat (NED
z = 0) and the camera has zero pitch, so each pixel below the horizon that no body covers is coloured
from the ray's ground hit point instead: a few milliseconds of numpy, and exact planar depth.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GROUND_SEG_ID = -2  # segmentation value of ground pixels (-1 = sky)
SKY_BGR = (235, 206, 170)
MAX_GROUND_RANGE_M = 400.0


@dataclass
class GroundMap:
    """Ground colour: a base colour plus axis-aligned rectangles in world NED (later ones on top)."""

    base_bgr: tuple[int, int, int]
    rects: list[tuple[float, float, float, float, tuple[int, int, int]]] = field(default_factory=list)

    def add(self, x0: float, x1: float, y0: float, y1: float, rgba: tuple[float, ...]) -> None:
        self.rects.append((x0, x1, y0, y1, rgba_to_bgr(rgba)))

    def palette(self) -> np.ndarray:
        return np.array([self.base_bgr] + [r[4] for r in self.rects], np.uint8)

    def index_at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Palette index of the ground colour at world points (x, y)."""
        out = np.zeros(x.shape, np.uint8)
        for k, (x0, x1, y0, y1, _) in enumerate(self.rects, start=1):
            out[(x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)] = k
        return out


def rgba_to_bgr(rgba: tuple[float, ...]) -> tuple[int, int, int]:
    return (round(rgba[2] * 255), round(rgba[1] * 255), round(rgba[0] * 255))


def fill_background(
    image: np.ndarray,
    seg: np.ndarray,
    depth: np.ndarray | None,
    ground: GroundMap,
    cam_ned: tuple[float, float, float],
    yaw_rad: float,
    fx: float,
    fy: float,
    cx: float,
    cy: float,
) -> None:
    """Paint sky and ground into pixels no body covered (seg == -1), in place (ground seg: GROUND_SEG_ID)."""
    empty = seg == -1
    if not empty.any():
        return
    h, w = seg.shape
    height_m = -cam_ned[2]
    rows = np.arange(h, dtype=np.float64)[:, None]
    cols = np.arange(w, dtype=np.float64)[None, :]
    down = (rows - cy) / fy  # ray (right, down, forward=1) in the camera frame
    np.copyto(image, np.asarray(SKY_BGR, np.uint8), where=empty[:, :, None])
    if height_m <= 0:
        return
    first = max(0, int(np.floor(cy + 1e-6 * fy)) + 1)  # rows strictly below the horizon
    if first >= h:
        return
    down_rows = down[first:, :]  # (H2, 1)
    fwd = height_m / down_rows  # forward distance to the ground per row
    right = fwd * ((cols - cx) / fx)  # (H2, W)
    c, s = np.cos(yaw_rad), np.sin(yaw_rad)
    x = cam_ned[0] + c * fwd - s * right
    y = cam_ned[1] + s * fwd + c * right
    # a little haze with distance, so the horizon reads as far away: one hazed palette per row
    haze = np.clip(fwd[:, 0] / MAX_GROUND_RANGE_M, 0.0, 1.0)[:, None, None] * 0.6  # (H2, 1, 1)
    palette = ground.palette().astype(np.float32)[None, :, :]  # (1, K, 3)
    row_palettes = (palette * (1 - haze) + np.asarray(SKY_BGR, np.float32) * haze).astype(np.uint8)
    colour = row_palettes[np.arange(h - first)[:, None], ground.index_at(x, y)]  # (H2, W, 3)
    lower_empty = empty[first:, :]
    np.copyto(image[first:, :], colour, where=lower_empty[:, :, None])
    seg[first:, :][lower_empty] = GROUND_SEG_ID
    if depth is not None:
        np.copyto(
            depth[first:, :], np.broadcast_to(fwd, lower_empty.shape).astype(depth.dtype), where=lower_empty
        )
