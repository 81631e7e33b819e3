"""Texture images generated at run time (plates, signs, checkerboards) into a private temp directory.

Text is drawn with OpenCV's Hershey font at a known millimetre scale (1 texel = 1 mm by default), so a
plate's digits are 0.10 m tall in the world when the quad is 0.26 m tall. Nothing here is committed.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

log = logging.getLogger(__name__)

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
    """`text` centred on a plain background with capital letters `glyph_height_px` tall (shrunk to fit)."""
    image = np.full((height_px, width_px, 3), bg_bgr, np.uint8)
    if border_px:
        cv2.rectangle(image, (0, 0), (width_px - 1, height_px - 1), fg_bgr, border_px)
    (w1, h1), _ = cv2.getTextSize(text, FONT, 1.0, 1)
    scale = glyph_height_px / max(h1, 1)
    margin_px = max(border_px * 2, int(0.06 * width_px))
    if w1 * scale > width_px - 2 * margin_px:
        shrunk = (width_px - 2 * margin_px) / max(w1, 1)
        log.warning(
            "text %r shrunk to fit: glyphs %.0f px instead of %d px", text, h1 * shrunk, glyph_height_px
        )
        scale = shrunk
    thickness = max(1, round(glyph_height_px / 9))
    (tw, th), _ = cv2.getTextSize(text, FONT, scale, thickness)
    org = ((width_px - tw) // 2, (height_px + th) // 2)
    cv2.putText(image, text, org, FONT, scale, fg_bgr, thickness, cv2.LINE_AA)
    return image


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
