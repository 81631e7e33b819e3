"""`spawn=x,y,z[,yaw_deg]` in a vehicle or simulator URL: where the vehicle's own origin (a Tello's
power-on point, an autopilot's EKF origin, an AirSim vehicle's spawn) lies in the episode's world
frame, in metres and degrees (NED). The one parser of it: tello://, mavlink://, airsim:// vehicle URLs
and the HIL runner's --sim URL."""

from __future__ import annotations

import math

from common.errors import ConfigError
from common.pose import Pose

ORIGIN = Pose(0.0, 0.0, 0.0, 0.0)


def parse_spawn(url: str, query: dict[str, str]) -> Pose:
    """Pops `spawn` from a URL's parsed query; ORIGIN when the URL gives none."""
    if "spawn" not in query:
        return ORIGIN
    text = query.pop("spawn")
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"{url!r}: spawn must be x,y,z[,yaw_deg] in metres, got {text!r}") from None
    if len(values) not in (3, 4):
        raise ConfigError(f"{url!r}: spawn needs 3 or 4 numbers, got {len(values)}")
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{url!r}: spawn {text!r} must be finite numbers")
    return Pose(values[0], values[1], values[2], values[3] if len(values) == 4 else 0.0)
