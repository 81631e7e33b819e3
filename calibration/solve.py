"""Intrinsics and distortion from accepted views: cv2.calibrateCamera with outlier views dropped."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from calibration.errors import CalibrationError
from calibration.pattern import BoardPattern
from calibration.pinhole import PinholeCamera
from calibration.views import CornerView
from common.camera import CameraProfile

log = logging.getLogger(__name__)

_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-9)


@dataclass(frozen=True)
class ViewError:
    frame_index: int
    rms_px: float


@dataclass(frozen=True, kw_only=True)
class CalibrationResult(PinholeCamera):
    """The estimated camera, the board it was estimated from and how well the views fit it."""

    pattern: BoardPattern
    rms_px: float
    used: tuple[ViewError, ...]
    dropped: tuple[ViewError, ...]  # outliers, with their RMS in the round that dropped them

    def to_profile(self, name: str, source: str = "", **extra: str | int | float) -> CameraProfile:
        provenance: dict[str, str | int | float] = {
            "tool": "dronecats calibrate",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "source": source,
            "pattern": f"{self.pattern.label} inner corners",
            "square_mm": self.pattern.square_mm,
            "views_used": len(self.used),
            "views_dropped": len(self.dropped),
            "dropped_frames": ",".join(str(v.frame_index) for v in self.dropped),
            "rms_px": round(self.rms_px, 4),
            "max_view_rms_px": round(max(v.rms_px for v in self.used), 4),
            "hfov_deg": round(self.hfov_deg, 3),
            "vfov_deg": round(self.vfov_deg, 3),
            **extra,
        }
        return CameraProfile(
            name=name,
            width_px=self.width_px,
            height_px=self.height_px,
            fx_px=self.fx_px,
            fy_px=self.fy_px,
            cx_px=self.cx_px,
            cy_px=self.cy_px,
            distortion=tuple(float(k) for k in self.distortion),
            provenance=provenance,
        )


def calibrate_views(
    views: Sequence[CornerView],
    pattern: BoardPattern,
    image_size: tuple[int, int],
    min_views: int = 3,
    outlier_factor: float = 3.0,
    outlier_floor_px: float = 0.5,
    max_rounds: int = 3,
) -> CalibrationResult:
    """Calibrate, then drop views whose RMS exceeds `outlier_factor` x the median (and the floor, so
    that a set of uniformly excellent views is left alone) and calibrate again, up to `max_rounds`."""
    if len(views) < min_views:
        raise CalibrationError(f"too few views: {len(views)} given, need at least {min_views}")
    kept = list(views)
    dropped: list[ViewError] = []
    for _ in range(max_rounds):
        rms, k, dist, per_view = _solve(kept, pattern, image_size)
        limit = max(outlier_factor * float(np.median(per_view)), outlier_floor_px)
        bad = [i for i, e in enumerate(per_view) if e > limit]
        if not bad:
            break
        if len(kept) - len(bad) < min_views:
            raise CalibrationError(
                f"too few views: {len(bad)} of {len(kept)} views have reprojection RMS above {limit:.2f} px "
                f"(frames {[kept[i].frame_index for i in bad]}), leaving fewer than {min_views}"
            )
        for i in bad:
            log.info("dropping frame %d: view RMS %.3f px > %.3f px", kept[i].frame_index, per_view[i], limit)
            dropped.append(ViewError(kept[i].frame_index, float(per_view[i])))
        kept = [v for i, v in enumerate(kept) if i not in set(bad)]
    else:
        rms, k, dist, per_view = _solve(kept, pattern, image_size)
    intrinsics = (*image_size, float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2]))  # no skew
    return CalibrationResult(
        *intrinsics,
        tuple(float(d) for d in dist[:5]),  # type: ignore[arg-type]
        pattern=pattern,
        rms_px=float(rms),
        used=tuple(ViewError(v.frame_index, float(e)) for v, e in zip(kept, per_view, strict=True)),
        dropped=tuple(dropped),
    )


def _solve(
    views: Sequence[CornerView], pattern: BoardPattern, image_size: tuple[int, int]
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    objects = [pattern.object_points_m() for _ in views]
    images = [v.corners_px.reshape(-1, 1, 2).astype(np.float32) for v in views]
    try:
        rms, k, dist, _rv, _tv, _si, _se, per_view = cv2.calibrateCameraExtended(
            objects,
            images,
            image_size,
            # Without CALIB_USE_INTRINSIC_GUESS these are outputs only; OpenCV initialises itself.
            np.eye(3),
            np.zeros(5),
            flags=0,
            criteria=_CRITERIA,
        )
    except cv2.error as exc:
        raise CalibrationError(f"cv2.calibrateCamera failed on {len(views)} views: {exc}") from None
    dist = np.asarray(dist, np.float64).ravel()
    if dist.size < 5:
        dist = np.concatenate([dist, np.zeros(5 - dist.size)])
    return float(rms), np.asarray(k, np.float64), dist, np.asarray(per_view, np.float64).ravel()
