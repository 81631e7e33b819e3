# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's multirotor motion calls (MultirotorRpcLibServer.cpp; PythonClient/airsim/client.py
MultirotorClient): takeoff, land, hover, the velocity and position moves, the yaw rotations, RC and
manual flight, and getMultirotorState. The attitude- and rate-level calls and the gain setters are
sim_bridge.rpc.attitude_api's.

Each motion is one task per vehicle in the World; a call blocks until its task ends (in simulation
time), after releasing the connection's request order (sim_bridge.rpc.server.release_order).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from common.errors import VehicleError
from common.frames import forward_right_to_north_east
from sim_bridge.rpc import motion_rules
from sim_bridge.rpc.collisions import empty_collision
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.local_frames import LocalFrames, geo_point, ned_from_geo, wait_motion
from sim_bridge.rpc.manual import ManualFlight, RCDataMsg
from sim_bridge.rpc.wire import YawModeMsg, parse_vec3
from sim_bridge.sim.multirotor import Task, YawMode

log = logging.getLogger(__name__)

TAKEOFF_ALTITUDE_M = 3.0  # climbed above the spawn height


def parse_yaw_mode(d: object) -> YawMode:
    """The YawMode map of the wire (is_rate, yaw_or_rate); anything else: rate 0."""
    if not isinstance(d, dict):
        return YawMode(True, 0.0)
    return YawMode(bool(d.get("is_rate", True)), float(d.get("yaw_or_rate", 0.0)))


