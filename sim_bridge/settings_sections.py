"""settings.json sections the RPC surface reads: each vehicle's `Sensors` and `Cameras`.

`sim_bridge.settings.read_settings` places the vehicles and sizes the default camera; this reader
takes what the AirSim RPC methods then serve (AirSim's AirLib/include/common/AirSimSettings.hpp):

- `Vehicles.NAME.Sensors.SENSOR`: `SensorType` (1 barometer, 2 IMU, 3 GPS, 4 magnetometer,
  5 distance, 6 lidar) and `Enabled` (default false: a disabled sensor does not exist, as AirSim's
  sensor factory skips it), then the type's own keys: lidars (sim_bridge.sim.lidar), distance sensors
  (sim_bridge.sim.distance), IMU, barometer, magnetometer and GPS noise models
  (sim_bridge.sim.sensor_params: AngularRandomWalk, PressureFactorSigma, NoiseSigma, EphInitial, ...).
  Sensor names are served in name order (AirSim keeps them in a std::map: "" picks the first).
- `DefaultSensors.SENSOR`: the same entries, for every vehicle; where present they replace AirSim's
  built-in defaults (a multirotor's imu, magnetometer, gps and barometer; a car's gps; none in
  ComputerVision).
  A vehicle gets each default whose type its own Sensors do not list (AirSimSettings::loadSensorSettings).
- `Vehicles.NAME.Cameras.CAMERA`: `CaptureSettings` [{ImageType, Width, Height, FOV_Degrees}], the
  mount `X`, `Y`, `Z` (body FRD metres) and `Pitch`, `Roll`, `Yaw` (degrees); a camera named like one
  of AirSim's standard cameras configures that one, any other name adds a camera.

- `ExternalCameras.CAMERA`: the same keys, X/Y/Z in the world NED frame (the Player Start's), for
  cameras fixed in the world (read_external_cameras).

Unknown keys are reported in the log (never silently dropped); wrong values are errors naming the key.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.errors import ConfigError
from sim_bridge.settings import load_settings_json
from sim_bridge.sim.distance import SETTINGS_KEYS as DISTANCE_KEYS
from sim_bridge.sim.distance import DistanceParams, distance_params
from sim_bridge.sim.lidar import SETTINGS_KEYS as LIDAR_KEYS
from sim_bridge.sim.lidar import LidarParams, lidar_params
from sim_bridge.sim.sensor_params import KEYS as MODEL_KEYS
from sim_bridge.sim.sensor_params import SensorParams, sensor_params

log = logging.getLogger(__name__)

SENSOR_TYPES = {1: "barometer", 2: "imu", 3: "gps", 4: "magnetometer", 5: "distance", 6: "lidar"}
LIDAR_TYPE, DISTANCE_TYPE = 6, 5
# AirSimSettings' default multirotor sensors (createDefaultSensorSettings): name -> type
DEFAULT_SENSOR_NAMES = {"imu": "imu", "magnetometer": "magnetometer", "gps": "gps", "barometer": "barometer"}
NO_DEFAULT_SENSORS_MODES = {"ComputerVision"}
CAR_DEFAULT_SENSOR_NAMES = {"gps": "gps"}  # createDefaultSensorSettings for SimMode Car
CAMERA_KEYS = {"CaptureSettings", "X", "Y", "Z", "Pitch", "Roll", "Yaw", "NoiseSettings", "Gimbal"}
CAPTURE_KEYS = {"ImageType", "Width", "Height", "FOV_Degrees"}
# CaptureSettings keys about the look of Unreal's post-processing: they have no meaning for these
# renderers and are reported once as not applied
CAPTURE_LOOK_KEYS = {
    "AutoExposureSpeed",
    "AutoExposureBias",
    "AutoExposureMaxBrightness",
    "AutoExposureMinBrightness",
    "MotionBlurAmount",
    "TargetGamma",
    "ProjectionMode",
    "OrthoWidth",
}
DEFAULT_WIDTH, DEFAULT_HEIGHT, DEFAULT_FOV_DEG = 256, 144, 90.0  # AirSimSettings::CaptureSetting


@dataclass(frozen=True)
class CaptureSetting:
    image_type: int
    width_px: int
    height_px: int
    fov_deg: float


@dataclass(frozen=True)
class CameraSetting:
    """One camera's settings; None for a mount value the settings leave to the camera's default."""

    name: str
    captures: dict[int, CaptureSetting]
    position_frd_m: tuple[float | None, float | None, float | None] = (None, None, None)
    rotation_deg: tuple[float | None, float | None, float | None] = (None, None, None)  # pitch, roll, yaw


@dataclass(frozen=True)
class VehicleSections:
    lidars: list[LidarParams] = field(default_factory=list)  # enabled ones, in name order
    distance_sensors: list[DistanceParams] = field(default_factory=list)
    sensors: dict[str, str] = field(default_factory=dict)  # name -> type (defaults included)
    cameras: dict[str, CameraSetting] = field(default_factory=dict)
    sensor_params: dict[str, SensorParams] = field(default_factory=dict)  # IMU/baro/mag/GPS by name


# one Sensors entry: its type, whether enabled, and its parsed parameters (enabled ones)
_Entry = tuple[str, bool, "LidarParams | DistanceParams | SensorParams | None"]


def _finite(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"settings {where}: expected a finite number, got {value!r}")
    return float(value)


def _size_ok(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 16 <= value <= 8192


def read_sections(path: str | Path, default_vehicle: str = "SimpleFlight") -> dict[str, VehicleSections]:
    """Vehicle name -> its sections. A file without `Vehicles` gives the default vehicle's."""
    return sections_of(load_settings_json(path), default_vehicle, str(path))


