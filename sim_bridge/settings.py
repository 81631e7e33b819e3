"""AirSim's settings.json, the part both simulators share: SimMode, ClockSpeed, the vehicles (names,
start poses) and their cameras (resolution, FOV). `dronecats episodes airsim-settings` writes it for
a suite; `dronecats sim --settings FILE` reads it, so the built-in simulator and a real AirSim are
configured from one file, the way AirSim users configure theirs.

Keys read (AirSim's names): SimMode ("Multirotor", "ComputerVision" or "Car"), ClockSpeed, Wind{X, Y, Z}
(world NED m/s, as simSetWind takes it),
Vehicles{NAME: {VehicleType, X, Y, Z, Yaw, Cameras{NAME: {CaptureSettings[{ImageType, Width, Height,
FOV_Degrees}], X, Y, Z, Pitch, Roll, Yaw, Gimbal{Stabilization, Pitch, Roll, Yaw}}}}}. The forward
camera's mount and Gimbal come from its camera ("front_center", "0", else the first one): without a
Gimbal it is body-fixed, as in AirSim. Others are ignored with a log line naming them (AirSim's
settings have many; this reader grows as needed).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.camera import CameraProfile
from common.config import file_errors
from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.sim.gimbal import BODY_FIXED, CameraMount, Gimbal

log = logging.getLogger(__name__)

SETTINGS_VERSION = 1.2
KNOWN_TOP = {"SettingsVersion", "SimMode", "ClockSpeed", "Vehicles", "SeeDocsAt", "ApiServerPort"}
KNOWN_TOP |= {"ExternalCameras", "DefaultSensors", "Wind"}  # read by settings_sections and _wind
KNOWN_VEHICLE = {
    "VehicleType",
    "X",
    "Y",
    "Z",
    "Yaw",
    "Pitch",
    "Roll",
    "Cameras",
    "Sensors",  # read by settings_sections
    "AutoCreate",
    "DefaultVehicleState",
}
MULTIROTOR_TYPES = {"simpleflight", "px4multirotor", "arducopter"}
# SimMode -> the name and type of its default vehicle (AirSim's). A ComputerVision vehicle is the
# built-in drone never flown: simSetVehiclePose places it and nothing else moves it. A Car vehicle is
# a ground vehicle driven by AirSim's car API (sim_bridge.sim.car, sim_bridge.rpc.car_api).
SIM_MODES = {"Multirotor": "SimpleFlight", "ComputerVision": "ComputerVision", "Car": "PhysXCar"}
# SimMode -> the vehicle types it takes (lower case, as AirSimSettings compares them)
MODE_TYPES = {"Multirotor": MULTIROTOR_TYPES, "ComputerVision": {"computervision"}, "Car": {"physxcar"}}
SCENE_IMAGE_TYPE = 0
# The built-in simulator's camera mount (body FRD metres), written into settings for AirSim.
CAMERA_MOUNT_FRD_M = (0.5, 0.0, 0.1)
CAMERA_NAME = "front_center"


@dataclass(frozen=True)
class SimSettings:
    vehicles: list[tuple[str, Pose]]  # name, spawn in the world NED frame (Player Start origin)
    camera: CameraProfile | None  # from the first vehicle's Scene capture settings
    clock_speed: float | None
    camera_mount: CameraMount = BODY_FIXED  # the first vehicle's forward camera: pose and Gimbal
    wind_ned_m_s: tuple[float, float, float] = (0.0, 0.0, 0.0)  # AirSim's Wind (AirSimSettings.hpp)
    sim_mode: str = "Multirotor"  # SIM_MODES' keys


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"settings {where}: expected a finite number, got {value!r}")
    return float(value)


def load_settings_json(path: str | Path) -> dict[str, Any]:
    """A settings.json's top-level object; an unreadable file or another JSON value fails as one line."""
    with file_errors("settings", path, "JSON", json.JSONDecodeError):
        data = json.loads(Path(path).read_text())
    if not isinstance(data, dict):
        raise ConfigError(f"settings {path}: expected a JSON object")
    return data


def read_settings(path: str | Path) -> SimSettings:
    """Parse and check a settings.json; every error names the key."""
    path = Path(path)
    data = load_settings_json(path)
    if set(data) - KNOWN_TOP:
        log.info("settings %s: ignoring %s", path, sorted(set(data) - KNOWN_TOP))
    mode = data.get("SimMode", "Multirotor")
    if mode not in SIM_MODES:
        raise ConfigError(
            f"settings {path}: SimMode {mode!r}: the built-in simulator flies Multirotor, places a "
            "camera drone in ComputerVision and drives a PhysXCar in Car"
        )
    clock = None
    if "ClockSpeed" in data:
        clock = _number(data["ClockSpeed"], "ClockSpeed")
        if clock <= 0:
            raise ConfigError(f"settings {path}: ClockSpeed {clock} must be > 0")
    wind = _wind(data.get("Wind", {}), f"{path}: Wind")
    vehicles_data = data.get("Vehicles") or {SIM_MODES[mode]: {"VehicleType": SIM_MODES[mode]}}
    if not isinstance(vehicles_data, dict):
        raise ConfigError(f"settings {path}: Vehicles must be an object of name -> vehicle")
    vehicles: list[tuple[str, Pose]] = []
    camera: CameraProfile | None = None
    mount = BODY_FIXED
    for name, v in vehicles_data.items():
        where = f"Vehicles.{name}"
        if not isinstance(v, dict):
            raise ConfigError(f"settings {path}: {where} must be an object")
        kind = str(v.get("VehicleType", "PhysXCar" if mode == "Car" else "SimpleFlight"))
        if kind.lower() not in MODE_TYPES[mode]:
            raise ConfigError(
                f"settings {path}: {where}.VehicleType {kind!r} does not belong in SimMode {mode}"
            )
        if set(v) - KNOWN_VEHICLE:
            log.info("settings %s: %s: ignoring %s", path, where, sorted(set(v) - KNOWN_VEHICLE))
        x, y, z, yaw = (_number(v.get(k, 0.0), f"{where}.{k}") for k in ("X", "Y", "Z", "Yaw"))
        vehicles.append((str(name), Pose(x, y, z, yaw)))
        if camera is None:
            camera = _camera(v.get("Cameras") or {}, f"{path}: {where}")
            mount = _mount(v.get("Cameras") or {}, f"{path}: {where}")
    return SimSettings(vehicles, camera, clock, mount, wind, mode)


