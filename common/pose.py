"""Poses and frames. World poses are NED in metres with yaw in degrees (docs/logs.md#poses)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import msgspec


class Pose(msgspec.Struct, frozen=True):
    """World NED position in metres and yaw in degrees (clockwise from north, as in AirSim)."""

    x_m: float
    y_m: float
    z_m: float
    yaw_deg: float = 0.0

    def as_list(self) -> list[float]:
        """The [x, y, z, yaw_deg] form of the episode logs."""
        return [self.x_m, self.y_m, self.z_m, self.yaw_deg]

    @classmethod
    def from_list(cls, values: list[float] | tuple[float, ...]) -> Pose:
        x, y, z, yaw = (float(v) for v in values)
        return cls(x, y, z, yaw)

    def distance_to(self, other: Pose) -> float:
        return math.dist((self.x_m, self.y_m, self.z_m), (other.x_m, other.y_m, other.z_m))

    @property
    def altitude_m(self) -> float:
        return -self.z_m


def wrap_deg(angle_deg: float) -> float:
    """Wrap to (-180, 180]."""
    wrapped = math.fmod(angle_deg + 180.0, 360.0)
    if wrapped <= 0:
        wrapped += 360.0
    return wrapped - 180.0


class CameraAttitude(msgspec.Struct, frozen=True):
    """How a camera pointed at capture, relative to a level camera looking along its frame pose's
    heading: ZYX Euler angles in degrees, as AirSim's (yaw about down, then pitch, then roll; pitch
    positive nose up, roll positive right side down). All zero: a level camera (a gimbal holds it
    level, or a body-fixed camera on a level body). A body-fixed camera pitches and rolls with the
    body; `yaw_deg` is a camera turned on its mount away from the heading."""

    roll_deg: float = 0.0
    pitch_deg: float = 0.0
    yaw_deg: float = 0.0

    @property
    def level(self) -> bool:
        return self.roll_deg == 0.0 and self.pitch_deg == 0.0 and self.yaw_deg == 0.0

    def _sines_cosines(self) -> tuple[float, float, float, float, float, float]:
        """sin and cos of roll, pitch and yaw, in that order (both rotations use all six)."""
        roll, pitch, yaw = (math.radians(a) for a in (self.roll_deg, self.pitch_deg, self.yaw_deg))
        return math.sin(roll), math.cos(roll), math.sin(pitch), math.cos(pitch), math.sin(yaw), math.cos(yaw)

    def to_heading_frame(self, forward_m: float, right_m: float, down_m: float) -> tuple[float, float, float]:
        """A camera-frame (forward, right, down) vector in the level frame at the pose's heading
        (forward, right, down): R = Rz(yaw)·Ry(pitch)·Rx(roll) applied to it."""
        sr, cr, sp, cp, sy, cy = self._sines_cosines()
        # Roll about forward, then pitch about right, then yaw about down.
        right_1 = cr * right_m - sr * down_m
        down_1 = sr * right_m + cr * down_m
        forward_2 = cp * forward_m + sp * down_1
        down_2 = -sp * forward_m + cp * down_1
        return cy * forward_2 - sy * right_1, sy * forward_2 + cy * right_1, down_2

    def to_camera_frame(self, forward_m: float, right_m: float, down_m: float) -> tuple[float, float, float]:
        """The inverse of to_heading_frame: a vector in the level frame at the pose's heading
        (forward, right, down) in the camera's own (forward, right, down), R transposed."""
        sr, cr, sp, cp, sy, cy = self._sines_cosines()
        # Undo the yaw about down, then the pitch about right, then the roll about forward.
        forward_2 = cy * forward_m + sy * right_m
        right_1 = -sy * forward_m + cy * right_m
        forward_c = cp * forward_2 - sp * down_m
        down_1 = sp * forward_2 + cp * down_m
        return forward_c, cr * right_1 + sr * down_1, -sr * right_1 + cr * down_1

    @classmethod
    def from_world(
        cls, roll_deg: float, pitch_deg: float, yaw_deg: float, heading_deg: float
    ) -> CameraAttitude:
        """The attitude of a camera at world ZYX Euler angles (deg) in a frame whose pose has heading
        `heading_deg`."""
        return cls(float(roll_deg), float(pitch_deg), wrap_deg(yaw_deg - heading_deg))


LEVEL_CAMERA = CameraAttitude()


@dataclass
class Frame:
    """One camera image with the time and pose at capture; `image` is an HxWx3 uint8 BGR array.

    `pose` is the vehicle's (its heading is the camera's); `camera_attitude` is how the camera
    pointed relative to a level camera at that heading (the controller projects `go` points with it)."""

    image: Any
    capture_time_s: float
    pose: Pose
    camera: str = "front"
    meta: dict[str, Any] = field(default_factory=dict)
    camera_attitude: CameraAttitude = LEVEL_CAMERA

    @property
    def width_px(self) -> int:
        return int(self.image.shape[1])

    @property
    def height_px(self) -> int:
        return int(self.image.shape[0])
