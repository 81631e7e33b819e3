"""Images inside OpenAI chat messages: reading `data:image/...;base64,...` URLs back into frames."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np

from common.errors import BackendError


def decode_data_url(url: str) -> np.ndarray:
    """A BGR uint8 image from a base64 data URL (JPEG or PNG)."""
    import cv2

    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:image/") or ";base64" not in head:
        raise BackendError(f"image URL is not a base64 data URL of an image: {url[:40]!r}")
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise BackendError("image data URL has invalid base64") from None
    image = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise BackendError(f"image data URL ({head}) could not be decoded ({len(raw)} bytes)")
    return image


def split_content(message: dict[str, Any]) -> tuple[str, list[str]]:
    """(all text parts joined by newlines, image URLs in order) of one chat message."""
    content = message.get("content")
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[str] = []
    for part in content or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            if isinstance(url, str):
                images.append(url)
    return "\n".join(texts), images
