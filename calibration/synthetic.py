"""Checkerboard views rendered through a known pinhole camera with lens distortion.

Used to check the calibration against ground truth (tests, benchmarks) and to rehearse the capture
flow without a camera. Each output pixel is traced back through the distortion model
(cv2.undistortPoints, iterated to 1e-12) to a ray, intersected with the board plane, and sampled from
a high-resolution board texture; rendering is supersampled and area-averaged so edges are anti-aliased
as a real sensor would integrate them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from calibration.pattern import BoardPattern
from calibration.pinhole import PinholeCamera
from common.camera import focal_px, undistort_points_converged


@dataclass(frozen=True)
class SyntheticCamera(PinholeCamera):
    """The known lens the views are rendered through."""

    @classmethod
    def from_hfov(
        cls, width_px: int, height_px: int, hfov_deg: float, distortion: tuple[float, ...] = (0.0,) * 5
    ) -> SyntheticCamera:
        f_px = focal_px(width_px, hfov_deg)
        dist = tuple(float(k) for k in distortion) + (0.0,) * (5 - len(distortion))
        return cls(width_px, height_px, f_px, f_px, width_px / 2.0, height_px / 2.0, dist[:5])  # type: ignore[arg-type]


@dataclass(frozen=True)
class BoardPose:
    """Board-to-camera transform: X_cam = R(rvec) @ X_board + tvec (metres, OpenCV camera axes)."""

    rvec: tuple[float, float, float]
    tvec: tuple[float, float, float]


@dataclass
class BoardRenderer:
    """Renders `pattern` seen by `camera`; the traced ray grid is computed once per renderer."""

    pattern: BoardPattern
    camera: SyntheticCamera
    supersample: int = 2
    px_per_square: int = 48
    background: int = 120
    noise_sigma: float = 1.5
    _rays: np.ndarray | None = field(default=None, repr=False)

    def _ray_grid(self) -> np.ndarray:
        """Normalised undistorted (x, y) for every supersampled pixel centre."""
        if self._rays is None:
            s = self.supersample
            cam = self.camera
            w, h = cam.width_px * s, cam.height_px * s
            # Output pixel i covers subpixels s*i .. s*i+s-1, whose centre is s*i + (s-1)/2.
            k = cam.camera_matrix.copy()
            k[0, 0] *= s
            k[1, 1] *= s
            k[0, 2] = cam.cx_px * s + (s - 1) / 2.0
            k[1, 2] = cam.cy_px * s + (s - 1) / 2.0
            us, vs = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
            pts = np.stack([us.ravel(), vs.ravel()], axis=1).reshape(-1, 1, 2)
            und = undistort_points_converged(pts, k, np.array(cam.distortion), None, eps=1e-12)
            self._rays = und.reshape(h, w, 2)
        return self._rays

    def texture(self) -> tuple[np.ndarray, float, float]:
        """The board texture (one white square of margin), its pixels per metre and corner-(0,0) offset."""
        p, n = self.pattern, self.px_per_square
        squares_x, squares_y = p.cols + 1, p.rows + 1
        margin = n
        tex = np.full((squares_y * n + 2 * margin, squares_x * n + 2 * margin), 255, np.uint8)
        for j in range(squares_y):
            for i in range(squares_x):
                if (i + j) % 2 == 0:
                    tex[margin + j * n : margin + (j + 1) * n, margin + i * n : margin + (i + 1) * n] = 0
        px_per_m = n / (p.square_mm / 1000.0)
        # Inner corner (0, 0) is one square in from the board's outer edge; texel centres are integers.
        offset = margin + n - 0.5
        return tex, px_per_m, offset

    def render(self, pose: BoardPose, rng: np.random.Generator | None = None) -> np.ndarray:
        rays = self._ray_grid()
        rmat, _ = cv2.Rodrigues(np.array(pose.rvec, np.float64))
        plane = np.column_stack([rmat[:, 0], rmat[:, 1], np.array(pose.tvec, np.float64)])
        inv = np.linalg.inv(plane)
        x, y = rays[..., 0], rays[..., 1]
        bx = inv[0, 0] * x + inv[0, 1] * y + inv[0, 2]
        by = inv[1, 0] * x + inv[1, 1] * y + inv[1, 2]
        bw = inv[2, 0] * x + inv[2, 1] * y + inv[2, 2]
        tex, px_per_m, offset = self.texture()
        with np.errstate(divide="ignore", invalid="ignore"):
            map_x = (bx / bw * px_per_m + offset).astype(np.float32)
            map_y = (by / bw * px_per_m + offset).astype(np.float32)
        # Rays that meet the plane behind the camera see background, not the board.
        behind = bw <= 0
        map_x[behind] = -1e6
        map_y[behind] = -1e6
        hi = cv2.remap(
            tex, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=self.background
        )
        img = cv2.resize(hi, (self.camera.width_px, self.camera.height_px), interpolation=cv2.INTER_AREA)
        if rng is not None and self.noise_sigma > 0:
            noisy = img.astype(np.float32) + np.asarray(
                rng.normal(0.0, self.noise_sigma, img.shape), np.float32
            )
            img = np.clip(noisy, 0, 255).astype(np.uint8)
        return cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)

    def project_corners(self, pose: BoardPose) -> np.ndarray:
        """Where the true inner corners land in the image (N x 2 pixels)."""
        pts, _ = cv2.projectPoints(
            self.pattern.object_points_m().astype(np.float64),
            np.array(pose.rvec, np.float64),
            np.array(pose.tvec, np.float64),
            self.camera.camera_matrix,
            np.array(self.camera.distortion),
        )
        return pts.reshape(-1, 2)


def _rot(axis: str, angle_deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def pose_at(
    pattern: BoardPattern,
    camera: SyntheticCamera,
    target_px: tuple[float, float],
    width_fraction: float,
    tilt_x_deg: float = 0.0,
    tilt_y_deg: float = 0.0,
    roll_deg: float = 0.0,
) -> BoardPose:
    """A pose that puts the board centre on `target_px`, about `width_fraction` of the image wide."""
    square_m = pattern.square_mm / 1000.0
    board_w_m = (pattern.cols + 1) * square_m
    distance_m = camera.fx_px * board_w_m / (width_fraction * camera.width_px)
    ray = cv2.undistortPoints(
        np.array([[target_px]], np.float64), camera.camera_matrix, np.array(camera.distortion)
    ).reshape(2)
    centre_cam = np.array([ray[0], ray[1], 1.0]) * distance_m
    rmat = _rot("x", tilt_x_deg) @ _rot("y", tilt_y_deg) @ _rot("z", roll_deg)
    centre_board = np.array([(pattern.cols - 1) * square_m / 2.0, (pattern.rows - 1) * square_m / 2.0, 0.0])
    tvec = centre_cam - rmat @ centre_board
    rvec, _ = cv2.Rodrigues(rmat)
    return BoardPose(tuple(float(v) for v in rvec.ravel()), tuple(float(v) for v in tvec))  # type: ignore[arg-type]


def spread_poses(
    pattern: BoardPattern, camera: SyntheticCamera, count: int, seed: int = 0, max_tilt_deg: float = 35.0
) -> list[BoardPose]:
    """`count` varied views: the board visits a 3x3 grid of image positions with varied tilt and size."""
    rng = np.random.default_rng(seed)
    w, h = camera.width_px, camera.height_px
    anchors = [(w * fx, h * fy) for fy in (0.3, 0.5, 0.7) for fx in (0.3, 0.5, 0.7)]
    poses = []
    for i in range(count):
        ax, ay = anchors[i % len(anchors)]
        target = (ax + rng.uniform(-0.05, 0.05) * w, ay + rng.uniform(-0.05, 0.05) * h)
        poses.append(
            pose_at(
                pattern,
                camera,
                target,
                width_fraction=rng.uniform(0.38, 0.5),
                tilt_x_deg=rng.uniform(-max_tilt_deg, max_tilt_deg),
                tilt_y_deg=rng.uniform(-max_tilt_deg, max_tilt_deg),
                roll_deg=rng.uniform(-15, 15),
            )
        )
    return poses
