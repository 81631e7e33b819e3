"""Calibrate a simulator's camera: place a checkerboard in the scene and move the vehicle around it.

Works through the AirSim API only (simSpawnObject, simSetVehiclePose, simGetImages), so the same code
serves real AirSim (given a board asset) and the built-in simulator, whose asset string is
"checkerboard:COLSxROWS:SQUARE_MM" counted in SQUARES (inner corners + 1 each way).

The views are planned with a rough lens estimate, never the simulator's configured one: a guess
(`plan_hfov_deg`), refined from one square-on probe view at a known distance. Planning only decides
where the board should land in the frame; the intrinsics come from calibrateCamera on the images.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.airsim_source import AirSimCameraAddress, connect_client, grab_scene
from calibration.detect import find_corners, to_gray
from calibration.errors import CalibrationError
from calibration.pattern import BoardPattern
from common.camera import focal_px
from common.frames import yaw_rotation_ned

log = logging.getLogger(__name__)

# The camera sits 0.5 m ahead of and 0.1 m below the body origin, zero pitch (docs/controller.md).
CAMERA_OFFSET_FRD_M = (0.5, 0.0, 0.1)
BOARD_NAME = "dronecats_calibration_board"
# The simulated board is at least this wide (its squares, margin aside). A hand-held 25 mm board would
# have to be ~0.3 m from the lens to fill half the frame, nearer than the renderer's near plane and
# inside the vehicle's own camera offset; the intrinsics do not depend on the board's scale (only the
# views' distances do), so the simulator gets a larger copy of the same pattern.
SIM_BOARD_MIN_WIDTH_M = 1.0


def sim_board_pattern(pattern: BoardPattern) -> BoardPattern:
    """The pattern at a size the simulator can show: same corners, squares >= 1 m / (cols + 1)."""
    min_square_mm = SIM_BOARD_MIN_WIDTH_M * 1000.0 / (pattern.cols + 1)
    if pattern.square_mm >= min_square_mm:
        return pattern
    return BoardPattern(pattern.cols, pattern.rows, min_square_mm)


@dataclass(frozen=True)
class NedPose:
    x_m: float
    y_m: float
    z_m: float
    yaw_deg: float


@dataclass(frozen=True)
class SweepPlan:
    board_asset: str
    board_pose: NedPose
    vehicle_poses: tuple[NedPose, ...]
    # Where each view should put the board centre in the image (pixels), for the planning lens.
    targets_px: tuple[tuple[float, float], ...] = ()


def board_asset(pattern: BoardPattern, image: str | None = None) -> str:
    """The built-in simulator's asset string; `image`: a PNG of the board to texture it with."""
    tail = f":{image}" if image else ""
    return f"checkerboard:{pattern.cols + 1}x{pattern.rows + 1}:{pattern.square_mm:g}{tail}"


def _board_width_m(pattern: BoardPattern) -> float:
    return (pattern.cols + 1) * pattern.square_mm / 1000.0


def _body_pose(camera_ned: np.ndarray, yaw_deg: float, offset_frd_m: tuple[float, float, float]) -> NedPose:
    body = camera_ned - yaw_rotation_ned(yaw_deg) @ np.asarray(offset_frd_m, float)
    return NedPose(float(body[0]), float(body[1]), float(body[2]), yaw_deg)


def place_board(
    pattern: BoardPattern,
    start: NedPose,
    width_px: int,
    board_fraction: float = 0.45,
    plan_hfov_deg: float = 80.0,
    camera_offset_frd_m: tuple[float, float, float] = CAMERA_OFFSET_FRD_M,
) -> NedPose:
    """Where the board goes: ahead of the camera at `start`, at its height, facing it."""
    distance_m = focal_px(width_px, plan_hfov_deg) * _board_width_m(pattern) / (board_fraction * width_px)
    start_rot = yaw_rotation_ned(start.yaw_deg)
    start_cam = np.array([start.x_m, start.y_m, start.z_m]) + start_rot @ np.asarray(camera_offset_frd_m)
    board = start_cam + start_rot @ np.array([1.0, 0.0, 0.0]) * (distance_m + 1.0)
    return NedPose(float(board[0]), float(board[1]), float(board[2]), (start.yaw_deg + 180.0) % 360.0)


def probe_view(
    board: NedPose,
    distance_m: float,
    camera_offset_frd_m: tuple[float, float, float] = CAMERA_OFFSET_FRD_M,
) -> NedPose:
    """The vehicle pose that looks squarely at the board's centre from `distance_m`."""
    centre = np.array([board.x_m, board.y_m, board.z_m])
    normal = yaw_rotation_ned(board.yaw_deg) @ np.array([1.0, 0.0, 0.0])  # the printed face's direction
    return _body_pose(centre + normal * distance_m, (board.yaw_deg + 180.0) % 360.0, camera_offset_frd_m)


