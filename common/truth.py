"""Ground truth for the flight recorder (distance, visibility, point on target), when a simulator has it,
and the registry that opens it by the vehicle's URL scheme.

The pilot never sees it: only the recorder and the episode stop rule read it. In real flight there
is none and the log fields stay null (the operator judges declarations instead).

Like the vehicles (common.interfaces), ground truth is opened by the vehicle URL's scheme, from the
`dronecats.truth` entry points (common.schemes), so the onboard runtime never imports a simulator's
adapter itself.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol
from urllib.parse import urlsplit

from common.errors import ConfigError
from common.pose import Frame
from common.schemes import TRUTH_GROUP, SchemeRegistry


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


# vehicle URL scheme -> factory(vehicle_url: str, target: str) -> GroundTruth, from the entry points
_TRUTHS = SchemeRegistry("truth", TRUTH_GROUP)


def truth_schemes() -> list[str]:
    return _TRUTHS.schemes()


def open_truth(vehicle_url: str, target: str) -> GroundTruth:
    """Ground truth for the object `target` from the simulator behind a vehicle URL (`--truth-target`)."""
    factory = _TRUTHS.factory(vehicle_url)
    if factory is None:
        scheme = urlsplit(vehicle_url).scheme
        raise ConfigError(
            f"vehicle URL {vehicle_url!r}: no ground truth for scheme {scheme!r} (only a simulator has it: "
            f"{', '.join(truth_schemes())})"
        )
    truth: GroundTruth = factory(vehicle_url, target)
    return truth
