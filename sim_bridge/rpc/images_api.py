# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's image calls (RpcLibServerBase.cpp's simGetImages / simGetImage; PythonClient/airsim/
client.py): one render per camera a call names, each request's image type made from it
(sim_bridge.rpc.image_types), resampled through the camera's lens (sim_bridge.rpc.lens).

An ImageResponse's camera_position/orientation are relative to the vehicle's spawn, as AirSim
reports them; an external camera's are in the world NED frame. simGetImages takes AirSim 1.x's
`external` bool or Cosys-AirSim's annotation name as its last argument (the name is ignored).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from common.errors import ConfigError
from common.frames import rotation_pry_deg
from sim_bridge.rpc.camera_api import Lenses
from sim_bridge.rpc.camera_select import CameraSelect, camera_key
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.extensions import FrameRing
from sim_bridge.rpc.image_types import (
    DISPARITY_NORMALIZED,
    INFRARED,
    OPTICAL_FLOW,
    OPTICAL_FLOW_VIS,
    SURFACE_NORMALS,
    disparity_normalized,
    infrared_bgr,
    optical_flow,
    optical_flow_bgr,
    optical_flow_vis_bgr,
    surface_normals_bgr,
)
from sim_bridge.rpc.lens import distorted
from sim_bridge.rpc.local_frames import LocalFrames
from sim_bridge.rpc.orientation import camera_orientation_msg, rotation_quat_msg
from sim_bridge.rpc.segmentation import SegmentationIds, segmentation_colours
from sim_bridge.rpc.wire import External, ImageRequestMsg, vec3
from sim_bridge.sim.camera import Render

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
Request = tuple[dict[str, Any], int]  # an ImageRequest map and its image type
CameraPose = tuple[np.ndarray, np.ndarray]  # a frame's camera (position NED, rotation camera FRD -> NED)


def _camera_pose_now(render: Render, turned: np.ndarray | None) -> CameraPose:
    """A frame's camera (position NED, rotation camera FRD -> NED)."""
    rot = turned if turned is not None else render.camera_rotation_ned
    if rot is None:  # level at the camera's yaw
        rot = rotation_pry_deg(0.0, 0.0, render.camera_yaw_deg)
    return np.asarray(render.camera_position_ned, float), np.asarray(rot, float)


@dataclass
class _Shot:
    """One simGetImages call's renders, shared by its requests."""

    vehicle_name: str
    external: bool
    renders: dict[str, Render] = field(default_factory=dict)  # one render per camera key
    turned: dict[str, np.ndarray] = field(default_factory=dict)  # world rotation of cameras drawn turned
    poses: dict[str, CameraPose] = field(default_factory=dict)
    flows: dict[str, np.ndarray] = field(default_factory=dict)  # camera key -> its optical flow, once