def read_external_cameras(path: str | Path) -> dict[str, CameraSetting]:
    """settings.json's ExternalCameras: name -> camera (X, Y, Z world NED from the Player Start, Pitch,
    Roll, Yaw, CaptureSettings), as AirSimSettings::loadExternalCameraSettings reads them."""
    data = load_settings_json(path)
    return _cameras(data.get("ExternalCameras") or {}, str(path), "ExternalCameras")


def sections_of(data: dict[str, Any], default_vehicle: str, source: str) -> dict[str, VehicleSections]:
    vehicles = data.get("Vehicles") or {default_vehicle: {}}
    if not isinstance(vehicles, dict):
        raise ConfigError(f"settings {source}: Vehicles must be an object")
    if "DefaultSensors" in data:
        defaults = _sensor_entries(data["DefaultSensors"], f"{source}: DefaultSensors", "DefaultSensors")
    elif data.get("SimMode", "Multirotor") in NO_DEFAULT_SENSORS_MODES:
        defaults = {}
    elif data.get("SimMode") == "Car":
        defaults = {name: (kind, True, None) for name, kind in CAR_DEFAULT_SENSOR_NAMES.items()}
    else:
        defaults = {name: (kind, True, None) for name, kind in DEFAULT_SENSOR_NAMES.items()}
    out = {}
    for name, v in vehicles.items():
        if not isinstance(v, dict):
            raise ConfigError(f"settings {source}: Vehicles.{name} must be an object")
        where = f"{source}: Vehicles.{name}"
        lidars, distances, sensors, params = _vehicle_sensors(
            _sensor_entries(v.get("Sensors") or {}, where), defaults
        )
        out[str(name)] = VehicleSections(
            lidars, distances, sensors, _cameras(v.get("Cameras") or {}, where), params
        )
    return out


def _vehicle_sensors(
    own: dict[str, _Entry], defaults: dict[str, _Entry]
) -> tuple[list[LidarParams], list[DistanceParams], dict[str, str], dict[str, SensorParams]]:
    """A vehicle's enabled sensors: its own, then each default whose type its own do not list
    (disabled entries count: AirSim's present-type bitmask)."""
    present = {kind for kind, _, _ in own.values()}
    merged = dict(own)
    for name, entry in defaults.items():
        if entry[0] not in present:
            merged.setdefault(name, entry)
    lidars, distances, sensors, params = [], [], {}, {}
    for name in sorted(merged):
        kind, enabled, parsed = merged[name]
        if not enabled:
            continue
        sensors[name] = kind
        if isinstance(parsed, LidarParams):
            lidars.append(parsed)
        elif isinstance(parsed, DistanceParams):
            distances.append(parsed)
        elif parsed is not None:
            params[name] = parsed
    return lidars, distances, sensors, params


