"""Guided capture: judge each frame as a calibration view and track coverage of the image.

Qt-free on purpose: the terminal (`dronecats calibrate`) and a later ground-station panel drive the
same `ViewCollector`: feed frames, read back a `ViewVerdict` per frame and a `CaptureProgress`.
"""

from __future__ import annotations

import enum
import logging
import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from calibration.detect import board_sharpness, detected_board_size, find_corners, to_gray
from calibration.errors import CalibrationError
from calibration.pattern import BoardPattern

log = logging.getLogger(__name__)

# Below this many views a lens fit is too loose to beat the HFOV guess for measuring tilt.
_REFINE_FROM_VIEWS = 6


class Verdict(str, enum.Enum):
    ACCEPTED = "accepted"
    NO_BOARD = "no board"
    BLURRY = "blurry"
    DUPLICATE = "duplicate"
    OBLIQUE = "too oblique"
    FULL = "enough views"


@dataclass(frozen=True)
class CaptureSettings:
    min_views: int = 12
    max_views: int = 40
    # Variance of the Laplacian inside the board; sharp boards score in the thousands, a
    # Gaussian blur of sigma 2 px brings a typical board below 100.
    min_sharpness: float = 100.0
    # A view whose corners lie, on average, within this fraction of the image diagonal of an accepted
    # view's corners adds nothing.
    duplicate_fraction: float = 0.03
    # Beyond this tilt of the board away from facing the camera, corners are too foreshortened.
    max_tilt_deg: float = 60.0
    # The tilt is measured with a lens of this HFOV until enough views allow a provisional fit.
    approx_hfov_deg: float = 70.0
    grid_cols: int = 8
    grid_rows: int = 6
    # Fraction of grid cells that must hold at least one accepted corner.
    min_coverage: float = 0.6

    def __post_init__(self) -> None:
        if self.min_views < 3:
            raise CalibrationError(f"min_views={self.min_views}: calibration needs at least 3 views")
        if self.max_views < self.min_views:
            raise CalibrationError(f"max_views={self.max_views} is below min_views={self.min_views}")
        if not 0 < self.min_coverage <= 1:
            raise CalibrationError(f"min_coverage={self.min_coverage} must be in (0, 1]")


@dataclass(frozen=True)
class CornerView:
    """An accepted view: which frame, its corners (N x 2 pixels), and its measured quality."""

    frame_index: int
    corners_px: np.ndarray
    sharpness: float
    tilt_deg: float


@dataclass(frozen=True)
class ViewVerdict:
    frame_index: int
    verdict: Verdict
    reason: str
    sharpness: float | None = None
    tilt_deg: float | None = None
    corners_px: np.ndarray | None = None

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED


@dataclass(frozen=True)
class CaptureProgress:
    frames_seen: int
    accepted: int
    min_views: int
    max_views: int
    coverage: float
    min_coverage: float

    @property
    def enough(self) -> bool:
        """Enough good views, spread widely enough, to calibrate."""
        return self.accepted >= self.min_views and self.coverage >= self.min_coverage

    @property
    def full(self) -> bool:
        return self.accepted >= self.max_views

    @property
    def fraction(self) -> float:
        """0..1 toward `enough`: the lesser of view count and coverage progress."""
        return min(1.0, self.accepted / self.min_views, self.coverage / self.min_coverage)

    def summary(self) -> str:
        return (
            f"views {self.accepted}/{self.min_views} (max {self.max_views}), "
            f"coverage {self.coverage:.0%} (need {self.min_coverage:.0%}), frames {self.frames_seen}"
        )