def estimate_hfov_deg(
    corners_px: np.ndarray, pattern: BoardPattern, distance_m: float, width_px: int
) -> float:
    """A rough HFOV from a square-on view at a known distance: the corner rows' pixel span vs metres."""
    grid = corners_px.reshape(pattern.rows, pattern.cols, 2)
    span_px = float(np.linalg.norm(grid[:, -1] - grid[:, 0], axis=1).mean())
    span_m = (pattern.cols - 1) * pattern.square_mm / 1000.0
    f_px = span_px * distance_m / span_m
    return math.degrees(2.0 * math.atan2(width_px / 2.0, f_px))


def plan_sweep(
    pattern: BoardPattern,
    start: NedPose,
    width_px: int,
    height_px: int,
    board_fraction: float = 0.45,
    plan_hfov_deg: float = 80.0,
    board: NedPose | None = None,
    camera_offset_frd_m: tuple[float, float, float] = CAMERA_OFFSET_FRD_M,
) -> SweepPlan:
    """A board facing the vehicle (`board`, or placed ahead of `start`) and vehicle poses around it.

    Each view looks at the board from an angle (yaw only: the vehicle's camera neither pitches nor
    rolls) and turns/climbs so that the board centre lands on a chosen spot of the frame, at a
    distance where the board spans about `board_fraction` of the image width.
    """
    if board is None:
        board = place_board(pattern, start, width_px, board_fraction, plan_hfov_deg, camera_offset_frd_m)
    f_px = focal_px(width_px, plan_hfov_deg)
    cx, cy = width_px / 2.0, height_px / 2.0
    base_distance_m = f_px * _board_width_m(pattern) / (board_fraction * width_px)
    centre = np.array([board.x_m, board.y_m, board.z_m])
    board_rot = yaw_rotation_ned(board.yaw_deg)
    normal, across = board_rot @ np.array([1.0, 0.0, 0.0]), board_rot @ np.array([0.0, 1.0, 0.0])

    angles_deg = (-50.0, -35.0, -15.0, 0.0, 15.0, 35.0, 50.0)
    # The squares' outline (board frame: left, up), which must stay in frame with a small margin.
    half_w_m = _board_width_m(pattern) / 2
    half_h_m = (pattern.rows + 1) * pattern.square_mm / 1000.0 / 2
    outline = [
        centre + board_rot @ np.array([0.0, sw * half_w_m, -sh * half_h_m])
        for sw in (-1, 1)
        for sh in (-1, 1)
    ]
    margin_px = 0.02 * width_px
    # (where across the frame, -1..1, in u and v; distance scale): grids over the frame at three
    # distances. Many views average out the renderer's corner noise; tilt is what pins the focal length.
    spread = [(a, b, 1.0) for b in (-1.0, 0.0, 1.0) for a in (-1.0, 0.0, 1.0)]
    spread += [(a, b, 1.25) for b in (-1.0, 0.0, 1.0) for a in (-1.0, -1 / 3, 1 / 3, 1.0)]
    spread += [(a, b, 1.5) for b in (-1.0, 1.0) for a in (-1.0, -0.5, 0.0, 0.5, 1.0)]
    spread += [(a, b, 1.1) for b in (-0.5, 0.5) for a in (-0.5, 0.5)]

    def view(u: float, v: float, angle_deg: float, distance_m: float) -> tuple[NedPose, bool]:
        """The pose that puts the board centre on (u, v); and whether the whole board is in frame."""
        a = math.radians(angle_deg)
        # From the board's printed side, `angle` off its normal about the vertical.
        cam = centre + (normal * math.cos(a) + across * math.sin(a)) * distance_m
        off_axis = math.atan((u - cx) / f_px)
        bearing = math.atan2(centre[1] - cam[1], centre[0] - cam[0])
        yaw = math.degrees(bearing - off_axis)
        depth = distance_m * math.cos(off_axis)
        # NED z grows downward, as image v does: a board below the camera appears low in the frame.
        cam[2] = centre[2] - (v - cy) * depth / f_px
        rot = yaw_rotation_ned(yaw)
        inside = True
        for point in outline:
            fwd, right, down = rot.T @ (point - cam)
            pu, pv = cx + f_px * right / fwd, cy + f_px * down / fwd
            inside &= bool(
                fwd > 0
                and margin_px <= pu <= width_px - margin_px
                and margin_px <= pv <= height_px - margin_px
            )
        return _body_pose(cam, yaw, camera_offset_frd_m), inside

    poses, views = [], []
    for i, (a, b, scale) in enumerate(spread):
        angle = angles_deg[i % len(angles_deg)]
        # Start at the frame's edge and pull the target in until the whole board fits.
        for step in range(20):
            shrink = 1.0 - step / 20
            u, v = cx + a * shrink * cx, cy + b * shrink * cy
            pose, inside = view(u, v, angle, base_distance_m * scale)
            if inside:
                break
        poses.append(pose)
        views.append((u / width_px, v / height_px, scale))
    targets = tuple((u * width_px, v * height_px) for u, v, _scale in views)
    return SweepPlan(board_asset(pattern), board, tuple(poses), targets)


