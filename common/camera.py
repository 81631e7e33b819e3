"""Pinhole camera profiles (docs/controller.md#the-camera-model): intrinsics, distortion, size; YAML.

`calibration` writes this format and the controller, the simulator and the pilots read it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec
import yaml

from common.config import file_errors
from common.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray


def focal_px(size_px: float, fov_deg: float) -> float:
    """The focal length (px) of a pinhole camera whose image, `size_px` across, spans `fov_deg`."""
    return (size_px / 2.0) / math.tan(math.radians(fov_deg) / 2.0)


class _Pinhole(Protocol):
    @property
    def width_px(self) -> int: ...
    @property
    def height_px(self) -> int: ...
    @property
    def fx_px(self) -> float: ...
    @property
    def fy_px(self) -> float: ...


class FieldOfView:
    """The fields of view of anything with an image size and focal lengths in pixels (a mixin)."""

    __slots__ = ()

    @property
    def hfov_deg(self: _Pinhole) -> float:
        return math.degrees(2.0 * math.atan2(self.width_px / 2.0, self.fx_px))

    @property
    def vfov_deg(self: _Pinhole) -> float:
        return math.degrees(2.0 * math.atan2(self.height_px / 2.0, self.fy_px))


class CameraProfile(msgspec.Struct, FieldOfView, frozen=True, forbid_unknown_fields=True):
    name: str
    width_px: int
    height_px: int
    fx_px: float
    fy_px: float
    cx_px: float
    cy_px: float
    # OpenCV order (k1, k2, p1, p2, k3); empty or all zero means no distortion.
    distortion: tuple[float, ...] = ()
    provenance: dict[str, str | int | float] = {}

    def __post_init__(self) -> None:
        if self.width_px <= 0 or self.height_px <= 0:
            raise ConfigError(f"camera {self.name}: size {self.width_px}x{self.height_px} must be positive")
        if self.fx_px <= 0 or self.fy_px <= 0:
            raise ConfigError(
                f"camera {self.name}: focal lengths fx={self.fx_px}, fy={self.fy_px} must be > 0"
            )

    @classmethod
    def from_hfov(cls, name: str, width_px: int, height_px: int, hfov_deg: float) -> CameraProfile:
        """Square pixels, principal point at the centre: fx = fy = (W/2) / tan(HFOV/2)."""
        if not 0 < hfov_deg < 180:
            raise ConfigError(f"camera {name}: hfov_deg={hfov_deg} must be in (0, 180)")
        f_px = focal_px(width_px, hfov_deg)
        return cls(name, width_px, height_px, f_px, f_px, width_px / 2.0, height_px / 2.0)

    @property
    def has_distortion(self) -> bool:
        return any(abs(k) > 0 for k in self.distortion)

    def scaled_to(self, width_px: int, height_px: int) -> CameraProfile:
        """The same camera at another resolution (intrinsics scale with the image)."""
        sx, sy = width_px / self.width_px, height_px / self.height_px
        return msgspec.structs.replace(
            self,
            width_px=width_px,
            height_px=height_px,
            fx_px=self.fx_px * sx,
            fy_px=self.fy_px * sy,
            cx_px=self.cx_px * sx,
            cy_px=self.cy_px * sy,
        )

    def to_yaml(self) -> str:
        data = msgspec.to_builtins(self)
        data["distortion"] = list(self.distortion)
        data["hfov_deg"] = round(self.hfov_deg, 4)  # informative; recomputed on load
        data["vfov_deg"] = round(self.vfov_deg, 4)
        return yaml.safe_dump(data, sort_keys=False)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_yaml())

    @classmethod
    def from_mapping(cls, data: dict, source: str = "<mapping>") -> CameraProfile:
        data = dict(data)
        hfov = data.pop("hfov_deg", None)
        data.pop("vfov_deg", None)
        if "fx_px" not in data and hfov is not None:
            try:
                base = cls.from_hfov(
                    str(data.get("name", source)), int(data["width_px"]), int(data["height_px"]), float(hfov)
                )
            except KeyError as exc:
                raise ConfigError(f"camera profile {source}: missing field {exc}") from None
            data = {**msgspec.to_builtins(base), **{k: v for k, v in data.items()}}
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"camera profile {source}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> CameraProfile:
        path = Path(path)
        with file_errors("camera profile", path, "YAML", yaml.YAMLError):
            data = yaml.safe_load(path.read_text())
        if not isinstance(data, dict):
            raise ConfigError(f"camera profile {path}: expected a mapping, got {type(data).__name__}")
        data.setdefault("name", path.stem)
        return cls.from_mapping(data, str(path))


def undistort_pixels(points_px: ArrayLike, camera: CameraProfile) -> NDArray[np.float64]:
    """Ideal-pinhole pixels (N x 2) of pixels (N x 2) seen through the camera's lens distortion, in the
    same camera matrix (P = K), iterated to convergence (docs/controller.md#go, step 1). The one
    implementation: the controller's back-projection and calibration's pixel helper both call it."""
    import numpy as np  # only callers that undistort pay for numpy and OpenCV

    points = np.asarray(points_px, np.float64).reshape(-1, 1, 2)
    if not camera.has_distortion:
        return points.reshape(-1, 2)
    k = np.array(
        [[camera.fx_px, 0.0, camera.cx_px], [0.0, camera.fy_px, camera.cy_px], [0.0, 0.0, 1.0]], np.float64
    )
    dist = np.array(camera.distortion, np.float64)
    return undistort_points_converged(points, k, dist, k).reshape(-1, 2)


def undistort_points_converged(
    points: ArrayLike, k: ArrayLike, dist: ArrayLike, p: ArrayLike | None, eps: float = 1e-10
) -> NDArray[np.float64]:
    """cv2.undistortPoints run to convergence on OpenCV 4 and 5 (points N x 1 x 2; P None: normalised).

    Without criteria it stops after 5 fixed-point iterations, which leaves tenths of a pixel near the
    corners of a strongly distorted lens."""
    import cv2
    import numpy as np

    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, eps)
    points, k, dist = (np.asarray(a, np.float64) for a in (points, k, dist))
    p = None if p is None else np.asarray(p, np.float64)
    if hasattr(cv2, "undistortPointsIter"):  # OpenCV 4.x (JetPack's): undistortPoints takes no criteria
        out = cv2.undistortPointsIter(points, k, dist, None, p, criteria)
    else:  # OpenCV 5 folded the criteria into undistortPoints
        out = cv2.undistortPoints(points, k, dist, R=None, P=p, criteria=criteria)
    return np.asarray(out, np.float64)


BUILTIN_CAMERAS: dict[str, CameraProfile] = {
    "outdoor": CameraProfile.from_hfov("outdoor", 1280, 720, 90.0),
    "indoor": CameraProfile.from_hfov("indoor", 1280, 720, 90.0),
    "tello": CameraProfile.from_hfov("tello", 960, 720, 56.4),
    # The built-in simulator's default render size (same 90° lens as `outdoor`).
    "sim": CameraProfile.from_hfov("sim", 640, 360, 90.0),
}


def camera_profile(name_or_path: str) -> CameraProfile:
    """A built-in profile by name, or a YAML file written by `dronecats calibrate`."""
    if name_or_path in BUILTIN_CAMERAS:
        return BUILTIN_CAMERAS[name_or_path]
    path = Path(name_or_path)
    if not path.exists():
        raise ConfigError(
            f"unknown camera profile {name_or_path!r}: not one of {sorted(BUILTIN_CAMERAS)} and no such file"
        )
    return CameraProfile.load(path)
