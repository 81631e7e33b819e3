"""How a real vehicle's camera is mounted, and so how it pointed when a frame was taken.

The `gimbal=` parameter of mavlink:// and tello:// URLs: "level" (default: a gimbal holds the camera
level while its heading follows the vehicle; frames carry LEVEL_CAMERA) or "body-fixed" (the camera
pitches and rolls with the vehicle, as a Tello's does: a frame carries the vehicle's attitude nearest
its capture time). The controller projects a `go` point through the frame's attitude
(docs/controller.md#the-camera-model), the same path as the simulator adapters' frames.
"""

from __future__ import annotations

import math
from collections import deque

from common.errors import ConfigError
from common.pose import LEVEL_CAMERA, CameraAttitude

GIMBALS = ("level", "body-fixed")


def parse_gimbal(url: str, query: dict[str, str]) -> str:
    """The `gimbal=` parameter popped from a vehicle URL's query (default level)."""
    gimbal = query.pop("gimbal", "level")
    if gimbal not in GIMBALS:
        raise ConfigError(f"{url!r}: gimbal={gimbal!r} must be one of {', '.join(GIMBALS)}")
    return gimbal


class AttitudeHistory:
    """The vehicle's recent attitudes (monotonic time, roll and pitch in degrees, aerospace signs:
    pitch positive nose up, roll positive right side down) for its camera's frames."""

    def __init__(self, gimbal: str, length: int = 200) -> None:
        self.body_fixed = gimbal == "body-fixed"
        self._samples: deque[tuple[float, CameraAttitude]] = deque(maxlen=length)

    def add(self, t_s: float, roll_deg: float, pitch_deg: float) -> None:
        """One attitude report; one that is no attitude (non-finite, |roll| > 180°, |pitch| > 90°) is
        dropped and the previous report stands."""
        if not self.body_fixed:
            return
        if not (math.isfinite(roll_deg) and math.isfinite(pitch_deg)):
            return
        if abs(roll_deg) > 180.0 or abs(pitch_deg) > 90.0:
            return
        self._samples.append((t_s, CameraAttitude(float(roll_deg), float(pitch_deg))))

    def at(self, t_s: float) -> CameraAttitude:
        """The camera's attitude at t_s: level for a level mount or before any report."""
        samples = list(self._samples)  # appended from the receiving thread
        if not self.body_fixed or not samples:
            return LEVEL_CAMERA
        return min(samples, key=lambda s: abs(s[0] - t_s))[1]
