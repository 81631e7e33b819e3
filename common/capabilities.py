"""Optional capabilities, each its own small Protocol: what some objects can do beyond their interface
(common.interfaces' Vehicle and Camera, models.pilot's Pilot, models.backends' ModelBackend, the
ground station's structures).

An optional capability is decided once, with `isinstance` against its Protocol, where the object is
assembled (onboard.assembly builds a vehicle's VehicleCapabilities) or at the one place that acts on
it; never probed by attribute name. Test doubles need no inheritance: having the member is enough
(runtime_checkable checks that the member exists, as the probes it replaces did, not its type).

`common` imports nothing of ours but `common`, so the members are typed with common types or, where
the type lives in a package above (a vehicle's FaultReporter, a structure's map image), with the
narrow structural part the consumer needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the module stays free to import from anywhere, at no cost
    import numpy as np

    from common.interfaces import Camera

# ---- vehicles -------------------------------------------------------------------------------------


@runtime_checkable
class CameraVehicle(Protocol):
    """A vehicle that carries its own camera (airsim://, tello://, mavlink:// with a camera)."""

    def camera(self) -> Camera: ...


@runtime_checkable
class FaultSubscriptions(Protocol):
    """The part of onboard.vehicles.faults.FaultReporter a runtime needs: a sink for every fault (the
    sink's argument is that module's VehicleFault, a type `common` cannot name: Any, so that both
    FaultReporter and a sink of VehicleFault fit)."""

    def subscribe(self, sink: Callable[[Any], None]) -> None: ...


@runtime_checkable
class FaultReportingVehicle(Protocol):
    """A vehicle that reports its faults (tello://, mavlink://: autopilot failsafe, RC takeover, stale
    video, link loss, refused commands); onboard.vehicles.faults routes them into the runtime."""

    faults: FaultSubscriptions


@runtime_checkable
class GroundLinkVehicle(Protocol):
    """A vehicle that is told whether the ground station's link is up (mavlink://: it sends GCS
    heartbeats on the station's behalf only while it is)."""

    def set_ground_link(self, up: bool) -> None: ...


@dataclass(frozen=True)
class VehicleCapabilities:
    """What one vehicle can do beyond the Vehicle interface, decided once when a flight is assembled:
    each field is the vehicle (or its part) seen through that capability, None when it has not got it."""

    camera: CameraVehicle | None  # it carries a camera; None: the vehicle is its own camera
    faults: FaultSubscriptions | None  # None: it reports no faults (simulated vehicles)
    ground_link: GroundLinkVehicle | None  # it is told the ground-station link's state


def vehicle_capabilities(vehicle: object) -> VehicleCapabilities:
    """Decided on the vehicle as it is; makes nothing (its camera() is not called here)."""
    return VehicleCapabilities(
        camera=vehicle if isinstance(vehicle, CameraVehicle) else None,
        faults=vehicle.faults if isinstance(vehicle, FaultReportingVehicle) else None,
        ground_link=vehicle if isinstance(vehicle, GroundLinkVehicle) else None,
    )


# ---- cameras --------------------------------------------------------------------------------------


@runtime_checkable
class FrameAgeCamera(Protocol):
    """A camera that knows how old its frames may be (a video stream's own bound, e.g. a Tello's)."""

    max_frame_age_s: float


# ---- pilots and model backends --------------------------------------------------------------------


@runtime_checkable
class Loadable(Protocol):
    """A backend that loads its model in-process on `load()` (hf://, vllm://, trtllm://); the others
    load on first use or have nothing to load."""

    def load(self) -> None: ...


@runtime_checkable
class RandomWeights(Protocol):
    """A backend that may run an architecture with random weights (hf://...?random_init=1): its
    replies time the model, they are not a trained pilot's."""

    random_init: bool


@runtime_checkable
class Closeable(Protocol):
    """Something that holds resources until `close()` (a commander's backend, a stream)."""

    def close(self) -> None: ...


# ---- ground-station structures --------------------------------------------------------------------


@runtime_checkable
class TakesMapImage(Protocol):
    """A structure whose model commander reads the operator's map: `map_image_source()` gives the
    newest map rendered on the GUI thread (a BGR image), or None when there is no model to read it."""

    map_image_source: Callable[[], np.ndarray | None] | None


@runtime_checkable
class TakesMarkedTargets(Protocol):
    """A structure that plans with the operator's map marks (north, east metres in the world frame)."""

    marked_targets: list[tuple[float, float]]


# ---- errors ---------------------------------------------------------------------------------------


@runtime_checkable
class DescribesField(Protocol):
    """A config error that names its field by a dotted path once the caller says which section it was
    in (onboard.config_limits' range errors, raised through msgspec)."""

    def describe(self, section: str = "") -> str: ...