class MultirotorApi:
    """The multirotor motion calls over the vehicles' frames and the RC/manual flight state."""

    def __init__(self, frames: LocalFrames, manual: ManualFlight) -> None:
        self.world = frames.world
        self._frames = frames
        self._manual = manual

    def handlers(self) -> HandlerTable:
        return {
            "takeoff": self.takeoff,
            "land": self.land,
            "hover": self.hover,
            "moveByVelocityBodyFrame": self.moveByVelocityBodyFrame,
            "moveByVelocityZBodyFrame": self.moveByVelocityZBodyFrame,
            "moveByVelocity": self.moveByVelocity,
            "moveByVelocityZ": self.moveByVelocityZ,
            "moveOnPath": self.moveOnPath,
            "moveToPosition": self.moveToPosition,
            "moveToGPS": self.moveToGPS,
            "moveToZ": self.moveToZ,
            "rotateByYawRate": self.rotateByYawRate,
            "rotateToYaw": self.rotateToYaw,
            "getMultirotorState": self.getMultirotorState,
            "moveByRC": self.moveByRC,
            "moveByManual": self.moveByManual,
        }

    def takeoff(self, timeout_sec: float, vehicle_name: str) -> bool:
        if not self._frames.need_control(vehicle_name):
            return False
        return wait_motion(self.world.takeoff(str(vehicle_name), TAKEOFF_ALTITUDE_M, float(timeout_sec)))

    def land(self, timeout_sec: float, vehicle_name: str) -> bool:
        if not self._frames.need_control(vehicle_name):
            return False
        return wait_motion(self.world.land(str(vehicle_name), float(timeout_sec)))

    def hover(self, vehicle_name: str) -> bool:
        with self.world.lock:
            self._frames.slot(vehicle_name).model.hover()
        return True

    # The velocity handlers take AirSim's argument list (numbers vx, vy, vz or z and duration; the
    # drivetrain, an int; the YawMode map; the vehicle name), converted where used. The drivetrain acts
    # through the yaw mode (rpc/motion_rules.py: MultirotorApiBase::adjustYaw).
    def moveByVelocityBodyFrame(self, vx, vy, vz, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        velocity_frd = (float(vx), float(vy), float(vz))
        north, east = self._body_to_world(vehicle_name, float(vx), float(vy))
        yaw = motion_rules.velocity_yaw(
            parse_yaw_mode(yaw_mode), motion_rules.drivetrain(drivetrain), north, east
        )
        return self._timed_move(vehicle_name, duration, yaw, self.world.move_velocity_body, velocity_frd)

    def moveByVelocityZBodyFrame(self, vx, vy, z, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        """(vx, vy) turned by the yaw at the start, at the height z of the local NED frame."""
        north, east = self._body_to_world(vehicle_name, float(vx), float(vy))
        yaw = motion_rules.velocity_yaw(
            parse_yaw_mode(yaw_mode), motion_rules.drivetrain(drivetrain), north, east
        )
        z_world = float(self._frames.to_world(vehicle_name, 0.0, 0.0, float(z))[2])
        return self._timed_move(vehicle_name, duration, yaw, self.world.move_velocity_z, north, east, z_world)

    def _body_to_world(self, vehicle_name: str, forward: float, right: float) -> tuple[float, float]:
        with self.world.lock:
            yaw_deg = self._frames.slot(vehicle_name).model.yaw_deg
        return forward_right_to_north_east(forward, right, yaw_deg)

    def moveByVelocity(self, vx, vy, vz, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        velocity = np.array([vx, vy, vz], float)
        drive = motion_rules.drivetrain(drivetrain)
        yaw = motion_rules.velocity_yaw(parse_yaw_mode(yaw_mode), drive, float(vx), float(vy))
        return self._timed_move(vehicle_name, duration, yaw, self.world.move_velocity, velocity)

    def moveByVelocityZ(self, vx, vy, z, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        """World-frame (vx, vy) at the height z of the vehicle's local NED frame. A duration <= 0 returns
        False here (MultirotorApiBase::moveByVelocityZ; the other velocity calls return True)."""
        if float(duration) <= 0:
            return False
        drive = motion_rules.drivetrain(drivetrain)
        yaw = motion_rules.velocity_yaw(parse_yaw_mode(yaw_mode), drive, float(vx), float(vy))
        z_world = float(self._frames.to_world(vehicle_name, 0.0, 0.0, float(z))[2])
        return self._timed_move(
            vehicle_name, duration, yaw, self.world.move_velocity_z, float(vx), float(vy), z_world
        )

    def _timed_move(
        self, vehicle_name: str, duration: float, yaw: YawMode, start: Callable[..., Task], *args: object
    ) -> bool:
        """start(vehicle, *args, duration, yaw mode): a World motion held for `duration` (AirSim: a
        duration <= 0 returns at once)."""
        if float(duration) <= 0:
            return True
        return self._move(vehicle_name, yaw, lambda name, y: start(name, *args, float(duration), y))

    def _move(self, vehicle_name: str, yaw: YawMode, start: Callable[[str, YawMode], Task]) -> bool:
        """start(vehicle, yaw mode) -> the motion's task, and its outcome (none without API control)."""
        if not self._frames.need_control(vehicle_name):
            return False
        return wait_motion(start(str(vehicle_name), yaw))

    def moveOnPath(
        self, path, velocity, timeout_sec, drivetrain, yaw_mode, lookahead, adaptive_lookahead, vehicle_name
    ) -> bool:
        """Along the waypoints (local NED) from where the vehicle is, a carrot `lookahead` ahead, ending
        at the last (Multirotor.move_on_path; the lookahead and drivetrain rules: rpc/motion_rules.py).
        An empty path returns True at once ("moveOnPath terminated because path has no points")."""
        if not isinstance(path, list | tuple):
            raise VehicleError("moveOnPath: the path must be a list of Vector3r")
        if not path:
            log.warning("moveOnPath terminated because path has no points")
            return True
        points = [
            self._frames.to_world(vehicle_name, *parse_vec3(p, f"path[{i}]")) for i, p in enumerate(path)
        ]
        return self._path(
            vehicle_name, points, velocity, timeout_sec, drivetrain, yaw_mode, lookahead, adaptive_lookahead
        )

    def _path(
        self,
        vehicle_name: str,
        points: list[np.ndarray],
        velocity: float,
        timeout_sec: float,
        drivetrain: int,
        yaw_mode: YawModeMsg,
        lookahead: float,
        adaptive_lookahead: float,
    ) -> bool:
        """MultirotorApiBase::moveOnPath over world NED points (moveToPosition and moveToGPS are it with
        one point, moveToZ with MaxDegreeOfFreedom)."""
        speed_m_s, timeout_s = float(velocity), min(float(timeout_sec), 1e9)
        if not all(math.isfinite(v) for v in (speed_m_s, float(lookahead), float(adaptive_lookahead))):
            raise VehicleError("moveOnPath: velocity, lookahead and adaptive_lookahead must be finite")
        yaw = motion_rules.path_yaw(parse_yaw_mode(yaw_mode), motion_rules.drivetrain(drivetrain))
        lead_m = motion_rules.lookahead_m(float(lookahead), float(adaptive_lookahead), speed_m_s)
        if len(points) == 1:  # one point: straight to it, braking onto it (the carrot's line is straight)
            target = points[0]
            return self._move(
                vehicle_name, yaw, lambda n, y: self.world.move_to(n, target, speed_m_s, timeout_s, y)
            )
        return self._move(
            vehicle_name,
            yaw,
            lambda n, y: self.world.move_on_path(n, points, speed_m_s, timeout_s, y, lead_m),
        )

    def moveToPosition(
        self,
        x: float,
        y: float,
        z: float,
        velocity: float,
        timeout_sec: float,
        drivetrain: int,
        yaw_mode: YawModeMsg,
        lookahead: float,
        adaptive_lookahead: float,
        vehicle_name: str,
    ) -> bool:
        target = self._frames.to_world(vehicle_name, float(x), float(y), float(z))
        return self._path(
            vehicle_name, [target], velocity, timeout_sec, drivetrain, yaw_mode, lookahead, adaptive_lookahead
        )

    def moveToGPS(
        self,
        latitude: float,
        longitude: float,
        altitude: float,
        velocity: float,
        timeout_sec: float,
        drivetrain: int,
        yaw_mode: YawModeMsg,
        lookahead: float,
        adaptive_lookahead: float,
        vehicle_name: str,
    ) -> bool:
        """moveOnPath to the geo point's NED position (EarthUtils::GeodeticToNed from the home point)."""
        target = ned_from_geo({"latitude": latitude, "longitude": longitude, "altitude": altitude})
        return self._path(
            vehicle_name, [target], velocity, timeout_sec, drivetrain, yaw_mode, lookahead, adaptive_lookahead
        )

    def moveToZ(
        self,
        z: float,
        velocity: float,
        timeout_sec: float,
        yaw_mode: YawModeMsg,
        lookahead: float,
        adaptive_lookahead: float,
        vehicle_name: str,
    ) -> bool:
        with self.world.lock:
            here = self._frames.slot(vehicle_name).model.position_ned.copy()
        target = np.array([here[0], here[1], self._frames.to_world(vehicle_name, 0.0, 0.0, float(z))[2]])
        drive = motion_rules.MAX_DEGREE_OF_FREEDOM
        return self._path(
            vehicle_name, [target], velocity, timeout_sec, drive, yaw_mode, lookahead, adaptive_lookahead
        )

    def rotateByYawRate(self, yaw_rate: float, duration: float, vehicle_name: str) -> bool:
        if float(duration) <= 0:
            return True
        if not self._frames.need_control(vehicle_name):
            return False
        return wait_motion(self.world.rotate_rate(str(vehicle_name), float(yaw_rate), float(duration)))

    def rotateToYaw(self, yaw: float, timeout_sec: float, margin: float, vehicle_name: str) -> bool:
        if not self._frames.need_control(vehicle_name):
            return False
        task = self.world.rotate_to(
            str(vehicle_name), float(yaw), min(float(timeout_sec), 1e9), float(margin)
        )
        return wait_motion(task)

    def getMultirotorState(self, vehicle_name: str) -> dict[str, Any]:
        kin = self._frames.kinematics(vehicle_name)
        m = self._frames.slot(vehicle_name).model
        return {
            "collision": empty_collision(),  # MultirotorApiBase::getMultirotorState never fills it
            "kinematics_estimated": kin,
            "gps_location": geo_point(m.pose()),
            "timestamp": self._frames.time_ns(),
            "landed_state": 0 if m.landed else 1,
            "rc_data": self._manual.rc(vehicle_name),  # the last moveByRC (AirLib's getRCData)
        }

    def moveByRC(self, rcdata: RCDataMsg, vehicle_name: str) -> None:
        """SimpleFlight keeps the RC data (rpc/manual.py); moveByManual flies by it."""
        self._manual.set_rc(vehicle_name, rcdata)

    def moveByManual(
        self,
        vx_max: float,
        vy_max: float,
        z_min: float,
        duration: float,
        drivetrain: int,
        yaw_mode: YawModeMsg,
        vehicle_name: str,
    ) -> bool:
        """MultirotorApiBase::moveByManual (rpc/manual.py); a duration <= 0 returns True at once."""
        if float(duration) <= 0:
            return True
        if not self._frames.need_control(vehicle_name):
            return False
        is_rate, value, _ = parse_yaw_mode(yaw_mode)
        return self._manual.fly(
            vehicle_name, float(vx_max), float(vy_max), float(z_min), float(duration), is_rate, value
        )
