"""`getDistanceSensorData`: each vehicle's distance sensors from settings.json, one ray cast each.

AirLib's DistanceSimple (AirLib/include/sensors/distance/DistanceSimple.hpp, DistanceSimpleParams.hpp)
and AirSim's Unreal sensor (UnrealDistanceSensor::getRayLength): a ray from the sensor's pose (its
settings X/Y/Z and Roll/Pitch/Yaw on the body) along its front (+X), `MaxDistance` long (default
40 m, `MinDistance` 0.2 m); the distance is the first hit's, else MaxDistance. The answer is
RpcLibAdaptorsBase::DistanceSensorData {time_stamp, distance, min_distance, max_distance,
relative_pose (the sensor's pose on the body)}. DistanceSimple's noise: Gaussian of 0.2 m sigma per
50 Hz update (sim_bridge.sim.sensor_models.DistanceNoiseModel; none with `--sensor-noise off`). The ray
is cast when asked. The vehicle's own body and the ground plane are seen as in sim_bridge.sim.lidar.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from common.frames import quat_from_rotation, rotation_pry_deg
from sim_bridge.rpc.named_sensors import find_sensor
from sim_bridge.sim.attitude import body_rotation_ned
from sim_bridge.sim.distance import DistanceParams
from sim_bridge.sim.world import World

if TYPE_CHECKING:
    from sim_bridge.rpc.sensors import SensorService


class DistanceService:
    """The distance sensors of every vehicle; none by default (AirSim's multirotor has none)."""

    def __init__(self, world: World, sensors: SensorService | None = None) -> None:
        self.world = world
        self._noise = sensors  # None: noise-free
        self._sensors: dict[str, dict[str, DistanceParams]] = {}
        self._lock = threading.Lock()

    def configure(self, vehicle_name: str, sensors: list[DistanceParams]) -> None:
        with self._lock:
            self._sensors[vehicle_name] = {p.name: p for p in sorted(sensors, key=lambda p: p.name)}

    def data(self, sensor_name: str, vehicle_name: str) -> dict[str, Any]:
        w = self.world
        slot = w.vehicle(str(vehicle_name))
        with self._lock:
            params = find_sensor(self._sensors.get(slot.model.name, {}), str(sensor_name), "distance sensor")
        rel = rotation_pry_deg(*params.rotation_deg)
        with w.lock:
            pose = slot.model.pose()
            now = w.clock.now()
            r_body = body_rotation_ned(slot.model.attitude, pose.yaw_deg)  # body-fixed: tilts with the body
            start = np.array([pose.x_m, pose.y_m, pose.z_m]) + r_body @ np.asarray(params.position_frd_m)
            front = r_body @ rel[:, 0]
            end = start + front * params.max_distance_m
            bodies, fractions = w.ray_test(start[None], end[None], ignore_body=slot.body_id)
        distance = float(fractions[0]) * params.max_distance_m if bodies[0] >= 0 else params.max_distance_m
        if front[2] > 1e-12 and start[2] < 0:  # the ground plane NED z = 0
            distance = min(distance, -float(start[2]) / float(front[2]))
        qw, qx, qy, qz = quat_from_rotation(rel)
        x, y, z = params.position_frd_m
        shown = (
            (now, distance)
            if self._noise is None
            else self._noise.distance_reading(slot.model.name, params.name, distance, now)
        )
        if shown is None:  # before the sensor's first update: AirSim's default output
            shown = (0.0, 0.0)
        return {
            "time_stamp": round(shown[0] * 1e9),
            "distance": shown[1],
            "min_distance": params.min_distance_m,
            "max_distance": params.max_distance_m,
            "relative_pose": {
                "position": {"x_val": x, "y_val": y, "z_val": z},
                "orientation": {"w_val": qw, "x_val": qx, "y_val": qy, "z_val": qz},
            },
        }


__all__ = ["DistanceService"]
