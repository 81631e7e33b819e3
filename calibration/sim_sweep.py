"""Calibrate a simulator's camera: place a checkerboard in the scene and move the vehicle around it.

Works through the AirSim API only (simSpawnObject, simSetVehiclePose, simGetImages), so the same code
serves real AirSim (given a board asset) and the built-in simulator, whose asset string is
"checkerboard:COLSxROWS:SQUARE_MM" counted in SQUARES (inner corners + 1 each way).

The views are planned with a rough lens guess (`plan_hfov_deg`), never the simulator's configured
one: planning only decides where the board should land in the frame; the intrinsics come from the
images alone.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from calibration.airsim_source import AirSimTarget, connect_client, grab_scene
from calibration.errors import CalibrationError
from calibration.pattern import BoardPattern

log = logging.getLogger(__name__)

# AGENT.md §3: the camera sits 0.5 m ahead of and 0.1 m below the body origin, zero pitch.
CAMERA_OFFSET_FRD_M = (0.5, 0.0, 0.1)
BOARD_NAME = "dronecats_calibration_board"


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


def board_asset(pattern: BoardPattern) -> str:
    return f"checkerboard:{pattern.cols + 1}x{pattern.rows + 1}:{pattern.square_mm:g}"


def _yaw_rot(yaw_deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def plan_sweep(
    pattern: BoardPattern,
    start: NedPose,
    width_px: int,
    height_px: int,
    board_fraction: float = 0.4,
    plan_hfov_deg: float = 80.0,
    camera_offset_frd_m: tuple[float, float, float] = CAMERA_OFFSET_FRD_M,
) -> SweepPlan:
    """A board in front of `start` facing it, and vehicle poses that show it across the whole frame.

    Each view looks at the board from an angle (yaw only: the vehicle's camera neither pitches nor
    rolls) and turns/climbs so that the board centre lands on a chosen spot of a 3x3 grid over the
    frame, at a distance where the board spans about `board_fraction` of the image width.
    """
    f_px = (width_px / 2.0) / math.tan(math.radians(plan_hfov_deg) / 2.0)
    cx, cy = width_px / 2.0, height_px / 2.0
    board_w_m = (pattern.cols + 1) * pattern.square_mm / 1000.0
    base_distance_m = f_px * board_w_m / (board_fraction * width_px)

    start_rot = _yaw_rot(start.yaw_deg)
    offset = np.asarray(camera_offset_frd_m, float)
    start_cam = np.array([start.x_m, start.y_m, start.z_m]) + start_rot @ offset
    forward = start_rot @ np.array([1.0, 0.0, 0.0])
    right = start_rot @ np.array([0.0, 1.0, 0.0])
    board = start_cam + forward * (base_distance_m + 1.0)
    board_pose = NedPose(float(board[0]), float(board[1]), float(board[2]), (start.yaw_deg + 180.0) % 360.0)

    angles_deg = (-40.0, -20.0, 0.0, 20.0, 40.0)
    # (image u, image v, distance scale): a 3x3 grid near, then a 4x2 grid farther and in between.
    views = [(u, v, 1.0) for v in (0.25, 0.5, 0.75) for u in (0.2, 0.5, 0.8)]
    views += [(u, v, 1.3) for v in (0.2, 0.8) for u in (0.15, 0.38, 0.62, 0.85)]
    views += [(u, v, 1.15) for v in (0.37, 0.63) for u in (0.3, 0.7)]
    poses = []
    for i, (u, v, scale) in enumerate(views):
        angle = angles_deg[i % len(angles_deg)]
        distance = base_distance_m * scale
        # Viewing direction from the board (on its front side), rotated by `angle` about the vertical.
        a = math.radians(angle)
        away = -forward * math.cos(a) + right * math.sin(a)
        cam = board + away * distance
        off_axis = math.atan((u * width_px - cx) / f_px)
        bearing = math.atan2(board[1] - cam[1], board[0] - cam[0])
        yaw = math.degrees(bearing - off_axis)
        depth = distance * math.cos(off_axis)
        # NED z grows downward, as image v does: a board below the camera appears low in the frame.
        cam[2] = board[2] - (v * height_px - cy) * depth / f_px
        body = cam - _yaw_rot(yaw) @ offset
        poses.append(NedPose(float(body[0]), float(body[1]), float(body[2]), yaw))
    return SweepPlan(board_asset(pattern), board_pose, tuple(poses))


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

    def __init__(self, target: AirSimTarget, pattern: BoardPattern, board_fraction: float = 0.4) -> None:
        self.target = target
        self.pattern = pattern
        self.board_fraction = board_fraction
        self.description = (
            f"airsim://{target.host}:{target.port}/{target.vehicle}/{target.camera} "
            f"sweeping around a spawned {board_asset(pattern)}"
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
        plan = plan_sweep(self.pattern, _ned_pose(self._start), width, height, self.board_fraction)
        try:
            self._board_name = c.simSpawnObject(
                BOARD_NAME, plan.board_asset, _airsim_pose(plan.board_pose), airsim.Vector3r(1.0, 1.0, 1.0)
            )
        except Exception as exc:
            raise CalibrationError(
                f"the simulator refused simSpawnObject({plan.board_asset!r}): {exc}; it needs a checkerboard "
                "asset (the built-in simulator's 'checkerboard:COLSxROWS:SQUARE_MM')"
            ) from None
        log.info("spawned %s as %r at %s", plan.board_asset, self._board_name, plan.board_pose)
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
