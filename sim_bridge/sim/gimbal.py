"""A camera's mount on the body and its gimbal (AirSim's settings.json per-camera `Gimbal`).

AirSim's cameras are body-fixed: they pitch and roll with the multirotor. A camera's `Gimbal`
{"Stabilization": s, "Pitch": p, "Roll": r, "Yaw": y} pulls each of its world Euler angles that the
gimbal names towards that angle by s (0-1); an angle the gimbal leaves out follows the body
(Unreal/Plugins/AirSim/Source/PIPCamera.cpp, APIPCamera::Tick: rotator.Pitch = gimbal.Pitch * s +
rotator.Pitch * (1 - s), and so for Roll and Yaw, skipping NaN). So Stabilization 1 with Pitch 0 and
Roll 0 holds the camera level while its heading follows the body, as a real drone's gimbal does:
`STABILISED` below, the project's own camera (suites, demo).

One deliberate difference: with a gimbal the whole camera arm is stabilised (its offset from the body
origin turns with the stabilised rotation), while AirSim's gimbal turns the camera on a body-fixed
mount point. For the level gimbal this keeps the camera where the project's level camera always was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from common.frames import euler_from_matrix, offset_to_ned, rotation_from_euler, yaw_rotation_ned

CAMERA_OFFSET_FRD_M = (0.5, 0.0, 0.1)  # forward camera: 0.5 m ahead, 0.1 m below the body origin


@dataclass(frozen=True)
class Gimbal:
    """settings.json's camera Gimbal: stabilization 0 (none) to 1, target angles (deg; NaN = free)."""

    stabilization: float = 0.0
    pitch_deg: float = math.nan
    roll_deg: float = math.nan
    yaw_deg: float = math.nan


@dataclass(frozen=True)
class CameraMount:
    """Where a camera sits on the body (FRD m) and how it points there (deg), with its gimbal."""

    offset_frd_m: tuple[float, float, float] = CAMERA_OFFSET_FRD_M
    pitch_deg: float = 0.0
    roll_deg: float = 0.0
    yaw_deg: float = 0.0
    gimbal: Gimbal = Gimbal()

    @property
    def level(self) -> bool:
        """The camera is level whatever the body does: it points by the body's yaw alone."""
        g = self.gimbal
        return g.stabilization == 1.0 and g.pitch_deg == 0.0 and g.roll_deg == 0.0 and math.isnan(g.yaw_deg)


BODY_FIXED = CameraMount()  # AirSim's default camera
STABILISED = CameraMount(gimbal=Gimbal(1.0, 0.0, 0.0))  # level, heading with the body


def points_by_yaw(mount: CameraMount, roll_rad: float, pitch_rad: float) -> bool:
    """The camera is level now (it points by the body's yaw plus its own): a level gimbal, or a level
    body-fixed mount on a level body. Such a camera takes the renderer's fast level paths."""
    if mount.level:
        return True
    return (
        mount.gimbal.stabilization <= 0.0
        and mount.pitch_deg == 0.0
        and mount.roll_deg == 0.0
        and roll_rad == 0.0
        and pitch_rad == 0.0
    )


def camera_rotation(mount: CameraMount, roll_rad: float, pitch_rad: float, yaw_rad: float) -> np.ndarray:
    """3x3 camera (FRD) -> world NED rotation for a body at these ZYX Euler angles."""
    body = rotation_from_euler(roll_rad, pitch_rad, yaw_rad)
    cam = body @ rotation_from_euler(
        math.radians(mount.roll_deg), math.radians(mount.pitch_deg), math.radians(mount.yaw_deg)
    )
    g = mount.gimbal
    if g.stabilization <= 0.0:
        return cam
    roll, pitch, yaw = euler_from_matrix(cam)
    s = min(1.0, g.stabilization)
    if not math.isnan(g.pitch_deg):
        pitch = math.radians(g.pitch_deg) * s + pitch * (1.0 - s)
    if not math.isnan(g.roll_deg):
        roll = math.radians(g.roll_deg) * s + roll * (1.0 - s)
    if not math.isnan(g.yaw_deg):
        yaw = math.radians(g.yaw_deg) * s + yaw * (1.0 - s)
    return rotation_from_euler(roll, pitch, yaw)


def camera_position(
    mount: CameraMount, body_ned: np.ndarray, roll_rad: float, pitch_rad: float, yaw_rad: float
) -> np.ndarray:
    """World NED of the camera: the offset turns with the body, or with the stabilised body (gimbal)."""
    if mount.gimbal.stabilization > 0.0:
        arm = camera_rotation(
            CameraMount(gimbal=mount.gimbal), roll_rad, pitch_rad, yaw_rad
        )  # the gimbal's rotation without the camera's own pointing
        if mount.level:
            arm = yaw_rotation_ned(math.degrees(yaw_rad))
    else:
        arm = rotation_from_euler(roll_rad, pitch_rad, yaw_rad)
    return offset_to_ned(body_ned, arm, mount.offset_frd_m)
