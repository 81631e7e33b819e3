"""AirSim's sensor noise models and the noise-off switch, through the real airsim and cosysairsim clients
against real `dronecats sim` processes (paused, stepped with simContinueForTime): noise statistics of
a hovering drone, seeded reproducibility, settings.json parameters, GPS convergence, and with
`--sensor-noise off` the exact IMU and magnetometer of a pitched body."""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest

from tests.support.processes import sim_server

airsim = pytest.importorskip("airsim")
cosys = pytest.importorskip("cosysairsim")
pytest.importorskip("pybullet")

from sim_bridge.sim.earth import mag_field_ned_t, pressure_altitude_m, standard_pressure_pa  # noqa: E402
from sim_bridge.sim.sensor_models import ImuModel, Truth  # noqa: E402
from sim_bridge.sim.sensor_params import ImuParams  # noqa: E402

G = 9.80665
SEED = 5
TICK_S = 0.02  # the simulator's tick: the IMU's sample time
GYRO_SIGMA = 0.3 / 60 * math.pi / 180 / math.sqrt(TICK_S)  # ImuSimpleParams' ARW over one sample
ACCEL_SIGMA = 0.24e-3 * G / math.sqrt(TICK_S)  # its VRW
SENSORS = {
    "Imu": {"SensorType": 2, "Enabled": True},  # AirSim's default parameters
    "Imu10x": {"SensorType": 2, "Enabled": True, "AngularRandomWalk": 3.0, "VelocityRandomWalk": 2.4},
    "Range": {"SensorType": 5, "Enabled": True, "Pitch": -90, "MaxDistance": 30},  # looking down
    "Gps": {"SensorType": 3, "Enabled": True, "Bogus": 1},  # an unknown key: reported
}


def settings_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("settings") / "settings.json"
    vehicle = {"VehicleType": "SimpleFlight", "X": -10.0, "Y": 2.0, "Z": 0.0, "Sensors": SENSORS}
    path.write_text(json.dumps({"SettingsVersion": 1.2, "ClockSpeed": 20, "Vehicles": {"Drone1": vehicle}}))
    return str(path)


@contextlib.contextmanager
def blocks_server(tmp_path_factory: pytest.TempPathFactory, *extra: str, startup: list[str] | None = None):
    """A paused blocks world with this file's settings.json, and a connected airsim client."""
    args = ("--scene", "blocks", "--settings", settings_file(tmp_path_factory), "--paused", *extra)
    with sim_server(*args, startup=startup) as port:
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        c.confirmConnection()
        yield c, port


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory):
    startup: list[str] = []
    with blocks_server(tmp_path_factory, "--seed", str(SEED), startup=startup) as (c, port):
        yield c, port, startup


@pytest.fixture(scope="module")
def ideal(tmp_path_factory: pytest.TempPathFactory):
    with blocks_server(tmp_path_factory, "--sensor-noise", "off") as (c, port):
        yield c, port


def vec(v) -> np.ndarray:
    return np.array([v.x_val, v.y_val, v.z_val])


def rotation(q) -> np.ndarray:
    w, x, y, z = q.w_val, q.x_val, q.y_val, q.z_val
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def take_off(c) -> None:
    c.enableApiControl(True)
    c.armDisarm(True)
    f = c.takeoffAsync()
    c.simContinueForTime(6.0)
    assert f.join() is None
    c.hoverAsync().join()
    c.simContinueForTime(1.0)


def test_unknown_sensor_keys_are_reported(noisy) -> None:
    _, _, startup = noisy
    assert any("Sensors.Gps: ignoring ['Bogus'] (not gps settings)" in line for line in startup), startup