def _sensor_entries(data: object, where: str, key: str = "Sensors") -> dict[str, _Entry]:
    if not isinstance(data, dict):
        raise ConfigError(
            f"settings {where}{'.Sensors' if key == 'Sensors' else ''} must be an object of name -> sensor"
        )
    entries: dict[str, _Entry] = {}
    for name in sorted(data):
        s = data[name]
        w = f"{where}.Sensors.{name}" if key == "Sensors" else f"{where}.{name}"
        if not isinstance(s, dict):
            raise ConfigError(f"settings {w} must be an object")
        kind = s.get("SensorType")
        if isinstance(kind, bool) or kind not in SENSOR_TYPES:
            raise ConfigError(
                f"settings {w}.SensorType {kind!r}: one of {sorted(SENSOR_TYPES)} {SENSOR_TYPES}"
            )
        enabled = s.get("Enabled", False)
        if not isinstance(enabled, bool):
            raise ConfigError(f"settings {w}.Enabled {enabled!r}: true or false")
        present_type = SENSOR_TYPES[kind]
        parsed: LidarParams | DistanceParams | SensorParams | None = None
        if kind == LIDAR_TYPE:
            unknown = set(s) - LIDAR_KEYS
            if unknown:
                log.warning("settings %s: ignoring %s (not lidar settings)", w, sorted(unknown))
            if enabled:
                parsed = lidar_params(str(name), s, w)
        elif kind == DISTANCE_TYPE:
            if set(s) - DISTANCE_KEYS:
                log.warning(
                    "settings %s: ignoring %s (not distance sensor settings)",
                    w,
                    sorted(set(s) - DISTANCE_KEYS),
                )
            if enabled:
                parsed = distance_params(str(name), s, w)
        elif present_type in MODEL_KEYS:
            # validated (and unknown keys reported) whether enabled or not; used when enabled
            params = sensor_params(present_type, s, w)
            parsed = params if enabled else None
        entries[str(name)] = (present_type, enabled, parsed)
    return entries


def _cameras(data: object, where: str, key: str = "Cameras") -> dict[str, CameraSetting]:
    if not isinstance(data, dict):
        raise ConfigError(f"settings {where}.{key} must be an object of name -> camera")
    out = {}
    # the forward camera's Gimbal is the vehicle's (sim_bridge.settings reads it: the level gimbal or
    # body-fixed, which the other cameras follow too); another camera's own Gimbal is not applied
    forward = next((n for n in ("front_center", "0") if n in data), next(iter(data), None))
    for name, cam in data.items():
        w = f"{where}.{key}.{name}"
        if not isinstance(cam, dict):
            raise ConfigError(f"settings {w} must be an object")
        if set(cam) - CAMERA_KEYS:
            log.warning("settings %s: ignoring %s", w, sorted(set(cam) - CAMERA_KEYS))
        for field_name in ("NoiseSettings", "Gimbal"):
            if field_name in cam and not (field_name == "Gimbal" and key == "Cameras" and name == forward):
                log.warning("settings %s.%s: not applied by the built-in simulator", w, field_name)
        captures: dict[int, CaptureSetting] = {}
        raw = cam.get("CaptureSettings") or []
        if not isinstance(raw, list):
            raise ConfigError(f"settings {w}.CaptureSettings must be a list")
        for i, c in enumerate(raw):
            cw = f"{w}.CaptureSettings[{i}]"
            if not isinstance(c, dict):
                raise ConfigError(f"settings {cw} must be an object")
            if set(c) - CAPTURE_KEYS - CAPTURE_LOOK_KEYS:
                log.warning("settings %s: ignoring %s", cw, sorted(set(c) - CAPTURE_KEYS - CAPTURE_LOOK_KEYS))
            if set(c) & CAPTURE_LOOK_KEYS:
                log.info("settings %s: not rendered: %s", cw, sorted(set(c) & CAPTURE_LOOK_KEYS))
            kind = c.get("ImageType", 0)
            width, height = c.get("Width", DEFAULT_WIDTH), c.get("Height", DEFAULT_HEIGHT)
            if isinstance(kind, bool) or not isinstance(kind, int) or not -1 <= kind <= 9:
                raise ConfigError(f"settings {cw}.ImageType {kind!r}: an AirSim ImageType 0-9")
            if not all(
                isinstance(v, int) and not isinstance(v, bool) and 16 <= v <= 8192 for v in (width, height)
            ):
                raise ConfigError(f"settings {cw}: Width/Height {width}x{height} out of 16-8192")
            fov = _finite(f"{cw}.FOV_Degrees", c.get("FOV_Degrees", DEFAULT_FOV_DEG))
            if not 1.0 <= fov <= 170.0:
                raise ConfigError(f"settings {cw}.FOV_Degrees {fov}: 1-170")
            captures[kind] = CaptureSetting(kind, width, height, fov)
        pos = tuple(_finite(f"{w}.{k}", cam[k]) if k in cam else None for k in ("X", "Y", "Z"))
        rot = tuple(_finite(f"{w}.{k}", cam[k]) if k in cam else None for k in ("Pitch", "Roll", "Yaw"))
        out[str(name)] = CameraSetting(str(name), captures, pos, rot)  # type: ignore[arg-type]
    return out


__all__ = [
    "CameraSetting",
    "CaptureSetting",
    "VehicleSections",
    "read_external_cameras",
    "read_sections",
    "sections_of",
]
