"""Which camera an AirSim camera name picks, and where it is: the forward camera, AirSim's standard
side and back cameras (the forward camera moved), and the cameras settings.json mounts
(sim_bridge.rpc.cameras). Shared by the image and camera-info families."""

from __future__ import annotations

from typing import Any

from common.errors import ConfigError
from common.frames import forward_right_to_north_east
from common.pose import Pose, wrap_deg
from sim_bridge.rpc.cameras import CameraRig, Mount
from sim_bridge.rpc.local_frames import LocalFrames
from sim_bridge.rpc.orientation import camera_orientation_msg

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


def camera_key(request: dict[str, Any]) -> str:
    """Which render serves an ImageRequest: "0" for the forward camera, else the camera's name."""
    camera = str(request.get("camera_name", "0"))
    return "0" if camera in CAMERA_NAMES else camera


class CameraSelect:
    """Camera names checked and placed over the vehicles' frames and the camera rig."""

    def __init__(self, frames: LocalFrames, rig: CameraRig) -> None:
        self.world = frames.world
        self._frames = frames
        self.rig = rig

    def check(self, camera_name: object, side_cameras: bool = False, vehicle_name: str | None = None) -> None:
        """Raise for a camera name this vehicle (or, without one, the forward camera's set) lacks."""
        name = str(camera_name)
        if vehicle_name is not None:  # the vehicle's cameras (rpc/cameras.py): standard and settings'
            if not self.rig.has(vehicle_name, name):
                self.rig.mount(vehicle_name, name)  # raises, naming the vehicle's cameras
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

    def pose_msg(self, vehicle_name: str, camera_name: str = "0") -> dict[str, Any]:
        """A level-path camera's pose, spawn-relative (as AirSim reports camera poses)."""
        pose = self.vehicle_pose_for(vehicle_name, camera_name)
        with self.world.lock:
            eye, yaw = self.world.camera_pose(str(vehicle_name), pose)
            rotation = self.world.camera_rotation(str(vehicle_name), pose)
        msg = self._frames.local_xyz(vehicle_name, eye[0], eye[1], eye[2], yaw)
        msg["orientation"] = camera_orientation_msg(rotation, yaw) or msg["orientation"]
        return msg

    def vehicle_pose_for(self, vehicle_name: str, camera_name: str) -> Pose | None:
        """The vehicle pose at which the forward camera sits where this camera is (None: the forward
        camera itself): a side camera's offset is applied to the vehicle, the back camera turns it."""
        if str(camera_name) not in SIDE_CAMERAS:
            return None
        right_m, back = SIDE_CAMERAS[str(camera_name)]
        with self.world.lock:
            p = self._frames.slot(vehicle_name).model.pose()
        north_m, east_m = forward_right_to_north_east(0.0, right_m, p.yaw_deg)
        return Pose(p.x_m + north_m, p.y_m + east_m, p.z_m, wrap_deg(p.yaw_deg + (180.0 if back else 0.0)))

    def turned_mount(self, vehicle_name: str, key: str) -> Mount | None:
        """The camera's mount when it is drawn in its own orientation (None: the level path)."""
        mount = self.rig.mount(vehicle_name, key)
        return None if mount.level_path else mount
