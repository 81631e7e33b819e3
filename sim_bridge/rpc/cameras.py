"""Each vehicle's cameras: AirSim's five standard ones, settings.json's named ones, and their poses.

AirSim (Unreal/Plugins/AirSim/Source/PIPCamera.cpp, WorldSimApi.cpp) keeps a camera per name on each
vehicle, mounted at a pose relative to the body:
- `simSetCameraPose(camera, pose)` sets that relative pose (APIPCamera::setCameraPose: position and
  rotation relative to the vehicle body; the body's attitude then turns it, see CameraRig.world_pose);
- `simSetCameraFov(camera, fov)` sets the FOV of all of that camera's captures (setCameraFoV);
- `simGetCameraInfo` reports the camera's pose (position spawn-relative, orientation world NED).

The standard cameras here (names and numbers as AirSim's multirotor): front_center "0" at the
built-in camera mount (0.5 m ahead, 0.1 m below the body origin), front_right "1" / front_left "2"
0.25 m to its right / left, bottom_center "3" under the body origin looking down (pitch -90),
back_center "4" 0.5 m behind looking back. While a standard camera keeps its mount and the
vehicle's lens, it is drawn by the vehicle's own camera path (sim_bridge.sim.world.World.render,
with its mount and Gimbal) exactly as before; a camera turned or moved by simSetCameraPose, the
bottom camera and settings.json's named cameras are drawn by Cameras.render_view in their full orientation.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from common.camera import CameraProfile
from common.errors import ConfigError
from common.frames import rotation_pry_deg, yaw_rotation_ned
from sim_bridge.settings_sections import CameraSetting
from sim_bridge.sim.attitude import body_rotation_ned
from sim_bridge.sim.world import CAMERA_OFFSET_FRD_M, World

SCENE = 0
EXTERNAL_LENS = (256, 144, 90.0)  # AirSimSettings::CaptureSetting's defaults: width, height, FOV
# canonical name -> (number, mount position body FRD m, (pitch, roll, yaw) deg)
_FX, _FY, _FZ = CAMERA_OFFSET_FRD_M
STANDARD = {
    "front_center": ("0", (_FX, _FY, _FZ), (0.0, 0.0, 0.0)),
    "front_right": ("1", (_FX, _FY + 0.25, _FZ), (0.0, 0.0, 0.0)),
    "front_left": ("2", (_FX, _FY - 0.25, _FZ), (0.0, 0.0, 0.0)),
    "bottom_center": ("3", (0.0, 0.0, _FZ), (-90.0, 0.0, 0.0)),
    "back_center": ("4", (-_FX, _FY, _FZ), (0.0, 0.0, 180.0)),
}
ALIASES = {number: name for name, (number, _, _) in STANDARD.items()} | {"": "front_center"}
LEVEL_PATH = {"front_center", "front_right", "front_left", "back_center"}  # World.render's cameras


@dataclass
class Mount:
    name: str
    position_frd_m: np.ndarray
    rotation: np.ndarray  # camera FRD -> body FRD
    profile: CameraProfile | None  # None: the vehicle's camera (World's VehicleSlot.camera)
    level_path: bool  # drawn by World.render (the unchanged standard camera)


def canonical(camera_name: str) -> str:
    name = str(camera_name)
    return ALIASES.get(name, name)


class CameraRig:
    """The mounts of every vehicle's cameras (created on first use from the standard set)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._mounts: dict[tuple[str, str], Mount] = {}
        self._named: dict[str, dict[str, CameraSetting]] = {}
        self._external: dict[str, Mount] = {}  # world-fixed: position world NED, rotation -> world
        self._lock = threading.Lock()

    def configure(self, vehicle_name: str, cameras: dict[str, CameraSetting]) -> None:
        """settings.json's Cameras of a vehicle: a standard name reconfigures that camera."""
        with self._lock:
            self._named[vehicle_name] = {canonical(n): c for n, c in cameras.items()}
            for key in [k for k in self._mounts if k[0] == vehicle_name]:
                del self._mounts[key]

    def configure_external(self, cameras: dict[str, CameraSetting]) -> None:
        """settings.json's ExternalCameras: fixed in the world (AirSim places them in the global NED
        frame, the Player Start's), each with its Scene capture's lens (AirSim's default 256x144, 90)."""
        with self._lock:
            for name, c in cameras.items():
                pos = tuple(0.0 if v is None else v for v in c.position_frd_m)
                rot = tuple(0.0 if v is None else v for v in c.rotation_deg)
                scene = c.captures.get(SCENE) or next(iter(c.captures.values()), None)
                w, h, fov = (scene.width_px, scene.height_px, scene.fov_deg) if scene else EXTERNAL_LENS
                lens = CameraProfile.from_hfov(f"external:{name}", w, h, fov)
                self._external[name] = Mount(
                    name, np.asarray(pos, float), rotation_pry_deg(*rot), lens, False
                )

    def external(self, camera_name: str) -> Mount:
        with self._lock:
            mount = self._external.get(str(camera_name))
            names = sorted(self._external)
        if mount is None:
            raise ConfigError(
                f"external camera '{camera_name}' is not defined (settings.json ExternalCameras: {names})"
            )
        return mount

    def set_external_pose(self, camera_name: str, position_ned: np.ndarray, rotation: np.ndarray) -> None:
        m = self.external(camera_name)
        with self._lock:
            m.position_frd_m, m.rotation = np.asarray(position_ned, float), np.asarray(rotation, float)

    def set_external_fov(self, camera_name: str, fov_deg: float) -> None:
        m = self.external(camera_name)
        assert m.profile is not None
        with self._lock:
            m.profile = CameraProfile.from_hfov(
                m.profile.name, m.profile.width_px, m.profile.height_px, fov_deg
            )

    def has(self, vehicle_name: str, camera_name: str) -> bool:
        name = canonical(camera_name)
        if name in STANDARD:
            return True
        with self._lock:
            return name in self._named.get(self.world.vehicle(str(vehicle_name)).model.name, {})

    def mount(self, vehicle_name: str, camera_name: str) -> Mount:
        vehicle = self.world.vehicle(str(vehicle_name)).model.name
        name = canonical(camera_name)
        with self._lock:
            key = (vehicle, name)
            if key not in self._mounts:
                self._mounts[key] = self._initial(vehicle, name, str(camera_name))
            return self._mounts[key]

    def _initial(self, vehicle: str, name: str, asked: str) -> Mount:
        setting = self._named.get(vehicle, {}).get(name)
        if name not in STANDARD and setting is None:
            known = sorted(set(STANDARD) | set(ALIASES) - {""} | set(self._named.get(vehicle, {})))
            raise ConfigError(
                f"camera '{asked}' is not available on vehicle {vehicle}: its cameras are {known}"
            )
        _, default_pos, default_rot = STANDARD.get(name, (None, CAMERA_OFFSET_FRD_M, (0.0, 0.0, 0.0)))
        pos: tuple[float, ...] = default_pos
        rot: tuple[float, ...] = default_rot
        profile = None
        if setting is not None:
            pos = tuple(d if v is None else v for v, d in zip(setting.position_frd_m, pos, strict=True))
            rot = tuple(d if v is None else v for v, d in zip(setting.rotation_deg, rot, strict=True))
            scene = setting.captures.get(SCENE) or next(iter(setting.captures.values()), None)
            if scene is not None:
                profile = CameraProfile.from_hfov(
                    f"settings:{name}", scene.width_px, scene.height_px, scene.fov_deg
                )
        lens = self.world.vehicle(vehicle).camera
        same_lens = profile is None or (
            (profile.width_px, profile.height_px) == (lens.width_px, lens.height_px)
            and abs(profile.hfov_deg - lens.hfov_deg) < 1e-6
        )
        # a standard camera that settings leave at its mount with the vehicle's lens (as the settings
        # `dronecats episodes airsim-settings` writes) stays on the level path, unchanged
        level = (
            name in LEVEL_PATH
            and np.allclose(pos, default_pos)
            and np.allclose(rot, default_rot)
            and same_lens
        )
        return Mount(name, np.asarray(pos, float), rotation_pry_deg(*rot), None if level else profile, level)

    def set_pose(
        self, vehicle_name: str, camera_name: str, position_frd_m: np.ndarray, rotation: np.ndarray
    ) -> None:
        m = self.mount(vehicle_name, camera_name)
        with self._lock:
            m.position_frd_m = np.asarray(position_frd_m, float)
            m.rotation = np.asarray(rotation, float)
            m.level_path = False

    def set_fov(self, vehicle_name: str, camera_name: str, fov_deg: float, lens: CameraProfile) -> None:
        """A camera of its own lens (resolution kept): from now on drawn by the oriented path."""
        m = self.mount(vehicle_name, camera_name)
        base = m.profile or lens
        with self._lock:
            m.profile = CameraProfile.from_hfov(base.name, base.width_px, base.height_px, fov_deg)
            m.level_path = False

    def world_pose(self, vehicle_name: str, mount: Mount) -> tuple[np.ndarray, np.ndarray]:
        """(eye world NED, rotation camera -> world NED) of a mount now (the caller may hold the lock):
        the mount's pose relative to the body, then the body's attitude. A vehicle whose camera a level
        gimbal holds (the project's own worlds, sim_bridge.sim.gimbal.STABILISED) carries its mounts
        level at its heading; otherwise they are body-fixed and tilt with its roll and pitch, as the
        forward camera does. A landed drone's camera stays above the ground, as camera_pose keeps it."""
        slot = self.world.vehicle(str(vehicle_name))
        m = slot.model
        p = m.pose()
        if slot.mount.level:
            r_body = yaw_rotation_ned(p.yaw_deg)
        else:
            r_body = body_rotation_ned(m.attitude, p.yaw_deg)
        eye = np.array([p.x_m, p.y_m, p.z_m]) + r_body @ mount.position_frd_m
        eye[2] = min(eye[2], m.floor_z_m - 0.02)
        return eye, r_body @ mount.rotation


__all__ = ["ALIASES", "STANDARD", "CameraRig", "Mount", "canonical"]
