"""A lidar by ray casts into the scene, with AirSim's parameters, scan pattern and output frames.

The model follows AirLib's LidarSimple (AirLib/include/sensors/lidar/LidarSimple.hpp,
LidarSimpleParams.hpp) and AirSim's Unreal lidar (Unreal/Plugins/AirSim/Source/UnrealSensors/
UnrealLidarSensor.cpp):

- parameters and defaults are LidarSimpleParams' (a VLP-16: 16 channels, 100 m, 100,000 points/s,
  10 rotations/s, horizontal FOV 0-359 degrees, vertical FOV -15 to -45 degrees on a multirotor),
  read from the settings.json keys of the same names;
- the sensor updates at 10 Hz (`update_frequency`); each update scans `PointsPerSecond * dt` points
  (dt = the time since the previous update, capped at 100,000) split over the channels, sweeping
  `RotationsPerSecond * 360 * dt` degrees from where the last update stopped; a ray whose horizontal
  angle lies outside [HorizontalFOVStart, HorizontalFOVEnd] is not cast (VectorMath's
  isAngleBetweenAngles, so start == end is the whole circle);
- a ray's direction is the lidar's front (+X) turned by pitch = the channel's vertical angle and yaw =
  the horizontal angle, in the lidar's frame (its settings pose on the body), then the body's;
- a hit is reported as a point in `VehicleInertialFrame` (the vehicle's spawn-relative NED frame,
  AirSim's default) or `SensorLocalFrame` (the lidar's own axes, origin at the lidar), plus the hit
  object's segmentation id (-1 for none); rays that hit nothing within `Range` give no point;
- the pose reported is the lidar's pose (settings pose composed with the vehicle's), spawn-relative.

AirSim updates its sensors on every physics tick; this one computes an update when it is read, for
the latest 10 Hz instant that has passed (the sweep angle still advances by every update missed in
between, so the pattern is AirSim's; the scan is taken at the vehicle's pose when read). The
vehicle's own body is never hit (AirSim's trace ignores the vehicle's actor). The built-in
simulator's ground is the plane NED z = 0, which every ray reaching it hits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from common.errors import ConfigError
from common.frames import quat_from_rotation, rotation_pry_deg

VEHICLE_INERTIAL_FRAME = "VehicleInertialFrame"
SENSOR_LOCAL_FRAME = "SensorLocalFrame"
DATA_FRAMES = (VEHICLE_INERTIAL_FRAME, SENSOR_LOCAL_FRAME)
MAX_POINTS_IN_SCAN = 100_000  # UnrealLidarSensor's cap per update
UPDATE_FREQUENCY_HZ = 10.0  # LidarSimpleParams.update_frequency (not a settings key)
# settings keys a lidar reads (LidarSimpleParams::initializeFromSettings) plus the common sensor keys
SETTINGS_KEYS = {
    "SensorType",
    "Enabled",
    "NumberOfChannels",
    "Range",
    "PointsPerSecond",
    "RotationsPerSecond",
    "HorizontalFOVStart",
    "HorizontalFOVEnd",
    "VerticalFOVUpper",
    "VerticalFOVLower",
    "X",
    "Y",
    "Z",
    "Roll",
    "Pitch",
    "Yaw",
    "DrawDebugPoints",
    "DataFrame",
    "ExternalController",
}

# ray_test(starts_ned (N,3), ends_ned (N,3)) -> (body id or -1 per ray, hit fraction per ray)
RayTest = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _angle_between(angle: np.ndarray, start: float, end: float) -> np.ndarray:
    """VectorMath::isAngleBetweenAngles, vectorised."""
    if start < end:
        return (start <= angle) & (angle <= end)
    return (start <= angle) | (angle <= end)


@dataclass(frozen=True)
class LidarParams:
    """LidarSimpleParams, with its defaults for a multirotor."""

    name: str
    number_of_channels: int = 16
    range_m: float = 100.0
    points_per_second: int = 100_000
    rotations_per_second: int = 10
    horizontal_fov_start_deg: float = 0.0
    horizontal_fov_end_deg: float = 359.0
    vertical_fov_upper_deg: float = -15.0
    vertical_fov_lower_deg: float = -45.0
    position_frd_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)  # pitch, roll, yaw (AirSim's order)
    data_frame: str = VEHICLE_INERTIAL_FRAME

    def laser_angles_deg(self) -> list[float]:
        """Each channel's vertical angle, upper first (UnrealLidarSensor::createLasers)."""
        n = self.number_of_channels
        step = (self.vertical_fov_upper_deg - self.vertical_fov_lower_deg) / (n - 1) if n > 1 else 0.0
        return [self.vertical_fov_upper_deg - i * step for i in range(n)]

    def rotation(self) -> np.ndarray:
        return rotation_pry_deg(*self.rotation_deg)


