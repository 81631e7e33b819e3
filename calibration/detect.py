"""Checkerboard corner detection, view sharpness, and a guess at the board size actually in view."""

from __future__ import annotations

import logging

import cv2
import numpy as np

from calibration.pattern import BoardPattern

log = logging.getLogger(__name__)

_SB_FLAGS = cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_EXHAUSTIVE
_CLASSIC_FLAGS = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_FAST_CHECK
_SUBPIX_CRITERIA = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-3)
# The sector detector's cost grows with the image; it runs on a copy no wider than this.
_SB_MAX_WIDTH_PX = 800


def to_gray(image: np.ndarray) -> np.ndarray:
    if image.ndim == 2:
        return image
    if image.ndim == 3 and image.shape[2] == 3:
        return cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    if image.ndim == 3 and image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2GRAY)
    raise ValueError(f"image of shape {image.shape}: expected HxW gray, HxWx3 BGR or HxWx4 BGRA")


def find_corners(gray: np.ndarray, pattern: BoardPattern) -> np.ndarray | None:
    """The pattern's inner corners (N x 2 float32 pixels, row-major), or None if it is not in view.

    The classic detector with FAST_CHECK + cornerSubPix goes first: on a clear view it is the fastest
    (7 ms at 640x480, here) and its refined corners the most accurate (0.06 px RMS on synthetic views
    against 0.12-0.14 px for the sector detector). The sector-based detector (findChessboardCornersSB),
    which copes better with blur, noise and uneven light, is the fallback, run on a copy at most
    800 px wide and refined at full resolution.
    """
    found, corners = cv2.findChessboardCorners(gray, pattern.size, flags=_CLASSIC_FLAGS)
    if not found:
        scale = min(1.0, _SB_MAX_WIDTH_PX / gray.shape[1])
        small = (
            gray if scale == 1.0 else cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        )
        found, corners = cv2.findChessboardCornersSB(small, pattern.size, flags=_SB_FLAGS)
        if not found:
            return None
        if scale == 1.0:
            return corners.reshape(-1, 2).astype(np.float32)
        # Pixel centres: x_full = (x_small + 0.5) / scale - 0.5.
        corners = ((corners + 0.5) / scale - 0.5).astype(np.float32)
    # Search window about a third of the shortest square side, at least 2 px, so it holds one corner.
    square_px = _min_spacing_px(corners.reshape(-1, 2), pattern)
    half = int(max(2, min(11, square_px / 3)))
    refined = cv2.cornerSubPix(gray, corners, (half, half), (-1, -1), _SUBPIX_CRITERIA)
    return refined.reshape(-1, 2).astype(np.float32)


def _min_spacing_px(corners: np.ndarray, pattern: BoardPattern) -> float:
    grid = corners.reshape(pattern.rows, pattern.cols, 2)
    along_rows = np.linalg.norm(np.diff(grid, axis=1), axis=2)
    along_cols = np.linalg.norm(np.diff(grid, axis=0), axis=2)
    return float(min(along_rows.min(), along_cols.min()))


def board_mask(shape: tuple[int, ...], corners: np.ndarray) -> np.ndarray:
    hull = cv2.convexHull(corners.astype(np.float32)).astype(np.int32)
    mask = np.zeros(shape[:2], np.uint8)
    cv2.fillConvexPoly(mask, hull, 255)
    return mask


def board_sharpness(gray: np.ndarray, corners: np.ndarray) -> float:
    """Variance of the Laplacian inside the board (not the whole frame, whose content varies)."""
    x, y, w, h = cv2.boundingRect(corners.astype(np.float32))
    x0, y0 = max(0, x - 2), max(0, y - 2)
    crop = gray[y0 : y + h + 2, x0 : x + w + 2]
    mask = board_mask(crop.shape, corners - np.array([x0, y0], np.float32))
    lap = cv2.Laplacian(crop, cv2.CV_64F)
    values = lap[mask > 0]
    return float(values.var()) if values.size else 0.0


def detected_board_size(gray: np.ndarray, pattern: BoardPattern | None = None) -> tuple[int, int] | None:
    """(cols, rows) of inner corners of whatever checkerboard is in view, or None if none is found.

    First lets the sector detector grow the board to its full extent (CALIB_CB_LARGER); if that finds
    nothing, tries sizes near `pattern`. A board cut off by the frame edge reads smaller than it is.
    """
    found, _corners, meta = cv2.findChessboardCornersSBWithMeta(
        gray, (3, 3), cv2.CALIB_CB_LARGER | cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_EXHAUSTIVE
    )
    if found and meta is not None:
        rows, cols = meta.shape[:2]
        return (int(cols), int(rows))
    if pattern is None:
        return None
    candidates = sorted(
        {
            (pattern.cols + dc, pattern.rows + dr)
            for dc in (-2, -1, 0, 1, 2)
            for dr in (-2, -1, 0, 1, 2)
            if (dc, dr) != (0, 0) and pattern.cols + dc >= 3 and pattern.rows + dr >= 3
        },
        key=lambda s: abs(s[0] - pattern.cols) + abs(s[1] - pattern.rows),
    )
    for size in candidates:
        found, _ = cv2.findChessboardCorners(gray, size, flags=_CLASSIC_FLAGS)
        if found:
            return size
    return None
