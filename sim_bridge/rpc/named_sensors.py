"""AirSim's lookup of a vehicle's sensor by name (VehicleApiBase::findSensorByName), for the sensor
kinds a vehicle holds by name from settings.json (lidars, distance sensors)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from common.errors import VehicleError

T = TypeVar("T")


def find_sensor(sensors: Mapping[str, T], name: str, label: str) -> T:
    """The sensor called `name`; "" is the first in name order. A vehicle without one of that name
    answers AirSim's "No LABEL with name NAME exist on vehicle"."""
    found = sensors[min(sensors)] if name == "" and sensors else sensors.get(name)
    if found is None:
        raise VehicleError(f"No {label} with name {name} exist on vehicle")
    return found
