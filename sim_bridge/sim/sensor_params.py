"""The parameters of AirSim's IMU, barometer, magnetometer and GPS models and their settings.json keys.

Defaults and keys are AirLib's (AirLib/include/sensors/imu/ImuSimpleParams.hpp,
barometer/BarometerSimpleParams.hpp, magnetometer/MagnetometerSimpleParams.hpp,
gps/GpsSimpleParams.hpp), each `initializeFromSettings` read key for key with its unit conversion.
Values are kept here in SI units (the field names say which). A sensor entry's other keys are
reported (log warning) and not applied; a key AirSim reads with a wrong value (not a finite number,
a negative noise, a non-positive time constant or frequency) is an error naming it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from common.errors import ConfigError
from sim_bridge.sim.earth import GRAVITY_M_S2, SEA_LEVEL_PRESSURE_PA

log = logging.getLogger(__name__)

DEG = math.pi / 180.0
COMMON_KEYS = {"SensorType", "Enabled"}
DISTANCE_NOISE_SIGMA_M = 0.002 * 100  # DistanceSimpleParams::uncorrelated_noise_sigma (no settings key)
DISTANCE_UPDATE_HZ = 50.0  # DistanceSimpleParams::update_frequency (no settings key)


@dataclass(frozen=True)
class ImuParams:
    """ImuSimpleParams: an MPU-6000's figures. White noise sigma per sample = random walk / sqrt(dt)."""

    gyro_arw_rad_sqrt_s: float = 0.30 / math.sqrt(3600.0) * DEG  # AngularRandomWalk 0.3 deg/sqrt(h)
    gyro_bias_tau_s: float = 500.0  # GyroBiasStabilityTau
    gyro_bias_stability_rad_s: float = 4.6 / 3600.0 * DEG  # GyroBiasStability 4.6 deg/h
    accel_vrw_m_s_sqrt_s: float = 0.24 * GRAVITY_M_S2 / 1.0e3  # VelocityRandomWalk 0.24 mg/sqrt(Hz)
    accel_bias_tau_s: float = 800.0  # AccelBiasStabilityTau
    accel_bias_stability_m_s2: float = 36.0e-6 * GRAVITY_M_S2  # AccelBiasStability 36 ug
    min_sample_time_s: float = 1.0 / 1000.0  # the IMU's internal rate (no settings key)
    # turn-on biases: zero ("assume calibration is done"); AirSim reads no settings key for them


@dataclass(frozen=True)
class BarometerParams:
    """BarometerSimpleParams: an MS5611's noise and a slow Gauss-Markov drift of the pressure."""

    qnh_hpa: float = SEA_LEVEL_PRESSURE_PA / 100.0  # no settings key in AirSim 1.8.1
    pressure_factor_sigma: float = 0.0365 / 20  # PressureFactorSigma (fraction of the pressure)
    pressure_factor_tau_s: float = 3600.0  # PressureFactorTau
    uncorrelated_noise_sigma_pa: float = 0.027 * 100  # UncorrelatedNoiseSigma (Pa, about 0.2 m)
    update_latency_s: float = 0.0  # UpdateLatency
    update_frequency_hz: float = 50.0  # UpdateFrequency
    startup_delay_s: float = 0.0  # StartupDelay


@dataclass(frozen=True)
class MagnetometerParams:
    """MagnetometerSimpleParams: the dipole model at the vehicle's geo point (its dynamic reference)."""

    noise_sigma_gauss: float = 0.005  # NoiseSigma (5 mgauss, per axis)
    scale_factor: float = 1.0  # ScaleFactor
    noise_bias_gauss: float = 0.0  # NoiseBias: each axis' constant bias, uniform in +-NoiseBias
    update_latency_s: float = 0.0  # UpdateLatency
    update_frequency_hz: float = 50.0  # UpdateFrequency
    startup_delay_s: float = 0.0  # StartupDelay


@dataclass(frozen=True)
class GpsParams:
    """GpsSimpleParams: eph/epv converge from *Initial to *Final by a first-order filter; no position
    noise (AirSim's GPS reports the true geo point, late by UpdateLatency)."""

    eph_time_constant_s: float = 0.9  # EPH_TimeConstant
    epv_time_constant_s: float = 0.9  # EPV_TimeConstant
    eph_initial_m: float = 100.0  # EphInitial
    epv_initial_m: float = 100.0  # EpvInitial
    eph_final_m: float = 0.1  # EphFinal
    epv_final_m: float = 0.1  # EpvFinal
    eph_min_3d_m: float = 3.0  # EphMin3d: a 3D fix at eph <= this
    eph_min_2d_m: float = 4.0  # EphMin2d: a 2D fix at eph <= this
    update_latency_s: float = 0.2  # UpdateLatency
    update_frequency_hz: float = 50.0  # UpdateFrequency
    startup_delay_s: float = 1.0  # StartupDelay


