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
    """Ground colour: a base colour plus axis-aligned rectangles in world NED (later ones on top).

    Lookups go through a raster of palette indices at `resolution_m` over the rectangles' extent
    (built on first use): two multiplies and a gather per pixel instead of four compares per rectangle.
    """

    base_bgr: tuple[int, int, int]
    rects: list[tuple[float, float, float, float, tuple[int, int, int]]] = field(default_factory=list)
    resolution_m: float = 0.05
    _raster: tuple[np.ndarray, float, float] | None = None

    def add(self, x0: float, x1: float, y0: float, y1: float, rgba: tuple[float, ...]) -> None:
        self.rects.append((x0, x1, y0, y1, rgba_to_bgr(rgba)))
        self._raster = None

    def _build_raster(self) -> tuple[np.ndarray, float, float]:
        if not self.rects:
            return np.zeros((1, 1), np.uint8), 0.0, 0.0
        x0 = min(r[0] for r in self.rects)
        y0 = min(r[2] for r in self.rects)
        nx = int(np.ceil((max(r[1] for r in self.rects) - x0) / self.resolution_m)) + 1
        ny = int(np.ceil((max(r[3] for r in self.rects) - y0) / self.resolution_m)) + 1
        raster = np.zeros((nx, ny), np.uint8)
        for k, (a0, a1, b0, b1, _) in enumerate(self.rects, start=1):
            i0, i1 = round((a0 - x0) / self.resolution_m), round((a1 - x0) / self.resolution_m)
            j0, j1 = round((b0 - y0) / self.resolution_m), round((b1 - y0) / self.resolution_m)
            raster[i0:i1, j0:j1] = k
        return raster, x0, y0

    def palette(self) -> np.ndarray:
        return np.array([self.base_bgr] + [r[4] for r in self.rects], np.uint8)

    def index_at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Palette index of the ground colour at world points (x, y)."""
        if self._raster is None:
            self._raster = self._build_raster()
        raster, x0, y0 = self._raster
        # Inside or not is decided on the floats, before any cast: a ray grazing the horizon puts its
        # ground point ~1e9 m away (past int32) and a NaN pose would give NaN; casting either is
        # undefined ("invalid value encountered in cast"). Such points (NaN compares false) get the
        # base colour, as everything outside the raster does.
        fi = (x - x0) * (1.0 / self.resolution_m)
        fj = (y - y0) * (1.0 / self.resolution_m)
        nx, ny = raster.shape
        inside = (fi >= 0) & (fi < nx) & (fj >= 0) & (fj < ny)
        i = np.where(inside, fi, 0.0).astype(np.int32)
        j = np.where(inside, fj, 0.0).astype(np.int32)
        out = raster[i, j]
        out[~inside] = 0
        return out


def rgba_to_bgr(rgba: tuple[float, ...]) -> tuple[int, int, int]:
    return (round(rgba[2] * 255), round(rgba[1] * 255), round(rgba[0] * 255))


def _pack_rgba(bgr: np.ndarray) -> np.ndarray:
    """BGR uint8 colours (..., 3) -> the uint32 that an RGBA pixel with alpha 255 reads as."""
    rgba = np.empty((*bgr.shape[:-1], 4), np.uint8)
    rgba[..., 0] = bgr[..., 2]
    rgba[..., 1] = bgr[..., 1]
    rgba[..., 2] = bgr[..., 0]
    rgba[..., 3] = 255
    return rgba.view(np.uint32)[..., 0]


def fill_background(
    rgba: np.ndarray,
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
    """Paint sky and ground into pixels no body covered (seg == -1) of an RGBA image, in place.

    Ground pixels get GROUND_SEG_ID in `seg` and their planar depth in `depth`. Works on the RGBA buffer
    viewed as one uint32 per pixel: masked copies of 3-channel arrays cost several times more.
    """
    empty = seg == -1
    if not empty.any():
        return
    h, w = seg.shape
    pixels = rgba.view(np.uint32).reshape(h, w)
    sky = _pack_rgba(np.asarray(SKY_BGR, np.uint8))
    height_m = -cam_ned[2]
    first = max(0, int(np.floor(cy)) + 1)  # rows strictly below the horizon
    if height_m <= 0 or first >= h:
        pixels[empty] = sky
        return
    pixels[:first][empty[:first]] = sky
    rows = np.arange(first, h, dtype=np.float64)[:, None]
    cols = np.arange(w, dtype=np.float64)[None, :]
    fwd = height_m / ((rows - cy) / fy)  # forward distance to the ground per row, (H2, 1)
    right = fwd * ((cols - cx) / fx)  # (H2, W)
    c, s = np.cos(yaw_rad), np.sin(yaw_rad)
    x = cam_ned[0] + c * fwd - s * right
    y = cam_ned[1] + s * fwd + c * right
    # a little haze with distance, so the horizon reads as far away: one hazed palette per row
    haze = np.clip(fwd[:, 0] / MAX_GROUND_RANGE_M, 0.0, 1.0)[:, None, None] * 0.6  # (H2, 1, 1)
    palette = ground.palette().astype(np.float32)[None, :, :]  # (1, K, 3)
    row_palettes = _pack_rgba(
        (palette * (1 - haze) + np.asarray(SKY_BGR, np.float32) * haze).astype(np.uint8)
    )
    colour = np.take_along_axis(row_palettes, ground.index_at(x, y).astype(np.intp), axis=1)  # (H2, W)
    lower_empty = empty[first:]
    np.copyto(pixels[first:], colour, where=lower_empty)
    seg[first:][lower_empty] = GROUND_SEG_ID
    if depth is not None:
        np.copyto(
            depth[first:], np.broadcast_to(fwd, lower_empty.shape).astype(depth.dtype), where=lower_empty
        )
