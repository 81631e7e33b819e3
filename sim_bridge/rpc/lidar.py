"""`getLidarData`: each vehicle's lidars from settings.json, scanned by ray casts (sim_bridge.sim.lidar).

AirLib's server (RpcLibServerBase.cpp) answers `getLidarData(lidar_name, vehicle_name)` with the
sensor's latest output as RpcLibAdaptorsBase::LidarData {time_stamp, point_cloud (flat float32
x, y, z), pose, segmentation}; a name the vehicle has no enabled lidar under raises VehicleApiBase's
"No lidar with name NAME exist on vehicle" ("" picks the first lidar, in name order).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from sim_bridge.rpc.named_sensors import find_sensor
from sim_bridge.sim.attitude import body_rotation_ned
from sim_bridge.sim.lidar import Lidar, LidarParams
from sim_bridge.sim.world import World


class LidarService:
    """The lidars of every vehicle; vehicles without settings have none (AirSim's default)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._lidars: dict[str, dict[str, Lidar]] = {}
        self._lock = threading.Lock()

    def configure(self, vehicle_name: str, lidars: list[LidarParams]) -> None:
        now = self.world.clock.now()
        with self._lock:
            self._lidars[vehicle_name] = {p.name: Lidar(p) for p in sorted(lidars, key=lambda p: p.name)}
            for lidar in self._lidars[vehicle_name].values():
                lidar.reset(now)

    def reset(self) -> None:
        now = self.world.clock.now()
        with self._lock:
            for lidars in self._lidars.values():
                for lidar in lidars.values():
                    lidar.reset(now)

    def data(self, lidar_name: str, vehicle_name: str, segmentation_ids: dict[int, int]) -> dict[str, Any]:
        w = self.world
        slot = w.vehicle(str(vehicle_name))
        with self._lock:
            lidar = find_sensor(self._lidars.get(slot.model.name, {}), str(lidar_name), "lidar")
        with w.lock:  # the pose and the scene at one instant
            m = slot.model
            now = w.clock.now()
            pose = m.pose()
            s = m.spawn

            def ray_test(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                return w.ray_test(a, b, ignore_body=slot.body_id)

            with self._lock:
                scan = lidar.read(
                    now,
                    (pose.x_m, pose.y_m, pose.z_m),
                    body_rotation_ned(m.attitude, pose.yaw_deg),  # body-fixed: tilts with the body
                    (s.x_m, s.y_m, s.z_m),
                    ray_test,
                    lambda body: segmentation_ids.get(body, -1),
                )
        qw, qx, qy, qz = scan.orientation_wxyz
        return {
            "time_stamp": scan.time_stamp_ns,
            "point_cloud": np.asarray(scan.point_cloud, np.float32)
            .astype(np.float64)
            .tolist(),  # AirLib: float
            "pose": {
                "position": {"x_val": scan.position[0], "y_val": scan.position[1], "z_val": scan.position[2]},
                "orientation": {"w_val": qw, "x_val": qx, "y_val": qy, "z_val": qz},
            },
            "segmentation": list(scan.segmentation),
        }


__all__ = ["LidarService"]
