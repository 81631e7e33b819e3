"""Latitude/longitude ⇄ the drones' world NED metres, about the geographic origin of that frame.

Flat earth about the origin, as the built-in simulator converts (fine over a few kilometres, the
size of any field a fleet flies). The ground station converts an operator's geographic point here
before it sends it: the drones only ever get NED points (common.messages.GoTo)."""

from __future__ import annotations

import math

EARTH_RADIUS_M = 6378137.0  # WGS-84 equatorial radius (the simulator's geo conversion uses it too)
GeoPoint = tuple[float, float, float]  # latitude deg, longitude deg, altitude m (above sea level)


def geo_from_ned(north_m: float, east_m: float, down_m: float, origin: GeoPoint) -> GeoPoint:
    lat0, lon0, alt0 = origin
    lat = lat0 + math.degrees(north_m / EARTH_RADIUS_M)
    lon = lon0 + math.degrees(east_m / (EARTH_RADIUS_M * math.cos(math.radians(lat0))))
    return lat, lon, alt0 - down_m


def ned_from_geo(
    lat_deg: float, lon_deg: float, alt_m: float, origin: GeoPoint
) -> tuple[float, float, float]:
    """Raises ValueError for a point that is not a finite latitude/longitude."""
    if not all(math.isfinite(v) for v in (lat_deg, lon_deg, alt_m)):
        raise ValueError(f"geographic point ({lat_deg}, {lon_deg}, {alt_m}) is not finite")
    if not (-90.0 <= lat_deg <= 90.0 and -180.0 <= lon_deg <= 180.0):
        raise ValueError(f"latitude {lat_deg} / longitude {lon_deg} out of range")
    lat0, lon0, alt0 = origin
    north = math.radians(lat_deg - lat0) * EARTH_RADIUS_M
    east = math.radians(lon_deg - lon0) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
    return north, east, alt0 - alt_m
