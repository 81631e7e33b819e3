"""A distance sensor's settings (AirLib's DistanceSimpleParams); the sensor is rpc/distance.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from common.errors import ConfigError

SETTINGS_KEYS = {"SensorType", "Enabled", "MinDistance", "MaxDistance", "X", "Y", "Z", "Roll", "Pitch", "Yaw"}
SETTINGS_KEYS |= {"DrawDebugPoints", "ExternalController"}


@dataclass(frozen=True)
class DistanceParams:
    """DistanceSimpleParams (a multirotor's: the sensor at the body origin unless X/Y/Z say)."""

    name: str
    min_distance_m: float = 0.2
    max_distance_m: float = 40.0
    position_frd_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)  # pitch, roll, yaw


def distance_params(name: str, data: dict[str, Any], where: str) -> DistanceParams:
    def num(key: str, default: float) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"settings {where}.{key}: expected a finite number, got {value!r}")
        return float(value)

    lo, hi = num("MinDistance", 0.2), num("MaxDistance", 40.0)
    if not 0 <= lo < hi:
        raise ConfigError(f"settings {where}: MinDistance {lo} and MaxDistance {hi}: 0 <= min < max")
    return DistanceParams(
        name,
        lo,
        hi,
        (num("X", 0.0), num("Y", 0.0), num("Z", 0.0)),
        (num("Pitch", 0.0), num("Roll", 0.0), num("Yaw", 0.0)),
    )


__all__ = ["SETTINGS_KEYS", "DistanceParams", "distance_params"]
