"""The sensor models in-process: AirSim's Earth formulas and figures, the seeded noise processes, the
update schedule, the IMU / barometer / magnetometer / GPS models and their settings.json parameters."""

from __future__ import annotations

import logging
import math
import re

import numpy as np
import pytest

from common.errors import ConfigError
from common.frames import rotation_from_euler
from sim_bridge.settings_sections import sections_of
from sim_bridge.sim.earth import mag_field_ned_t, pressure_altitude_m, standard_pressure_pa
from sim_bridge.sim.noise import GaussMarkov, RandomWalk, Schedule, normals_at, stream_key
from sim_bridge.sim.sensor_models import BarometerModel, GpsModel, ImuModel, MagnetometerModel, Truth
from sim_bridge.sim.sensor_params import (
    BarometerParams,
    GpsParams,
    ImuParams,
    MagnetometerParams,
    sensor_params,
)

G = 9.80665
TICK_S = 0.02


def at_rest(rotation: np.ndarray | None = None, accel: tuple[float, float, float] = (0, 0, 0)) -> Truth:
    r = np.eye(3) if rotation is None else rotation
    return Truth(np.array([0.0, 0.0, -10.0]), np.zeros(3), np.array(accel, float), r, np.zeros(3))


def test_dipole_field_is_airsims_own_figures() -> None:
    # EarthUtils::getMagField's comment: its dipole model at two points near Seattle (tesla, NED)
    assert mag_field_ned_t(47.637, -122.147, 622) == pytest.approx(
        [2.50394e-05, 3.40771e-06, 3.6567e-05], rel=1e-4
    )
    assert mag_field_ned_t(47.646, -122.134, -378) == pytest.approx(
        [2.5047e-05, 3.41024e-06, 3.65953e-05], rel=1e-4
    )


def test_standard_atmosphere_and_the_altimeter_formula() -> None:
    assert standard_pressure_pa(0.0) == pytest.approx(101325.0)
    assert pressure_altitude_m(101325.0) == pytest.approx(0.0, abs=1e-9)
    p = standard_pressure_pa(122.0)
    assert p == pytest.approx(101325.0 * (1 - 2.25577e-5 * 122.0) ** 5.25588, rel=1e-5)
    # AirSim's altimeter formula is not the exact inverse of its atmosphere: about 5 cm low at 122 m
    assert pressure_altitude_m(p) == pytest.approx(121.947, abs=0.002)


def test_noise_depends_on_the_sample_not_on_the_reads() -> None:
    key = stream_key(7, "Drone1", "imu", "x")
    assert np.array_equal(normals_at(key, 41, 6), normals_at(key, 41, 6))
    assert not np.array_equal(normals_at(key, 41, 6), normals_at(key, 42, 6))
    assert not np.array_equal(normals_at(key, 41, 6), normals_at(stream_key(8, "Drone1", "imu", "x"), 41, 6))
    walked, jumped = RandomWalk(key, np.zeros(3)), RandomWalk(key, np.zeros(3))
    for k in (1, 10, 500, 70000):
        walked.at(k, 0.1)
    assert jumped.at(70000, 0.1) == pytest.approx(walked.value, rel=1e-9, abs=1e-12)


def test_gauss_markov_is_airlibs_recurrence() -> None:
    key, tau, sigma, dt = stream_key(1, "b"), 5.0, 0.3, 0.02
    gm = GaussMarkov(key, tau, sigma, dt)
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(key)))
    a, x = math.exp(-dt / tau), 0.0
    for _ in range(1000):  # GaussianMarkov::update, one step at a time
        x = a * x + (1 - a) * float(gen.standard_normal()) * sigma
    gm.at(3)
    assert gm.at(1000) == pytest.approx(x, rel=1e-9, abs=1e-15)


