"""AirSim's sensor models (AirLib/include/sensors/*/…Simple.hpp) over the simulated state, read on demand.

Each model turns the true state at the read instant into what AirSim's sensor of the same parameters
reports, with its noise from sim_bridge.sim.noise (seeded; a function of the simulation time) or,
with `noisy=False`, the true value at the read instant (no noise, bias, drift, scale factor, latency
or startup, and the GPS converged).

- IMU (ImuSimple::updateOutput / addNoise): orientation = the body's; angular velocity = body rates +
  white noise of sigma ARW / sqrt(dt) + a gyro bias that random-walks with sigma
  bias_stability / sqrt(tau) * sqrt(dt) per sample; linear acceleration = the specific force in the
  body frame (R^T (a - g), g = +9.80665 m/s^2 down: a drone at rest reads z = -9.81) + the same with
  VRW and the accelerometer's bias. AirSim samples its IMU every physics tick (3 ms in Unreal); here
  dt is the simulator's tick (20 ms), so a sample's white noise is sqrt(3 / 20) of Unreal's.
- barometer (BarometerSimple::getOutputInternal): the standard atmosphere's pressure at the altitude,
  times (1 + a Gauss-Markov drift factor), plus white noise in Pa; pressure reported with the QNH
  offset, altitude by the altimeter formula from the noisy pressure (sim_bridge.sim.earth).
- magnetometer (MagnetometerSimple::getOutputInternal): the dipole field at the vehicle's geo point
  (its dynamic reference), rotated into the body frame, times ScaleFactor, plus white noise and a
  constant per-axis bias drawn once, uniform in +-NoiseBias; in gauss.
- GPS (GpsSimple::addOutputToDelayLine): the true geo point and NED velocity (AirSim adds no position
  noise), eph / epv converging as first-order filters from *Initial to *Final, fix type 3D at
  eph <= EphMin3d, 2D at <= EphMin2d, else none; nothing valid before StartupDelay.
- distance (DistanceSimple::getOutputInternal): the ray's length plus white noise of 0.2 m.

The barometer, magnetometer, GPS and distance sensor update at UpdateFrequency behind their
StartupDelay and show samples UpdateLatency old (noise.Schedule). A sample's noise is its update's; its
true value is taken at the read instant, moved back to the sample's time along the current velocity and
acceleration for the GPS and the barometer (AirSim stores the sample itself; this simulator keeps no
history, which is what keeps unread sensors free).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from sim_bridge.sim.earth import GRAVITY_M_S2, pressure_altitude_m, standard_pressure_pa
from sim_bridge.sim.noise import EPS_S, GaussMarkov, RandomWalk, Schedule, normals_at, stream_key, uniform_at
from sim_bridge.sim.sensor_params import (
    DISTANCE_NOISE_SIGMA_M,
    DISTANCE_UPDATE_HZ,
    BarometerParams,
    GpsParams,
    ImuParams,
    MagnetometerParams,
)

GRAVITY_NED = np.array([0.0, 0.0, GRAVITY_M_S2])
GNSS_FIX_NONE, GNSS_FIX_2D, GNSS_FIX_3D = 0, 2, 3  # GpsBase::GnssFixType

R = TypeVar("R")


@dataclass(frozen=True)
class Truth:
    """A vehicle's true state at one instant (world NED; rotation: body FRD -> world NED)."""

    position_ned: np.ndarray
    velocity_ned: np.ndarray
    accel_ned: np.ndarray
    rotation: np.ndarray
    rates_body: np.ndarray

    def back(self, dt_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(position, velocity) dt_s earlier, at the current acceleration."""
        a = self.accel_ned
        return self.position_ned - self.velocity_ned * dt_s + 0.5 * a * dt_s**2, self.velocity_ned - a * dt_s


@dataclass(frozen=True)
class ImuReading:
    time_s: float
    angular_velocity: np.ndarray  # body rad/s
    linear_acceleration: np.ndarray  # body m/s^2, specific force


class ImuModel:
    def __init__(self, params: ImuParams, seed: int, vehicle: str, name: str, tick_s: float) -> None:
        self.p = params
        self.tick_s = tick_s
        self._keys = (
            stream_key(seed, vehicle, name, "imu-white"),
            stream_key(seed, vehicle, name, "imu-gyro-bias"),
            stream_key(seed, vehicle, name, "imu-accel-bias"),
        )
        self.reset(0.0)

    def reset(self, t0_s: float) -> None:
        self.t0_s = t0_s
        zero = np.zeros(3)  # turn_on_bias (AirSim: zero, calibrated)
        self._gyro_bias = RandomWalk(self._keys[1], zero)
        self._accel_bias = RandomWalk(self._keys[2], zero)

    def read(self, truth: Truth, now_s: float, noisy: bool) -> ImuReading:
        gyro = np.asarray(truth.rates_body, float)
        accel = truth.rotation.T @ (truth.accel_ned - GRAVITY_NED)  # transformToBodyFrame
        if not noisy:
            return ImuReading(now_s, gyro, accel)
        p = self.p
        k = max(0, math.floor((now_s - self.t0_s) / self.tick_s + EPS_S))
        sqrt_dt = math.sqrt(max(self.tick_s, p.min_sample_time_s))
        n = normals_at(self._keys[0], k, 6)
        gyro_bias = self._gyro_bias.at(
            k, p.gyro_bias_stability_rad_s / math.sqrt(p.gyro_bias_tau_s) * sqrt_dt
        )
        accel_bias = self._accel_bias.at(
            k, p.accel_bias_stability_m_s2 / math.sqrt(p.accel_bias_tau_s) * sqrt_dt
        )
        return ImuReading(
            now_s,
            gyro + n[:3] * (p.gyro_arw_rad_sqrt_s / sqrt_dt) + gyro_bias,
            accel + n[3:] * (p.accel_vrw_m_s_sqrt_s / sqrt_dt) + accel_bias,
        )


class _Scheduled:
    """A frequency-limited sensor: which sample it shows (None before its first update)."""

    schedule: Schedule
    t0_s: float = 0.0

    def reset(self, t0_s: float) -> None:
        self.t0_s = t0_s

    def _sampled(
        self, now_s: float, noisy: bool, ideal: Callable[[], R], sample: Callable[[int, float], R]
    ) -> R | None:
        """`ideal()` when not noisy; else `sample(index, time_s)` of the sample shown at `now_s`
        (None before the first)."""
        if not noisy:
            return ideal()
        shown = self.schedule.shown(now_s - self.t0_s)
        return None if shown is None else sample(shown[0], self.t0_s + shown[1])


@dataclass(frozen=True)
class BarometerReading:
    time_s: float
    altitude_m: float
    pressure_pa: float
    qnh_hpa: float


class BarometerModel(_Scheduled):
    def __init__(self, params: BarometerParams, seed: int, vehicle: str, name: str) -> None:
        self.p = params
        self.schedule = Schedule(params.update_frequency_hz, params.startup_delay_s, params.update_latency_s)
        self._keys = (
            stream_key(seed, vehicle, name, "baro-white"),
            stream_key(seed, vehicle, name, "baro-drift"),
        )
        self.reset(0.0)

    def reset(self, t0_s: float) -> None:
        super().reset(t0_s)
        p = self.p
        self._drift = GaussMarkov(
            self._keys[1], p.pressure_factor_tau_s, p.pressure_factor_sigma, self.schedule.period_s
        )

    def read(self, altitude_m: float, truth: Truth, now_s: float, noisy: bool) -> BarometerReading | None:
        def sample(index: int, time_s: float) -> BarometerReading:
            dt = now_s - time_s  # the sample's altitude: NED z is down
            v_z, a_z = float(truth.velocity_ned[2]), float(truth.accel_ned[2])
            altitude = altitude_m + v_z * dt - 0.5 * a_z * dt * dt
            pressure = standard_pressure_pa(altitude)
            pressure += pressure * self._drift.at(index)  # the drift is updated once per sample
            pressure += float(normals_at(self._keys[0], index, 1)[0]) * self.p.uncorrelated_noise_sigma_pa
            return self._reading(time_s, pressure)

        return self._sampled(
            now_s, noisy, lambda: self._reading(now_s, standard_pressure_pa(altitude_m)), sample
        )

    def _reading(self, time_s: float, pressure_pa: float) -> BarometerReading:
        reported_pa = pressure_pa - 101325.0 + self.p.qnh_hpa * 100.0  # with the QNH offset
        return BarometerReading(time_s, pressure_altitude_m(pressure_pa), reported_pa, self.p.qnh_hpa)


class MagnetometerModel(_Scheduled):
    def __init__(self, params: MagnetometerParams, seed: int, vehicle: str, name: str) -> None:
        self.p = params
        self.schedule = Schedule(params.update_frequency_hz, params.startup_delay_s, params.update_latency_s)
        self._white = stream_key(seed, vehicle, name, "mag-white")
        b = params.noise_bias_gauss  # RandomVectorR(-bias, bias).next(), once at construction
        self.bias = (
            uniform_at(stream_key(seed, vehicle, name, "mag-bias"), 0, 3, -b, b) if b > 0 else np.zeros(3)
        )
        self.reset(0.0)

    def read(
        self, field_ned_gauss: np.ndarray, truth: Truth, now_s: float, noisy: bool
    ) -> tuple[float, np.ndarray] | None:
        body = truth.rotation.T @ np.asarray(field_ned_gauss, float)

        def sample(index: int, time_s: float) -> tuple[float, np.ndarray]:
            noise = normals_at(self._white, index, 3) * self.p.noise_sigma_gauss
            return time_s, body * self.p.scale_factor + noise + self.bias

        return self._sampled(now_s, noisy, lambda: (now_s, body), sample)


@dataclass(frozen=True)
class GpsReading:
    time_s: float
    position_ned: np.ndarray  # world NED, of the sample's instant
    velocity_ned: np.ndarray
    eph_m: float
    epv_m: float
    fix_type: int


class GpsModel(_Scheduled):
    def __init__(self, params: GpsParams) -> None:
        self.p = params
        self.schedule = Schedule(params.update_frequency_hz, params.startup_delay_s, params.update_latency_s)
        self.reset(0.0)

    def accuracy(self, since_reset_s: float) -> tuple[float, float]:
        """(eph, epv) m: FirstOrderFilter from *Initial towards *Final (exact for any step)."""
        p = self.p
        eph = p.eph_final_m + (p.eph_initial_m - p.eph_final_m) * math.exp(
            -since_reset_s / p.eph_time_constant_s
        )
        epv = p.epv_final_m + (p.epv_initial_m - p.epv_final_m) * math.exp(
            -since_reset_s / p.epv_time_constant_s
        )
        return eph, epv

    def fix_type(self, eph_m: float) -> int:
        p = self.p
        return (
            GNSS_FIX_3D
            if eph_m <= p.eph_min_3d_m
            else GNSS_FIX_2D
            if eph_m <= p.eph_min_2d_m
            else GNSS_FIX_NONE
        )

    def read(self, truth: Truth, now_s: float, noisy: bool) -> GpsReading | None:
        def ideal() -> GpsReading:
            eph, epv = self.p.eph_final_m, self.p.epv_final_m
            return GpsReading(now_s, truth.position_ned, truth.velocity_ned, eph, epv, self.fix_type(eph))

        def sample(_index: int, time_s: float) -> GpsReading:
            position, velocity = truth.back(now_s - time_s)
            eph, epv = self.accuracy(time_s - self.t0_s)
            return GpsReading(time_s, position, velocity, eph, epv, self.fix_type(eph))

        return self._sampled(now_s, noisy, ideal, sample)


class DistanceNoiseModel(_Scheduled):
    """DistanceSimple's noise and 50 Hz update (AirSim reads no settings key for either)."""

    def __init__(self, seed: int, vehicle: str, name: str) -> None:
        self.schedule = Schedule(DISTANCE_UPDATE_HZ)
        self._white = stream_key(seed, vehicle, name, "distance-white")
        self.reset(0.0)

    def read(self, distance_m: float, now_s: float, noisy: bool) -> tuple[float, float] | None:
        def sample(index: int, time_s: float) -> tuple[float, float]:
            return time_s, distance_m + float(normals_at(self._white, index, 1)[0]) * DISTANCE_NOISE_SIGMA_M

        return self._sampled(now_s, noisy, lambda: (now_s, distance_m), sample)


__all__ = [
    "BarometerModel",
    "DistanceNoiseModel",
    "GpsModel",
    "ImuModel",
    "MagnetometerModel",
    "Truth",
]
