# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim 1.8.1's RPC method table (its wire names and struct encodings) over a `World`, plus extensions.

Vehicle APIs use each vehicle's spawn-relative NED frame (axes aligned with the world's); object APIs
use the world NED frame, as AirSim does. Camera poses (ImageResponse camera_position/orientation,
simGetCameraInfo pose) are relative to the vehicle's spawn, as AirSim reports them (its camera poses
come from the vehicle's local frame): a client adds the spawn offset, simGetObjectPose(vehicle) -
simGetVehiclePose(vehicle). Struct dicts use exactly the airsim client's attribute names. Extensions
specific to the built-in simulator are prefixed `dc` (see EXTENSIONS).

Both client generations are served: the server version is 4 (Cosys-AirSim's), the minimum client
version 1 (AirSim 1.x), and methods whose argument count differs between them (simGetImages,
simGetCameraInfo, simGetObjectPose) take either; the last argument of the detection and image calls is
AirSim 1.x's `external` bool or Cosys's `annotation_name` string, both ignored (one camera per drone).
"""

from __future__ import annotations

import fnmatch
import logging
import math
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from common.errors import ConfigError, VehicleError
from common.pose import Pose, wrap_deg
from sim_bridge.rpc import sensors
from sim_bridge.rpc.cameras import CameraRig, Mount
from sim_bridge.rpc.catalogue import BLUEPRINTS, MATERIALS, with_colour
from sim_bridge.rpc.distance import DistanceService
from sim_bridge.rpc.image_types import (
    DISPARITY_NORMALIZED,
    SURFACE_NORMALS,
    disparity_normalized,
    surface_normals_bgr,
)
from sim_bridge.rpc.lidar import LidarService
from sim_bridge.rpc.manual import ManualFlight
from sim_bridge.rpc.server import release_order
from sim_bridge.settings import MULTIROTOR_TYPES
from sim_bridge.settings_sections import CameraSetting, VehicleSections
from sim_bridge.sim.frames import ned_to_pb, yaw_from_ned_quat, yaw_quat_ned_wxyz, yaw_rotation_ned
from sim_bridge.sim.oriented_camera import quat_from_rotation, rotation_from_quat, rotation_pry_deg
from sim_bridge.sim.world import VISIBLE_RANGE_M, Render, RenderStats, World, image_pixel

log = logging.getLogger(__name__)

SCENE, DEPTH_PLANAR, DEPTH_PERSPECTIVE, DEPTH_VIS, SEGMENTATION = 0, 1, 2, 3, 5
RENDERED_TYPES = {SCENE: "Scene", DEPTH_PLANAR: "DepthPlanar", DEPTH_PERSPECTIVE: "DepthPerspective"}
RENDERED_TYPES.update({DEPTH_VIS: "DepthVis", SEGMENTATION: "Segmentation"})
RENDERED_TYPES.update({DISPARITY_NORMALIZED: "DisparityNormalized", SURFACE_NORMALS: "SurfaceNormals"})
DEPTH_DERIVED = (DEPTH_PLANAR, DEPTH_PERSPECTIVE, DEPTH_VIS, DISPARITY_NORMALIZED, SURFACE_NORMALS)
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
WAIT_WALL_S = 24 * 3600.0  # a motion RPC waits for simulation time, which may be paused for long
# Segmentations of each vehicle's last frames kept for dcPointOnTargetInFrame: a frame is asked about
# once its model call returns (~1-2 s on a Jetson-class model, 5-10 frames at 5 fps). int16 ids:
# 0.46 MB per 640x360 frame, ~7 MB per vehicle.
FRAME_RING_SIZE = 16
RING_TIME_TOLERANCE_NS = 1000  # time stamps travel as float seconds in a Frame: allow rounding
RING_POSE_TOLERANCE = 1e-3  # metres and degrees: the pose the frame reports vs the render's
TRUTH_RENDER_MODES = ("crop", "full")
# AirSim's default multirotor sensors (AirSimSettings' defaults): type -> its name; "" picks the first
DEFAULT_SENSORS = {"IMU": "imu", "barometer": "barometer", "magnetometer": "magnetometer", "gps": "gps"}
DISTORTION_PARAMS = ("K1", "K2", "K3", "P1", "P2")  # APIPCamera's, in getDistortionParams' order
SERVER_VERSION = 4  # Cosys-AirSim's client wants >= 4; AirSim 1.x's wants >= 1
MIN_CLIENT_VERSION = 1

EXTENSIONS = {
    "dcGroundTruth": "(vehicle_name, object_name) -> {distance_m, bbox_distance_m, visible, "
    "pixel_count, min_pixels, box2d, target_pose}: the verifier's ground truth from a fresh render",
    "dcPointOnTarget": "(vehicle_name, object_name, u, v) -> bool: image point (0-1000) on the object now",
    "dcPointOnTargetAt": "(vehicle_name, object_name, u, v, [x, y, z, yaw_deg]) -> bool: the same for "
    "a frame taken at that world vehicle pose (re-rendered with the scene as it is now)",
    "dcPointOnTargetInFrame": "(vehicle_name, object_name, u, v, time_stamp_ns, [x, y, z, yaw_deg]) -> "
    "bool: the same for the frame simGetImages served with that time_stamp (and vehicle pose), read from "
    "its segmentation kept in a ring of the vehicle's last frames; an unknown frame is re-rendered "
    "at the pose with the scene as it is now (as dcPointOnTargetAt)",
    "dcRenderStats": "(reset) -> {frames, full, full_pixels, full_s, crop, crop_pixels, crop_s, skipped, "
    "ring_hits, ring_misses, truth_render, renderer, render_device}: renders since start (or the last "
    "reset); frames per vehicle",
    "dcSetTruthRender": "(mode) -> None: 'crop' (default: ground truth renders only the target's region, "
    "point-on-target answers from the frame ring) or 'full' (a full-frame render for each, for comparison)",
    "dcSetObjectPath": "(object_name, [[x, y, z], ...] world NED, speed_m_s) -> True: follow from now",
    "dcGetObjectInfo": "(object_name) -> {name, cls, colour, asset, text, bbox_centre, bbox_half_m, pose}",
    "dcGetVehicleSpawn": "(vehicle_name) -> Pose: the vehicle's spawn pose in the world NED frame",
    "dcGetSimTime": "() -> float: simulation time in seconds",
    "dcSetClockSpeed": "(speed) -> None: simulated seconds per wall second while running",
    "dcGetWorldEffects": "() -> {wind, weather_enabled, weather, trace_lines}: what simSetWind, "
    "simEnableWeather, simSetWeatherParameter and simSetTraceLine set (weather and trace lines are "
    "stored only: the built-in renderers draw neither)",
}
# AirSim's WorldSimApiBase::WeatherParameter, by value
WEATHER_PARAMETERS = (
    "Rain",
    "Roadwetness",
    "Snow",
    "RoadSnow",
    "MapleLeaf",
    "RoadLeaf",
    "Dust",
    "Fog",
    "Enabled",
)


def vec3(x: float, y: float, z: float) -> dict[str, float]:
    return {"x_val": float(x), "y_val": float(y), "z_val": float(z)}


def quat_yaw(yaw_deg: float) -> dict[str, float]:
    w, x, y, z = yaw_quat_ned_wxyz(yaw_deg)
    return {"w_val": w, "x_val": x, "y_val": y, "z_val": z}


def pose_msg(x: float, y: float, z: float, yaw_deg: float) -> dict[str, Any]:
    return {"position": vec3(x, y, z), "orientation": quat_yaw(yaw_deg)}


NAN_POSE = {
    "position": vec3(math.nan, math.nan, math.nan),
    "orientation": {"w_val": math.nan, "x_val": math.nan, "y_val": math.nan, "z_val": math.nan},
}


def parse_vec3(d: Any, name: str) -> tuple[float, float, float]:
    try:
        return float(d["x_val"]), float(d["y_val"]), float(d["z_val"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"{name}: expected a Vector3r map with x_val, y_val, z_val, got {d!r:.80}"
        ) from None


def parse_pose(d: Any, current: Pose | None = None) -> Pose:
    """A Pose map -> Pose; NaN components keep the current value (AirSim's simSetVehiclePose rule)."""
    x, y, z = parse_vec3(d.get("position") if isinstance(d, dict) else None, "pose.position")
    q = d.get("orientation") or {}
    try:
        w, qx, qy, qz = (float(q.get(k, 0.0)) for k in ("w_val", "x_val", "y_val", "z_val"))
    except (TypeError, ValueError):
        raise ConfigError(f"pose.orientation: expected a Quaternionr map, got {q!r:.80}") from None
    yaw = (
        current.yaw_deg
        if current and any(map(math.isnan, (w, qx, qy, qz)))
        else yaw_from_ned_quat(w, qx, qy, qz)
    )
    if current is not None:
        x = current.x_m if math.isnan(x) else x
        y = current.y_m if math.isnan(y) else y
        z = current.z_m if math.isnan(z) else z
    return Pose(x, y, z, yaw)


def _yaw_mode(d: Any) -> tuple[bool, float]:
    if not isinstance(d, dict):
        return True, 0.0
    return bool(d.get("is_rate", True)), float(d.get("yaw_or_rate", 0.0))


@dataclass(frozen=True)
class FrameSeg:
    """One served frame's segmentation (body ids), for point-on-target questions about it later."""

    time_stamp_ns: int
    vehicle_pose: Pose  # world NED at capture
    seg: np.ndarray


class AirSimApi:
    """The handlers; `table()` gives name -> callable for the RPC server."""

    def __init__(self, world: World, truth_render: str = "crop") -> None:
        self.world = world
        self._seg_ids: dict[int, int] = {}  # body id -> segmentation object id (simSetSegmentationObjectID)
        self._seg_lock = threading.Lock()
        self._frames: dict[str, deque[FrameSeg]] = {}
        self._frames_served: dict[str, int] = {}
        self._ring_hits = 0
        self._ring_misses = 0
        self._ring_lock = threading.Lock()
        self._wind = np.zeros(3)
        self._weather_enabled = False
        self._weather: dict[str, float] = {}
        self._trace_lines: dict[str, dict[str, Any]] = {}
        self._warned: set[str] = set()
        self._lidars = LidarService(world)
        self._manual = ManualFlight(world)
        self._cameras = CameraRig(world)
        self._distance = DistanceService(world)
        self._sensor_names: dict[str, dict[str, str]] = {}  # vehicle -> sensor name -> type (settings)
        self.dcSetTruthRender(truth_render)

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
            self._sensor_names[vehicle] = dict(sec.sensors)

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
        w = self.world
        with w.lock:
            for slot in w.vehicles.values():
                w.set_vehicle_pose(slot.model.name, slot.model.spawn)
                slot.model.api_control = False
                slot.model.armed = True
                slot.model.landed = True
                slot.model.battery.replace()  # the initial state: a freshly charged pack
        self._lidars.reset()  # AirSim's reset resets the sensors

    def simAddVehicle(self, vehicle_name: str, vehicle_type: str, pose: Any, pawn_path: str = "") -> bool:
        """A multirotor at `pose` (world NED), as AirSim's addVehicle: False for a type it cannot
        create or a name in use."""
        name, kind = str(vehicle_name), str(vehicle_type)
        if kind.lower() not in MULTIROTOR_TYPES:
            log.info("simAddVehicle(%s): vehicle type %r is not a multirotor", name, kind)
            return False
        if self.world.render_pool is not None:
            raise ConfigError(
                "simAddVehicle: render workers hold copies of the scene; use --render-workers 0"
            )
        spawn = parse_pose(pose)
        with self.world.lock:
            if name in self.world.vehicles or name in self.world.objects:
                log.info("simAddVehicle(%s): the name is in use", name)
                return False
            model = self.world.add_vehicle(name, spawn)
            model.wind_ned = self._wind.copy()
        return True

    def listVehicles(self) -> list[str]:
        return list(self.world.vehicles)

    def enableApiControl(self, is_enabled: bool, vehicle_name: str) -> None:
        self._slot(vehicle_name).model.api_control = bool(is_enabled)

    def isApiControlEnabled(self, vehicle_name: str) -> bool:
        return bool(self._slot(vehicle_name).model.api_control)

    def armDisarm(self, arm: bool, vehicle_name: str) -> bool:
        m = self._slot(vehicle_name).model
        if not m.api_control:
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
        return self._wait(self.world.command(str(vehicle_name), "land", timeout_s=float(timeout_sec)))

    def hover(self, vehicle_name: str) -> bool:
        with self.world.lock:
            self._slot(vehicle_name).model.hover()
        return True

    def cancelLastTask(self, vehicle_name: str) -> None:
        with self.world.lock:
            self._slot(vehicle_name).model.cancel()

    def moveByVelocityBodyFrame(
        self,
        vx: float,
        vy: float,
        vz: float,
        duration: float,
        drivetrain: int,
        yaw_mode: Any,
        vehicle_name: str,
    ) -> bool:
        return self._timed_move(
            vehicle_name, duration, yaw_mode, "move_velocity_body", float(vx), float(vy), float(vz)
        )

    def moveByVelocity(
        self,
        vx: float,
        vy: float,
        vz: float,
        duration: float,
        drivetrain: int,
        yaw_mode: Any,
        vehicle_name: str,
    ) -> bool:
        return self._timed_move(
            vehicle_name, duration, yaw_mode, "move_velocity", np.array([vx, vy, vz], float)
        )

    def moveByVelocityZ(
        self,
        vx: float,
        vy: float,
        z: float,
        duration: float,
        drivetrain: int,
        yaw_mode: Any,
        vehicle_name: str,
    ) -> bool:
        """World-frame (vx, vy) at the height z of the vehicle's local NED frame."""
        z_world = float(self._to_world(vehicle_name, 0.0, 0.0, float(z))[2])
        return self._timed_move(
            vehicle_name, duration, yaw_mode, "move_velocity_z", float(vx), float(vy), z_world
        )

    def _timed_move(self, vehicle_name: str, duration: float, yaw_mode: Any, motion: str, *args: Any) -> bool:
        """A motion held for `duration` (AirSim: a duration <= 0 returns at once)."""
        if float(duration) <= 0:
            return True
        return self._move(vehicle_name, yaw_mode, motion, *args, float(duration))

    def _move(self, vehicle_name: str, yaw_mode: Any, motion: str, *args: Any, **kwargs: Any) -> bool:
        """World.command(motion, ...) with the yaw mode, and its outcome (none without API control)."""
        if not self._need_control(vehicle_name):
            return False
        is_rate, value = _yaw_mode(yaw_mode)
        task = self.world.command(
            str(vehicle_name), motion, *args, yaw_is_rate=is_rate, yaw_value=value, **kwargs
        )
        return self._wait(task)

    def moveOnPath(
        self,
        path: Any,
        velocity: float,
        timeout_sec: float,
        drivetrain: int,
        yaw_mode: Any,
        lookahead: float,
        adaptive_lookahead: float,
        vehicle_name: str,
    ) -> bool:
        """Through the waypoints (local NED) at velocity, ending at the last (see Multirotor.move_on_path)."""
        if not isinstance(path, list | tuple) or not path:
            raise VehicleError("moveOnPath: the path must be a non-empty list of Vector3r")
        points = [self._to_world(vehicle_name, *parse_vec3(p, f"path[{i}]")) for i, p in enumerate(path)]
        return self._move(
            vehicle_name,
            yaw_mode,
            "move_on_path",
            points,
            float(velocity),
            timeout_s=min(float(timeout_sec), 1e9),
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
        return self._move(
            vehicle_name, yaw_mode, "move_to", target, float(velocity), timeout_s=min(float(timeout_sec), 1e9)
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
        return self._move(
            vehicle_name, yaw_mode, "move_to", target, float(velocity), timeout_s=min(float(timeout_sec), 1e9)
        )

    def rotateByYawRate(self, yaw_rate: float, duration: float, vehicle_name: str) -> bool:
        if float(duration) <= 0:
            return True
        if not self._need_control(vehicle_name):
            return False
        return self._wait(
            self.world.command(str(vehicle_name), "rotate_rate", float(yaw_rate), float(duration))
        )

    def rotateToYaw(self, yaw: float, timeout_sec: float, margin: float, vehicle_name: str) -> bool:
        if not self._need_control(vehicle_name):
            return False
        task = self.world.command(
            str(vehicle_name),
            "rotate_to",
            float(yaw),
            timeout_s=min(float(timeout_sec), 1e9),
            margin_deg=float(margin),
        )
        return self._wait(task)

    # ---------------------------------------------------------------- state
    def _kinematics(self, vehicle_name: str) -> dict[str, Any]:
        with self.world.lock:
            m = self._slot(vehicle_name).model
            pose = m.pose()
            v, a, rate = m.velocity_ned.copy(), m.accel_ned.copy(), m.yaw_rate_deg_s
        local = self._local(vehicle_name, pose)
        return {
            "position": local["position"],
            "orientation": local["orientation"],
            "linear_velocity": vec3(*v),
            "angular_velocity": vec3(0.0, 0.0, math.radians(rate)),
            "linear_acceleration": vec3(*a),
            "angular_acceleration": vec3(0.0, 0.0, 0.0),
        }

    def _collision_msg(self, vehicle_name: str) -> dict[str, Any]:
        info = self._slot(vehicle_name).model.collision
        if info is None:
            return {
                "has_collided": False,
                "penetration_depth": 0.0,
                "time_stamp": 0,
                "normal": vec3(0, 0, 0),
                "impact_point": vec3(0, 0, 0),
                "position": vec3(0, 0, 0),
                "object_name": "",
                "object_id": -1,
            }
        return {
            "has_collided": True,
            "penetration_depth": info["penetration_depth"],
            "time_stamp": info["time_stamp"],
            "normal": vec3(*info["normal"]),
            "impact_point": vec3(*info["impact_point"]),
            "position": vec3(*info["position"]),
            "object_name": info["object_name"],
            "object_id": info["object_id"],
        }

    def getMultirotorState(self, vehicle_name: str) -> dict[str, Any]:
        kin = self._kinematics(vehicle_name)
        m = self._slot(vehicle_name).model
        return {
            "collision": self._collision_msg(vehicle_name),
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
        is_rate, value = _yaw_mode(yaw_mode)
        return self._manual.fly(
            vehicle_name, float(vx_max), float(vy_max), float(z_min), float(duration), is_rate, value
        )

    def simGetGroundTruthKinematics(self, vehicle_name: str) -> dict[str, Any]:
        return self._kinematics(vehicle_name)

    def simGetCollisionInfo(self, vehicle_name: str) -> dict[str, Any]:
        return self._collision_msg(vehicle_name)

    def simGetVehiclePose(self, vehicle_name: str) -> dict[str, Any]:
        return self._local(vehicle_name, self.world.vehicle_pose(str(vehicle_name)))

    def simSetVehiclePose(self, pose: Any, ignore_collision: bool, vehicle_name: str) -> None:
        m = self._slot(vehicle_name).model
        s = m.spawn
        current_local = Pose(
            m.position_ned[0] - s.x_m, m.position_ned[1] - s.y_m, m.position_ned[2] - s.z_m, m.yaw_deg
        )
        local = parse_pose(pose, current_local)
        self.world.set_vehicle_pose(
            m.name, Pose(local.x_m + s.x_m, local.y_m + s.y_m, local.z_m + s.z_m, local.yaw_deg)
        )

    # ---------------------------------------------------------------- sensors (see sensors.py)
    def _sensor(self, kind: str, sensor_name: str, vehicle_name: str | None = None) -> None:
        name = str(sensor_name)
        named = (
            self._sensor_names.get(self._slot(vehicle_name).model.name) if vehicle_name is not None else None
        )
        if named is not None:  # the vehicle's settings.json Sensors (with AirSim's defaults added)
            kind_of = DEFAULT_SENSORS[kind]  # "IMU" -> "imu" ...: the default name is the type's
            if (name == "" and kind_of in named.values()) or named.get(name) == kind_of:
                return
            raise VehicleError(f"No {kind} with name {name} exist on vehicle")
        if name not in ("", DEFAULT_SENSORS[kind]):
            # VehicleApiBase's answer for a sensor the vehicle's settings do not define
            raise VehicleError(f"No {kind} with name {name} exist on vehicle")

    def getImuData(self, imu_name: str, vehicle_name: str) -> dict[str, Any]:
        self._sensor("IMU", imu_name, vehicle_name)
        with self.world.lock:
            m = self._slot(vehicle_name).model
            yaw, rate, accel = m.yaw_deg, m.yaw_rate_deg_s, m.accel_ned.copy()
        return sensors.imu_msg(self._time_ns(), quat_yaw(yaw), yaw, rate, accel)

    def getBarometerData(self, barometer_name: str, vehicle_name: str) -> dict[str, Any]:
        self._sensor("barometer", barometer_name, vehicle_name)
        with self.world.lock:
            pose = self._slot(vehicle_name).model.pose()
        return sensors.barometer_msg(self._time_ns(), self._geo(pose)["altitude"])

    def getMagnetometerData(self, magnetometer_name: str, vehicle_name: str) -> dict[str, Any]:
        self._sensor("magnetometer", magnetometer_name, vehicle_name)
        with self.world.lock:
            m = self._slot(vehicle_name).model
            yaw, home = m.yaw_deg, self._geo(m.spawn)
        return sensors.magnetometer_msg(self._time_ns(), home, yaw)

    def getGpsData(self, gps_name: str, vehicle_name: str) -> dict[str, Any]:
        self._sensor("gps", gps_name, vehicle_name)
        with self.world.lock:
            m = self._slot(vehicle_name).model
            pose, v = m.pose(), m.velocity_ned.copy()
        return sensors.gps_msg(self._time_ns(), self._geo(pose), v)

    def getDistanceSensorData(self, distance_sensor_name: str, vehicle_name: str) -> dict[str, Any]:
        # AirSim's default multirotor has none; settings.json's Sensors may add some (rpc/distance.py)
        return self._distance.data(distance_sensor_name, vehicle_name)

    def simGetWorldExtents(self) -> list[dict[str, float]]:
        """[min, max] GeoPoints of the box around every object of the scene (AirSim: the level's bounds)."""
        with self.world.lock:
            boxes = [
                (o.bbox_centre_ned(), _aabb_half(o.bbox_half_m, o.pose.yaw_deg))
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
        """The wind (world NED, m/s) for every vehicle: a drag force (see multirotor.DRAG_1_M)."""
        w = np.array(parse_vec3(wind, "wind"), float)
        if not np.isfinite(w).all():
            raise ConfigError(f"wind must be finite, got {w.tolist()}")
        with self.world.lock:
            self._wind = w
            for slot in self.world.vehicles.values():
                slot.model.wind_ned = w.copy()

    def _no_visible_effect(self, method: str) -> None:
        if method not in self._warned:
            self._warned.add(method)
            log.warning("%s: stored, but the built-in simulator's renderers show no effect of it", method)

    def simEnableWeather(self, enable: bool) -> None:
        self._weather_enabled = bool(enable)
        self._no_visible_effect("simEnableWeather")

    def simSetWeatherParameter(self, param: int, val: float) -> None:
        index, value = int(param), float(val)
        if not 0 <= index < len(WEATHER_PARAMETERS) or not math.isfinite(value):
            raise ConfigError(f"weather parameter {param} = {val}: expected 0-{len(WEATHER_PARAMETERS) - 1}")
        self._weather[WEATHER_PARAMETERS[index]] = value
        self._no_visible_effect("simSetWeatherParameter")

    def simSetTraceLine(self, color_rgba: Any, thickness: float, vehicle_name: str) -> None:
        m = self._slot(vehicle_name).model
        try:
            rgba = [float(c) for c in color_rgba]
        except (TypeError, ValueError):
            raise ConfigError(f"color_rgba must be 4 numbers, got {color_rgba!r:.80}") from None
        if len(rgba) != 4 or not math.isfinite(float(thickness)):
            raise ConfigError(f"color_rgba must be 4 numbers and thickness finite, got {rgba}, {thickness}")
        self._trace_lines[m.name] = {"color_rgba": rgba, "thickness": float(thickness)}
        self._no_visible_effect("simSetTraceLine")

    def dcGetWorldEffects(self) -> dict[str, Any]:
        return {
            "wind": vec3(*self._wind),
            "weather_enabled": self._weather_enabled,
            "weather": dict(self._weather),
            "trace_lines": dict(self._trace_lines),
        }

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
        return pose_msg(p.x_m, p.y_m, p.z_m, p.yaw_deg)

    def simSetObjectPose(self, object_name: str, pose: Any, teleport: bool) -> bool:
        name = str(object_name)
        if name in self.world.vehicles:
            current = self.world.vehicle_pose(name)
            self.world.set_vehicle_pose(name, parse_pose(pose, current))
            return True
        if name not in self.world.objects:
            return False
        self.world.set_object_pose(name, parse_pose(pose, self.world.objects[name].pose))
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
        sx, sy, sz = parse_vec3(scale, "scale")
        asset = BLUEPRINTS.get(str(asset_name), str(asset_name))
        obj = self.world.spawn(str(object_name), asset, parse_pose(pose), (sx, sy, sz))
        return obj.name

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

    def _line_of_sight(self, a: np.ndarray, b: np.ndarray) -> bool:
        w = self.world
        with w.lock:
            hits = w._p.rayTest(ned_to_pb(*a), ned_to_pb(*b), physicsClientId=w.client)
        return not hits or int(hits[0][0]) < 0

    def simTestLineOfSightBetweenPoints(self, point1: Any, point2: Any) -> bool:
        """True when nothing with a collision shape lies on the segment between the two GeoPoints."""
        return self._line_of_sight(self._ned_from_geo(point1), self._ned_from_geo(point2))

    def simTestLineOfSightToPoint(self, point: Any, vehicle_name: str) -> bool:
        with self.world.lock:
            eye, _ = self.world.camera_pose(str(vehicle_name))
        return self._line_of_sight(np.asarray(eye, float), self._ned_from_geo(point))

    # ---------------------------------------------------------------- cameras & images
    def _camera_pose_msg(self, vehicle_name: str, camera_name: str = "0") -> dict[str, Any]:
        pose = self._camera_vehicle_pose(vehicle_name, camera_name)
        with self.world.lock:
            eye, yaw = self.world.camera_pose(str(vehicle_name), pose)
        return self._local_xyz(vehicle_name, eye[0], eye[1], eye[2], yaw)

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
                renders[key] = self.world.render_view(
                    str(vehicle_name),
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
                self._keep_frame(renders[key])  # the ring holds the forward camera's frames
        out = []
        for req, image_type in parsed:
            camera = str(req.get("camera_name", "0"))
            render = renders[_camera_key(req)]
            cam_pose = self._local_xyz(vehicle_name, *render.camera_position_ned, render.camera_yaw_deg)
            if _camera_key(req) in turned:
                cam_pose["orientation"] = _quat_msg(turned[_camera_key(req)])
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
            elif image_type == SURFACE_NORMALS:
                assert render.depth_planar_m is not None
                rot = turned.get(_camera_key(req))
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
        return out

    def _turned_mount(self, vehicle_name: str, camera_key: str) -> Mount | None:
        """The camera's mount when it is drawn in its own orientation (None: the level path)."""
        mount = self._cameras.mount(vehicle_name, camera_key)
        return None if mount.level_path else mount

    def _render_mount(self, vehicle_name: str, mount: Mount, depth: bool) -> tuple[Render, np.ndarray]:
        with self.world.lock:
            eye, rot = self._cameras.world_pose(vehicle_name, mount)
            lens = mount.profile or self._slot(vehicle_name).camera
            render = self.world.render_view(str(vehicle_name), lens, eye, rot, depth=depth)
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
        """K1, K2, K3, P1, P2 (APIPCamera::getDistortionParams): all 0, the renderers draw a pinhole."""
        self._distortion_camera(camera_name, vehicle_name, external)
        return [0.0] * len(DISTORTION_PARAMS)

    def simSetDistortionParam(
        self, camera_name: str, param_name: str, value: float, vehicle_name: str, external: Any = False
    ) -> None:
        """0 is what the renderers draw; any other value cannot be honoured and is refused."""
        self._distortion_camera(camera_name, vehicle_name, external)
        if str(param_name) not in DISTORTION_PARAMS:
            raise ConfigError(f"distortion parameter {param_name!r}: one of {', '.join(DISTORTION_PARAMS)}")
        if float(value) != 0.0:
            raise ConfigError(
                f"simSetDistortionParam {param_name}={value}: lens distortion is not rendered by the "
                "built-in simulator (its cameras are pinholes: every parameter is 0)"
            )

    def _distortion_camera(self, camera_name: str, vehicle_name: str, external: Any) -> None:
        if external is True:
            self._cameras.external(str(camera_name))
        else:
            self._camera(camera_name, side_cameras=True, vehicle_name=vehicle_name)

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
        from sim_bridge.sim.world import projection_matrix

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

    # ---------------------------------------------------------------- detections
    def _filters(self, camera_name: str, image_type: int, vehicle_name: str) -> dict[str, Any]:
        self._camera(camera_name)
        slot = self._slot(vehicle_name)
        key = ("0", int(image_type))
        return slot.detection_filters.setdefault(key, {"meshes": set(), "radius_cm": VISIBLE_RANGE_M * 100})

    def simAddDetectionFilterMeshName(
        self, camera_name: str, image_type: int, mesh_name: str, vehicle_name: str, external: bool
    ) -> None:
        self._filters(camera_name, image_type, vehicle_name)["meshes"].add(str(mesh_name))

    def simSetDetectionFilterRadius(
        self, camera_name: str, image_type: int, radius_cm: float, vehicle_name: str, external: bool
    ) -> None:
        self._filters(camera_name, image_type, vehicle_name)["radius_cm"] = float(radius_cm)

    def simClearDetectionMeshNames(
        self, camera_name: str, image_type: int, vehicle_name: str, external: bool
    ) -> None:
        self._filters(camera_name, image_type, vehicle_name)["meshes"].clear()

    def simGetDetections(
        self, camera_name: str, image_type: int, vehicle_name: str, external: bool
    ) -> list[dict[str, Any]]:
        filt = self._filters(camera_name, image_type, vehicle_name)
        if not filt["meshes"]:
            return []
        w = self.world
        names = [n for n in list(w.objects) if any(fnmatch.fnmatchcase(n, pat) for pat in filt["meshes"])]
        if not names:
            return []
        # Each candidate's crop of the frame only (the same pixels as a full render, see World.target_truth)
        with w.lock:
            eye, cam_yaw = w.camera_pose(str(vehicle_name))
        cam = np.asarray(eye, float)
        rot = yaw_rotation_ned(cam_yaw)
        out = []
        for name in names:
            truth = w.target_truth(str(vehicle_name), name)
            obj = w.objects.get(name)
            if obj is None or truth.box2d_px is None or truth.pixel_count < truth.min_pixels:
                continue
            centre = obj.bbox_centre_ned()
            if np.linalg.norm(centre - cam) * 100.0 > filt["radius_cm"]:
                continue
            rel = rot.T @ (centre - cam)
            half = np.asarray(obj.bbox_half_m)
            u0, v0, u1, v1 = truth.box2d_px
            out.append(
                {
                    "name": name,
                    "geo_point": self._geo(obj.pose),
                    "box2D": {
                        "min": {"x_val": float(u0), "y_val": float(v0)},
                        "max": {"x_val": float(u1), "y_val": float(v1)},
                    },
                    "box3D": {"min": vec3(*(rel - half)), "max": vec3(*(rel + half))},
                    "relative_pose": pose_msg(rel[0], rel[1], rel[2], obj.pose.yaw_deg - cam_yaw),
                }
            )
        return out

    # ---------------------------------------------------------------- built-in-sim extensions (dc*)
    def dcGroundTruth(self, vehicle_name: str, object_name: str) -> dict[str, Any]:
        if self._truth_render == "full":
            render = self.world.render(str(vehicle_name), segmentation=True)
            t = self.world.target_truth(str(vehicle_name), str(object_name), render)
        else:
            t = self.world.target_truth(str(vehicle_name), str(object_name))
        p = t.target_pose
        return {
            "distance_m": t.distance_m,
            "bbox_distance_m": t.bbox_distance_m,
            "visible": t.visible,
            "pixel_count": t.pixel_count,
            "min_pixels": t.min_pixels,
            "box2d": list(t.box2d_px) if t.box2d_px else None,
            "target_pose": p.as_list(),
            "time_s": self.world.clock.now(),
        }

    def dcPointOnTarget(self, vehicle_name: str, object_name: str, u: float, v: float) -> bool:
        return self._point_on_target(str(vehicle_name), str(object_name), float(u), float(v), None)

    def dcPointOnTargetAt(
        self, vehicle_name: str, object_name: str, u: float, v: float, vehicle_pose_world: Any
    ) -> bool:
        """point_on_target for a frame taken earlier: re-render from the frame's vehicle pose
        ([x, y, z, yaw_deg] world NED) with the scene as it is now."""
        pose = _pose_list(vehicle_pose_world)
        return self._point_on_target(str(vehicle_name), str(object_name), float(u), float(v), pose)

    def dcPointOnTargetInFrame(
        self,
        vehicle_name: str,
        object_name: str,
        u: float,
        v: float,
        time_stamp_ns: int,
        vehicle_pose_world: Any,
    ) -> bool:
        """point_on_target for the served frame with this time stamp and pose, from the frame ring;
        a frame no longer (or never) in it is re-rendered at the pose (dcPointOnTargetAt)."""
        name = self.world.vehicle(str(vehicle_name)).model.name
        pose = _pose_list(vehicle_pose_world)
        if self._truth_render == "crop":
            frame = self._find_frame(name, int(time_stamp_ns), pose)
            if frame is not None:
                h, w = frame.seg.shape
                col, row = image_pixel(w, h, float(u), float(v))
                return bool(frame.seg[row, col] == self.world.get_object(str(object_name)).body_id)
        return self._point_on_target(name, str(object_name), float(u), float(v), pose)

    def _point_on_target(self, vehicle: str, target: str, u: float, v: float, pose: Pose | None) -> bool:
        if self._truth_render == "full":
            render = self.world.render(vehicle, segmentation=True, vehicle_pose=pose)
            return self.world.point_on_target(render, target, u, v)
        return self.world.point_on_target_at(vehicle, target, u, v, pose)

    def _keep_frame(self, render: Render) -> None:
        if render.seg is None:
            return
        seg = render.seg
        if seg.size and int(seg.min()) >= -32768 and int(seg.max()) <= 32767:
            seg = seg.astype(np.int16)
        frame = FrameSeg(round(render.time_s * 1e9), render.vehicle_pose, seg)
        with self._ring_lock:
            self._frames.setdefault(render.vehicle, deque(maxlen=FRAME_RING_SIZE)).append(frame)
            self._frames_served[render.vehicle] = self._frames_served.get(render.vehicle, 0) + 1

    def _find_frame(self, vehicle: str, time_stamp_ns: int, pose: Pose) -> FrameSeg | None:
        """The newest kept frame of `vehicle` with this time stamp and pose (frames rendered at one
        paused instant share a time stamp; the pose tells them apart)."""
        with self._ring_lock:
            for frame in reversed(self._frames.get(vehicle, ())):
                p = frame.vehicle_pose
                if (
                    abs(frame.time_stamp_ns - time_stamp_ns) <= RING_TIME_TOLERANCE_NS
                    and max(abs(p.x_m - pose.x_m), abs(p.y_m - pose.y_m), abs(p.z_m - pose.z_m))
                    <= RING_POSE_TOLERANCE
                    and abs(wrap_deg(p.yaw_deg - pose.yaw_deg)) <= RING_POSE_TOLERANCE
                ):
                    self._ring_hits += 1
                    return frame
            self._ring_misses += 1
        return None

    def dcRenderStats(self, reset: bool) -> dict[str, Any]:
        w = self.world
        with w.lock, self._ring_lock:
            out: dict[str, Any] = dict(vars(w.render_stats))
            out.update(
                frames=dict(self._frames_served),
                ring_hits=self._ring_hits,
                ring_misses=self._ring_misses,
                truth_render=self._truth_render,
                renderer=w.renderer,
                render_device=w.render_device,
            )
            if reset:
                w.render_stats = RenderStats()
                self._frames_served.clear()
                self._ring_hits = self._ring_misses = 0
        return out

    def dcSetTruthRender(self, mode: str) -> None:
        if str(mode) not in TRUTH_RENDER_MODES:
            raise ConfigError(f"truth render mode {mode!r} is not one of {TRUTH_RENDER_MODES}")
        self._truth_render = str(mode)

    def dcSetObjectPath(self, object_name: str, waypoints: Any, speed_m_s: float) -> bool:
        pts = [(float(a), float(b), float(c)) for a, b, c in waypoints]
        self.world.set_path(str(object_name), pts, float(speed_m_s))
        return True

    def dcGetObjectInfo(self, object_name: str) -> dict[str, Any]:
        o = self.world.get_object(str(object_name))
        return {
            "name": o.name,
            "cls": o.cls,
            "colour": o.colour,
            "asset": o.asset,
            "text": o.arg,
            "bbox_centre": o.bbox_centre_ned().tolist(),
            "bbox_half_m": list(o.bbox_half_m),
            "pose": o.pose.as_list(),
        }

    def dcGetVehicleSpawn(self, vehicle_name: str) -> dict[str, Any]:
        s = self._slot(vehicle_name).model.spawn
        return pose_msg(s.x_m, s.y_m, s.z_m, s.yaw_deg)

    def dcGetSimTime(self) -> float:
        return self.world.clock.now()

    def dcSetClockSpeed(self, speed: float) -> None:
        self.world.set_clock_speed(float(speed))

    def table(self) -> dict[str, Callable[..., Any]]:
        return {
            name: getattr(self, name)
            for name in dir(self)
            if not name.startswith("_")
            and name not in ("world", "table", "apply_settings")
            and callable(getattr(self, name))
        }


def _camera_key(request: dict[str, Any]) -> str:
    """Which render serves an ImageRequest: "0" for the forward camera, else the camera's name."""
    camera = str(request.get("camera_name", "0"))
    return "0" if camera in CAMERA_NAMES else camera


def _quat_msg(rotation: np.ndarray) -> dict[str, float]:
    w, x, y, z = quat_from_rotation(rotation)
    return {"w_val": w, "x_val": x, "y_val": y, "z_val": z}


def _aabb_half(half_m: Any, yaw_deg: float) -> np.ndarray:
    """Half extents along north/east/down of a box with these half extents along its own axes."""
    hx, hy, hz = (float(h) for h in half_m)
    c, s = abs(math.cos(math.radians(yaw_deg))), abs(math.sin(math.radians(yaw_deg)))
    return np.array([c * hx + s * hy, s * hx + c * hy, hz])


def _pose_list(values: Any) -> Pose:
    try:
        x, y, z, yaw = (float(a) for a in values)
    except (TypeError, ValueError):
        raise ConfigError(
            f"vehicle pose: expected [x, y, z, yaw_deg] world NED, got {values!r:.80}"
        ) from None
    return Pose(x, y, z, yaw)


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


__all__ = ["EXTENSIONS", "AirSimApi", "VehicleError"]