def _wind(value: object, where: str) -> tuple[float, float, float]:
    """AirSim's Wind: {X, Y, Z} in world NED m/s, each 0 when left out."""
    if not isinstance(value, dict):
        raise ConfigError(f"settings {where} must be an object {{X, Y, Z}} (m/s, world NED)")
    unknown = set(value) - {"X", "Y", "Z"}
    if unknown:
        raise ConfigError(f"settings {where}: unknown keys {sorted(unknown)} (X, Y, Z: m/s, world NED)")
    x, y, z = (_number(value.get(k, 0.0), f"{where}.{k}") for k in ("X", "Y", "Z"))
    return (x, y, z)


def _mount(cameras: dict[str, Any], where: str) -> CameraMount:
    """The forward camera's mount (X, Y, Z body FRD m; Pitch, Roll, Yaw deg) and its Gimbal."""
    name = next((n for n in ("front_center", "0") if n in cameras), next(iter(cameras), None))
    cam = cameras.get(name) if name is not None else None
    if not isinstance(cam, dict):
        return BODY_FIXED
    at = f"{where}.Cameras.{name}"
    offset = tuple(
        _number(cam.get(k, d), f"{at}.{k}") for k, d in zip(("X", "Y", "Z"), CAMERA_MOUNT_FRD_M, strict=True)
    )
    angles = [_number(cam.get(k, 0.0), f"{at}.{k}") for k in ("Pitch", "Roll", "Yaw")]
    g = cam.get("Gimbal")
    gimbal = Gimbal()
    if g is not None:
        if not isinstance(g, dict):
            raise ConfigError(f"settings {at}.Gimbal must be an object")
        unknown = set(g) - {"Stabilization", "Pitch", "Roll", "Yaw"}
        if unknown:
            raise ConfigError(f"settings {at}.Gimbal: unknown keys {sorted(unknown)}")
        s = _number(g.get("Stabilization", 0.0), f"{at}.Gimbal.Stabilization")
        if not 0.0 <= s <= 1.0:
            raise ConfigError(f"settings {at}.Gimbal.Stabilization {s} must be within 0-1")
        free = math.nan
        p, r, y = (_number(g[k], f"{at}.Gimbal.{k}") if k in g else free for k in ("Pitch", "Roll", "Yaw"))
        gimbal = Gimbal(s, p, r, y)
    return CameraMount(offset, angles[0], angles[1], angles[2], gimbal)  # type: ignore[arg-type]


def _camera(cameras: object, where: str) -> CameraProfile | None:
    if not isinstance(cameras, dict):
        raise ConfigError(f"settings {where}.Cameras must be an object")
    for cam_name, cam in cameras.items():
        for capture in (cam or {}).get("CaptureSettings") or []:
            if int(capture.get("ImageType", SCENE_IMAGE_TYPE)) != SCENE_IMAGE_TYPE:
                continue
            w = capture.get("Width", 256)
            h = capture.get("Height", 144)
            if not (isinstance(w, int) and isinstance(h, int) and 16 <= w <= 8192 and 16 <= h <= 8192):
                raise ConfigError(f"settings {where}.Cameras.{cam_name}: Width/Height {w}x{h} out of 16-8192")
            fov = _number(capture.get("FOV_Degrees", 90.0), f"{where}.Cameras.{cam_name}.FOV_Degrees")
            return CameraProfile.from_hfov(f"settings:{cam_name}", w, h, fov)
    return None


def settings_for(vehicles: list[tuple[str, Pose]], camera: CameraProfile, clock_speed: float = 1.0) -> dict:
    """A settings.json for these vehicles (world NED spawns) with this camera on each."""
    x, y, z = CAMERA_MOUNT_FRD_M
    capture = [
        {
            "ImageType": t,
            "Width": camera.width_px,
            "Height": camera.height_px,
            "FOV_Degrees": round(camera.hfov_deg, 3),
        }
        for t in (SCENE_IMAGE_TYPE, 5)  # Scene, Segmentation (point-on-target)
    ]
    return {
        "SettingsVersion": SETTINGS_VERSION,
        "SimMode": "Multirotor",
        "ClockSpeed": clock_speed,
        "Vehicles": {
            name: {
                "VehicleType": "SimpleFlight",
                "X": p.x_m,
                "Y": p.y_m,
                "Z": p.z_m,
                "Yaw": p.yaw_deg,
                "Cameras": {
                    CAMERA_NAME: {
                        "CaptureSettings": capture,
                        "X": x,
                        "Y": y,
                        "Z": z,
                        "Pitch": 0,
                        "Roll": 0,
                        "Yaw": 0,
                        # level, heading with the body: the project's camera (sim_bridge.sim.gimbal)
                        "Gimbal": {"Stabilization": 1, "Pitch": 0, "Roll": 0},
                    }
                },
            }
            for name, p in vehicles
        },
    }