@dataclass
class ViewCollector:
    pattern: BoardPattern
    settings: CaptureSettings = field(default_factory=CaptureSettings)
    views: list[CornerView] = field(default_factory=list)
    image_size: tuple[int, int] | None = None  # (width, height)
    frames_seen: int = 0
    _covered: np.ndarray | None = field(default=None, repr=False)
    # The last frames with no board at the requested size, kept to explain a failure later.
    _missed: list[np.ndarray] = field(default_factory=list, repr=False)
    # Camera matrix from the views so far, once there are enough of them; until then a guess.
    _provisional_k: np.ndarray | None = field(default=None, repr=False)

    def feed(self, image: np.ndarray) -> ViewVerdict:
        index = self.frames_seen
        self.frames_seen += 1
        gray = to_gray(image)
        height, width = gray.shape[:2]
        if self.image_size is None:
            self.image_size = (width, height)
            self._covered = np.zeros((self.settings.grid_rows, self.settings.grid_cols), bool)
        elif self.image_size != (width, height):
            raise CalibrationError(
                f"frame {index} is {width}x{height} but earlier frames were "
                f"{self.image_size[0]}x{self.image_size[1]}: one calibration needs one image size"
            )
        if len(self.views) >= self.settings.max_views:
            return ViewVerdict(index, Verdict.FULL, f"already {len(self.views)} views (max_views)")
        corners = find_corners(gray, self.pattern)
        if corners is None:
            # The latest few: whatever was shown last is most likely the board the user means.
            self._missed = [*self._missed[-2:], gray]
            return ViewVerdict(index, Verdict.NO_BOARD, f"no {self.pattern.label} board found")
        sharpness = board_sharpness(gray, corners)
        tilt = self._tilt_deg(corners)
        if sharpness < self.settings.min_sharpness:
            return ViewVerdict(
                index,
                Verdict.BLURRY,
                f"blurry: sharpness {sharpness:.0f} < {self.settings.min_sharpness:.0f} "
                "(hold still or add light)",
                sharpness,
                tilt,
                corners,
            )
        if tilt > self.settings.max_tilt_deg:
            return ViewVerdict(
                index,
                Verdict.OBLIQUE,
                f"too oblique: board tilted {tilt:.0f}° > {self.settings.max_tilt_deg:.0f}° "
                "from facing the camera",
                sharpness,
                tilt,
                corners,
            )
        twin = self._nearest_view(corners)
        if twin is not None:
            other, distance = twin
            return ViewVerdict(
                index,
                Verdict.DUPLICATE,
                f"duplicate of frame {other.frame_index}: corners moved only {distance:.1f} px on average "
                "(move or tilt the board more)",
                sharpness,
                tilt,
                corners,
            )
        self.views.append(CornerView(index, corners, sharpness, tilt))
        self._mark_covered(corners)
        if len(self.views) >= _REFINE_FROM_VIEWS and len(self.views) % 3 == 0:
            self._refine_provisional_k()
        return ViewVerdict(
            index,
            Verdict.ACCEPTED,
            f"accepted as view {len(self.views)} (sharpness {sharpness:.0f}, tilt {tilt:.0f}°)",
            sharpness,
            tilt,
            corners,
        )

    @property
    def progress(self) -> CaptureProgress:
        s = self.settings
        return CaptureProgress(
            self.frames_seen, len(self.views), s.min_views, s.max_views, self.coverage, s.min_coverage
        )

    @property
    def coverage(self) -> float:
        return float(self._covered.mean()) if self._covered is not None else 0.0

    @property
    def coverage_grid(self) -> np.ndarray:
        """rows x cols booleans: which image cells hold at least one accepted corner."""
        if self._covered is None:
            return np.zeros((self.settings.grid_rows, self.settings.grid_cols), bool)
        return self._covered.copy()

    def coverage_text(self, current: np.ndarray | None = None) -> str:
        """The coverage grid as text: '#' covered, '.' not yet, '*' cells of `current` corners."""
        grid = self.coverage_grid
        now = self._cells(current) if current is not None else np.zeros_like(grid)
        lines = ["+" + "-" * grid.shape[1] + "+"]
        for r in range(grid.shape[0]):
            row = "".join("*" if now[r, c] else ("#" if grid[r, c] else ".") for c in range(grid.shape[1]))
            lines.append("|" + row + "|")
        lines.append("+" + "-" * grid.shape[1] + "+")
        return "\n".join(lines)

    def check_ready(self) -> None:
        """Raise CalibrationError saying why the views so far cannot give a trustworthy calibration."""
        s = self.settings
        if not self.views:
            raise CalibrationError(self._no_board_message())
        if len(self.views) < s.min_views:
            raise CalibrationError(
                f"too few views: {len(self.views)} accepted of {self.frames_seen} frames, need at least "
                f"{s.min_views} (show the board at more positions and angles)"
            )
        if self.coverage < s.min_coverage:
            raise CalibrationError(
                f"views do not cover the image: corners reached {self.coverage:.0%} of the "
                f"{s.grid_cols}x{s.grid_rows} grid cells, need {s.min_coverage:.0%}; hold the board near "
                f"the edges and corners of the frame\n{self.coverage_text()}"
            )

    def _no_board_message(self) -> str:
        base = (
            f"board not found: no {self.pattern.label} inner-corner checkerboard in {self.frames_seen} frames"
        )
        for gray in self._missed:
            size = detected_board_size(gray, self.pattern)
            if size is None:
                continue
            if (size[0] >= size[1]) != (self.pattern.cols >= self.pattern.rows):
                size = (size[1], size[0])  # name it in the orientation the user wrote
            if size in (self.pattern.size, self.pattern.size[::-1]):
                # Found only when allowed to grow or shrink: the board is partly out of view or unclear.
                return f"{base}; a board of that size is partly visible: keep the whole board in view"
            return (
                f"{base}; wrong pattern size? a board with {size[0]}x{size[1]} inner corners was detected "
                f"(--pattern counts INNER corners: a board of {size[0] + 1}x{size[1] + 1} squares is "
                f"{size[0]}x{size[1]})"
            )
        return f"{base}, nor a board of any nearby size"

    def _tilt_deg(self, corners: np.ndarray) -> float:
        """Angle between the board normal and the optical axis, from a PnP solve."""
        assert self.image_size is not None
        k = self._provisional_k
        if k is None:
            width, height = self.image_size
            f_px = (width / 2.0) / math.tan(math.radians(self.settings.approx_hfov_deg) / 2.0)
            k = np.array([[f_px, 0, width / 2.0], [0, f_px, height / 2.0], [0, 0, 1]], np.float64)
        ok, rvec, _tvec = cv2.solvePnP(self.pattern.object_points_m(), corners, k, None)
        if not ok:
            return 90.0
        rmat, _ = cv2.Rodrigues(rvec)
        return math.degrees(math.acos(min(1.0, abs(float(rmat[2, 2])))))

    def _refine_provisional_k(self) -> None:
        """A quick pinhole fit (no distortion) of the views so far, for better tilt estimates."""
        assert self.image_size is not None
        objects = [self.pattern.object_points_m() for _ in self.views]
        images = [v.corners_px.reshape(-1, 1, 2) for v in self.views]
        flags = cv2.CALIB_FIX_K1 | cv2.CALIB_FIX_K2 | cv2.CALIB_FIX_K3 | cv2.CALIB_ZERO_TANGENT_DIST
        try:
            _rms, k, *_ = cv2.calibrateCamera(
                objects, images, self.image_size, np.eye(3), np.zeros(5), flags=flags
            )
        except cv2.error as exc:
            log.debug("provisional calibration failed, keeping the previous guess: %s", exc)
            return
        width = self.image_size[0]
        if 0 < k[0, 0] < 20 * width and 0 < k[1, 1] < 20 * width:
            self._provisional_k = np.asarray(k, np.float64)

    def _nearest_view(self, corners: np.ndarray) -> tuple[CornerView, float] | None:
        assert self.image_size is not None
        limit_px = self.settings.duplicate_fraction * math.hypot(*self.image_size)
        best: tuple[CornerView, float] | None = None
        for view in self.views:
            # The detector may number a board from either end; compare both orders.
            distance = min(
                float(np.linalg.norm(view.corners_px - corners, axis=1).mean()),
                float(np.linalg.norm(view.corners_px[::-1] - corners, axis=1).mean()),
            )
            if distance < limit_px and (best is None or distance < best[1]):
                best = (view, distance)
        return best

    def _cells(self, corners: np.ndarray) -> np.ndarray:
        assert self.image_size is not None
        width, height = self.image_size
        s = self.settings
        cells = np.zeros((s.grid_rows, s.grid_cols), bool)
        cols = np.clip((corners[:, 0] / width * s.grid_cols).astype(int), 0, s.grid_cols - 1)
        rows = np.clip((corners[:, 1] / height * s.grid_rows).astype(int), 0, s.grid_rows - 1)
        cells[rows, cols] = True
        return cells

    def _mark_covered(self, corners: np.ndarray) -> None:
        assert self._covered is not None
        self._covered |= self._cells(corners)