def test_schedule_is_frequency_limiter_and_delay_line() -> None:
    gps = Schedule(50.0, startup_delay_s=1.0, latency_s=0.2)
    assert gps.shown(0.5) is None  # before StartupDelay: nothing
    assert gps.shown(1.0) == (0, 0.0)  # first update shows the reset's sample (nothing newer is 0.2 s old)
    assert gps.shown(1.19) == (0, 0.0)
    assert gps.shown(1.2) == pytest.approx((1, 1.0))
    assert gps.shown(1.31) == pytest.approx((6, 1.1))
    plain = Schedule(50.0)
    assert plain.shown(0.01) is None
    assert plain.shown(0.02) == pytest.approx((1, 0.02))
    assert plain.shown(0.05) == pytest.approx((2, 0.04))


def test_imu_noise_statistics_and_specific_force() -> None:
    p = ImuParams()
    imu = ImuModel(p, 3, "Drone1", "imu", TICK_S)
    readings = [imu.read(at_rest(), k * TICK_S, True) for k in range(3000)]
    gyro = np.array([r.angular_velocity for r in readings])
    accel = np.array([r.linear_acceleration for r in readings])
    gyro_sigma = 0.3 / 60 * math.pi / 180 / math.sqrt(TICK_S)  # ARW 0.3 deg/sqrt(h) over a 20 ms sample
    accel_sigma = 0.24e-3 * G / math.sqrt(TICK_S)  # VRW 0.24 mg/sqrt(Hz)
    assert gyro.std(axis=0) == pytest.approx([gyro_sigma] * 3, rel=0.08)
    assert accel.std(axis=0) == pytest.approx([accel_sigma] * 3, rel=0.08)
    assert accel.mean(axis=0) == pytest.approx([0.0, 0.0, -G], abs=4 * accel_sigma / math.sqrt(3000))
    ideal = imu.read(at_rest(), 1.0, False)
    assert ideal.linear_acceleration.tolist() == [0.0, 0.0, -G] and ideal.angular_velocity.tolist() == [
        0,
        0,
        0,
    ]
    # a body pitched 0.3 rad nose-up, unaccelerated: the specific force (up) has a forward component
    pitched = imu.read(at_rest(rotation_from_euler(0.0, 0.3, 0.0)), 1.0, False)
    assert pitched.linear_acceleration == pytest.approx(
        [G * math.sin(0.3), 0.0, -G * math.cos(0.3)], abs=1e-12
    )


def test_imu_bias_random_walks_at_the_bias_stability() -> None:
    p = ImuParams(gyro_arw_rad_sqrt_s=0.0, accel_vrw_m_s_sqrt_s=0.0, gyro_bias_stability_rad_s=1e-3)
    t_s = 100.0
    biases = np.array(
        [
            ImuModel(p, seed, "Drone1", "imu", TICK_S).read(at_rest(), t_s, True).angular_velocity
            for seed in range(300)
        ]
    )
    # AirSim's walk: sigma bias_stability / sqrt(tau) * sqrt(dt) per sample -> sqrt(t / tau) * stability
    assert biases.std() == pytest.approx(1e-3 * math.sqrt(t_s / p.gyro_bias_tau_s), rel=0.1)


