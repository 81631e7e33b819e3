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


@dataclass
class Frame:
    """One camera image with the time and pose at capture; `image` is an HxWx3 uint8 BGR array."""

    image: Any
    capture_time_s: float
    pose: Pose
    camera: str = "front"
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def width_px(self) -> int:
        return int(self.image.shape[1])

    @property
    def height_px(self) -> int:
        return int(self.image.shape[0])