def _number(where: str, value: object, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"settings {where}: expected a finite number, got {value!r}")
    if integer and int(value) != value:
        raise ConfigError(f"settings {where}: expected a whole number, got {value!r}")
    return float(value)


def lidar_params(name: str, data: dict[str, Any], where: str) -> LidarParams:
    """LidarParams from a settings.json sensor object (its keys as LidarSimpleParams reads them)."""
    d = LidarParams(name)

    def num(key: str, default: float, integer: bool = False) -> float:
        return _number(f"{where}.{key}", data[key], integer) if key in data else default

    channels = int(num("NumberOfChannels", d.number_of_channels, True))
    range_m = num("Range", d.range_m)
    pps = int(num("PointsPerSecond", d.points_per_second, True))
    rps = int(num("RotationsPerSecond", d.rotations_per_second, True))
    if channels < 1 or range_m <= 0 or pps < 0 or rps < 0:
        raise ConfigError(
            f"settings {where}: NumberOfChannels >= 1, Range > 0, PointsPerSecond >= 0 and "
            f"RotationsPerSecond >= 0 (got {channels}, {range_m}, {pps}, {rps})"
        )
    frame = data.get("DataFrame", d.data_frame)
    if frame not in DATA_FRAMES:
        # LidarSimple throws "Unknown requested data frame" on its first scan; refuse at start instead
        raise ConfigError(f"settings {where}.DataFrame {frame!r}: one of {', '.join(DATA_FRAMES)}")
    return LidarParams(
        name=name,
        number_of_channels=channels,
        range_m=range_m,
        points_per_second=pps,
        rotations_per_second=rps,
        horizontal_fov_start_deg=num("HorizontalFOVStart", d.horizontal_fov_start_deg),
        horizontal_fov_end_deg=num("HorizontalFOVEnd", d.horizontal_fov_end_deg),
        vertical_fov_upper_deg=num("VerticalFOVUpper", d.vertical_fov_upper_deg),
        vertical_fov_lower_deg=num("VerticalFOVLower", d.vertical_fov_lower_deg),
        position_frd_m=(num("X", 0.0), num("Y", 0.0), num("Z", 0.0)),
        rotation_deg=(num("Pitch", 0.0), num("Roll", 0.0), num("Yaw", 0.0)),
        data_frame=str(frame),
    )


@dataclass
class LidarScan:
    """AirLib's LidarData: points (flat x, y, z), the lidar's pose, time stamp, segmentation ids."""

    time_stamp_ns: int
    point_cloud: list[float]
    position: tuple[float, float, float]  # spawn-relative NED
    orientation_wxyz: tuple[float, float, float, float]
    segmentation: list[int]


