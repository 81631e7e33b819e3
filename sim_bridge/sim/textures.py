"""Texture images generated at run time (plates, signs, checkerboards) into a private temp directory.

Text is drawn with OpenCV's Hershey font at a known millimetre scale (1 texel = 1 mm by default), so a
plate's digits are 0.10 m tall in the world when the quad is 0.26 m tall. Nothing here is committed.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

FONT = cv2.FONT_HERSHEY_SIMPLEX


class TextureCache:
    """Writes PNG textures once per content into a temp dir removed by `close()`."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="dronecats-textures-"))
        self._paths: dict[str, Path] = {}

    def path_for(self, key: str, make: Callable[[], np.ndarray]) -> Path:
        if key not in self._paths:
            image = make()
            name = hashlib.sha1(key.encode()).hexdigest()[:16] + ".png"
            path = self._dir / name
            if not cv2.imwrite(str(path), image):
                raise OSError(f"cannot write texture {path}")
            self._paths[key] = path
        return self._paths[key]

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


def text_image(
    text: str,
    width_px: int,
    height_px: int,
    glyph_height_px: int,
    fg_bgr: tuple[int, int, int] = (0, 0, 0),
    bg_bgr: tuple[int, int, int] = (255, 255, 255),
    border_px: int = 0,
) -> np.ndarray:
    """`text` centred on a plain background, capitals exactly `glyph_height_px` tall (strokes included).

    Text too long for the width is condensed horizontally, as plate fonts are, never made shorter:
    the glyph height is what legibility at a distance depends on.
    """
    image = np.full((height_px, width_px, 3), bg_bgr, np.uint8)
    if border_px:
        cv2.rectangle(image, (0, 0), (width_px - 1, height_px - 1), fg_bgr, border_px)
    ink = _ink(text)
    ink_w = round(ink.shape[1] * glyph_height_px / ink.shape[0])
    margin_px = max(border_px * 2, int(0.05 * width_px))
    ink_w = min(ink_w, width_px - 2 * margin_px)  # condensed if too long, never shorter
    alpha = cv2.resize(ink, (ink_w, glyph_height_px), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    y0, x0 = (height_px - glyph_height_px) // 2, (width_px - ink_w) // 2
    block = image[y0 : y0 + glyph_height_px, x0 : x0 + ink_w].astype(np.float32)
    block = block * (1 - alpha[:, :, None]) + np.asarray(fg_bgr, np.float32) * alpha[:, :, None]
    image[y0 : y0 + glyph_height_px, x0 : x0 + ink_w] = block.astype(np.uint8)
    return image


def _ink(text: str) -> np.ndarray:
    """The text's ink (0-255 coverage) cropped to its bounding box, drawn large.

    Scaling the ink block gives an exact glyph height: Hershey's nominal text height is not its ink
    height (measured 30% off for digits).
    """
    nominal_px = 200
    thickness = max(1, round(nominal_px / 9))
    scale = nominal_px / 22.0
    (tw, th), base = cv2.getTextSize(text, FONT, scale, thickness)
    canvas = np.zeros((th + base + 4 * thickness, tw + 4 * thickness), np.uint8)
    cv2.putText(canvas, text, (2 * thickness, th + 2 * thickness), FONT, scale, 255, thickness, cv2.LINE_AA)
    rows, cols = np.nonzero(canvas > 127)
    return canvas[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]


def text_width_px(text: str, glyph_height_px: int) -> int:
    """Natural (uncondensed) width of `text` with capitals glyph_height_px tall."""
    ink = _ink(text)
    return round(ink.shape[1] * glyph_height_px / ink.shape[0])


def checkerboard_image(cols: int, rows: int, square_px: int, margin_px: int) -> np.ndarray:
    """A cols x rows board of squares (OpenCV counts inner corners as (cols-1, rows-1)) on a white margin."""
    height_px, width_px = rows * square_px + 2 * margin_px, cols * square_px + 2 * margin_px
    image = np.full((height_px, width_px, 3), 255, np.uint8)
    for r in range(rows):
        for c in range(cols):
            if (r + c) % 2 == 0:
                y0, x0 = margin_px + r * square_px, margin_px + c * square_px
                image[y0 : y0 + square_px, x0 : x0 + square_px] = 0
    return image
