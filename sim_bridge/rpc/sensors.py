"""AirSim's default multirotor sensors (IMU, barometer, magnetometer, GPS) read off the simulated state.

Message shapes are AirLib's RpcLibAdaptorsBase ImuData, BarometerData, MagnetometerData and GpsData
(the airsim client's attribute names). The physical models are AirLib's (noise-free: the built-in
simulator adds none of AirSim's default sensor noise, drift or GPS convergence, so a reading is the
true value of what the sensor measures):
- IMU: the body orientation, body-frame angular velocity, and the specific force in the body frame
  (acceleration minus gravity, so a drone at rest reads z = -9.81 m/s^2, as AirSim's does);
- barometer: the geodetic altitude, the pressure of the standard atmosphere at it (troposphere
  formula, valid below 11 km) and AirSim's default QNH of 1013.25 hPa;
- magnetometer: AirSim's dipole model of the Earth's field at the vehicle's home geo point (its
  default reference, computed once), rotated into the body frame, in gauss;
- GPS: the geodetic position and NED velocity with a 3D fix and AirSim's converged accuracies
  (eph = epv = 0.1 m), time_utc in microseconds of simulation time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

GRAVITY_M_S2 = 9.80665
AIR_GAS_CONSTANT_J_KG_K = 287.05
SEA_LEVEL_PRESSURE_PA = 101325.0
QNH_HPA = 1013.25  # AirSim's BarometerSimpleParams default
EARTH_RADIUS_M = 6378137.0
GEOPOTENTIAL_RADIUS_KM = 6356.766
MAG_POLE_LAT_DEG, MAG_POLE_LON_DEG = 80.31, -72.62  # AirLib EarthUtils' magnetic pole
MEAN_MAG_FIELD_T = 3.12e-5
GPS_EPH_M = GPS_EPV_M = 0.1  # AirSim's GpsSimpleParams eph_final / epv_final
GNSS_FIX_3D = 3


def standard_atmosphere(altitude_m: float) -> tuple[float, float]:
    """(pressure Pa, temperature K) of the 1976 standard atmosphere at a geometric altitude (below 11 km)."""
    h_km = GEOPOTENTIAL_RADIUS_KM * (altitude_m / 1000.0) / (GEOPOTENTIAL_RADIUS_KM + altitude_m / 1000.0)
    temperature_k = 288.15 - 6.5 * h_km
    return SEA_LEVEL_PRESSURE_PA * (288.15 / temperature_k) ** -5.255877, temperature_k


def standard_pressure_pa(altitude_m: float) -> float:
    return standard_atmosphere(altitude_m)[0]


def dipole_field_ned_t(lat_deg: float, lon_deg: float, alt_m: float) -> np.ndarray:
    """The Earth's field (tesla, NED) of a centred dipole, as AirLib's EarthUtils::getMagField."""
    lat, lon = math.radians(lat_deg), math.radians(lon_deg)
    pole_lat, pole_lon = math.radians(MAG_POLE_LAT_DEG), math.radians(MAG_POLE_LON_DEG)
    mag_colat = math.acos(
        math.sin(lat) * math.sin(pole_lat) + math.cos(lat) * math.cos(pole_lat) * math.cos(lon - pole_lon)
    )
    b = (
        MEAN_MAG_FIELD_T
        * (EARTH_RADIUS_M / (alt_m + EARTH_RADIUS_M)) ** 3
        * math.sqrt(1 + 3 * math.cos(mag_colat) ** 2)
    )
    dec_factor = math.cos(pole_lat) * math.sin(lon - pole_lon) / math.sin(mag_colat)
    dec_factor = max(-1.0, min(1.0, dec_factor))
    if math.cos(mag_colat) > math.sin(pole_lat) * math.sin(lat):
        declination = math.asin(dec_factor)
    else:
        declination = math.pi - math.asin(dec_factor)
    inclination = math.atan(math.tan(math.pi / 2 - mag_colat) * 2)
    h = b * math.cos(inclination)
    return np.array([h * math.cos(declination), h * math.sin(declination), b * math.sin(inclination)])


def body_from_ned(yaw_deg: float, v_ned: np.ndarray) -> np.ndarray:
    """A world NED vector in the body frame of a level vehicle at this yaw."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    return np.array([c * v_ned[0] + s * v_ned[1], -s * v_ned[0] + c * v_ned[1], v_ned[2]])


def _vec3(v: Any) -> dict[str, float]:
    return {"x_val": float(v[0]), "y_val": float(v[1]), "z_val": float(v[2])}


def imu_msg(
    time_ns: int, orientation: dict[str, float], yaw_deg: float, yaw_rate_deg_s: float, accel_ned: np.ndarray
) -> dict[str, Any]:
    specific_force = np.asarray(accel_ned, float) - np.array([0.0, 0.0, GRAVITY_M_S2])
    return {
        "time_stamp": time_ns,
        "orientation": orientation,
        "angular_velocity": _vec3((0.0, 0.0, math.radians(yaw_rate_deg_s))),
        "linear_acceleration": _vec3(body_from_ned(yaw_deg, specific_force)),
    }


def barometer_msg(time_ns: int, altitude_m: float) -> dict[str, Any]:
    return {
        "time_stamp": time_ns,
        "altitude": float(altitude_m),
        "pressure": standard_pressure_pa(altitude_m),
        "qnh": QNH_HPA,
    }


def magnetometer_msg(time_ns: int, home: dict[str, float], yaw_deg: float) -> dict[str, Any]:
    field_gauss = dipole_field_ned_t(home["latitude"], home["longitude"], home["altitude"]) * 1e4
    return {
        "time_stamp": time_ns,
        "magnetic_field_body": _vec3(body_from_ned(yaw_deg, field_gauss)),
        "magnetic_field_covariance": [],  # AirLib leaves it empty too
    }


def gps_msg(time_ns: int, geo: dict[str, float], velocity_ned: np.ndarray) -> dict[str, Any]:
    return {
        "time_stamp": time_ns,
        "gnss": {
            "geo_point": geo,
            "eph": GPS_EPH_M,
            "epv": GPS_EPV_M,
            "velocity": _vec3(velocity_ned),
            "fix_type": GNSS_FIX_3D,
            "time_utc": time_ns // 1000,
        },
        "is_valid": True,
    }
