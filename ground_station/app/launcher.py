"""What the window needs of the launcher that started its drones (`gs --launch`:
ground_station.fleet.launch.SimFleet): the world it built, each drone's process end, its re-launch.

A Protocol, so that a test's launcher needs no inheritance; read-only members, so that SimFleet's own
richer types (a list of its LaunchTargets) fit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from common.pose import Pose
from ground_station.fleet.lifecycle import ExitInfo


class LaunchedTarget(Protocol):
    """An object the launcher put in the world, shown on the map by name."""

    @property
    def name(self) -> str: ...

    @property
    def pose(self) -> Pose: ...


class DroneLauncher(Protocol):
    @property
    def log_dir(self) -> Path:
        """Where the drones' logs go (the tiles' recordings under it)."""
        ...

    @property
    def targets(self) -> Sequence[LaunchedTarget]: ...

    @property
    def geo_origin(self) -> tuple[float, float, float] | None:
        """Latitude, longitude (degrees) and altitude (m) of the world frame's origin."""
        ...

    def geofence_radius_m(self) -> float: ...

    def exit_info(self, name: str) -> ExitInfo | None:
        """None while the drone's process runs; how it ended once it has."""
        ...

    def relaunch(self, name: str) -> None: ...