def _airsim_pose(pose: NedPose):  # -> airsim.Pose
    import airsim

    return airsim.Pose(
        airsim.Vector3r(float(pose.x_m), float(pose.y_m), float(pose.z_m)),
        airsim.to_quaternion(0.0, 0.0, math.radians(pose.yaw_deg)),
    )


def _ned_pose(pose) -> NedPose:  # airsim.Pose -> NedPose
    import airsim

    _pitch, _roll, yaw = airsim.to_eularian_angles(pose.orientation)
    p = pose.position
    return NedPose(float(p.x_val), float(p.y_val), float(p.z_val), math.degrees(yaw))


class SimSweepSource:
    """A finite frame source: spawns the board, visits the planned poses, then cleans up."""

    live = False

    def __init__(
        self,
        target: AirSimCameraAddress,
        pattern: BoardPattern,
        board_fraction: float = 0.45,
        plan_hfov_deg: float = 80.0,
        board_image: str | None = None,
    ) -> None:
        """`pattern` is what the user calibrates with (its square size is written to nothing but the
        views' scale); the spawned board is sim_board_pattern(pattern), textured with `board_image`
        (a PNG of the same layout, e.g. from `dronecats calibrate-board`) when one is given."""
        self.target = target
        self.pattern = sim_board_pattern(pattern)  # planning and spawning; detection needs only the corners
        if self.pattern is not pattern:
            log.info(
                "the simulated board has %.0f mm squares (a %g mm board is too small to show): the "
                "intrinsics do not depend on its scale",
                self.pattern.square_mm,
                pattern.square_mm,
            )
        self.board_image = str(Path(board_image).resolve()) if board_image else None
        self.board_fraction = board_fraction
        self.plan_hfov_deg = plan_hfov_deg
        self.description = (
            f"airsim://{target.host}:{target.port}/{target.vehicle}/{target.camera} "
            f"sweeping around a spawned {board_asset(self.pattern, self.board_image)}"
        )
        self.client = connect_client(target)
        self._frames: Iterator[np.ndarray] | None = None
        self._board_name: str | None = None
        self._start = None

    def read(self) -> np.ndarray | None:
        if self._frames is None:
            self._frames = self._sweep()
        return next(self._frames, None)

    def _sweep(self) -> Iterator[np.ndarray]:
        import airsim

        c, vehicle = self.client, self.target.vehicle
        self._start = c.simGetVehiclePose(vehicle_name=vehicle)
        first = grab_scene(c, self.target)
        height, width = first.shape[:2]
        start = _ned_pose(self._start)
        board = place_board(self.pattern, start, width, self.board_fraction, self.plan_hfov_deg)
        asset = board_asset(self.pattern, self.board_image)
        try:
            self._board_name = c.simSpawnObject(
                BOARD_NAME, asset, _airsim_pose(board), airsim.Vector3r(1.0, 1.0, 1.0)
            )
        except Exception as exc:
            raise CalibrationError(
                f"the simulator refused simSpawnObject({asset!r}): {exc}; it needs a checkerboard "
                "asset (the built-in simulator's 'checkerboard:COLSxROWS:SQUARE_MM')"
            ) from None
        log.info("spawned %s as %r at %s", asset, self._board_name, board)
        # A square-on look from twice the planned distance (so a narrower lens than guessed still sees
        # the whole board) measures the lens roughly, so that the sweep puts the board where planned.
        f_guess = focal_px(width, self.plan_hfov_deg)
        probe_distance_m = 2.0 * f_guess * _board_width_m(self.pattern) / (self.board_fraction * width)
        c.simSetVehiclePose(_airsim_pose(probe_view(board, probe_distance_m)), True, vehicle_name=vehicle)
        probe = grab_scene(c, self.target)
        hfov = self.plan_hfov_deg
        corners = find_corners(to_gray(probe), self.pattern)
        if corners is not None:
            hfov = estimate_hfov_deg(corners, self.pattern, probe_distance_m, width)
            log.info("planning the sweep with a rough HFOV of %.1f° from the probe view", hfov)
        else:
            log.warning("the probe view shows no board; planning with the %.0f° guess", hfov)
        yield probe
        plan = plan_sweep(self.pattern, start, width, height, self.board_fraction, hfov, board=board)
        for pose in plan.vehicle_poses:
            c.simSetVehiclePose(_airsim_pose(pose), True, vehicle_name=vehicle)
            yield grab_scene(c, self.target)

    def close(self) -> None:
        if self.client is None:
            return
        try:
            if self._board_name:
                self.client.simDestroyObject(self._board_name)
            if self._start is not None:
                self.client.simSetVehiclePose(self._start, True, vehicle_name=self.target.vehicle)
        except Exception as exc:  # cleanup is best effort; the calibration result stands on its own
            log.warning("could not restore the simulator after the sweep: %s", exc)
        self.client = None
