# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim 1.8.1's RPC method table (its wire names and struct encodings) over a `World`.

Vehicle APIs use each vehicle's spawn-relative NED frame (axes aligned with the world's); object APIs
use the world NED frame, as AirSim does. Camera poses (ImageResponse camera_position/orientation,
simGetCameraInfo pose) are relative to the vehicle's spawn, as AirSim reports them (its camera poses
come from the vehicle's local frame): a client adds the spawn offset, simGetObjectPose(vehicle) -
simGetVehiclePose(vehicle). Struct dicts use exactly the airsim client's attribute names (see
sim_bridge.rpc.wire). This class is the stock surface only; `table()` registers the built-in
simulator's own `dc*` methods (sim_bridge.rpc.extensions) beside it.

Both client generations are served: the server version is 4 (Cosys-AirSim's), the minimum client
version 1 (AirSim 1.x), and methods whose argument count differs between them (simGetImages,
simGetCameraInfo, simGetObjectPose) take either; the last argument of the detection and image calls is
AirSim 1.x's `external` bool or Cosys's `annotation_name` string, both ignored (one camera per drone).
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np

from common.errors import ConfigError, VehicleError
from common.pose import Pose, wrap_deg
from sim_bridge.rpc import motion_rules, sensors
from sim_bridge.rpc.add_vehicle import add_vehicle
from sim_bridge.rpc.attitude_api import AttitudeApi, camera_orientation_msg
from sim_bridge.rpc.cameras import CameraRig, Mount
from sim_bridge.rpc.catalogue import BLUEPRINTS, MATERIALS, with_colour
from sim_bridge.rpc.collisions import Collisions, empty_collision
from sim_bridge.rpc.detections import DetectionFilters, aabb_half, detections
from sim_bridge.rpc.distance import DistanceService
from sim_bridge.rpc.extensions import EXTENSIONS, DcExtensions, FrameRing, WorldEffects
from sim_bridge.rpc.image_types import (
    DISPARITY_NORMALIZED,
    INFRARED,
    OPTICAL_FLOW,
    OPTICAL_FLOW_VIS,
    SURFACE_NORMALS,
    default_object_id,
    disparity_normalized,
    infrared_bgr,
    optical_flow,
    optical_flow_bgr,
    optical_flow_vis_bgr,
    surface_normals_bgr,
)
from sim_bridge.rpc.lens import distorted
from sim_bridge.rpc.lidar import LidarService
from sim_bridge.rpc.manual import ManualFlight
from sim_bridge.rpc.sensors import SensorService
from sim_bridge.rpc.server import release_order
from sim_bridge.rpc.silence import SilenceLanding
from sim_bridge.rpc.wire import NAN_POSE, parse_pose, parse_vec3, pose_msg, vec3
from sim_bridge.settings import MULTIROTOR_TYPES
from sim_bridge.settings_sections import CameraSetting, VehicleSections
from sim_bridge.sim.camera import Render, projection_matrix
from sim_bridge.sim.frames import yaw_rotation_ned
from sim_bridge.sim.multirotor import Task, YawMode
from sim_bridge.sim.oriented_camera import quat_from_rotation, rotation_from_quat, rotation_pry_deg
from sim_bridge.sim.weather import ENABLED_INDEX, Weather
from sim_bridge.sim.weather import PARAMETERS as WEATHER_PARAMETERS
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)

SCENE, DEPTH_PLANAR, DEPTH_PERSPECTIVE, DEPTH_VIS, SEGMENTATION = 0, 1, 2, 3, 5
RENDERED_TYPES = {SCENE: "Scene", DEPTH_PLANAR: "DepthPlanar", DEPTH_PERSPECTIVE: "DepthPerspective"}
RENDERED_TYPES.update({DEPTH_VIS: "DepthVis", SEGMENTATION: "Segmentation"})
RENDERED_TYPES.update({DISPARITY_NORMALIZED: "DisparityNormalized", SURFACE_NORMALS: "SurfaceNormals"})
RENDERED_TYPES.update({INFRARED: "Infrared", OPTICAL_FLOW: "OpticalFlow", OPTICAL_FLOW_VIS: "OpticalFlowVis"})
FLOW_TYPES = (OPTICAL_FLOW, OPTICAL_FLOW_VIS)
DEPTH_DERIVED = (
    DEPTH_PLANAR,
    DEPTH_PERSPECTIVE,
    DEPTH_VIS,
    DISPARITY_NORMALIZED,
    SURFACE_NORMALS,
    *FLOW_TYPES,
)
DEPTH_VIS_WHITE_M = 100.0  # AirSim's DepthVis: black at 0 m, white at 100 m or more (camera-plane depth)
CAMERA_NAMES = {"", "0", "front_center"}  # the forward camera: detections, the frame ring
# AirSim's other standard cameras that a level camera can show, as (right offset m, looking back):
# front_right / front_left beside the forward camera, back_center its mirror at the back.
SIDE_CAMERAS = {
    "1": (0.25, False),
    "front_right": (0.25, False),
    "2": (-0.25, False),
    "front_left": (-0.25, False),
    "4": (0.0, True),
    "back_center": (0.0, True),
}
HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M = 47.641468, -122.140165, 122.0
EARTH_RADIUS_M = 6378137.0
SWEEP_CLEARANCE_M = 0.3  # a swept body stops this far short of what it hit (~a drone's radius)
WAIT_WALL_S = 24 * 3600.0  # a motion RPC waits for simulation time, which may be paused for long
DISTORTION_PARAMS = ("K1", "K2", "K3", "P1", "P2")  # APIPCamera's, in getDistortionParams' order
SERVER_VERSION = 4  # Cosys-AirSim's client wants >= 4; AirSim 1.x's wants >= 1
MIN_CLIENT_VERSION = 1


def _yaw_mode(d: Any) -> YawMode:
    if not isinstance(d, dict):
        return YawMode(True, 0.0)
    return YawMode(bool(d.get("is_rate", True)), float(d.get("yaw_or_rate", 0.0)))


NOT_HANDLERS = ("world", "frames", "effects", "extensions", "sensors", "silence", "stock_table", "table")


