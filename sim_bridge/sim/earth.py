"""The Earth models AirSim's sensors read: the standard atmosphere, the altimeter formula and the dipole
magnetic field, ported from AirLib's EarthUtils (AirLib/include/common/EarthUtils.hpp) with its
constants, so that a noise-free reading here is the number AirSim's own formula gives.
"""

from __future__ import annotations

import math

import numpy as np

GRAVITY_M_S2 = 9.80665  # EarthUtils::Gravity
SEA_LEVEL_PRESSURE_PA = 101325.0  # EarthUtils::SeaLevelPressure
EARTH_RADIUS_M = 6378137.0  # Utils.hpp EARTH_RADIUS (also the geopotential's radius in EarthUtils)
AIR_GAS_CONSTANT_J_KG_K = 287.05
MAG_POLE_LAT_DEG, MAG_POLE_LON_DEG = 80.31, -72.62  # EarthUtils::MagPoleLat / MagPoleLon
MEAN_MAG_FIELD_T = 3.12e-5  # EarthUtils::MeanMagField
TESLA_TO_GAUSS = 1e4
# BarometerSimple's altimeter formula (pressure altitude, feet -> metres)
ALTIMETER_EXPONENT = 0.190284
ALTIMETER_SCALE_M = 145366.45 * 0.3048


def geopotential_km(altitude_m: float) -> float:
    """EarthUtils::getGeopotential: geopotential height (km) of a geometric altitude."""
    radius_km = EARTH_RADIUS_M / 1000.0
    h_km = altitude_m / 1000.0
    return radius_km * h_km / (radius_km + h_km)


def standard_temperature_k(geopot_km: float) -> float:
    """EarthUtils::getStandardTemperature (troposphere up to the mesosphere)."""
    h = geopot_km
    if h <= 11:
        return 288.15 - 6.5 * h
    if h <= 20:
        return 216.65
    if h <= 32:
        return 196.65 + h
    if h <= 47:
        return 228.65 + 2.8 * (h - 32)
    if h <= 51:
        return 270.65
    if h <= 71:
        return 270.65 - 2.8 * (h - 51)
    if h <= 84.85:
        return 214.65 - 2 * (h - 71)
    return 3.0


def _pressure_pa(h: float, t: float) -> float:
    if h <= 11:
        return SEA_LEVEL_PRESSURE_PA * (288.15 / t) ** -5.255877
    if h <= 20:
        return 22632.06 * math.exp(-0.1577 * (h - 11))
    if h <= 32:
        return 5474.889 * (216.65 / t) ** 34.16319
    if h <= 47:
        return 868.0187 * (228.65 / t) ** 12.2011
    if h <= 51:
        return 110.9063 * math.exp(-0.1262 * (h - 47))
    if h <= 71:
        return 66.93887 * (270.65 / t) ** -12.2011
    if h <= 84.85:
        return 3.956420 * (214.65 / t) ** -17.0816
    return 1e-3


def standard_atmosphere(altitude_m: float) -> tuple[float, float]:
    """(pressure Pa, temperature K) at a geometric altitude: EarthUtils::getStandardPressure and
    getStandardTemperature of its geopotential height."""
    h = geopotential_km(altitude_m)
    t = standard_temperature_k(h)
    return _pressure_pa(h, t), t


def standard_pressure_pa(altitude_m: float) -> float:
    return standard_atmosphere(altitude_m)[0]


def pressure_altitude_m(pressure_pa: float) -> float:
    """BarometerSimple's altimeter formula (https://en.wikipedia.org/wiki/Pressure_altitude): the altitude
    the barometer reports for a pressure. It is not the exact inverse of standard_pressure_pa (AirSim's
    own mismatch: about 5 cm low at 122 m)."""
    return (1.0 - (max(pressure_pa, 0.0) / SEA_LEVEL_PRESSURE_PA) ** ALTIMETER_EXPONENT) * ALTIMETER_SCALE_M


def mag_field_ned_t(lat_deg: float, lon_deg: float, alt_m: float) -> np.ndarray:
    """EarthUtils::getMagField: the Earth's field (tesla, NED) of AirSim's dipole model, its formula as
    written there (its magnetic colatitude and declination expressions included)."""
    lat, lon = math.radians(lat_deg), math.radians(lon_deg)
    pole_lat, pole_lon = math.radians(MAG_POLE_LAT_DEG), math.radians(MAG_POLE_LON_DEG)
    radius = alt_m + EARTH_RADIUS_M
    cos_lat, sin_lat = math.cos(lat), math.sin(lat)
    sin_pole, cos_pole = math.sin(pole_lat), math.cos(pole_lat)
    cos_arg = cos_lat * cos_pole + sin_lat * sin_pole * math.cos(lon - pole_lon)
    mag_clat = math.acos(max(-1.0, min(1.0, cos_arg)))
    cos_clat = math.cos(mag_clat)
    field = MEAN_MAG_FIELD_T * (EARTH_RADIUS_M / radius) ** 3 * math.sqrt(1 + 3 * cos_clat * cos_clat)
    dec_factor = cos_pole / math.sin(mag_clat)
    if cos_clat > sin_pole * sin_lat:
        declination = math.asin(max(-1.0, min(1.0, math.sin(lon - pole_lon) * dec_factor)))
    else:
        declination = math.asin(max(-1.0, min(1.0, math.cos(lon - pole_lon) * dec_factor)))
    inclination = math.atan(2.0 / math.tan(mag_clat))
    horizontal = field * math.cos(inclination)
    return np.array(
        [
            horizontal * math.cos(declination),
            horizontal * math.sin(declination),
            field * math.sin(inclination),
        ]
    )


__all__ = [
    "GRAVITY_M_S2",
    "mag_field_ned_t",
    "pressure_altitude_m",
    "standard_atmosphere",
    "standard_pressure_pa",
]
