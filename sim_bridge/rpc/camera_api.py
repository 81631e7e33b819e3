# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's camera calls (RpcLibServerBase.cpp; PythonClient/airsim/client.py's camera APIs):
simGetCameraInfo, simSetCameraPose, simSetCameraFov and the lens distortion parameters
(simGetDistortionParams, simSetDistortionParam). The images are sim_bridge.rpc.images_api's.

Camera poses are relative to the vehicle's spawn, as AirSim reports them (its camera poses come from
the vehicle's local frame); an external camera's (the last argument True) are in the world NED frame.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from common.errors import ConfigError
from common.frames import rotation_from_quat
from sim_bridge.rpc.camera_select import CAMERA_NAMES, SIDE_CAMERAS, CameraSelect, camera_key
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.local_frames import LocalFrames
from sim_bridge.rpc.orientation import rotation_quat_msg
from sim_bridge.rpc.wire import External, PoseMsg, parse_vec3, vec3
from sim_bridge.sim.camera import projection_matrix

DISTORTION_PARAMS = ("K1", "K2", "K3", "P1", "P2")  # APIPCamera's, in getDistortionParams' order
LensKey = tuple[str, str]  # (vehicle, camera key); the vehicle "" for an external camera


class Lenses:
    """Each camera's lens parameters as simSetDistortionParam set them (the images are resampled
    through them: sim_bridge.rpc.lens)."""

    def __init__(self) -> None:
        self._params: dict[LensKey, tuple[float, ...]] = {}

    def get(self, key: LensKey) -> tuple[float, ...]:
        """The camera's parameters in DISTORTION_PARAMS order; () where none was set (a pinhole)."""
        return self._params.get(key, ())

    def set(self, key: LensKey, param_name: str, value: float) -> None:
        params = list(self._params.get(key, (0.0,) * len(DISTORTION_PARAMS)))
        params[DISTORTION_PARAMS.index(param_name)] = value
        self._params[key] = tuple(params)


class CameraApi:
    """The camera calls over the camera selection, the vehicles' frames and the lenses."""

    def __init__(self, frames: LocalFrames, select: CameraSelect, lenses: Lenses) -> None:
        self.world = frames.world
        self._frames = frames
        self._select = select
        self._cameras = select.rig
        self._lenses = lenses

    def handlers(self) -> HandlerTable:
        return {
            "simGetCameraInfo": self.simGetCameraInfo,
            "simSetCameraPose": self.simSetCameraPose,
            "simSetCameraFov": self.simSetCameraFov,
            "simGetDistortionParams": self.simGetDistortionParams,
            "simSetDistortionParam": self.simSetDistortionParam,
        }

    def simGetCameraInfo(
        self, camera_name: str, vehicle_name: str, external: External = False
    ) -> dict[str, Any]:
        if external is True:  # world NED pose (AirSim's external cameras are in the global frame)
            ext = self._cameras.external(str(camera_name))
            assert ext.profile is not None
            p = ext.position_frd_m
            m_ext = np.asarray(projection_matrix(ext.profile)).reshape(4, 4).T
            return {
                "pose": {"position": vec3(*p), "orientation": rotation_quat_msg(ext.rotation)},
                "fov": ext.profile.hfov_deg,
                "proj_mat": {"matrix": m_ext.tolist()},
            }
        self._select.check(camera_name, side_cameras=True, vehicle_name=vehicle_name)

        mount = self._select.turned_mount(vehicle_name, camera_key({"camera_name": camera_name}))
        if mount is not None:
            with self.world.lock:
                eye, rot = self._cameras.world_pose(vehicle_name, mount)
                lens = mount.profile or self._frames.slot(vehicle_name).camera
            pose = self._frames.local_xyz(vehicle_name, eye[0], eye[1], eye[2], 0.0)
            pose["orientation"] = rotation_quat_msg(rot)
            m_turned = np.asarray(projection_matrix(lens)).reshape(4, 4).T
            return {"pose": pose, "fov": lens.hfov_deg, "proj_mat": {"matrix": m_turned.tolist()}}
        cam = self._frames.slot(vehicle_name).camera
        m = np.asarray(projection_matrix(cam)).reshape(4, 4).T
        return {
            "pose": self._select.pose_msg(vehicle_name, str(camera_name)),
            "fov": cam.hfov_deg,
            "proj_mat": {"matrix": m.tolist()},
        }

    def simSetCameraPose(
        self, camera_name: str, pose: PoseMsg, vehicle_name: str, external: External = False
    ) -> None:
        """APIPCamera::setCameraPose: the camera's pose relative to the vehicle body (rpc/cameras.py)."""
        if external is True:
            self._cameras.external(str(camera_name))
        else:
            self._select.check(camera_name, side_cameras=True, vehicle_name=vehicle_name)
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
        self, camera_name: str, vehicle_name: str, external: External = False
    ) -> list[float]:
        """K1, K2, K3, P1, P2 (APIPCamera::getDistortionParams): what simSetDistortionParam set, else 0."""
        key = self._distortion_camera(camera_name, vehicle_name, external)
        return list(self._lenses.get(key) or (0.0,) * len(DISTORTION_PARAMS))

    def simSetDistortionParam(
        self, camera_name: str, param_name: str, value: float, vehicle_name: str, external: External = False
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
        self._lenses.set(key, str(param_name), v)

    def _distortion_camera(self, camera_name: str, vehicle_name: str, external: External) -> tuple[str, str]:
        """The lens key of a camera: (vehicle, camera key), the vehicle "" for an external camera."""
        if external is True:
            self._cameras.external(str(camera_name))
            return ("", camera_key({"camera_name": camera_name}))
        self._select.check(camera_name, side_cameras=True, vehicle_name=vehicle_name)
        return (self._frames.slot(vehicle_name).model.name, camera_key({"camera_name": camera_name}))

    def simSetCameraFov(
        self, camera_name: str, fov_degrees: float, vehicle_name: str, external: External = False
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
            self._select.check(name, vehicle_name=vehicle_name)
            if not 1.0 <= float(fov_degrees) <= 170.0:
                raise ConfigError(f"simSetCameraFov: fov_degrees {fov_degrees} out of 1-170")
            self._cameras.set_fov(
                vehicle_name, name, float(fov_degrees), self._frames.slot(vehicle_name).camera
            )
            return
        self._select.check(name)
        fov = float(fov_degrees)
        if self.world.render_pool is not None:
            raise ConfigError(
                "simSetCameraFov: render workers hold copies of the cameras; use --render-workers 0"
            )
        from common.camera import CameraProfile

        with self.world.lock:
            slot = self._frames.slot(vehicle_name)
            cam = slot.camera
            slot.camera = CameraProfile.from_hfov(cam.name, cam.width_px, cam.height_px, fov)
