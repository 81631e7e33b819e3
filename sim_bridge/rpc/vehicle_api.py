# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's vehicle-sim calls (RpcLibServerBase.cpp's getVehicleSimApi bindings; PythonClient/airsim/
client.py): a vehicle's pose (get and set), its ground-truth kinematics and environment, its
collision info and its home geo point. Poses are spawn-relative NED (sim_bridge.rpc.local_frames).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from common.pose import Pose
from sim_bridge.rpc import sensors
from sim_bridge.rpc.collisions import Collisions
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.local_frames import LocalFrames, geo_point
from sim_bridge.rpc.orientation import attitude_msgs
from sim_bridge.rpc.sweep import SWEEP_CLEARANCE_M, sweep
from sim_bridge.rpc.wire import PoseMsg, parse_pose, vec3


class VehicleStateApi:
    """The vehicle-sim calls over the vehicles' frames and their collision records."""

    def __init__(self, frames: LocalFrames, collisions: Collisions) -> None:
        self.world = frames.world
        self._frames = frames
        self._collisions = collisions

    def handlers(self) -> HandlerTable:
        return {
            "simGetGroundTruthKinematics": self.simGetGroundTruthKinematics,
            "simGetGroundTruthEnvironment": self.simGetGroundTruthEnvironment,
            "simGetCollisionInfo": self.simGetCollisionInfo,
            "simGetVehiclePose": self.simGetVehiclePose,
            "simSetVehiclePose": self.simSetVehiclePose,
            "getHomeGeoPoint": self.getHomeGeoPoint,
        }

    def simGetGroundTruthKinematics(self, vehicle_name: str) -> dict[str, Any]:
        return self._frames.kinematics(vehicle_name)

    def simGetGroundTruthEnvironment(self, vehicle_name: str) -> dict[str, Any]:
        """AirSim's EnvironmentState at the vehicle: local position, geo point, gravity (NED) and the
        standard atmosphere's pressure (Pa), temperature (K) and density (kg/m^3) at its altitude."""
        with self.world.lock:
            pose = self._frames.slot(vehicle_name).model.pose()
        geo = geo_point(pose)
        pressure, temperature = sensors.standard_atmosphere(geo["altitude"])
        return {
            "position": self._frames.local(vehicle_name, pose)["position"],
            "geo_point": geo,
            "gravity": vec3(0.0, 0.0, sensors.GRAVITY_M_S2),
            "air_pressure": pressure,
            "temperature": temperature,
            "air_density": pressure / (sensors.AIR_GAS_CONSTANT_J_KG_K * temperature),
        }

    def simGetCollisionInfo(self, vehicle_name: str) -> dict[str, Any]:
        """PawnSimApi::getCollisionInfoAndReset (rpc/collisions.py)."""
        return self._collisions.take(self._frames.slot(vehicle_name).model.name)

    def simGetVehiclePose(self, vehicle_name: str) -> dict[str, Any]:
        msg = self._frames.local(vehicle_name, self.world.vehicle_pose(str(vehicle_name)))
        msg["orientation"] = attitude_msgs(self.world, vehicle_name)[0]
        return msg

    def simSetVehiclePose(self, pose: PoseMsg, ignore_collision: bool, vehicle_name: str) -> None:
        """PawnSimApi::setPose (spawn-relative). NaN components keep the current value, as the airsim and
        Cosys-AirSim clients document (AirLib 1.8.1's C++ itself writes them into the physics body).
        ignore_collision=False moves the pawn with a sweep (SetActorLocationAndRotation(..., true)): it
        stops at the first thing in its way, which is a collision (onCollision); True teleports
        (ETeleportType::TeleportPhysics). Here a ray of the body's origin stands in for the sweep."""
        m = self._frames.slot(vehicle_name).model
        s = m.spawn
        current_local = Pose(
            m.position_ned[0] - s.x_m, m.position_ned[1] - s.y_m, m.position_ned[2] - s.z_m, m.yaw_deg
        )
        local = parse_pose(pose, current_local)
        target = Pose(local.x_m + s.x_m, local.y_m + s.y_m, local.z_m + s.z_m, local.yaw_deg)
        self._collisions.keep(m.name)  # an unread collision survives the move, as in AirSim
        if ignore_collision:
            self.world.set_vehicle_pose(m.name, target)
            return
        with self.world.lock:
            slot = self._frames.slot(vehicle_name)
            start = m.position_ned.copy()
            end = np.array([target.x_m, target.y_m, target.z_m])
            hit = sweep(self.world, start, end, slot.body_id)
            if hit is None:
                self.world.set_vehicle_pose(m.name, target)
                return
            body, point = hit
            back = end - start
            stop = point - back / max(float(np.linalg.norm(back)), 1e-9) * SWEEP_CLEARANCE_M
            stop = start if np.dot(stop - start, back) < 0 else stop
            self.world.set_vehicle_pose(
                m.name, Pose(float(stop[0]), float(stop[1]), float(stop[2]), target.yaw_deg)
            )
            m.collision = {
                "has_collided": True,
                "penetration_depth": 0.0,
                "time_stamp": self._frames.time_ns(),
                "normal": tuple(-back / max(float(np.linalg.norm(back)), 1e-9)),
                "impact_point": tuple(float(v) for v in point),
                "position": tuple(float(v) for v in stop),
                "object_name": self.world.scene.body_name(body),
                "object_id": body,
            }

    def getHomeGeoPoint(self, vehicle_name: str) -> dict[str, float]:
        return geo_point(self._frames.slot(vehicle_name).model.spawn)
