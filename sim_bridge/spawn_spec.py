"""`NAME=ASSET:X,Y[,YAW]` object specs for `dronecats sim --spawn`.

ASSET is the simulator's asset string (KIND[:TEXT][@COLOUR], sim_bridge.sim.assets), as in
`episodes new --distractor`; X, Y are world NED metres (north, east) on the ground, YAW degrees.
NAME is the simulator name, so that `dronecats onboard --truth-target NAME` can measure against it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from common.errors import ConfigError
from common.pose import Pose

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
FORM = "NAME=KIND[@COLOUR]:X,Y[,YAW], e.g. target=car@red:25,0"


@dataclass(frozen=True)
class SpawnSpec:
    name: str
    asset: str
    x_m: float
    y_m: float
    yaw_deg: float = 0.0

    def pose(self) -> Pose:
        return Pose(self.x_m, self.y_m, 0.0, self.yaw_deg)


def parse_spawn(text: str) -> SpawnSpec:
    """Parse and validate one --spawn value (asset kind and colour included); ConfigError naming it."""
    from sim_bridge.sim.assets import parse_asset

    name, eq, rest = text.partition("=")
    asset, colon, where = rest.rpartition(":")
    if not eq or not colon or not asset:
        raise ConfigError(f"--spawn {text!r}: use {FORM}")
    if not _NAME.match(name):
        raise ConfigError(f"--spawn {text!r}: name {name!r} must be letters, digits, _ . - (not first)")
    try:
        numbers = [float(v) for v in where.split(",")]
    except ValueError:
        raise ConfigError(f"--spawn {text!r}: X,Y[,YAW] must be numbers") from None
    if len(numbers) not in (2, 3) or not all(math.isfinite(v) for v in numbers):
        raise ConfigError(f"--spawn {text!r}: X,Y[,YAW] must be two or three finite numbers")
    parse_asset(asset)  # unknown kinds and colours are refused here, with the choices
    return SpawnSpec(name, asset, numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else 0.0)
