"""getImuData, getBarometerData, getMagnetometerData, getGpsData: each vehicle's sensors and their messages.

Message shapes are AirLib's RpcLibAdaptorsBase ImuData, BarometerData, MagnetometerData and GpsData
(the airsim client's attribute names); the models, with AirSim's default noise and settings.json's
parameters, are sim_bridge.sim.sensor_models. Time stamps are nanoseconds of simulation time (GPS
time_utc microseconds of it).

A vehicle's sensors are AirSim's: IMU "imu", magnetometer "magnetometer", GPS "gps" and barometer
"barometer" unless settings.json's Sensors (or DefaultSensors) name others (sim_bridge.settings_sections);
"" picks the first of the type in name order, an unknown name answers VehicleApiBase's
"No IMU with name NAME exist on vehicle". Noise is on by default and seeded by the simulator's seed
(`dronecats sim --seed`); `dronecats sim --sensor-noise off` (set_noise(False)) makes every sensor
ideal: the true value at the read instant. A reset (AirSim's `reset`) resets the sensors: the GPS
converges again, the IMU's biases start from zero, the noise streams restart.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from common.errors import VehicleError
from common.frames import euler_to_quaternion
from sim_bridge.sim.attitude import body_rotation_ned
from sim_bridge.sim.earth import (
    AIR_GAS_CONSTANT_J_KG_K,
    GRAVITY_M_S2,
    TESLA_TO_GAUSS,
    mag_field_ned_t,
    standard_atmosphere,
    standard_pressure_pa,
)
from sim_bridge.sim.sensor_models import (
    BarometerModel,
    DistanceNoiseModel,
    GpsModel,
    ImuModel,
    MagnetometerModel,
    Truth,
)
from sim_bridge.sim.sensor_params import (
    DEFAULTS,
    BarometerParams,
    GpsParams,
    ImuParams,
    MagnetometerParams,
    SensorParams,
)
from sim_bridge.sim.world import World

# AirSim's default multirotor sensors (AirSimSettings::createDefaultSensorSettings): name -> type
DEFAULT_SENSORS = {"imu": "imu", "magnetometer": "magnetometer", "gps": "gps", "barometer": "barometer"}
LABELS = {"imu": "IMU", "barometer": "barometer", "magnetometer": "magnetometer", "gps": "gps"}
GeoFn = Callable[[float, float, float], dict[str, float]]  # world NED -> GeoPoint message
Model = ImuModel | BarometerModel | MagnetometerModel | GpsModel | DistanceNoiseModel
M = TypeVar("M", ImuModel, BarometerModel, MagnetometerModel, GpsModel, DistanceNoiseModel)
KINDS: dict[type[Model], str] = {
    ImuModel: "imu",
    BarometerModel: "barometer",
    MagnetometerModel: "magnetometer",
    GpsModel: "gps",
    DistanceNoiseModel: "distance",
}


def _vec3(v: Sequence[float] | np.ndarray) -> dict[str, float]:
    return {"x_val": float(v[0]), "y_val": float(v[1]), "z_val": float(v[2])}


def _ns(time_s: float) -> int:
    return round(time_s * 1e9)


class SensorService:
    """Every vehicle's IMU, barometer, magnetometer and GPS, and the distance sensors' noise."""

    def __init__(self, world: World, geo: GeoFn) -> None:
        self.world = world
        self._geo = geo
        self.noise = True
        self._names: dict[str, dict[str, str]] = {}  # vehicle -> sensor name -> type (settings)
        self._params: dict[str, dict[str, SensorParams]] = {}
        self._models: dict[tuple[str, str], Model] = {}
        self._lock = threading.Lock()
        self._reset_s = world.clock.now()
        self._vehicles_at_reset = set(world.vehicles)

    # ------------------------------------------------------------ configuration
    def set_noise(self, enabled: bool) -> None:
        """False: ideal sensors (the true value at the read instant); True: AirSim's noise models."""
        self.noise = bool(enabled)

    def configure(self, vehicle: str, sensors: dict[str, str], params: dict[str, SensorParams]) -> None:
        """settings.json's sensors of a vehicle: name -> type (AirSim's defaults included) and the
        parameters of those that set any."""
        with self._lock:
            self._names[vehicle] = dict(sensors)
            self._params[vehicle] = dict(params)
            for key in [k for k in self._models if k[0] == vehicle]:
                del self._models[key]

    def reset(self) -> None:
        with self._lock:
            self._reset_s = self.world.clock.now()
            self._vehicles_at_reset = set(self.world.vehicles)
            for model in self._models.values():
                model.reset(self._reset_s)

    # ------------------------------------------------------------ lookup
    def _resolve(self, kind: str, sensor_name: str, vehicle: str) -> str:
        """The sensor's name (VehicleApiBase::findSensorByName: "" is the first of its type)."""
        name = str(sensor_name)
        named = self._names.get(vehicle, DEFAULT_SENSORS)
        of_kind = sorted(n for n, t in named.items() if t == kind)
        if name == "" and of_kind:
            return of_kind[0]
        if name in of_kind:
            return name
        raise VehicleError(f"No {LABELS[kind]} with name {name} exist on vehicle")

    def _model(self, vehicle: str, name: str, model_type: type[M], now_s: float) -> M:
        """The vehicle's sensor `name` of this model type, made on its first reading."""
        kind = KINDS[model_type]
        key = (vehicle, name if kind != "distance" else "distance:" + name)
        model = self._models.get(key)
        if model is None:
            seed = int(self.world.seed)
            params = self._params.get(vehicle, {}).get(name, DEFAULTS.get(kind))
            if kind == "imu":
                assert isinstance(params, ImuParams)
                model = ImuModel(params, seed, vehicle, name, float(self.world.loop.tick_s))
            elif kind == "barometer":
                assert isinstance(params, BarometerParams)
                model = BarometerModel(params, seed, vehicle, name)
            elif kind == "magnetometer":
                assert isinstance(params, MagnetometerParams)
                model = MagnetometerModel(params, seed, vehicle, name)
            elif kind == "gps":
                assert isinstance(params, GpsParams)
                model = GpsModel(params)
            else:
                model = DistanceNoiseModel(seed, vehicle, name)
            # a vehicle the last reset knew started its sensors then; one added since (simAddVehicle)
            # starts them at its first reading
            model.reset(self._reset_s if vehicle in self._vehicles_at_reset else now_s)
            self._models[key] = model
        assert isinstance(model, model_type)  # a key's kind is its type's
        return model

    def _truth(self, vehicle_name: str) -> tuple[str, Truth, float, tuple[float, float, float, float]]:
        """(vehicle, its true state, the time, its orientation quaternion) under the world's lock."""
        w = self.world
        with w.lock:
            m = w.vehicle(str(vehicle_name)).model
            pose = m.pose()
            a = m.attitude
            truth = Truth(
                np.array([pose.x_m, pose.y_m, pose.z_m], float),
                np.array(m.velocity_ned, float),
                np.array(m.accel_ned, float),
                body_rotation_ned(a, pose.yaw_deg),
                np.array(a.rates_body, float),
            )
            quat = euler_to_quaternion(a.roll_rad, a.pitch_rad, math.radians(pose.yaw_deg))
            return m.name, truth, w.clock.now(), quat

    # ------------------------------------------------------------ the RPC methods
    def imu(self, imu_name: str, vehicle_name: str) -> dict[str, Any]:
        vehicle, truth, now, quat = self._truth(vehicle_name)
        with self._lock:
            name = self._resolve("imu", imu_name, vehicle)
            r = self._model(vehicle, name, ImuModel, now).read(truth, now, self.noise)
        w, x, y, z = quat  # AirSim adds no orientation noise ("TODO: Add noise in orientation?")
        return {
            "time_stamp": _ns(r.time_s),
            "orientation": {"w_val": w, "x_val": x, "y_val": y, "z_val": z},
            "angular_velocity": _vec3(r.angular_velocity),
            "linear_acceleration": _vec3(r.linear_acceleration),
        }

    def barometer(self, barometer_name: str, vehicle_name: str) -> dict[str, Any]:
        vehicle, truth, now, _ = self._truth(vehicle_name)
        altitude = float(self._geo(*truth.position_ned)["altitude"])
        with self._lock:
            name = self._resolve("barometer", barometer_name, vehicle)
            r = self._model(vehicle, name, BarometerModel, now).read(altitude, truth, now, self.noise)
        if r is None:  # before its first update: AirSim's default output
            return {"time_stamp": 0, "altitude": 0.0, "pressure": 0.0, "qnh": 0.0}
        return {
            "time_stamp": _ns(r.time_s),
            "altitude": float(r.altitude_m),
            "pressure": float(r.pressure_pa),
            "qnh": r.qnh_hpa,
        }

    def magnetometer(self, magnetometer_name: str, vehicle_name: str) -> dict[str, Any]:
        vehicle, truth, now, _ = self._truth(vehicle_name)
        geo = self._geo(*truth.position_ned)  # the dipole model at the vehicle (its dynamic reference)
        field = mag_field_ned_t(geo["latitude"], geo["longitude"], geo["altitude"]) * TESLA_TO_GAUSS
        with self._lock:
            name = self._resolve("magnetometer", magnetometer_name, vehicle)
            r = self._model(vehicle, name, MagnetometerModel, now).read(field, truth, now, self.noise)
        time_s, body = (0.0, np.zeros(3)) if r is None else r
        # AirLib leaves the covariance empty too
        return {
            "time_stamp": _ns(time_s),
            "magnetic_field_body": _vec3(body),
            "magnetic_field_covariance": [],
        }

    def gps(self, gps_name: str, vehicle_name: str) -> dict[str, Any]:
        vehicle, truth, now, _ = self._truth(vehicle_name)
        with self._lock:
            name = self._resolve("gps", gps_name, vehicle)
            r = self._model(vehicle, name, GpsModel, now).read(truth, now, self.noise)
        if r is None:  # before its StartupDelay: GpsBase's default output, not valid
            zero = {"latitude": 0.0, "longitude": 0.0, "altitude": 0.0}
            return {
                "time_stamp": 0,
                "gnss": {
                    "geo_point": zero,
                    "eph": 0.0,
                    "epv": 0.0,
                    "velocity": _vec3((0, 0, 0)),
                    "fix_type": 0,
                    "time_utc": 0,
                },
                "is_valid": False,
            }
        return {
            "time_stamp": _ns(r.time_s),
            "gnss": {
                "geo_point": {k: float(v) for k, v in self._geo(*r.position_ned).items()},
                "eph": float(r.eph_m),
                "epv": float(r.epv_m),
                "velocity": _vec3(r.velocity_ned),
                "fix_type": r.fix_type,
                "time_utc": round(r.time_s * 1e6),
            },
            "is_valid": True,
        }

    def distance_reading(
        self, vehicle: str, sensor: str, distance_m: float, now_s: float
    ) -> tuple[float, float] | None:
        """(time s, distance m) a distance sensor shows for this true distance; None: not updated yet."""
        with self._lock:
            model = self._model(vehicle, sensor, DistanceNoiseModel, now_s)
            return model.read(distance_m, now_s, self.noise)


__all__ = [
    "AIR_GAS_CONSTANT_J_KG_K",
    "DEFAULT_SENSORS",
    "GRAVITY_M_S2",
    "SensorService",
    "standard_atmosphere",
    "standard_pressure_pa",
]