def test_barometer_noise_drift_and_qnh() -> None:
    baro = BarometerModel(BarometerParams(), 3, "Drone1", "barometer")
    altitude = 132.0
    readings = [baro.read(altitude, at_rest(), k * TICK_S, True) for k in range(1, 3001)]
    assert all(r is not None for r in readings)
    pressures = np.array([r.pressure_pa for r in readings if r is not None])
    assert pressures.std() == pytest.approx(2.7, rel=0.08)  # UncorrelatedNoiseSigma 0.027 mbar
    assert pressures.mean() == pytest.approx(standard_pressure_pa(altitude), abs=0.5)  # the drift is slow
    assert baro.read(altitude, at_rest(), 0.0, True) is None  # before its first 50 Hz update
    ideal = baro.read(altitude, at_rest(), 1.0, False)
    assert ideal is not None and ideal.pressure_pa == standard_pressure_pa(altitude)
    assert ideal.altitude_m == pressure_altitude_m(ideal.pressure_pa)
    high_qnh = BarometerModel(BarometerParams(qnh_hpa=1020.0), 3, "Drone1", "b").read(
        altitude, at_rest(), 1.0, False
    )
    assert high_qnh is not None and high_qnh.pressure_pa == pytest.approx(ideal.pressure_pa + 675.0)
    # the drift: AirLib's Gauss-Markov factor of the pressure, updated at 50 Hz: after t its spread is
    # (1 - a) sigma sqrt((1 - a^2N) / (1 - a^2)), a = exp(-dt / tau) (centimetres over an hour)
    t_s, p = 600.0, BarometerParams(uncorrelated_noise_sigma_pa=0.0)
    factors = []
    for seed in range(300):
        r = BarometerModel(p, seed, "Drone1", "b").read(altitude, at_rest(), t_s, True)
        assert r is not None
        factors.append((r.pressure_pa - ideal.pressure_pa) / standard_pressure_pa(altitude))
    a, n = math.exp(-TICK_S / 3600.0), round(t_s / TICK_S)
    spread = (1 - a) * (0.0365 / 20) * math.sqrt((1 - a ** (2 * n)) / (1 - a * a))
    assert np.std(factors) == pytest.approx(spread, rel=0.12)


def test_magnetometer_rotates_into_the_body_with_noise_bias_and_scale() -> None:
    field = mag_field_ned_t(47.641468, -122.140165, 122.0) * 1e4
    r = rotation_from_euler(0.1, 0.3, 1.0)
    mag = MagnetometerModel(MagnetometerParams(), 3, "Drone1", "magnetometer")
    ideal = mag.read(field, at_rest(r), 1.0, False)
    assert ideal is not None and ideal[1] == pytest.approx(r.T @ field, abs=1e-15)
    noisy = np.array([mag.read(field, at_rest(r), k * TICK_S, True)[1] for k in range(1, 2001)])  # type: ignore[index]
    assert noisy.std(axis=0) == pytest.approx([0.005] * 3, rel=0.1)
    assert noisy.mean(axis=0) == pytest.approx(r.T @ field, abs=0.001)
    biased = MagnetometerModel(
        MagnetometerParams(noise_sigma_gauss=0.0, noise_bias_gauss=0.05, scale_factor=2.0), 3, "D", "m"
    )
    b = biased.read(field, at_rest(r), 1.0, True)
    assert (
        b is not None
        and np.all(np.abs(b[1] - 2.0 * (r.T @ field)) <= 0.05)
        and np.any(b[1] != 2.0 * (r.T @ field))
    )


def test_gps_converges_and_reports_its_fix() -> None:
    gps = GpsModel(GpsParams())
    moving = Truth(
        np.array([10.0, 0.0, -5.0]), np.array([2.0, 0.0, 0.0]), np.zeros(3), np.eye(3), np.zeros(3)
    )
    assert gps.read(moving, 0.5, True) is None  # StartupDelay 1 s
    first = gps.read(moving, 1.0, True)
    assert first is not None and (first.eph_m, first.fix_type) == (100.0, 0)
    r = gps.read(moving, 5.0, True)
    assert r is not None and r.time_s == pytest.approx(4.8)  # UpdateLatency 0.2 s
    assert r.eph_m == pytest.approx(0.1 + 99.9 * math.exp(-4.8 / 0.9))
    assert r.fix_type == 3 and r.position_ned == pytest.approx([9.6, 0.0, -5.0])  # 0.2 s back along v
    fix_at = next(t / 100 for t in range(100, 1000) if gps.read(moving, t / 100, True).fix_type == 3)  # type: ignore[union-attr]
    assert fix_at == pytest.approx(0.2 + 0.9 * math.log(99.9 / 2.9), abs=0.03)  # eph <= EphMin3d = 3 m
    assert gps.read(moving, 30.0, True).eph_m == pytest.approx(0.1, abs=1e-6)  # type: ignore[union-attr]
    ideal = gps.read(moving, 0.0, False)
    assert (
        ideal is not None
        and (ideal.eph_m, ideal.fix_type) == (0.1, 3)
        and ideal.position_ned is moving.position_ned
    )


