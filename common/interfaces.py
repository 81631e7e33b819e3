"""The Camera and Vehicle interfaces, the Telemetry record, and the vehicle registry.

The interfaces are described in docs/architecture.md#interfaces.

Protocols, so that test doubles need no inheritance. Adapters live with their transports and are
declared as `dronecats.vehicles` entry points by the distribution that holds them (ours in
pyproject.toml: airsim, mavlink, tello; a third party's in its own). `open_vehicle` finds the URL's
scheme among them and imports only that adapter (common.schemes), so `common` names none of them.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

import msgspec

from common.errors import ConfigError
from common.pose import Frame, Pose
from common.schemes import VEHICLES_GROUP, SchemeRegistry


class Telemetry(msgspec.Struct, frozen=True):
    """One vehicle state sample. Pose and velocity are in the episode's shared world NED frame."""

    time_s: float  # on the vehicle's clock (simulation time in a simulator)
    pose: Pose
    velocity_ned_m_s: tuple[float, float, float]
    battery_fraction: float | None  # 0..1; None when the vehicle does not report it
    link_ok: bool
    armed: bool
    landed: bool
    collided: bool  # latched since the last reset / pose teleport
    # What the vehicle hit, when it says (AirSim's CollisionInfo: object name and impact point, world
    # NED m); "" when it does not, or nothing was hit.
    collided_with: str = ""
    # How pose x/y were obtained: "measured" (simulator truth, EKF/GPS/VIO) or "dead_reckoned"
    # (integrated commands, e.g. a Tello: drifts; never treat it as ground truth).
    position_source: str = "measured"


@runtime_checkable
class Camera(Protocol):
    def read(self) -> Frame:
        """The newest frame, stamped with its capture time and the vehicle pose at capture."""
        ...


_V = TypeVar("_V", bound="Vehicle")


@runtime_checkable
class Vehicle(Protocol):
    """A vehicle adapter. Adapters subclass this protocol for its `with` support: `with
    open_vehicle(url) as vehicle:` connects on entry and closes on exit, however the block ends."""

    def connect(self) -> None: ...

    @property
    def is_connected(self) -> bool:
        """connect() succeeded and close() has not been called since (the link's health is
        Telemetry.link_ok)."""
        ...

    def arm(self) -> None: ...

    def takeoff(self, altitude_m: float) -> None:
        """Climb to altitude_m above the take-off point and hold; returns when there."""
        ...

    def land(self) -> None: ...

    def hold(self) -> None:
        """Brake and hold the current position."""
        ...

    def send_velocity_body(
        self, forward_m_s: float, right_m_s: float, up_m_s: float, yaw_rate_deg_s: float
    ) -> None:
        """A streaming setpoint: keeps the vehicle moving for a short watchdog time, then it holds."""
        ...

    def emergency_stop(self) -> None:
        """Motors off now, wherever the vehicle is (it falls): the e-stop's `kill` action."""
        ...

    def telemetry(self) -> Telemetry: ...

    def close(self) -> None: ...

    def __enter__(self: _V) -> _V:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# scheme -> factory(url: str) -> Vehicle, from the installed distributions' entry points
_VEHICLES = SchemeRegistry("vehicle", VEHICLES_GROUP)


def vehicle_schemes() -> list[str]:
    return _VEHICLES.schemes()


def open_vehicle(url: str) -> Vehicle:
    """A Vehicle (not yet connected) for a URL such as airsim://127.0.0.1:41451/Drone1."""
    factory = _VEHICLES.factory(url)
    if factory is None:
        scheme = urlsplit(url).scheme
        raise ConfigError(f"vehicle URL {url!r}: unknown scheme {scheme!r}, known: {_VEHICLES.known()}")
    vehicle: Vehicle = factory(url)
    return vehicle
