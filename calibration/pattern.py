"""The checkerboard: inner-corner counts, square size, and its corners in board coordinates."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from common.errors import ConfigError

_PATTERN_RE = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*$")


@dataclass(frozen=True)
class BoardPattern:
    """A checkerboard of `cols` x `rows` INNER corners (a 10x7-square board has 9x6 inner corners)."""

    cols: int
    rows: int
    square_mm: float

    def __post_init__(self) -> None:
        if self.cols < 2 or self.rows < 2:
            raise ConfigError(f"pattern {self.cols}x{self.rows}: need at least 2x2 inner corners")
        if self.cols == self.rows:
            # A square board has no defined orientation: corner order can flip between views.
            raise ConfigError(
                f"pattern {self.cols}x{self.rows}: inner-corner counts must differ (use e.g. 9x6) "
                "so the board's orientation is unambiguous"
            )
        if not self.square_mm > 0:
            raise ConfigError(f"square size {self.square_mm} mm must be > 0")

    @classmethod
    def parse(cls, text: str, square_mm: float) -> BoardPattern:
        match = _PATTERN_RE.match(text)
        if match is None:
            raise ConfigError(f"pattern {text!r}: expected COLSxROWS inner corners, e.g. 9x6")
        return cls(int(match.group(1)), int(match.group(2)), float(square_mm))

    @property
    def size(self) -> tuple[int, int]:
        """OpenCV's patternSize: (corners per row, corners per column)."""
        return (self.cols, self.rows)

    @property
    def corner_count(self) -> int:
        return self.cols * self.rows

    @property
    def label(self) -> str:
        return f"{self.cols}x{self.rows}"

    def object_points_m(self) -> np.ndarray:
        """Inner corners on the board plane (z = 0), metres, row-major as OpenCV returns them."""
        square_m = self.square_mm / 1000.0
        grid = np.zeros((self.rows * self.cols, 3), np.float32)
        grid[:, :2] = np.mgrid[0 : self.cols, 0 : self.rows].T.reshape(-1, 2) * square_m
        return grid
