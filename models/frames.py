"""Frame preprocessing for the model (AGENT.md §1): keep aspect, shrink only when wider than
640 px (cv2.INTER_AREA), JPEG quality 85. On the hot path of every step, so: one resize, one
encode, no copies beyond what OpenCV needs.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import cv2
import numpy as np

MAX_WIDTH_PX = 640
JPEG_QUALITY = 85


@dataclass(frozen=True)
class EncodedFrame:
    """A JPEG as sent to the model, with the size it was encoded at."""

    jpeg: bytes
    width_px: int
    height_px: int

    def data_url(self) -> str:
        return jpeg_data_url(self.jpeg)


def jpeg_data_url(jpeg: bytes) -> str:
    """`data:image/jpeg;base64,...` for an OpenAI-style image_url content part."""
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def target_size(width_px: int, height_px: int, max_width_px: int = MAX_WIDTH_PX) -> tuple[int, int]:
    """The encoded size: unchanged up to `max_width_px`, else that width at the same aspect."""
    if width_px <= max_width_px:
        return width_px, height_px
    return max_width_px, max(1, round(height_px * max_width_px / width_px))


def encode_frame(
    image_bgr: np.ndarray, max_width_px: int = MAX_WIDTH_PX, quality: int = JPEG_QUALITY
) -> EncodedFrame:
    """BGR uint8 HxWx3 -> JPEG, downscaled with INTER_AREA only when wider than `max_width_px`."""
    if image_bgr.ndim != 3 or image_bgr.shape[2] != 3 or image_bgr.dtype != np.uint8:
        raise ValueError(f"frame must be HxWx3 uint8 BGR, got shape {image_bgr.shape} {image_bgr.dtype}")
    if max_width_px < 1:
        raise ValueError(f"max_width_px={max_width_px} must be >= 1")
    height, width = image_bgr.shape[:2]
    new_w, new_h = target_size(width, height, max_width_px)
    if (new_w, new_h) != (width, height):
        image_bgr = cv2.resize(image_bgr, (new_w, new_h), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", image_bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError(f"JPEG encoding failed for a {new_w}x{new_h} frame")
    return EncodedFrame(buf.tobytes(), new_w, new_h)


def encode_history_view(image_bgr: np.ndarray, current_width_px: int | None = None) -> EncodedFrame:
    """A visual-history view: half the width the current frame is sent at (AGENT.md §4)."""
    width = image_bgr.shape[1]
    sent_width = current_width_px or target_size(width, image_bgr.shape[0])[0]
    return encode_frame(image_bgr, max_width_px=max(1, sent_width // 2))