def test_noise_is_seeded_and_restarts_with_reset(noisy) -> None:
    """On the ground at rest the true IMU reading is known exactly: the server's noise must be the
    model's for seed 5, sensor Drone1/Imu, and a reset must give the same readings again."""
    c, _, _ = noisy
    runs = []
    for _ in range(2):
        c.reset()
        t0 = c.getImuData("Imu").time_stamp  # the reset's instant: sample 0
        readings = []
        for _ in range(5):
            c.simContinueForTime(TICK_S)
            imu = c.getImuData("Imu")
            readings.append((imu.time_stamp, *vec(imu.angular_velocity), *vec(imu.linear_acceleration)))
        runs.append((t0, readings))
    (t0, first), (t1, second) = runs
    assert [r[1:] for r in first] == [r[1:] for r in second]  # reproducible, sample for sample
    model = ImuModel(ImuParams(), SEED, "Drone1", "Imu", TICK_S)
    model.reset(t1 / 1e9)
    rest = Truth(np.zeros(3), np.zeros(3), np.zeros(3), np.eye(3), np.zeros(3))
    for ts, *values in second:
        expected = model.read(rest, ts / 1e9, True)
        assert values == pytest.approx([*expected.angular_velocity, *expected.linear_acceleration], abs=1e-12)
    # two IMUs of one vehicle draw from their own streams
    other = c.getImuData("Imu10x").angular_velocity
    assert vec(other) / 10 != pytest.approx(np.array(second[-1][1:4]), abs=1e-9)


def test_gps_is_invalid_until_its_startup_delay_then_converges(noisy) -> None:
    c, port, _ = noisy
    c.reset()
    t0 = c.getImuData().time_stamp
    gps = c.getGpsData()
    assert gps.is_valid is False and gps.gnss.fix_type == 0 and gps.time_stamp == 0  # StartupDelay 1 s
    seen = []
    # the first update (at 1 s) shows the sample taken at the reset, nothing newer being 0.2 s old yet;
    # then samples UpdateLatency (0.2 s) old
    for step_s, lag_s in ((1.0, 1.0), (1.0, 0.2), (2.0, 0.2), (6.0, 0.2)):
        c.simContinueForTime(step_s)
        now = c.getImuData().time_stamp
        gps = c.getGpsData()
        assert gps.is_valid is True
        age_s = (gps.time_stamp - t0) / 1e9
        assert (now - gps.time_stamp) / 1e9 == pytest.approx(lag_s, abs=0.021)
        expected = 0.1 + 99.9 * math.exp(-age_s / 0.9)  # EphInitial 100 -> EphFinal 0.1, 0.9 s
        assert (gps.gnss.eph, gps.gnss.epv) == pytest.approx((expected, expected), rel=1e-4)
        seen.append((round(gps.gnss.eph, 2), gps.gnss.fix_type))
    assert [fix for _, fix in seen] == [0, 0, 3, 3]  # 3D at eph <= EphMin3d (3 m)
    assert seen[-1][0] == pytest.approx(0.1, abs=0.01)
    cosys_gps = cosys.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60).getGpsData("Gps")
    assert cosys_gps.gnss.eph == pytest.approx(gps.gnss.eph) and cosys_gps.gnss.fix_type == 3


def test_hovering_noise_statistics_match_the_models(noisy) -> None:
    c, port, _ = noisy
    take_off(c)
    rows = []
    for _ in range(250):
        c.simContinueForTime(TICK_S)
        imu, imu10 = c.getImuData("Imu"), c.getImuData("Imu10x")
        rows.append(
            (
                *vec(imu.angular_velocity),
                *vec(imu.linear_acceleration),
                *vec(imu10.angular_velocity),
                *vec(imu10.linear_acceleration),
                c.getBarometerData().pressure,
                *vec(c.getMagnetometerData().magnetic_field_body),
                c.getDistanceSensorData("Range").distance,
            )
        )
    a = np.array(rows)
    assert a[:, 0:3].std(axis=0) == pytest.approx([GYRO_SIGMA] * 3, rel=0.2)
    assert a[:, 3:6].std(axis=0) == pytest.approx([ACCEL_SIGMA] * 3, rel=0.2)
    assert a[:, 5].mean() == pytest.approx(-G, abs=0.01)  # the accelerometer's -g at hover
    assert a[:, 6:9].std(axis=0) == pytest.approx([10 * GYRO_SIGMA] * 3, rel=0.2)  # AngularRandomWalk 3
    assert a[:, 9:12].std(axis=0) == pytest.approx([10 * ACCEL_SIGMA] * 3, rel=0.2)  # VelocityRandomWalk 2.4
    assert a[:, 12].std() == pytest.approx(2.7, rel=0.2)  # UncorrelatedNoiseSigma 2.7 Pa
    assert a[:, 13:16].std(axis=0) == pytest.approx([0.005] * 3, rel=0.2)  # NoiseSigma 5 mgauss
    height_m = -c.simGetVehiclePose().position.z_val
    assert a[:, 16].std() == pytest.approx(0.2, rel=0.2)  # DistanceSimple's 0.2 m
    assert a[:, 16].mean() == pytest.approx(height_m, abs=0.06)
    imu = cosys.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60).getImuData("Imu")
    assert imu.linear_acceleration.z_val == pytest.approx(-G, abs=0.1) and imu.orientation.w_val > 0.99


