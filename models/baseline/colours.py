"""Named colours as HSV boxes (OpenCV ranges: H 0–179, S and V 0–255).

Chromatic colours are defined by hue with a saturation floor, achromatic ones by low saturation and
a value band; flat-shaded renders darken side faces, so value floors are low.
"""

from __future__ import annotations

import numpy as np

# name -> list of (h_lo, h_hi, s_lo, s_hi, v_lo, v_hi); a pixel matches if it is in any box.
COLOURS: dict[str, list[tuple[int, int, int, int, int, int]]] = {
    # Saturation floors sit above the muted scenery colours (brick roofs, foliage, grass, dark
    # clothing, painted walls: S < 185) and below painted vehicles and garments (S > 195).
    "red": [(0, 6, 190, 255, 50, 255), (172, 179, 190, 255, 50, 255)],
    "orange": [(7, 18, 190, 255, 120, 255)],
    "yellow": [(19, 34, 170, 255, 90, 255)],
    "green": [(35, 85, 190, 255, 40, 255)],
    "cyan": [(86, 99, 170, 255, 60, 255)],
    "blue": [(100, 128, 190, 255, 40, 255)],
    "purple": [(129, 155, 160, 255, 40, 255)],
    "pink": [(156, 179, 70, 185, 170, 255), (0, 5, 70, 150, 170, 255)],
    "brown": [(7, 20, 160, 255, 35, 119)],
    "white": [(0, 179, 0, 30, 165, 255)],
    "gray": [(0, 179, 0, 30, 70, 164)],
    "black": [(0, 179, 0, 255, 0, 45)],
}
COLOUR_SYNONYMS: dict[str, str] = {
    "grey": "gray",
    "silver": "gray",
    "violet": "purple",
    "magenta": "pink",
    "crimson": "red",
    "navy": "blue",
    "teal": "cyan",
    "turquoise": "cyan",
    "gold": "yellow",
    "golden": "yellow",
    "dark": "black",
}


def colour_mask(hsv: np.ndarray, colour: str) -> np.ndarray:
    """uint8 mask (255 = pixel of `colour`) of an HSV image."""
    import cv2

    mask: np.ndarray = np.zeros(hsv.shape[:2], np.uint8)
    for h_lo, h_hi, s_lo, s_hi, v_lo, v_hi in COLOURS[colour]:
        mask = cv2.bitwise_or(mask, cv2.inRange(hsv, (h_lo, s_lo, v_lo), (h_hi, s_hi, v_hi)))
    return mask