class AirSimApi(AttitudeApi):
    """The handlers; `table()` gives name -> callable for the RPC server."""

    def __init__(self, world: World, truth_render: str = "crop") -> None:
        self.world = world
        self._seg_ids: dict[int, int] = {}  # body id -> segmentation object id (simSetSegmentationObjectID)
        self._seg_lock = threading.Lock()
        # (vehicle, camera key, external) -> the camera's (position, rotation) at its last frame served
        self._flow_poses: dict[tuple[str, str, bool], tuple[np.ndarray, np.ndarray]] = {}
        self.frames = FrameRing()  # the forward camera's frames served, for dcPointOnTargetInFrame
        self.effects = WorldEffects()
        self._warned: set[str] = set()
        self.silence = SilenceLanding(world)  # --land-on-silence-s and dcSetSilenceLanding
        self.extensions = DcExtensions(world, self.frames, self.effects, self.silence, truth_render)
        self._lidars = LidarService(world)
        self._manual = ManualFlight(world)
        self._cameras = CameraRig(world)
        # IMU, barometer, magnetometer, GPS and the distance sensors' noise (rpc/sensors.py)
        self.sensors = SensorService(world, lambda x, y, z: self._geo(Pose(x, y, z, 0.0)))
        self._distance = DistanceService(world, self.sensors)
        self._detections = DetectionFilters()
        self._collisions = Collisions(world, self._object_id_of_body)
        self._actor_vehicles = set(world.vehicles)  # the actor map's vehicles (GenerateActorMap at start)
        self._lens: dict[tuple[str, str], tuple[float, ...]] = {}  # simSetDistortionParam (rpc/lens.py)

    def apply_settings(
        self, sections: dict[str, VehicleSections], external_cameras: dict[str, CameraSetting] | None = None
    ) -> None:
        """What settings.json gives each vehicle beyond its pose, and its ExternalCameras
        (sim_bridge.settings_sections)."""
        self._cameras.configure_external(external_cameras or {})
        for vehicle, sec in sections.items():
            self._slot(vehicle)  # the settings' vehicles are the world's
            self._lidars.configure(vehicle, sec.lidars)
            self._cameras.configure(vehicle, sec.cameras)
            self._distance.configure(vehicle, sec.distance_sensors)
            self.sensors.configure(vehicle, sec.sensors, sec.sensor_params)

    # ---------------------------------------------------------------- helpers
    def _slot(self, vehicle_name: str) -> Any:
        return self.world.vehicle(str(vehicle_name))

    def _local(self, vehicle_name: str, p: Pose) -> dict[str, Any]:
        s = self._slot(vehicle_name).model.spawn
        return pose_msg(p.x_m - s.x_m, p.y_m - s.y_m, p.z_m - s.z_m, p.yaw_deg)

    def _local_xyz(self, vehicle_name: str, x: float, y: float, z: float, yaw_deg: float) -> dict[str, Any]:
        return self._local(vehicle_name, Pose(float(x), float(y), float(z), yaw_deg))

    def _to_world(self, vehicle_name: str, x: float, y: float, z: float) -> np.ndarray:
        s = self._slot(vehicle_name).model.spawn
        return np.array([x + s.x_m, y + s.y_m, z + s.z_m], float)

    def _need_control(self, vehicle_name: str) -> bool:
        m = self._slot(vehicle_name).model
        if not m.api_control:
            log.warning("%s: requestApiControl() must be called before using API control", m.name)
            return False
        return True

    @staticmethod
    def _wait(task: Any) -> bool:
        release_order()  # the command is applied: the connection's next request may start
        return bool(task.wait(WAIT_WALL_S))

    def _camera(self, camera_name: Any, side_cameras: bool = False, vehicle_name: str | None = None) -> None:
        name = str(camera_name)
        if vehicle_name is not None:  # the vehicle's cameras (rpc/cameras.py): standard and settings'
            if not self._cameras.has(vehicle_name, name):
                self._cameras.mount(vehicle_name, name)  # raises, naming the vehicle's cameras
            return
        if side_cameras and name in SIDE_CAMERAS:
            return
        if name in ("3", "bottom_center"):
            raise ConfigError(
                f"camera '{camera_name}' is not available: it looks down, the built-in simulator "
                "renders level cameras only"
            )
        if name not in CAMERA_NAMES:
            raise ConfigError(
                f"camera '{camera_name}' is not available: the built-in simulator has a forward camera "
                f"({sorted(CAMERA_NAMES)}) and AirSim's {sorted(SIDE_CAMERAS)}"
            )

    def _time_ns(self) -> int:
        return round(self.world.clock.now() * 1e9)

    def _geo(self, p: Pose) -> dict[str, float]:
        lat = HOME_LAT_DEG + math.degrees(p.x_m / EARTH_RADIUS_M)
        lon = HOME_LON_DEG + math.degrees(p.y_m / (EARTH_RADIUS_M * math.cos(math.radians(HOME_LAT_DEG))))
        return {"latitude": lat, "longitude": lon, "altitude": HOME_ALT_M - p.z_m}

    # ---------------------------------------------------------------- connection & control
    def ping(self) -> bool:
        return True

    def getServerVersion(self) -> int:
        return SERVER_VERSION

    def simPrintLogMessage(self, message: str, message_param: str = "", severity: int = 0) -> None:
        # AirSim shows these on the Unreal viewport; here they go to the server's log, with its time
        # stamps (the HIL runner names each episode it flies, so a server's log says who flew when).
        log.info("client message: %s%s", message, message_param)

    def getMinRequiredClientVersion(self) -> int:
        return MIN_CLIENT_VERSION

    def reset(self) -> None:
        """ASimModeBase::reset -> each vehicle's MultirotorPawnSimApi::resetImplementation: the pawn back
        at its start with zero velocity (PawnSimApi: state_ = initial_state_, so the collision info is
        empty; rc_data_ cleared), its running task cancelled (MultirotorApiBase::resetImplementation)
        and SimpleFlight's OffboardApi::reset: API control off, landed, the vehicle state back to
        DefaultVehicleState (SimpleFlightApi: "Armed" unless settings.json says otherwise)."""
        w = self.world
        with w.lock:
            for slot in w.vehicles.values():
                w.set_vehicle_pose(slot.model.name, slot.model.spawn)  # cancels the task, stops it
                slot.model.api_control = False
                slot.model.armed = True
                slot.model.landed = True
                slot.model.battery.replace()  # the initial state: a freshly charged pack
                self._collisions.clear(slot.model.name)
                self._manual.set_rc(slot.model.name, {})
        self._lidars.reset()  # AirSim's reset resets the sensors
        self.sensors.reset()
        self.silence.apply_default()  # a client's dcSetSilenceLanding ends with its session

    def simAddVehicle(self, vehicle_name: str, vehicle_type: str, pose: Any, pawn_path: str = "") -> bool:
        """A multirotor at `pose` (world NED), as AirSim's addVehicle: False for a type it cannot
        create or a name in use."""

        def like_the_others(slot: Any, _spawn: Any) -> None:
            slot.model.wind_ned = self.effects.wind_ned.copy()
            slot.model.silence_land_s = self.silence.default_s

        return add_vehicle(
            self.world, vehicle_name, vehicle_type, pose, MULTIROTOR_TYPES, "multirotor", like_the_others
        )

    def listVehicles(self) -> list[str]:
        return list(self.world.vehicles)

    def enableApiControl(self, is_enabled: bool, vehicle_name: str) -> None:
        self._slot(vehicle_name).model.api_control = bool(is_enabled)

    def isApiControlEnabled(self, vehicle_name: str) -> bool:
        return bool(self._slot(vehicle_name).model.api_control)

    def armDisarm(self, arm: bool, vehicle_name: str) -> bool:
        """SimpleFlight's OffboardApi::arm/disarm: both need API control; arming an armed vehicle is
        True ("already armed"), disarming a disarmed one False (not Active, Armed or BeingArmed)."""
        m = self._slot(vehicle_name).model
        if not m.api_control or (not arm and not m.armed):
            return False
        m.armed = bool(arm)
        return True

    # ---------------------------------------------------------------- motion (blocking, one task per vehicle)
    def takeoff(self, timeout_sec: float, vehicle_name: str) -> bool:
        if not self._need_control(vehicle_name):
            return False
        return self._wait(self.world.takeoff(str(vehicle_name), 3.0, float(timeout_sec)))

    def land(self, timeout_sec: float, vehicle_name: str) -> bool:
        if not self._need_control(vehicle_name):
            return False
        return self._wait(self.world.land(str(vehicle_name), float(timeout_sec)))

    def hover(self, vehicle_name: str) -> bool:
        with self.world.lock:
            self._slot(vehicle_name).model.hover()
        return True

    def cancelLastTask(self, vehicle_name: str) -> None:
        with self.world.lock:
            self._slot(vehicle_name).model.cancel()

    # The velocity handlers take AirSim's argument list (numbers vx, vy, vz or z and duration; the
    # drivetrain, an int; the YawMode map; the vehicle name), converted where used. The drivetrain acts
    # through the yaw mode (rpc/motion_rules.py: MultirotorApiBase::adjustYaw).
    def moveByVelocityBodyFrame(self, vx, vy, vz, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        velocity_frd = (float(vx), float(vy), float(vz))
        north, east = self._body_to_world(vehicle_name, float(vx), float(vy))
        yaw = motion_rules.velocity_yaw(_yaw_mode(yaw_mode), motion_rules.drivetrain(drivetrain), north, east)
        return self._timed_move(vehicle_name, duration, yaw, self.world.move_velocity_body, velocity_frd)

    def moveByVelocityZBodyFrame(self, vx, vy, z, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        """(vx, vy) turned by the yaw at the start, at the height z of the local NED frame."""
        north, east = self._body_to_world(vehicle_name, float(vx), float(vy))
        yaw = motion_rules.velocity_yaw(_yaw_mode(yaw_mode), motion_rules.drivetrain(drivetrain), north, east)
        z_world = float(self._to_world(vehicle_name, 0.0, 0.0, float(z))[2])
        return self._timed_move(vehicle_name, duration, yaw, self.world.move_velocity_z, north, east, z_world)

    def _body_to_world(self, vehicle_name: str, forward: float, right: float) -> tuple[float, float]:
        with self.world.lock:
            yaw_deg = self._slot(vehicle_name).model.yaw_deg
        north, east, _ = yaw_rotation_ned(yaw_deg) @ np.array([forward, right, 0.0])
        return float(north), float(east)

    def moveByVelocity(self, vx, vy, vz, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        velocity = np.array([vx, vy, vz], float)
        drive = motion_rules.drivetrain(drivetrain)
        yaw = motion_rules.velocity_yaw(_yaw_mode(yaw_mode), drive, float(vx), float(vy))
        return self._timed_move(vehicle_name, duration, yaw, self.world.move_velocity, velocity)

    def moveByVelocityZ(self, vx, vy, z, duration, drivetrain, yaw_mode, vehicle_name) -> bool:
        """World-frame (vx, vy) at the height z of the vehicle's local NED frame. A duration <= 0 returns
        False here (MultirotorApiBase::moveByVelocityZ; the other velocity calls return True)."""
        if float(duration) <= 0:
            return False
        drive = motion_rules.drivetrain(drivetrain)
        yaw = motion_rules.velocity_yaw(_yaw_mode(yaw_mode), drive, float(vx), float(vy))
        z_world = float(self._to_world(vehicle_name, 0.0, 0.0, float(z))[2])
        return self._timed_move(
            vehicle_name, duration, yaw, self.world.move_velocity_z, float(vx), float(vy), z_world
        )

    def _timed_move(
        self, vehicle_name: str, duration: float, yaw: YawMode, start: Callable[..., Task], *args: Any
    ) -> bool:
        """start(vehicle, *args, duration, yaw mode): a World motion held for `duration` (AirSim: a
        duration <= 0 returns at once)."""
        if float(duration) <= 0:
            return True
        return self._move(vehicle_name, yaw, lambda name, y: start(name, *args, float(duration), y))

    def _move(self, vehicle_name: str, yaw: YawMode, start: Callable[[str, YawMode], Task]) -> bool:
        """start(vehicle, yaw mode) -> the motion's task, and its outcome (none without API control)."""
        if not self._need_control(vehicle_name):
            return False
        return self._wait(start(str(vehicle_name), yaw))

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
        points = [self._to_world(vehicle_name, *parse_vec3(p, f"path[{i}]")) for i, p in enumerate(path)]
        return self._path(
            vehicle_name, points, velocity, timeout_sec, drivetrain, yaw_mode, lookahead, adaptive_lookahead
        )

    def _path(
        self,
        vehicle_name: str,
        points: list[np.ndarray],
        velocity: float,
        timeout_sec: float,
        drivetrain: Any,
        yaw_mode: Any,
        lookahead: float,
        adaptive_lookahead: float,
    ) -> bool:
        """MultirotorApiBase::moveOnPath over world NED points (moveToPosition and moveToGPS are it with
        one point, moveToZ with MaxDegreeOfFreedom)."""
        speed_m_s, timeout_s = float(velocity), min(float(timeout_sec), 1e9)
        if not all(math.isfinite(v) for v in (speed_m_s, float(lookahead), float(adaptive_lookahead))):
            raise VehicleError("moveOnPath: velocity, lookahead and adaptive_lookahead must be finite")
        yaw = motion_rules.path_yaw(_yaw_mode(yaw_mode), motion_rules.drivetrain(drivetrain))
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
        yaw_mode: Any,
        lookahead: float,
        adaptive_lookahead: float,
        vehicle_name: str,
    ) -> bool:
        target = self._to_world(vehicle_name, float(x), float(y), float(z))
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
        yaw_mode: Any,
        lookahead: float,
        adaptive_lookahead: float,
        vehicle_name: str,
    ) -> bool:
        """moveOnPath to the geo point's NED position (EarthUtils::GeodeticToNed from the home point)."""
        target = self._ned_from_geo({"latitude": latitude, "longitude": longitude, "altitude": altitude})
        return self._path(
            vehicle_name, [target], velocity, timeout_sec, drivetrain, yaw_mode, lookahead, adaptive_lookahead
        )

    def moveToZ(
        self,
        z: float,
        velocity: float,
        timeout_sec: float,
        yaw_mode: Any,
        lookahead: float,
        adaptive_lookahead: float,
        vehicle_name: str,
    ) -> bool:
        with self.world.lock:
            here = self._slot(vehicle_name).model.position_ned.copy()
        target = np.array([here[0], here[1], self._to_world(vehicle_name, 0.0, 0.0, float(z))[2]])
        drive = motion_rules.MAX_DEGREE_OF_FREEDOM
        return self._path(
            vehicle_name, [target], velocity, timeout_sec, drive, yaw_mode, lookahead, adaptive_lookahead
        )

    def rotateByYawRate(self, yaw_rate: float, duration: float, vehicle_name: str) -> bool:
        if float(duration) <= 0:
            return True
        if not self._need_control(vehicle_name):
            return False
        return self._wait(self.world.rotate_rate(str(vehicle_name), float(yaw_rate), float(duration)))

    def rotateToYaw(self, yaw: float, timeout_sec: float, margin: float, vehicle_name: str) -> bool:
        if not self._need_control(vehicle_name):
            return False
        task = self.world.rotate_to(
            str(vehicle_name), float(yaw), min(float(timeout_sec), 1e9), float(margin)
        )
        return self._wait(task)

    # ---------------------------------------------------------------- state
    def _kinematics(self, vehicle_name: str) -> dict[str, Any]:
        with self.world.lock:
            m = self._slot(vehicle_name).model
            pose = m.pose()
            v, a = m.velocity_ned.copy(), m.accel_ned.copy()
        local = self._local(vehicle_name, pose)
        orientation, angular_velocity, angular_acceleration = self._attitude_msgs(vehicle_name)
        return {
            "position": local["position"],
            "orientation": orientation,
            "linear_velocity": vec3(*v),
            "angular_velocity": angular_velocity,
            "linear_acceleration": vec3(*a),
            "angular_acceleration": angular_acceleration,
        }

    def _object_id_of_body(self, body_id: int) -> int:
        """A body's segmentation object id (its Unreal stencil value; -1 where none was set)."""
        with self._seg_lock:
            return self._seg_ids.get(body_id, -1)

    def getMultirotorState(self, vehicle_name: str) -> dict[str, Any]:
        kin = self._kinematics(vehicle_name)
        m = self._slot(vehicle_name).model
        return {
            "collision": empty_collision(),  # MultirotorApiBase::getMultirotorState never fills it
            "kinematics_estimated": kin,
            "gps_location": self._geo(m.pose()),
            "timestamp": self._time_ns(),
            "landed_state": 0 if m.landed else 1,
            "rc_data": self._manual.rc(vehicle_name),  # the last moveByRC (AirLib's getRCData)
        }

    def moveByRC(self, rcdata: Any, vehicle_name: str) -> None:
        """SimpleFlight keeps the RC data (rpc/manual.py); moveByManual flies by it."""
        self._manual.set_rc(vehicle_name, rcdata)

    def moveByManual(
        self,
        vx_max: float,
        vy_max: float,
        z_min: float,
        duration: float,
        drivetrain: int,
        yaw_mode: Any,
        vehicle_name: str,
    ) -> bool:
        """MultirotorApiBase::moveByManual (rpc/manual.py); a duration <= 0 returns True at once."""
        if float(duration) <= 0:
            return True
        if not self._need_control(vehicle_name):
            return False
        is_rate, value, _ = _yaw_mode(yaw_mode)
        return self._manual.fly(
            vehicle_name, float(vx_max), float(vy_max), float(z_min), float(duration), is_rate, value
        )

    def simGetGroundTruthKinematics(self, vehicle_name: str) -> dict[str, Any]:
        return self._kinematics(vehicle_name)

    def simGetCollisionInfo(self, vehicle_name: str) -> dict[str, Any]:
        """PawnSimApi::getCollisionInfoAndReset (rpc/collisions.py)."""
        return self._collisions.take(self._slot(vehicle_name).model.name)

    def simGetVehiclePose(self, vehicle_name: str) -> dict[str, Any]:
        msg = self._local(vehicle_name, self.world.vehicle_pose(str(vehicle_name)))
        msg["orientation"] = self._attitude_msgs(vehicle_name)[0]
        return msg

    def simSetVehiclePose(self, pose: Any, ignore_collision: bool, vehicle_name: str) -> None:
        """PawnSimApi::setPose (spawn-relative). NaN components keep the current value, as the airsim and
        Cosys-AirSim clients document (AirLib 1.8.1's C++ itself writes them into the physics body).
        ignore_collision=False moves the pawn with a sweep (SetActorLocationAndRotation(..., true)): it
        stops at the first thing in its way, which is a collision (onCollision); True teleports
        (ETeleportType::TeleportPhysics). Here a ray of the body's origin stands in for the sweep."""
        m = self._slot(vehicle_name).model
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
            slot = self._slot(vehicle_name)
            start = m.position_ned.copy()
            end = np.array([target.x_m, target.y_m, target.z_m])
            hit = self._sweep(start, end, slot.body_id)
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
                "time_stamp": self._time_ns(),
                "normal": tuple(-back / max(float(np.linalg.norm(back)), 1e-9)),
                "impact_point": tuple(float(v) for v in point),
                "position": tuple(float(v) for v in stop),
                "object_name": self.world.scene.body_name(body),
                "object_id": body,
            }

    def _sweep(self, start: np.ndarray, end: np.ndarray, own_body: int) -> tuple[int, np.ndarray] | None:
        """(body, point) of the first body on the segment start -> end other than `own_body`, or None."""
        if float(np.linalg.norm(end - start)) < 1e-9:
            return None
        bodies, fractions = self.world.scene.ray_test(start[None, :], end[None, :], ignore_body=own_body)
        if int(bodies[0]) < 0:
            return None
        return int(bodies[0]), start + float(fractions[0]) * (end - start)

    # ---------------------------------------------------------------- sensors (see sensors.py)
    def getImuData(self, imu_name: str, vehicle_name: str) -> dict[str, Any]:
        return self.sensors.imu(imu_name, vehicle_name)

    def getBarometerData(self, barometer_name: str, vehicle_name: str) -> dict[str, Any]:
        return self.sensors.barometer(barometer_name, vehicle_name)

    def getMagnetometerData(self, magnetometer_name: str, vehicle_name: str) -> dict[str, Any]:
        return self.sensors.magnetometer(magnetometer_name, vehicle_name)

    def getGpsData(self, gps_name: str, vehicle_name: str) -> dict[str, Any]:
        return self.sensors.gps(gps_name, vehicle_name)

    def getDistanceSensorData(self, distance_sensor_name: str, vehicle_name: str) -> dict[str, Any]:
        # AirSim's default multirotor has none; settings.json's Sensors may add some (rpc/distance.py)
        return self._distance.data(distance_sensor_name, vehicle_name)

    def simGetWorldExtents(self) -> list[dict[str, float]]:
        """[min, max] GeoPoints of the box around every object of the scene (AirSim: the level's bounds)."""
        with self.world.lock:
            boxes = [
                (o.bbox_centre_ned(), aabb_half(o.bbox_half_m, o.pose.yaw_deg))
                for o in self.world.objects.values()
            ]
        if not boxes:
            zero = self._geo(Pose(0.0, 0.0, 0.0, 0.0))
            return [zero, zero]
        lo = np.min([c - h for c, h in boxes], axis=0)
        hi = np.max([c + h for c, h in boxes], axis=0)
        # NED z is down: the lowest point (max z) is the minimum altitude
        lowest = Pose(float(lo[0]), float(lo[1]), float(hi[2]), 0.0)
        highest = Pose(float(hi[0]), float(hi[1]), float(lo[2]), 0.0)
        return [self._geo(lowest), self._geo(highest)]

    def getHomeGeoPoint(self, vehicle_name: str) -> dict[str, float]:
        return self._geo(self._slot(vehicle_name).model.spawn)

    # ---------------------------------------------------------------- wind, weather, trace lines
    def simSetWind(self, wind: Any) -> None:
        """The wind (world NED, m/s) for every vehicle: a drag force on each (sim_bridge.sim.wind)."""
        w = np.array(parse_vec3(wind, "wind"), float)
        if not np.isfinite(w).all():
            raise ConfigError(f"wind must be finite, got {w.tolist()}")
        with self.world.lock:
            self.effects.wind_ned = w
            for slot in self.world.vehicles.values():
                slot.model.wind_ned = w.copy()

    def _no_visible_effect(self, method: str) -> None:
        if method not in self._warned:
            self._warned.add(method)
            log.warning("%s: stored, but the built-in simulator's renderers show no effect of it", method)

    def simEnableWeather(self, enable: bool) -> None:
        """AirSim's weather switch: the parameters show (sim_bridge.sim.weather) only while it is on."""
        self.effects.weather_enabled = bool(enable)
        self._show_weather()

    def simSetWeatherParameter(self, param: int, val: float) -> None:
        """One of AirSim's WeatherParameter scalars, 0..1, drawn on every Scene frame by either
        renderer. AirSim zeroes, without a word, a value set while the weather is off: here that is an
        error. Enabled (8) switches the weather as simEnableWeather does."""
        try:
            index, value = int(param), float(val)
        except (TypeError, ValueError):
            raise ConfigError(f"weather parameter {param!r:.40} = {val!r:.40}: expected numbers") from None
        if not 0 <= index < len(WEATHER_PARAMETERS) or not math.isfinite(value):
            raise ConfigError(f"weather parameter {param} = {val}: expected 0-{len(WEATHER_PARAMETERS) - 1}")
        name = WEATHER_PARAMETERS[index]
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"weather parameter {name} = {value}: AirSim's weather values are 0..1")
        if index == ENABLED_INDEX:
            self.simEnableWeather(value > 0.0)
            return
        if value > 0.0 and not self.effects.weather_enabled:
            raise ConfigError(
                f"simSetWeatherParameter({name}, {value}): the weather is off; call simEnableWeather(True) "
                "first (AirSim would set the value to 0)"
            )
        with self.world.lock:
            self.effects.weather[name] = value
            self._show_weather()

    def _show_weather(self) -> None:
        e = self.effects
        weather = Weather.from_values(e.weather) if e.weather_enabled else None
        # None leaves the frames untouched (the default path pays nothing)
        self.world.cameras.weather = weather if weather is not None and weather.visible else None

    def simSetTraceLine(self, color_rgba: Any, thickness: float, vehicle_name: str) -> None:
        m = self._slot(vehicle_name).model
        try:
            rgba = [float(c) for c in color_rgba]
        except (TypeError, ValueError):
            raise ConfigError(f"color_rgba must be 4 numbers, got {color_rgba!r:.80}") from None
        if len(rgba) != 4 or not math.isfinite(float(thickness)):
            raise ConfigError(f"color_rgba must be 4 numbers and thickness finite, got {rgba}, {thickness}")
        self.effects.trace_lines[m.name] = {"color_rgba": rgba, "thickness": float(thickness)}
        self._no_visible_effect("simSetTraceLine")

    # ---------------------------------------------------------------- time
    def simPause(self, is_paused: bool) -> None:
        self.world.pause(bool(is_paused))

    def simIsPaused(self) -> bool:
        return self.world.paused

    def simContinueForTime(self, seconds: float) -> None:
        self.world.continue_for_time(float(seconds))

    # ---------------------------------------------------------------- objects
    def simGetObjectPose(self, object_name: str, ned: bool = True) -> dict[str, Any]:
        if not ned:
            raise ConfigError("simGetObjectPose: only NED poses are served (ned=True)")
        try:
            p = self.world.object_pose(str(object_name))
        except ConfigError:
            return NAN_POSE
        msg = pose_msg(p.x_m, p.y_m, p.z_m, p.yaw_deg)
        if str(object_name) in self.world.vehicles:  # a vehicle's body pitches and rolls
            msg["orientation"] = self._attitude_msgs(str(object_name))[0]
        return msg

    def simSetObjectPose(self, object_name: str, pose: Any, teleport: bool) -> bool:
        """WorldSimApi::setObjectPose (world NED): an actor of the scene's actor map (its objects and the
        vehicles the server started with; simAddVehicle's are not in it: False). teleport=True places it,
        False moves it with a sweep that stops at the first thing in its way (True when it moved at all).
        A vehicle's pawn is placed, but its physics body puts it back on the next tick
        (MultirotorPawnSimApi::updateRendering sets the pawn from the physics pose): True, no lasting
        effect; simSetVehiclePose moves vehicles. AirSim has no NaN rule here (the actor is moved to the
        NaN location): a NaN is refused."""
        name = str(object_name)
        target = parse_pose(pose)  # a malformed Pose fails the call (rpclib's argument conversion)
        q = pose.get("orientation")
        values = [*parse_vec3(pose.get("position"), "pose.position")]
        if isinstance(q, dict):
            values += [float(q.get(k, 0.0)) for k in ("w_val", "x_val", "y_val", "z_val")]
        is_vehicle = name in self.world.vehicles
        if (is_vehicle and name not in self._actor_vehicles) or (
            not is_vehicle and name not in self.world.objects
        ):
            return False  # no such actor: its pose is never used (objects.py sets a NaN pose so)
        if any(math.isnan(v) for v in values):
            raise ConfigError(f"simSetObjectPose({name}): the pose has NaN components: {values}")
        if is_vehicle:
            log.info("simSetObjectPose(%s): the physics puts a vehicle back; use simSetVehiclePose", name)
            return True
        if teleport:
            self.world.set_object_pose(name, target)
            return True
        with self.world.lock:
            obj = self.world.objects[name]
            start = obj.bbox_centre_ned()
            offset = start - np.array([obj.pose.x_m, obj.pose.y_m, obj.pose.z_m])
            end = np.array([target.x_m, target.y_m, target.z_m]) + offset
            hit = self._sweep(start, end, obj.body_id)
            if hit is not None:
                stop = hit[1] - (end - start) / float(np.linalg.norm(end - start)) * SWEEP_CLEARANCE_M
                if np.dot(stop - start, end - start) <= 0:
                    return False  # blocked at once: no movement
                at = stop - offset
                target = Pose(float(at[0]), float(at[1]), float(at[2]), target.yaw_deg)
            self.world.set_object_pose(name, target)
        return True

    def simListSceneObjects(self, name_regex: str) -> list[str]:
        pattern = re.compile(str(name_regex))
        names = list(self.world.objects) + list(self.world.vehicles)
        return [n for n in names if pattern.fullmatch(n)]

    def simSpawnObject(
        self,
        object_name: str,
        asset_name: str,
        pose: Any,
        scale: Any,
        physics_enabled: bool,
        is_blueprint: bool,
    ) -> str:
        asset = self._spawn_asset(str(asset_name))
        sx, sy, sz = parse_vec3(scale, "scale")
        name = self._spawn_name(str(object_name))
        return self.world.spawn(name, asset, parse_pose(pose), (sx, sy, sz)).name

    def _spawn_asset(self, asset_name: str) -> str:
        """The built-in asset string for simSpawnObject's asset name (a blueprint's, or the string)."""
        return BLUEPRINTS.get(asset_name, asset_name)

    def _spawn_name(self, object_name: str) -> str:
        """WorldSimApi::spawnObject's rule: when any actor's name matches the regex .*NAME.* (NAME itself
        a regex, case-sensitive: UAirBlueprintLib::ListMatchingActors), NAME + (the greatest trailing
        number of those names, 0 when none has one, + 1)."""
        try:
            pattern = re.compile(".*" + object_name + ".*", re.DOTALL)
        except re.error as exc:
            raise ConfigError(
                f"simSpawnObject: object name {object_name!r} is not a valid regex: {exc}"
            ) from None
        with self.world.lock:
            names = [*self.world.objects, *self.world.vehicles]
        matching = [n for n in names if pattern.fullmatch(n)]
        if not matching:
            return object_name
        numbers = [int(m.group()) for n in matching if (m := re.search(r"[0-9]+$", n))]
        return f"{object_name}{max(numbers, default=0) + 1}"

    def simDestroyObject(self, object_name: str) -> bool:
        obj = self.world.objects.get(str(object_name))
        if obj is not None:
            with self._seg_lock:  # PyBullet reuses body ids
                self._seg_ids.pop(obj.body_id, None)
        return self.world.destroy(str(object_name))

    def simListAssets(self) -> list[str]:
        from sim_bridge.sim.assets import ASSET_KINDS

        return sorted(ASSET_KINDS) + sorted(BLUEPRINTS) + sorted(MATERIALS)

    def simSetObjectMaterial(self, object_name: str, material_name: str, component_id: int = 0) -> bool:
        """Repaint an object with one of MATERIALS (respawned under its name, pose and scale)."""
        colour = MATERIALS.get(str(material_name))
        w = self.world
        with w.lock:
            obj = w.objects.get(str(object_name))
            if colour is None or obj is None or obj.cls in ("scenery", "ground"):
                log.info(
                    "simSetObjectMaterial(%s, %s): no such object or material",
                    object_name,
                    material_name,
                )
                return False
            seg_id = self._seg_ids.pop(obj.body_id, None)
            name, pose, scale, asset = obj.name, obj.pose, obj.scale, obj.asset
            w.destroy(name)
            new = w.spawn(name, with_colour(asset, colour), pose, scale)
            if seg_id is not None:
                self._seg_ids[new.body_id] = seg_id
        return True

    # ---------------------------------------------------------------- segmentation IDs
    def _mesh_names(self) -> dict[str, int]:
        """Name -> body id of everything a segmentation ID can be set on."""
        w = self.world
        with w.lock:
            names = {n: o.body_id for n, o in w.objects.items()}
            names.update({n: s.body_id for n, s in w.vehicles.items()})
        return names

    def simSetSegmentationObjectID(self, mesh_name: str, object_id: int, is_name_regex: bool = False) -> bool:
        """AirSim's rule: names match case-insensitively (a regex over whole names when asked); an id
        is 0-255. True when some object matched."""
        object_id = int(object_id)
        if not 0 <= object_id <= 255:
            return False
        names = self._mesh_names()
        if is_name_regex:
            pattern = re.compile(str(mesh_name), re.IGNORECASE)
            bodies = [b for n, b in names.items() if pattern.fullmatch(n)]
        else:
            bodies = [b for n, b in names.items() if n.lower() == str(mesh_name).lower()]
        with self._seg_lock:
            for body in bodies:
                self._seg_ids[body] = object_id
        return bool(bodies)

    def simGetSegmentationObjectID(self, mesh_name: str) -> int:
        for name, body in self._mesh_names().items():
            if name.lower() == str(mesh_name).lower():
                return self._seg_ids.get(body, -1)
        return -1

    # ---------------------------------------------------------------- line of sight
    def _ned_from_geo(self, point: Any) -> np.ndarray:
        try:
            lat, lon, alt = (float(point[k]) for k in ("latitude", "longitude", "altitude"))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"expected a GeoPoint map (latitude, longitude, altitude), got {point!r:.80}"
            ) from None
        x = math.radians(lat - HOME_LAT_DEG) * EARTH_RADIUS_M
        y = math.radians(lon - HOME_LON_DEG) * EARTH_RADIUS_M * math.cos(math.radians(HOME_LAT_DEG))
        return np.array([x, y, HOME_ALT_M - alt])

    def simTestLineOfSightBetweenPoints(self, point1: Any, point2: Any) -> bool:
        """True when nothing with a collision shape lies on the segment between the two GeoPoints."""
        return self.world.scene.line_of_sight(self._ned_from_geo(point1), self._ned_from_geo(point2))

    def simTestLineOfSightToPoint(self, point: Any, vehicle_name: str) -> bool:
        with self.world.lock:
            eye, _ = self.world.camera_pose(str(vehicle_name))
        return self.world.scene.line_of_sight(np.asarray(eye, float), self._ned_from_geo(point))

    # ---------------------------------------------------------------- cameras & images
    def _camera_pose_msg(self, vehicle_name: str, camera_name: str = "0") -> dict[str, Any]:
        pose = self._camera_vehicle_pose(vehicle_name, camera_name)
        with self.world.lock:
            eye, yaw = self.world.camera_pose(str(vehicle_name), pose)
            rotation = self.world.camera_rotation(str(vehicle_name), pose)
        msg = self._local_xyz(vehicle_name, eye[0], eye[1], eye[2], yaw)
        msg["orientation"] = camera_orientation_msg(rotation, yaw) or msg["orientation"]
        return msg

    def _camera_vehicle_pose(self, vehicle_name: str, camera_name: str) -> Pose | None:
        """The vehicle pose at which the forward camera sits where this camera is (None: the forward
        camera itself): a side camera's offset is applied to the vehicle, the back camera turns it."""
        if str(camera_name) not in SIDE_CAMERAS:
            return None
        right_m, back = SIDE_CAMERAS[str(camera_name)]
        with self.world.lock:
            p = self._slot(vehicle_name).model.pose()
        off = yaw_rotation_ned(p.yaw_deg) @ np.array([0.0, right_m, 0.0])
        return Pose(p.x_m + off[0], p.y_m + off[1], p.z_m, wrap_deg(p.yaw_deg + (180.0 if back else 0.0)))

    def simGetImages(self, requests: Any, vehicle_name: str, external: Any = False) -> list[dict[str, Any]]:
        if not isinstance(requests, list | tuple):
            raise ConfigError(f"requests must be a list of ImageRequest, got {type(requests).__name__}")
        parsed = []
        for req in requests:
            if not isinstance(req, dict):
                raise ConfigError(f"ImageRequest must be a map, got {type(req).__name__}")
            if external is True:  # AirSim 1.x's flag (Cosys sends an annotation name here)
                self._cameras.external(str(req.get("camera_name", "")))
            else:
                self._camera(req.get("camera_name", "0"), side_cameras=True, vehicle_name=vehicle_name)
            image_type = int(req.get("image_type", SCENE))
            if image_type not in RENDERED_TYPES:
                raise ConfigError(
                    f"image_type {image_type} is not rendered by the built-in simulator ("
                    + ", ".join(f"{n} {t}" for t, n in RENDERED_TYPES.items())
                    + ")"
                )
            parsed.append((req, image_type))
        renders: dict[str, Render] = {}  # one render per camera
        turned: dict[str, np.ndarray] = {}  # camera -> world rotation, for the cameras drawn turned
        for key in dict.fromkeys(_camera_key(r) for r, _ in parsed):
            need_depth = any(t in DEPTH_DERIVED for r, t in parsed if _camera_key(r) == key)
            if external is True:  # a world-fixed camera: its own pose, every body drawn
                ext = self._cameras.external(
                    next(str(r.get("camera_name", "")) for r, _ in parsed if _camera_key(r) == key)
                )
                assert ext.profile is not None
                renders[key] = self.world.cameras.render_view(
                    self.world.vehicle(str(vehicle_name)),
                    ext.profile,
                    ext.position_frd_m,
                    ext.rotation,
                    need_depth,
                    hide_vehicle=False,
                )
                turned[key] = ext.rotation
                continue
            mount = self._turned_mount(vehicle_name, key)
            if mount is not None:
                renders[key], turned[key] = self._render_mount(vehicle_name, mount, need_depth)
                continue
            pose = self._camera_vehicle_pose(vehicle_name, key)
            renders[key] = self.world.render(
                str(vehicle_name), segmentation=True, depth=need_depth, vehicle_pose=pose
            )
            if pose is None:
                self.frames.keep(renders[key])  # the ring holds the forward camera's frames
        lens_vehicle = "" if external is True else self._slot(vehicle_name).model.name
        for key in renders:  # each camera's lens (the frame ring above keeps the pinhole frame)
            renders[key] = distorted(renders[key], self._lens.get((lens_vehicle, key), ()))
        out = []
        flows: dict[str, np.ndarray] = {}  # camera key -> its optical flow, once per call
        poses = {key: _camera_pose_now(r, turned.get(key)) for key, r in renders.items()}
        for req, image_type in parsed:
            camera = str(req.get("camera_name", "0"))
            render = renders[_camera_key(req)]
            cam_pose = self._local_xyz(vehicle_name, *render.camera_position_ned, render.camera_yaw_deg)
            if _camera_key(req) in turned:
                cam_pose["orientation"] = _quat_msg(turned[_camera_key(req)])
            else:
                tilted = camera_orientation_msg(render.camera_rotation_ned, render.camera_yaw_deg)
                cam_pose["orientation"] = tilted or cam_pose["orientation"]
            if external is True:  # AirSim reports an external camera in the global NED frame
                cam_pose["position"] = vec3(*render.camera_position_ned)
            as_float = bool(req.get("pixels_as_float", False))
            compress = bool(req.get("compress", True))
            data_u8: bytes = b""
            data_f: list[float] = []
            h, w = render.image_bgr.shape[:2]
            img: np.ndarray | None
            if image_type == SCENE:
                img = render.image_bgr
            elif image_type == SEGMENTATION:
                img = segmentation_colours(render.seg, self._seg_ids)  # type: ignore[arg-type]
            elif image_type == DISPARITY_NORMALIZED:  # rpc/image_types.py
                assert render.depth_planar_m is not None
                disparity = disparity_normalized(render.depth_planar_m, render.camera)
                img = (
                    None if as_float else cv2.cvtColor((disparity * 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
                )
                data_f = disparity.ravel().tolist() if as_float else []
            elif image_type == INFRARED:
                assert render.seg is not None
                img = infrared_bgr(render.seg, self._object_ids())
            elif image_type in FLOW_TYPES:
                key = _camera_key(req)
                if key not in flows:
                    assert render.depth_planar_m is not None
                    before = self._flow_poses.get((str(vehicle_name), key, external is True))
                    flows[key] = optical_flow(render.depth_planar_m, render.camera, poses[key], before)
                flow = flows[key]
                img = None
                if as_float and image_type == OPTICAL_FLOW:  # two values per pixel: vx, vy
                    data_f = flow.ravel().tolist()
                elif image_type == OPTICAL_FLOW:
                    img = optical_flow_bgr(flow)
                else:
                    img = optical_flow_vis_bgr(flow)
            elif image_type == SURFACE_NORMALS:
                assert render.depth_planar_m is not None
                rot = turned.get(_camera_key(req), render.camera_rotation_ned)  # None: level
                rot = rotation_pry_deg(0.0, 0.0, render.camera_yaw_deg) if rot is None else rot
                img = surface_normals_bgr(render.depth_planar_m, render.camera, rot)
            else:
                depth = render.depth_planar_m
                assert depth is not None
                if image_type == DEPTH_PERSPECTIVE:
                    cam = render.camera
                    u = (np.arange(w) - cam.cx_px) / cam.fx_px
                    v = (np.arange(h) - cam.cy_px) / cam.fy_px
                    depth = depth * np.sqrt(1 + u[None, :] ** 2 + v[:, None] ** 2)
                img = None
                if as_float and image_type == DEPTH_VIS:
                    data_f = np.clip(depth / DEPTH_VIS_WHITE_M, 0.0, 1.0).astype(np.float32).ravel().tolist()
                elif as_float:
                    data_f = depth.astype(np.float32).ravel().tolist()
                else:
                    img = np.clip(depth * 255.0 / DEPTH_VIS_WHITE_M, 0, 255).astype(np.uint8)
                    img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
            if img is not None and as_float:
                # AirSim reads a float render target and returns its R channel for every image type
                # (RenderRequest.cpp: image_data_float = item.R); these renderers draw 8-bit colour
                data_f = (img[:, :, 2].astype(np.float32) / 255.0).ravel().tolist()
            elif img is not None:
                if compress:
                    ok, buf = cv2.imencode(".png", img)
                    if not ok:
                        raise ConfigError("PNG encoding failed")
                    data_u8 = buf.tobytes()
                else:
                    data_u8 = np.ascontiguousarray(img).tobytes()
            out.append(
                {
                    "image_data_uint8": data_u8,
                    "image_data_float": data_f,
                    "camera_name": camera,
                    "camera_position": cam_pose["position"],
                    "camera_orientation": cam_pose["orientation"],
                    "time_stamp": round(render.time_s * 1e9),
                    "message": "",
                    "pixels_as_float": as_float,
                    "compress": compress,
                    "width": w,
                    "height": h,
                    "image_type": image_type,
                }
            )
        for key, seen in poses.items():  # the next frame's optical flow starts from these
            self._flow_poses[(str(vehicle_name), key, external is True)] = seen
        return out

    def _object_ids(self) -> dict[int, int]:
        """Body id -> segmentation object ID: simSetSegmentationObjectID's, else AirSim's starting ID
        of the body's name."""
        ids = {body: default_object_id(name) for name, body in self._mesh_names().items()}
        with self._seg_lock:
            ids.update(self._seg_ids)
        return ids

    def _turned_mount(self, vehicle_name: str, camera_key: str) -> Mount | None:
        """The camera's mount when it is drawn in its own orientation (None: the level path)."""
        mount = self._cameras.mount(vehicle_name, camera_key)
        return None if mount.level_path else mount

    def _render_mount(self, vehicle_name: str, mount: Mount, depth: bool) -> tuple[Render, np.ndarray]:
        with self.world.lock:
            eye, rot = self._cameras.world_pose(vehicle_name, mount)
            lens = mount.profile or self._slot(vehicle_name).camera
            viewer = self.world.vehicle(str(vehicle_name))
            render = self.world.cameras.render_view(viewer, lens, eye, rot, depth=depth)
        return render, rot

    def simSetCameraPose(self, camera_name: str, pose: Any, vehicle_name: str, external: Any = False) -> None:
        """APIPCamera::setCameraPose: the camera's pose relative to the vehicle body (rpc/cameras.py)."""
        if external is True:
            self._cameras.external(str(camera_name))
        else:
            self._camera(camera_name, side_cameras=True, vehicle_name=vehicle_name)
        position = np.array(
            parse_vec3(pose.get("position") if isinstance(pose, dict) else None, "pose.position")
        )
        q = pose.get("orientation") if isinstance(pose, dict) else None
        try:
            w, x, y, z = (float(q[k]) for k in ("w_val", "x_val", "y_val", "z_val"))  # type: ignore[index]
            rotation = rotation_from_quat(w, x, y, z)
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"pose.orientation: expected a unit Quaternionr map, got {q!r:.80}") from None
        if not np.all(np.isfinite(position)):
            raise ConfigError(f"pose.position: expected finite numbers, got {position.tolist()}")
        if external is True:  # its pose in the world (an external camera has no parent)
            self._cameras.set_external_pose(str(camera_name), position, rotation)
            return
        self._cameras.set_pose(vehicle_name, str(camera_name), position, rotation)

    def simGetDistortionParams(
        self, camera_name: str, vehicle_name: str, external: Any = False
    ) -> list[float]:
        """K1, K2, K3, P1, P2 (APIPCamera::getDistortionParams): what simSetDistortionParam set, else 0."""
        key = self._distortion_camera(camera_name, vehicle_name, external)
        return list(self._lens.get(key, (0.0,) * len(DISTORTION_PARAMS)))

    def simSetDistortionParam(
        self, camera_name: str, param_name: str, value: float, vehicle_name: str, external: Any = False
    ) -> None:
        """One lens parameter of the camera; its images are resampled through the lens (rpc/lens.py)."""
        key = self._distortion_camera(camera_name, vehicle_name, external)
        if str(param_name) not in DISTORTION_PARAMS:
            raise ConfigError(f"distortion parameter {param_name!r}: one of {', '.join(DISTORTION_PARAMS)}")
        v = float(value)
        if not math.isfinite(v) or abs(v) > 10.0:
            raise ConfigError(
                f"simSetDistortionParam {param_name}={value}: expected a finite number within +-10"
            )
        params = list(self._lens.get(key, (0.0,) * len(DISTORTION_PARAMS)))
        params[DISTORTION_PARAMS.index(str(param_name))] = v
        self._lens[key] = tuple(params)

    def _distortion_camera(self, camera_name: str, vehicle_name: str, external: Any) -> tuple[str, str]:
        """The lens key of a camera: (vehicle, camera key), the vehicle "" for an external camera."""
        if external is True:
            self._cameras.external(str(camera_name))
            return ("", _camera_key({"camera_name": camera_name}))
        self._camera(camera_name, side_cameras=True, vehicle_name=vehicle_name)
        return (self._slot(vehicle_name).model.name, _camera_key({"camera_name": camera_name}))

    def simSetCameraFov(
        self, camera_name: str, fov_degrees: float, vehicle_name: str, external: Any = False
    ) -> None:
        """The forward camera's horizontal FOV (its resolution kept). The side cameras are that camera
        moved, so they share its lens and refuse a FOV of their own."""
        name = str(camera_name)
        if external is True:
            if not 1.0 <= float(fov_degrees) <= 170.0:
                raise ConfigError(f"simSetCameraFov: fov_degrees {fov_degrees} out of 1-170")
            self._cameras.set_external_fov(name, float(fov_degrees))
            return
        if name in SIDE_CAMERAS:
            raise ConfigError(f"camera '{name}' shares the forward camera's lens: set the FOV of camera '0'")
        if name not in CAMERA_NAMES:  # the bottom camera and settings.json's have lenses of their own
            self._camera(name, vehicle_name=vehicle_name)
            if not 1.0 <= float(fov_degrees) <= 170.0:
                raise ConfigError(f"simSetCameraFov: fov_degrees {fov_degrees} out of 1-170")
            self._cameras.set_fov(vehicle_name, name, float(fov_degrees), self._slot(vehicle_name).camera)
            return
        self._camera(name)
        fov = float(fov_degrees)
        if self.world.render_pool is not None:
            raise ConfigError(
                "simSetCameraFov: render workers hold copies of the cameras; use --render-workers 0"
            )
        from common.camera import CameraProfile

        with self.world.lock:
            slot = self._slot(vehicle_name)
            cam = slot.camera
            slot.camera = CameraProfile.from_hfov(cam.name, cam.width_px, cam.height_px, fov)

    def simGetGroundTruthEnvironment(self, vehicle_name: str) -> dict[str, Any]:
        """AirSim's EnvironmentState at the vehicle: local position, geo point, gravity (NED) and the
        standard atmosphere's pressure (Pa), temperature (K) and density (kg/m^3) at its altitude."""
        with self.world.lock:
            pose = self._slot(vehicle_name).model.pose()
        geo = self._geo(pose)
        pressure, temperature = sensors.standard_atmosphere(geo["altitude"])
        return {
            "position": self._local(vehicle_name, pose)["position"],
            "geo_point": geo,
            "gravity": vec3(0.0, 0.0, sensors.GRAVITY_M_S2),
            "air_pressure": pressure,
            "temperature": temperature,
            "air_density": pressure / (sensors.AIR_GAS_CONSTANT_J_KG_K * temperature),
        }

    def getLidarData(self, lidar_name: str, vehicle_name: str) -> dict[str, Any]:
        # the lidars settings.json's Sensors define (none by default, as AirSim): rpc/lidar.py
        with self._seg_lock:
            ids = dict(self._seg_ids)
        return self._lidars.data(lidar_name, vehicle_name, ids)

    def simGetImage(self, camera_name: str, image_type: int, vehicle_name: str, external: bool) -> bytes:
        resp = self.simGetImages(
            [
                {
                    "camera_name": camera_name,
                    "image_type": image_type,
                    "pixels_as_float": False,
                    "compress": True,
                }
            ],
            vehicle_name,
            external,
        )
        return bytes(resp[0]["image_data_uint8"])

    def simGetCameraInfo(self, camera_name: str, vehicle_name: str, external: Any = False) -> dict[str, Any]:
        if external is True:  # world NED pose (AirSim's external cameras are in the global frame)
            ext = self._cameras.external(str(camera_name))
            assert ext.profile is not None
            p = ext.position_frd_m
            m_ext = np.asarray(projection_matrix(ext.profile)).reshape(4, 4).T
            return {
                "pose": {"position": vec3(*p), "orientation": _quat_msg(ext.rotation)},
                "fov": ext.profile.hfov_deg,
                "proj_mat": {"matrix": m_ext.tolist()},
            }
        self._camera(camera_name, side_cameras=True, vehicle_name=vehicle_name)

        mount = self._turned_mount(vehicle_name, _camera_key({"camera_name": camera_name}))
        if mount is not None:
            with self.world.lock:
                eye, rot = self._cameras.world_pose(vehicle_name, mount)
                lens = mount.profile or self._slot(vehicle_name).camera
            pose = self._local_xyz(vehicle_name, eye[0], eye[1], eye[2], 0.0)
            pose["orientation"] = _quat_msg(rot)
            m_turned = np.asarray(projection_matrix(lens)).reshape(4, 4).T
            return {"pose": pose, "fov": lens.hfov_deg, "proj_mat": {"matrix": m_turned.tolist()}}
        cam = self._slot(vehicle_name).camera
        m = np.asarray(projection_matrix(cam)).reshape(4, 4).T
        return {
            "pose": self._camera_pose_msg(vehicle_name, str(camera_name)),
            "fov": cam.hfov_deg,
            "proj_mat": {"matrix": m.tolist()},
        }

    # ---------------------------------------------------------------- detections (rpc/detections.py)
    def _filter_key(self, camera_name: str, vehicle_name: str) -> str:
        self._camera(camera_name)  # the forward camera's detection component
        return str(self._slot(vehicle_name).model.name)

    def simAddDetectionFilterMeshName(
        self, camera_name: str, image_type: int, mesh_name: str, vehicle_name: str, external: bool
    ) -> None:
        vehicle = self._filter_key(camera_name, vehicle_name)
        self._detections.add(vehicle, "0", int(image_type), str(mesh_name))

    def simSetDetectionFilterRadius(
        self, camera_name: str, image_type: int, radius_cm: float, vehicle_name: str, external: bool
    ) -> None:
        radius = float(radius_cm)
        if math.isnan(radius):
            raise ConfigError(f"simSetDetectionFilterRadius: radius_cm must be a number, got {radius_cm}")
        vehicle = self._filter_key(camera_name, vehicle_name)
        self._detections.set_radius(vehicle, "0", int(image_type), radius)

    def simClearDetectionMeshNames(
        self, camera_name: str, image_type: int, vehicle_name: str, external: bool
    ) -> None:
        self._detections.clear(self._filter_key(camera_name, vehicle_name), "0", int(image_type))

    def simGetDetections(
        self, camera_name: str, image_type: int, vehicle_name: str, external: bool
    ) -> list[dict[str, Any]]:
        vehicle = self._filter_key(camera_name, vehicle_name)
        filt = self._detections.get(vehicle, "0", int(image_type))
        return detections(self.world, vehicle, filt, self._geo)

    def stock_table(self) -> dict[str, Callable[..., Any]]:
        """Name -> handler of AirSim's stock methods (every public method of this class)."""
        return {
            name: getattr(self, name)
            for name in dir(self)
            if not name.startswith("_")
            and name not in (*NOT_HANDLERS, "apply_settings")
            and callable(getattr(self, name))
        }

    def table(self) -> dict[str, Callable[..., Any]]:
        """What the RPC server registers: the stock surface and, beside it, the extensions."""
        return {**self.stock_table(), **self.extensions.table()}


def _camera_key(request: dict[str, Any]) -> str:
    """Which render serves an ImageRequest: "0" for the forward camera, else the camera's name."""
    camera = str(request.get("camera_name", "0"))
    return "0" if camera in CAMERA_NAMES else camera


def _camera_pose_now(render: Render, turned: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """A frame's camera (position NED, rotation camera FRD -> NED)."""
    rot = turned if turned is not None else render.camera_rotation_ned
    if rot is None:  # level at the camera's yaw
        rot = rotation_pry_deg(0.0, 0.0, render.camera_yaw_deg)
    return np.asarray(render.camera_position_ned, float), np.asarray(rot, float)


def _quat_msg(rotation: np.ndarray) -> dict[str, float]:
    w, x, y, z = quat_from_rotation(rotation)
    return {"w_val": w, "x_val": x, "y_val": y, "z_val": z}


def segmentation_colours(seg: np.ndarray, object_ids: dict[int, int] | None = None) -> np.ndarray:
    """Body ids -> a stable BGR colour per id (sky black), like AirSim's segmentation view. A body
    given a segmentation object id (simSetSegmentationObjectID) takes that id's colour instead:
    id 0 black, others from a fixed table (see segmentation_colour)."""
    ids = seg.astype(np.int64) + 3
    b = (ids * 97) % 256
    g = (ids * 57) % 256
    r = (ids * 173) % 256
    out = np.stack([b, g, r], axis=-1).astype(np.uint8)
    out[seg == -1] = 0
    for body, object_id in (object_ids or {}).items():
        out[seg == body] = segmentation_colour(object_id)
    return out


def segmentation_colour(object_id: int) -> tuple[int, int, int]:
    """The BGR colour of a segmentation object id: 0 black, others spread over the colour cube.
    (Clients need not know the table: episodes.hil reads the target's colour off a frame.)"""
    if object_id == 0:
        return (0, 0, 0)
    k = object_id * 2654435761
    return (64 + k % 192, 64 + (k >> 8) % 192, 64 + (k >> 16) % 192)


__all__ = ["EXTENSIONS", "AirSimApi", "VehicleError", "parse_pose", "parse_vec3"]