def test_ideal_sensors_are_exact_at_rest(ideal) -> None:
    c, _ = ideal
    imu = c.getImuData()
    assert vec(imu.linear_acceleration).tolist() == [0.0, 0.0, -G] and vec(imu.angular_velocity).tolist() == [
        0,
        0,
        0,
    ]
    gps = c.getGpsData("Gps")
    assert gps.is_valid is True and (gps.gnss.eph, gps.gnss.epv, gps.gnss.fix_type) == (0.1, 0.1, 3)
    geo = gps.gnss.geo_point
    baro = c.getBarometerData()
    assert baro.pressure == pytest.approx(standard_pressure_pa(geo.altitude), rel=1e-12)
    assert baro.altitude == pytest.approx(pressure_altitude_m(baro.pressure), abs=1e-9)
    field = mag_field_ned_t(geo.latitude, geo.longitude, geo.altitude) * 1e4
    assert vec(c.getMagnetometerData().magnetic_field_body) == pytest.approx(field, abs=1e-9)  # level, yaw 0
    assert c.getDistanceSensorData("Range").distance == pytest.approx(30.0)  # on the ground: nothing below


def test_a_pitched_body_shows_in_the_imu_and_the_magnetometer(ideal) -> None:
    c, port = ideal
    take_off(c)
    move = c.moveByRollPitchYawZAsync(0.1, 0.3, 0.5, -10.0, 3.0)
    c.simContinueForTime(1.5)
    try:
        k = c.simGetGroundTruthKinematics()
        imu = c.getImuData()
        r = rotation(imu.orientation)
        pitch, roll, _ = airsim.to_eularian_angles(imu.orientation)
        assert (roll, pitch) == pytest.approx((0.1, -0.3), abs=0.02)  # the client sends -pitch
        for part in ("w_val", "x_val", "y_val", "z_val"):
            assert getattr(imu.orientation, part) == pytest.approx(getattr(k.orientation, part), abs=1e-12)
        assert vec(imu.angular_velocity) == pytest.approx(vec(k.angular_velocity), abs=1e-12)
        # the specific force in the body frame: R^T (a - g), gravity as an accelerometer feels it
        specific = r.T @ (vec(k.linear_acceleration) - np.array([0.0, 0.0, G]))
        assert vec(imu.linear_acceleration) == pytest.approx(specific, abs=1e-9)
        # the thrust, along the body's -z axis, is what the accelerometer feels (drag aside); in the
        # world frame that force leans with the body and pushes it sideways
        force = vec(imu.linear_acceleration)
        assert np.hypot(force[0], force[1]) < 0.1 * abs(force[2])
        sideways = np.hypot(*(r @ force)[:2])
        assert sideways == pytest.approx(abs(force[2]) * math.sin(math.acos(r[2, 2])), rel=0.1)
        assert sideways > 2.0
        geo = c.getGpsData("Gps").gnss.geo_point
        field = mag_field_ned_t(geo.latitude, geo.longitude, geo.altitude) * 1e4
        mag = vec(c.getMagnetometerData().magnetic_field_body)
        assert mag == pytest.approx(r.T @ field, abs=1e-6)
        _, _, yaw = airsim.to_eularian_angles(imu.orientation)
        level = rotation(airsim.to_quaternion(0.0, 0.0, yaw))
        assert np.linalg.norm(mag - level.T @ field) > 0.05  # not a yaw-only rotation
        same = cosys.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60).getMagnetometerData()
        assert vec(same.magnetic_field_body) == pytest.approx(mag, abs=1e-12)
    finally:
        c.cancelLastTask()
        move.join()