@dataclass
class Lidar:
    """One lidar's scan state: the sweep angle and the last update."""

    params: LidarParams
    _epoch_s: float = 0.0  # simulation time of the sensor's reset: updates count from it
    _angle_deg: float = 0.0
    _update: int = 0  # index of the last 10 Hz update computed
    _last: LidarScan | None = field(default=None, repr=False)

    def reset(self, now_s: float) -> None:
        """As LidarSimple::resetImplementation: the sweep starts again, an empty output now."""
        self._epoch_s, self._angle_deg, self._update, self._last = now_s, 0.0, 0, None

    def read(
        self,
        now_s: float,
        vehicle_position_ned: Sequence[float],
        vehicle_rotation: np.ndarray,
        spawn_ned: Sequence[float],
        ray_test: RayTest,
        segmentation_id: Callable[[int], int],
    ) -> LidarScan:
        """The output of the latest update at or before `now_s` (computed now if new)."""
        period_s = 1.0 / UPDATE_FREQUENCY_HZ
        update = math.floor((now_s - self._epoch_s) / period_s + 1e-9)
        if self._last is not None and update == self._update:
            return self._last
        missed = max(0, update - self._update - 1)
        self._angle_deg = math.fmod(
            self._angle_deg + missed * self.params.rotations_per_second * 360.0 * period_s, 360.0
        )
        self._update = update
        # The sweep of this update (LidarSimple::updateOutput), from the vehicle's pose now; the
        # reset's update scans nothing (dt = 0), as LidarSimple::resetImplementation.
        dt_s = period_s if update > 0 else 0.0
        p = self.params
        r_v = np.asarray(vehicle_rotation, float)
        r_lidar = r_v @ p.rotation()
        start = np.asarray(vehicle_position_ned, float) + r_v @ np.asarray(p.position_frd_m)
        spawn = np.asarray(spawn_ned, float)
        local = start - spawn
        scan = LidarScan(
            round(now_s * 1e9),
            [],
            (float(local[0]), float(local[1]), float(local[2])),
            quat_from_rotation(r_lidar),
            [],
        )
        self._last = scan  # filled in below (the early returns keep it empty)
        total = min(round(p.points_per_second * dt_s), MAX_POINTS_IN_SCAN)
        per_laser = round(total / p.number_of_channels)
        if per_laser <= 0:
            return scan
        sweep_deg = p.rotations_per_second * 360.0 * dt_s
        step_deg = sweep_deg / per_laser
        horizontal = np.fmod(self._angle_deg + step_deg * np.arange(per_laser), 360.0)
        keep = _angle_between(
            horizontal,
            math.fmod(360.0 + p.horizontal_fov_start_deg, 360.0),
            math.fmod(360.0 + p.horizontal_fov_end_deg, 360.0),
        )
        horizontal = np.radians(horizontal[keep])
        self._angle_deg = math.fmod(self._angle_deg + sweep_deg, 360.0)
        if horizontal.size == 0:
            return scan
        vertical = np.radians(np.asarray(p.laser_angles_deg()))
        # ray front (+X) turned by pitch = vertical, then yaw = horizontal: (cos v cos h, cos v sin h, -sin v)
        cv, sv = np.cos(vertical)[:, None], np.sin(vertical)[:, None]
        ch, sh = np.cos(horizontal)[None, :], np.sin(horizontal)[None, :]
        dirs_l = np.stack(np.broadcast_arrays(cv * ch, cv * sh, -sv * np.ones_like(ch)), axis=-1).reshape(
            -1, 3
        )
        dirs = dirs_l @ r_lidar.T
        ends = start + dirs * p.range_m
        bodies, fractions = ray_test(np.broadcast_to(start, dirs.shape), ends)
        t = np.where(bodies >= 0, fractions * p.range_m, np.inf)
        # the ground plane NED z = 0 (drawn analytically, not a body)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_ground = np.where(dirs[:, 2] > 1e-12, -start[2] / dirs[:, 2], np.inf)
        ground = (t_ground >= 0) & (t_ground <= p.range_m) & (t_ground < t)
        t = np.where(ground, t_ground, t)
        hit = np.isfinite(t)
        points = start + dirs[hit] * t[hit, None]
        if p.data_frame == SENSOR_LOCAL_FRAME:
            out = (points - start) @ r_lidar  # R^T (p - start), row-wise
        else:
            out = points - spawn
        ids = [-1 if g else segmentation_id(int(b)) for b, g in zip(bodies[hit], ground[hit], strict=True)]
        scan.point_cloud = out.astype(np.float64).ravel().tolist()
        scan.segmentation = ids
        return scan


__all__ = [
    "DATA_FRAMES",
    "SETTINGS_KEYS",
    "Lidar",
    "LidarParams",
    "LidarScan",
    "lidar_params",
]
