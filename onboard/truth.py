"""Ground truth for the flight recorder (distance, visibility, point on target), when a simulator has it.

The pilot never sees it: only the recorder and the episode stop rule read it. In real flight there
is none and the log fields stay null (the operator judges declarations instead).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from common.pose import Frame


class TruthSample(NamedTuple):
    distance_m: float | None
    bbox_distance_m: float | None
    visible: bool | None
    target_pose: list[float] | None  # [x, y, z, yaw_deg] world NED


class GroundTruth(Protocol):
    def sample(self, drone: str) -> TruthSample:
        """The target relative to the drone now."""
        ...

    def point_on_target(self, frame: Frame, point_xy: tuple[int, int]) -> bool | None:
        """Whether a 0–1000 image point of this frame lies on the target's pixels."""
        ...
