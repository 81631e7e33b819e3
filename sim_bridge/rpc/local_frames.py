"""What every AirSim API family needs of the vehicles: the vehicle a name picks, its spawn-relative
NED frame (AirSim's vehicle APIs report positions relative to the vehicle's spawn, axes aligned with
the world's), geo points of the home point, the API-control check and a motion's wait.

Shared by the families of sim_bridge.rpc.airsim_api; each gets this object, none inherits it.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.rpc.orientation import attitude_msgs
from sim_bridge.rpc.server import release_order
from sim_bridge.rpc.wire import pose_msg, vec3
from sim_bridge.sim.multirotor import Task
from sim_bridge.sim.world import VehicleSlot, World

log = logging.getLogger(__name__)

HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M = 47.641468, -122.140165, 122.0
EARTH_RADIUS_M = 6378137.0
WAIT_WALL_S = 24 * 3600.0  # a motion RPC waits for simulation time, which may be paused for long


def geo_point(p: Pose) -> dict[str, float]:
    """The GeoPoint message of a world NED position (flat earth around AirSim's default home)."""
    lat = HOME_LAT_DEG + math.degrees(p.x_m / EARTH_RADIUS_M)
    lon = HOME_LON_DEG + math.degrees(p.y_m / (EARTH_RADIUS_M * math.cos(math.radians(HOME_LAT_DEG))))
    return {"latitude": lat, "longitude": lon, "altitude": HOME_ALT_M - p.z_m}


def ned_from_geo(point: object) -> np.ndarray:
    """World NED of a GeoPoint message (EarthUtils::GeodeticToNed from the home point)."""
    try:
        if not isinstance(point, dict):
            raise TypeError(point)
        lat, lon, alt = (float(point[k]) for k in ("latitude", "longitude", "altitude"))
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"expected a GeoPoint map (latitude, longitude, altitude), got {point!r:.80}"
        ) from None
    x = math.radians(lat - HOME_LAT_DEG) * EARTH_RADIUS_M
    y = math.radians(lon - HOME_LON_DEG) * EARTH_RADIUS_M * math.cos(math.radians(HOME_LAT_DEG))
    return np.array([x, y, HOME_ALT_M - alt])


def wait_motion(task: Task) -> bool:
    """A motion's outcome, once it ends (in simulation time)."""
    release_order()  # the command is applied: the connection's next request may start
    return bool(task.wait(WAIT_WALL_S))


class LocalFrames:
    """The world's vehicles seen through AirSim's vehicle APIs (see the module docstring)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def slot(self, vehicle_name: str) -> VehicleSlot:
        return self.world.vehicle(str(vehicle_name))

    def local(self, vehicle_name: str, p: Pose) -> dict[str, Any]:
        s = self.slot(vehicle_name).model.spawn
        return pose_msg(p.x_m - s.x_m, p.y_m - s.y_m, p.z_m - s.z_m, p.yaw_deg)

    def local_xyz(self, vehicle_name: str, x: float, y: float, z: float, yaw_deg: float) -> dict[str, Any]:
        return self.local(vehicle_name, Pose(float(x), float(y), float(z), yaw_deg))

    def to_world(self, vehicle_name: str, x: float, y: float, z: float) -> np.ndarray:
        s = self.slot(vehicle_name).model.spawn
        return np.array([x + s.x_m, y + s.y_m, z + s.z_m], float)

    def need_control(self, vehicle_name: str) -> bool:
        m = self.slot(vehicle_name).model
        if not m.api_control:
            log.warning("%s: requestApiControl() must be called before using API control", m.name)
            return False
        return True

    def time_ns(self) -> int:
        return round(self.world.clock.now() * 1e9)

    def kinematics(self, vehicle_name: str) -> dict[str, Any]:
        """AirSim's KinematicsState of the vehicle (spawn-relative position)."""
        with self.world.lock:
            m = self.slot(vehicle_name).model
            pose = m.pose()
            v, a = m.velocity_ned.copy(), m.accel_ned.copy()
        local = self.local(vehicle_name, pose)
        orientation, angular_velocity, angular_acceleration = attitude_msgs(self.world, vehicle_name)
        return {
            "position": local["position"],
            "orientation": orientation,
            "linear_velocity": vec3(*v),
            "angular_velocity": angular_velocity,
            "linear_acceleration": vec3(*a),
            "angular_acceleration": angular_acceleration,
        }