SensorParams = ImuParams | BarometerParams | MagnetometerParams | GpsParams

# settings key -> (field, conversion to SI, rule) per sensor type; rules: "noise" >= 0, "tau" > 0,
# "rate" > 0, "any" finite
_Key = tuple[str, float, str]
_SCHEDULE: dict[str, _Key] = {
    "UpdateLatency": ("update_latency_s", 1.0, "noise"),
    "UpdateFrequency": ("update_frequency_hz", 1.0, "rate"),
    "StartupDelay": ("startup_delay_s", 1.0, "noise"),
}
KEYS: dict[str, dict[str, _Key]] = {
    "imu": {
        "AngularRandomWalk": ("gyro_arw_rad_sqrt_s", DEG / math.sqrt(3600.0), "noise"),
        "GyroBiasStabilityTau": ("gyro_bias_tau_s", 1.0, "tau"),
        "GyroBiasStability": ("gyro_bias_stability_rad_s", DEG / 3600.0, "noise"),
        "VelocityRandomWalk": ("accel_vrw_m_s_sqrt_s", GRAVITY_M_S2 / 1.0e3, "noise"),
        "AccelBiasStabilityTau": ("accel_bias_tau_s", 1.0, "tau"),
        "AccelBiasStability": ("accel_bias_stability_m_s2", 1.0e-6 * GRAVITY_M_S2, "noise"),
    },
    "barometer": {
        "PressureFactorSigma": ("pressure_factor_sigma", 1.0, "noise"),
        "PressureFactorTau": ("pressure_factor_tau_s", 1.0, "tau"),
        "UncorrelatedNoiseSigma": ("uncorrelated_noise_sigma_pa", 1.0, "noise"),
        **_SCHEDULE,
    },
    "magnetometer": {
        "NoiseSigma": ("noise_sigma_gauss", 1.0, "noise"),
        "ScaleFactor": ("scale_factor", 1.0, "any"),
        "NoiseBias": ("noise_bias_gauss", 1.0, "noise"),
        **_SCHEDULE,
    },
    "gps": {
        "EPH_TimeConstant": ("eph_time_constant_s", 1.0, "tau"),
        "EPV_TimeConstant": ("epv_time_constant_s", 1.0, "tau"),
        "EphInitial": ("eph_initial_m", 1.0, "noise"),
        "EpvInitial": ("epv_initial_m", 1.0, "noise"),
        "EphFinal": ("eph_final_m", 1.0, "noise"),
        "EpvFinal": ("epv_final_m", 1.0, "noise"),
        "EphMin3d": ("eph_min_3d_m", 1.0, "noise"),
        "EphMin2d": ("eph_min_2d_m", 1.0, "noise"),
        **_SCHEDULE,
    },
}
# AirSim's sensors page spells these two keys this way; GpsSimpleParams reads EPH_/EPV_TimeConstant, so
# AirSim itself ignores them: reported, not applied, naming the key it reads
DOC_ONLY_KEYS = {"gps": {"EphTimeConstant": "EPH_TimeConstant", "EpvTimeConstant": "EPV_TimeConstant"}}
DEFAULTS: dict[str, SensorParams] = {
    "imu": ImuParams(),
    "barometer": BarometerParams(),
    "magnetometer": MagnetometerParams(),
    "gps": GpsParams(),
}
_RULES = {
    "noise": (lambda v: v >= 0, "must be >= 0"),
    "tau": (lambda v: v > 0, "must be > 0"),
    "rate": (lambda v: v > 0, "must be > 0 Hz"),
    "any": (lambda v: True, ""),
}


def sensor_params(kind: str, data: dict[str, Any], where: str) -> SensorParams:
    """The `kind` sensor's parameters from its settings.json entry (AirSim's keys and units)."""
    keys = KEYS[kind]
    for key, applied in DOC_ONLY_KEYS.get(kind, {}).items():
        if key in data:
            log.warning(
                "settings %s.%s: not applied (AirSim reads %s; the key as its sensors page spells it is "
                "ignored by AirSim too)",
                where,
                key,
                applied,
            )
    unknown = set(data) - COMMON_KEYS - set(keys) - set(DOC_ONLY_KEYS.get(kind, {}))
    if unknown:
        log.warning("settings %s: ignoring %s (not %s settings)", where, sorted(unknown), kind)
    values: dict[str, float] = {}
    for key, (field_name, scale, rule) in keys.items():
        if key not in data:
            continue
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"settings {where}.{key}: expected a finite number, got {value!r}")
        ok, text = _RULES[rule]
        if not ok(value):
            raise ConfigError(f"settings {where}.{key} {value}: {text}")
        values[field_name] = float(value) * scale
    return type(DEFAULTS[kind])(**values)


__all__ = [
    "DEFAULTS",
    "BarometerParams",
    "GpsParams",
    "ImuParams",
    "MagnetometerParams",
    "SensorParams",
    "sensor_params",
]