def test_settings_keys_units_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    imu = sensor_params("imu", {"SensorType": 2, "AngularRandomWalk": 3.0, "AccelBiasStability": 100}, "w")
    assert isinstance(imu, ImuParams)
    assert imu.gyro_arw_rad_sqrt_s == pytest.approx(3.0 / 60 * math.pi / 180)
    assert imu.accel_bias_stability_m_s2 == pytest.approx(100e-6 * G)
    gps = sensor_params("gps", {"EPH_TimeConstant": 2.0, "EphInitial": 25, "StartupDelay": 0}, "w")
    assert isinstance(gps, GpsParams) and (
        gps.eph_time_constant_s,
        gps.eph_initial_m,
        gps.startup_delay_s,
    ) == (2, 25, 0)
    with caplog.at_level(logging.WARNING):
        sensor_params("gps", {"EphTimeConstant": 2.0, "Bogus": 1}, "settings.json: Vehicles.D.Sensors.Gps")
        sensor_params("barometer", {"NoiseSigma": 1}, "w")
    assert "EphTimeConstant: not applied (AirSim reads EPH_TimeConstant" in caplog.text
    assert "ignoring ['Bogus'] (not gps settings)" in caplog.text
    assert "ignoring ['NoiseSigma'] (not barometer settings)" in caplog.text
    for kind, data, message in (
        ("imu", {"AngularRandomWalk": -1}, "AngularRandomWalk -1: must be >= 0"),
        ("imu", {"GyroBiasStabilityTau": 0}, "GyroBiasStabilityTau 0: must be > 0"),
        ("barometer", {"UpdateFrequency": 0}, "UpdateFrequency 0: must be > 0 Hz"),
        ("magnetometer", {"NoiseSigma": "0.1"}, "NoiseSigma: expected a finite number"),
        ("gps", {"EphFinal": float("nan")}, "EphFinal: expected a finite number"),
    ):
        with pytest.raises(ConfigError, match=message):
            sensor_params(kind, data, "w")


def test_default_sensors_vehicle_sensors_and_sim_modes() -> None:
    baro = {"SensorType": 1, "Enabled": True, "UncorrelatedNoiseSigma": 0}
    data = {
        "DefaultSensors": {"Baro": baro, "Imu": {"SensorType": 2, "Enabled": True}},
        "Vehicles": {
            "A": {"Sensors": {"MyImu": {"SensorType": 2, "Enabled": True, "AngularRandomWalk": 1}}},
            "B": {},
        },
    }
    sections = sections_of(data, "SimpleFlight", "s.json")
    # DefaultSensors replace AirSim's built-in list; a vehicle's own IMU replaces the default IMU
    assert sections["A"].sensors == {"Baro": "barometer", "MyImu": "imu"}
    assert sections["B"].sensors == {"Baro": "barometer", "Imu": "imu"}
    a_imu = sections["A"].sensor_params["MyImu"]
    assert isinstance(a_imu, ImuParams) and a_imu.gyro_arw_rad_sqrt_s == pytest.approx(1 / 60 * math.pi / 180)
    b_baro = sections["B"].sensor_params["Baro"]
    assert isinstance(b_baro, BarometerParams) and b_baro.uncorrelated_noise_sigma_pa == 0.0
    plain = sections_of({"Vehicles": {"A": {}}}, "SimpleFlight", "s.json")["A"]
    assert plain.sensors == {
        "barometer": "barometer",
        "gps": "gps",
        "imu": "imu",
        "magnetometer": "magnetometer",
    }
    cv = sections_of({"SimMode": "ComputerVision"}, "ComputerVision", "s.json")["ComputerVision"]
    assert cv.sensors == {}  # AirSim's ComputerVision mode has no default sensors
    with pytest.raises(ConfigError, match=re.escape("DefaultSensors.Baro.PressureFactorTau")):
        sections_of({"DefaultSensors": {"Baro": {"SensorType": 1, "PressureFactorTau": -1}}}, "S", "s.json")