class ImagesApi:
    """simGetImages and simGetImage over the cameras, lenses, segmentation IDs and the frame ring."""

    def __init__(
        self,
        frames: LocalFrames,
        select: CameraSelect,
        lenses: Lenses,
        segmentation: SegmentationIds,
        ring: FrameRing,
    ) -> None:
        self.world = frames.world
        self._frames = frames
        self._select = select
        self._cameras = select.rig
        self._lenses = lenses
        self._segmentation = segmentation
        self._ring = ring
        # (vehicle, camera key, external) -> the camera's (position, rotation) at its last frame served
        self._flow_poses: dict[tuple[str, str, bool], CameraPose] = {}

    def handlers(self) -> HandlerTable:
        return {"simGetImages": self.simGetImages, "simGetImage": self.simGetImage}

    def simGetImage(self, camera_name: str, image_type: int, vehicle_name: str, external: bool) -> bytes:
        request = {"camera_name": camera_name, "image_type": image_type, "pixels_as_float": False}
        resp = self.simGetImages([{**request, "compress": True}], vehicle_name, external)
        return bytes(resp[0]["image_data_uint8"])

    def simGetImages(
        self, requests: list[ImageRequestMsg], vehicle_name: str, external: External = False
    ) -> list[dict[str, Any]]:
        parsed = self._parse(requests, vehicle_name, external)
        shot = _Shot(vehicle_name, external is True)
        self._render(shot, parsed)
        lens_vehicle = "" if shot.external else self._frames.slot(vehicle_name).model.name
        for key in shot.renders:  # each camera's lens (the frame ring keeps the pinhole frame)
            shot.renders[key] = distorted(shot.renders[key], self._lenses.get((lens_vehicle, key)))
        shot.poses = {key: _camera_pose_now(r, shot.turned.get(key)) for key, r in shot.renders.items()}
        out = [self._response(shot, req, image_type) for req, image_type in parsed]
        for key, seen in shot.poses.items():  # the next frame's optical flow starts from these
            self._flow_poses[(str(vehicle_name), key, shot.external)] = seen
        return out

    def _parse(self, requests: object, vehicle_name: str, external: External) -> list[Request]:
        if not isinstance(requests, list | tuple):
            raise ConfigError(f"requests must be a list of ImageRequest, got {type(requests).__name__}")
        parsed = []
        for req in requests:
            if not isinstance(req, dict):
                raise ConfigError(f"ImageRequest must be a map, got {type(req).__name__}")
            if external is True:  # AirSim 1.x's flag (Cosys sends an annotation name here)
                self._cameras.external(str(req.get("camera_name", "")))
            else:
                self._select.check(req.get("camera_name", "0"), side_cameras=True, vehicle_name=vehicle_name)
            image_type = int(req.get("image_type", SCENE))
            if image_type not in RENDERED_TYPES:
                raise ConfigError(
                    f"image_type {image_type} is not rendered by the built-in simulator ("
                    + ", ".join(f"{n} {t}" for t, n in RENDERED_TYPES.items())
                    + ")"
                )
            parsed.append((req, image_type))
        return parsed

    def _render(self, shot: _Shot, parsed: list[Request]) -> None:
        """One render per camera the requests name (with depth when any of its types needs it)."""
        vehicle_name = shot.vehicle_name
        for key in dict.fromkeys(camera_key(r) for r, _ in parsed):
            need_depth = any(t in DEPTH_DERIVED for r, t in parsed if camera_key(r) == key)
            if shot.external:  # a world-fixed camera: its own pose, every body drawn
                ext = self._cameras.external(
                    next(str(r.get("camera_name", "")) for r, _ in parsed if camera_key(r) == key)
                )
                assert ext.profile is not None
                shot.renders[key] = self.world.cameras.render_view(
                    self.world.vehicle(str(vehicle_name)),
                    ext.profile,
                    ext.position_frd_m,
                    ext.rotation,
                    need_depth,
                    hide_vehicle=False,
                )
                shot.turned[key] = ext.rotation
                continue
            mount = self._select.turned_mount(vehicle_name, key)
            if mount is not None:
                with self.world.lock:
                    eye, rot = self._cameras.world_pose(vehicle_name, mount)
                    lens = mount.profile or self._frames.slot(vehicle_name).camera
                    viewer = self.world.vehicle(str(vehicle_name))
                    render = self.world.cameras.render_view(viewer, lens, eye, rot, depth=need_depth)
                shot.renders[key], shot.turned[key] = render, rot
                continue
            pose = self._select.vehicle_pose_for(vehicle_name, key)
            shot.renders[key] = self.world.render(
                str(vehicle_name), segmentation=True, depth=need_depth, vehicle_pose=pose
            )
            if pose is None:
                self._ring.keep(shot.renders[key])  # the ring holds the forward camera's frames

    def _response(self, shot: _Shot, req: dict[str, Any], image_type: int) -> dict[str, Any]:
        """The ImageResponse map of one request."""
        key = camera_key(req)
        render = shot.renders[key]
        cam_pose = self._frames.local_xyz(
            shot.vehicle_name, *render.camera_position_ned, render.camera_yaw_deg
        )
        if key in shot.turned:
            cam_pose["orientation"] = rotation_quat_msg(shot.turned[key])
        else:
            tilted = camera_orientation_msg(render.camera_rotation_ned, render.camera_yaw_deg)
            cam_pose["orientation"] = tilted or cam_pose["orientation"]
        if shot.external:  # AirSim reports an external camera in the global NED frame
            cam_pose["position"] = vec3(*render.camera_position_ned)
        as_float = bool(req.get("pixels_as_float", False))
        compress = bool(req.get("compress", True))
        img, data_f = self._pixels(shot, key, image_type, as_float)
        h, w = render.image_bgr.shape[:2]
        data_u8: bytes = b""
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
        return {
            "image_data_uint8": data_u8,
            "image_data_float": data_f,
            "camera_name": str(req.get("camera_name", "0")),
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

    def _pixels(
        self, shot: _Shot, key: str, image_type: int, as_float: bool
    ) -> tuple[np.ndarray | None, list[float]]:
        """The request's BGR image (None where only floats are served) and its float data."""
        render = shot.renders[key]
        data_f: list[float] = []
        img: np.ndarray | None
        if image_type == SCENE:
            img = render.image_bgr
        elif image_type == SEGMENTATION:
            img = segmentation_colours(render.seg, self._segmentation.snapshot())  # type: ignore[arg-type]
        elif image_type == DISPARITY_NORMALIZED:  # rpc/image_types.py
            assert render.depth_planar_m is not None
            disparity = disparity_normalized(render.depth_planar_m, render.camera)
            img = None if as_float else cv2.cvtColor((disparity * 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
            data_f = disparity.ravel().tolist() if as_float else []
        elif image_type == INFRARED:
            assert render.seg is not None
            img = infrared_bgr(render.seg, self._segmentation.object_ids())
        elif image_type in FLOW_TYPES:
            if key not in shot.flows:
                assert render.depth_planar_m is not None
                before = self._flow_poses.get((str(shot.vehicle_name), key, shot.external))
                shot.flows[key] = optical_flow(render.depth_planar_m, render.camera, shot.poses[key], before)
            flow = shot.flows[key]
            img = None
            if as_float and image_type == OPTICAL_FLOW:  # two values per pixel: vx, vy
                data_f = flow.ravel().tolist()
            elif image_type == OPTICAL_FLOW:
                img = optical_flow_bgr(flow)
            else:
                img = optical_flow_vis_bgr(flow)
        elif image_type == SURFACE_NORMALS:
            assert render.depth_planar_m is not None
            rot = shot.turned.get(key, render.camera_rotation_ned)  # None: level
            rot = rotation_pry_deg(0.0, 0.0, render.camera_yaw_deg) if rot is None else rot
            img = surface_normals_bgr(render.depth_planar_m, render.camera, rot)
        else:
            img, data_f = self._depth(render, image_type, as_float)
        return img, data_f

    @staticmethod
    def _depth(render: Render, image_type: int, as_float: bool) -> tuple[np.ndarray | None, list[float]]:
        """DepthPlanar, DepthPerspective and DepthVis: metres as floats, or grey 0-DEPTH_VIS_WHITE_M."""
        depth = render.depth_planar_m
        assert depth is not None
        h, w = render.image_bgr.shape[:2]
        if image_type == DEPTH_PERSPECTIVE:
            cam = render.camera
            u = (np.arange(w) - cam.cx_px) / cam.fx_px
            v = (np.arange(h) - cam.cy_px) / cam.fy_px
            depth = depth * np.sqrt(1 + u[None, :] ** 2 + v[:, None] ** 2)
        if as_float and image_type == DEPTH_VIS:
            return None, np.clip(depth / DEPTH_VIS_WHITE_M, 0.0, 1.0).astype(np.float32).ravel().tolist()
        if as_float:
            return None, depth.astype(np.float32).ravel().tolist()
        img = np.clip(depth * 255.0 / DEPTH_VIS_WHITE_M, 0, 255).astype(np.uint8)
        return cv2.cvtColor(img, cv2.COLOR_GRAY2BGR), []
