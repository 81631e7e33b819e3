"""The vehicles' forward cameras over a `Scene`: images, depth and segmentation (PyBullet body ids).

Renders in this process (the OpenGL renderer, or PyBullet's TinyRenderer where no EGL context can be
made) or, for full frames, by a render pool (sim_bridge.sim.render_pool: worker processes with a copy
of the scene). A render job is defined here, the pool only carries it. The callers hold the scene's
lock where a render must match other state read at the same instant.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import cv2
import msgspec
import numpy as np

from common.camera import CameraProfile
from common.errors import ConfigError
from common.frames import yaw_rotation_ned
from common.pose import Pose
from sim_bridge.sim.frames import ned_to_pb
from sim_bridge.sim.gimbal import CameraMount, camera_position, camera_rotation, points_by_yaw
from sim_bridge.sim.ground import fill_background
from sim_bridge.sim.tilted import TiltedView, body_quat_pb, fill_background_rotated, view_matrix_rotated
from sim_bridge.sim.weather import Weather, apply_weather

if TYPE_CHECKING:
    from sim_bridge.sim.attitude import AttitudeModel
    from sim_bridge.sim.gl_render import GlRenderer
    from sim_bridge.sim.scene import Scene

log = logging.getLogger(__name__)

NEAR_M, FAR_M = 0.05, 300.0
RENDERERS = ("auto", "gl", "tiny")  # auto: gl where an EGL context can be made, else tiny


@dataclass
class Render:
    """One camera image with what the ground truth needs. `seg` holds PyBullet body ids (-1 = sky)."""

    image_bgr: np.ndarray
    seg: np.ndarray | None
    depth_planar_m: np.ndarray | None
    time_s: float
    vehicle: str
    vehicle_pose: Pose  # world NED at capture
    camera_position_ned: tuple[float, float, float]
    camera_yaw_deg: float
    camera: CameraProfile
    camera_rotation_ned: np.ndarray | None = None  # camera FRD -> world NED; None: level at camera_yaw_deg


@dataclass
class RenderStats:
    """What the renderer has done: full frames and crops (count, pixels, seconds inside PyBullet), and
    ground-truth questions answered without rendering (target outside the frame)."""

    full: int = 0
    full_pixels: int = 0
    full_s: float = 0.0
    crop: int = 0
    crop_pixels: int = 0
    crop_s: float = 0.0
    skipped: int = 0

    def add(self, kind: str, pixels: int, seconds: float) -> None:
        if kind == "crop":
            self.crop += 1
            self.crop_pixels += pixels
            self.crop_s += seconds
        else:
            self.full += 1
            self.full_pixels += pixels
            self.full_s += seconds


class Placed(Protocol):
    """What a camera reads of a vehicle's flight model (sim_bridge.sim.multirotor.Multirotor)."""

    name: str
    floor_z_m: float
    position_ned: np.ndarray
    yaw_deg: float
    attitude: AttitudeModel  # roll and pitch: a body-fixed camera tilts with them

    def pose(self) -> Pose: ...


class Viewer(Protocol):
    """A vehicle as its camera needs it: where it is (`model`), its body (hidden when rendering it
    from elsewhere) and its camera."""

    @property
    def model(self) -> Placed: ...
    @property
    def body_id(self) -> int: ...
    @property
    def camera(self) -> CameraProfile: ...
    @property
    def mount(self) -> CameraMount: ...


@dataclass(frozen=True)
class SceneState:
    """The dynamic part of a scene: what a render worker must copy before it renders."""

    objects: dict[str, tuple[str, tuple[float, float, float], tuple[float, float, float, float], int]]
    # name -> (asset, scale, (x, y, z, yaw_deg) world NED, main body id)
    vehicles: dict[str, tuple[tuple[float, float, float, float], int]]  # name -> (pose, main body id)
    attitudes: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (roll, pitch) rad


@dataclass(frozen=True)
class RenderJob:
    vehicle: str
    state: SceneState
    camera: CameraProfile | None = None  # a full render with this camera (None: the vehicle's)
    depth: bool = False
    vehicle_pose: tuple[float, float, float, float] | None = None


# a getCameraImage buffer: a numpy array, or a flat sequence where PyBullet was built without numpy
PbBuffer = np.ndarray | Sequence[float]


class RenderRunner(Protocol):
    """Where full frames render when not in this process (sim_bridge.sim.render_pool.RenderPool)."""

    workers: int

    def run(self, job: RenderJob) -> Render: ...
    def close(self) -> None: ...


def projection_matrix(cam: CameraProfile, near_m: float = NEAR_M, far_m: float = FAR_M) -> list[float]:
    """OpenGL projection (column-major, as PyBullet wants it) for a pinhole with fx, fy, cx, cy.

    Pixel (u, v) = (fx X/Z + cx, fy Y/Z + cy) with v downwards; distortion is not rendered.
    """
    w, h = cam.width_px, cam.height_px
    m = np.array(
        [
            [2 * cam.fx_px / w, 0.0, 1 - 2 * cam.cx_px / w, 0.0],
            [0.0, 2 * cam.fy_px / h, 2 * cam.cy_px / h - 1, 0.0],
            [0.0, 0.0, -(far_m + near_m) / (far_m - near_m), -2 * far_m * near_m / (far_m - near_m)],
            [0.0, 0.0, -1.0, 0.0],
        ]
    )
    return [float(v) for v in m.T.flatten()]


def camera_pose(viewer: Viewer, vehicle_pose: Pose | None = None) -> tuple[np.ndarray, float]:
    """World NED position and yaw of the vehicle's camera (at `vehicle_pose` when given; the body's
    roll and pitch are its attitude now)."""
    m, mount = viewer.model, viewer.mount
    p = vehicle_pose or m.pose()
    a = m.attitude
    if points_by_yaw(mount, a.roll_rad, a.pitch_rad):
        pos = np.array([p.x_m, p.y_m, p.z_m]) + yaw_rotation_ned(p.yaw_deg) @ np.asarray(mount.offset_frd_m)
        yaw = p.yaw_deg + mount.yaw_deg
    else:  # the body's roll and pitch now, at the pose's heading
        yaw_rad = math.radians(p.yaw_deg)
        pos = camera_position(mount, np.array([p.x_m, p.y_m, p.z_m]), a.roll_rad, a.pitch_rad, yaw_rad)
        r = camera_rotation(mount, a.roll_rad, a.pitch_rad, yaw_rad)
        yaw = math.degrees(math.atan2(r[1, 0], r[0, 0]))
    pos[2] = min(pos[2], m.floor_z_m - 0.02)  # a landed drone's camera stays above the ground
    return pos, yaw


def camera_rotation_ned(viewer: Viewer, vehicle_pose: Pose | None = None) -> np.ndarray | None:
    """The vehicle's camera (FRD) -> world NED rotation; None when the camera is level (its gimbal
    holds it so, or a body-fixed camera on a level body): it points by camera_pose's yaw alone."""
    a = viewer.model.attitude
    if points_by_yaw(viewer.mount, a.roll_rad, a.pitch_rad):
        return None
    yaw = (vehicle_pose or viewer.model.pose()).yaw_deg
    return camera_rotation(viewer.mount, a.roll_rad, a.pitch_rad, math.radians(yaw))


def place_vehicle_body(scene: Scene, viewer: Viewer) -> None:
    """Put the vehicle's body where its model is, tilted by its roll and pitch."""
    m = viewer.model
    scene.place_body(viewer.body_id, m.position_ned, m.yaw_deg, body_quat_pb(m.attitude, m.yaw_deg))


class Cameras:
    """Every vehicle's forward camera over one scene, with the count of what was rendered."""

    def __init__(
        self,
        scene: Scene,
        vehicles: Mapping[str, Viewer],
        now: Callable[[], float],
        pool: RenderRunner | None = None,
    ) -> None:
        """`vehicles`: the live registry (name -> vehicle), read for a pool job's state; `now`: the
        simulation time a render is stamped with."""
        self.scene = scene
        self.vehicles = vehicles
        self.now = now
        self.pool = pool
        self.stats = RenderStats()
        # drawn over every full frame's Scene image (sim_bridge.sim.weather); None: clear, untouched
        self.weather: Weather | None = None

    def _image(
        self,
        viewer: Viewer,
        cam: CameraProfile,
        eye: np.ndarray,
        yaw: float,
        vehicle_pose: Pose | None,
        kind: str = "full",
        rotation: np.ndarray | None = None,
    ) -> tuple[PbBuffer, PbBuffer, PbBuffer]:
        """PyBullet's (rgba, zbuf, seg) for camera `cam` at (eye, yaw); the caller holds the lock.

        With `vehicle_pose`, the vehicle's own body is moved out of the way meanwhile (its camera is
        placed as if the vehicle were there). `cam` may be a crop (see crop_camera): same pixel grid.
        """
        scene = self.scene
        p, c, gl = scene._p, scene.client, scene.gl
        if vehicle_pose is not None:
            p.resetBasePositionAndOrientation(
                viewer.body_id, (0.0, 0.0, -1000.0), (0, 0, 0, 1), physicsClientId=c
            )
        if rotation is None:
            fwd = yaw_rotation_ned(yaw) @ np.array([1.0, 0.0, 0.0])
            view = p.computeViewMatrix(ned_to_pb(*eye), ned_to_pb(*(eye + fwd)), (0, 0, 1), physicsClientId=c)
        else:  # a tilted camera (sim_bridge.sim.gimbal)
            view = view_matrix_rotated(p, c, eye, rotation)
        t0 = time.perf_counter()
        if gl is not None:
            poses = {body: p.getBasePositionAndOrientation(body, physicsClientId=c) for body in gl.body_ids}
            rgba, zbuf, seg = gl.render(cam.width_px, cam.height_px, view, projection_matrix(cam), poses)
        else:
            _, _, rgba, zbuf, seg = p.getCameraImage(
                cam.width_px,
                cam.height_px,
                view,
                projection_matrix(cam),
                renderer=p.ER_TINY_RENDERER,
                flags=0,  # the segmentation mask also tells the ground fill which pixels are empty
                physicsClientId=c,
            )
        self.stats.add(kind, cam.width_px * cam.height_px, time.perf_counter() - t0)
        if vehicle_pose is not None:
            place_vehicle_body(scene, viewer)
        return rgba, zbuf, seg

    def render(
        self,
        viewer: Viewer,
        segmentation: bool = True,
        depth: bool = False,
        camera: CameraProfile | None = None,
        vehicle_pose: Pose | None = None,
    ) -> Render:
        """The forward camera image (BGR) with segmentation (body ids) and planar depth on request.

        With `vehicle_pose`, the camera is placed as if the vehicle were there (the scene as it is now;
        the vehicle's own body is moved out of the way meanwhile): a frame's view re-rendered later.
        """
        if self.pool is not None:
            return self._render_in_pool(viewer, segmentation, depth, camera, vehicle_pose)
        with self.scene.lock:
            cam = camera or viewer.camera
            eye, yaw = camera_pose(viewer, vehicle_pose)
            rot = camera_rotation_ned(viewer, vehicle_pose)
            eye_t = (float(eye[0]), float(eye[1]), float(eye[2]))
            rgba, zbuf, seg = self._image(viewer, cam, eye, yaw, vehicle_pose, rotation=rot)
            t = self.now()
            pose = vehicle_pose or viewer.model.pose()
        weather = self.weather
        rgba, seg_arr, depth_arr = _arrays(cam, rgba, zbuf, seg, _depth_for(depth, weather))
        ground = self.scene.ground
        if rot is None:
            rad = math.radians(yaw)
            fill_background(
                rgba, seg_arr, depth_arr, ground, eye_t, rad, cam.fx_px, cam.fy_px, cam.cx_px, cam.cy_px
            )
        else:
            fill_background_rotated(rgba, seg_arr, depth_arr, ground, TiltedView(eye_t, rot, cam))
        image = cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGR)
        if weather is not None:
            image = apply_weather(image, seg_arr, depth_arr, cam, weather, t)
            depth_arr = depth_arr if depth else None
        seg_out = seg_arr if segmentation else None
        return Render(image, seg_out, depth_arr, t, viewer.model.name, pose, eye_t, yaw, cam, rot)

    def _render_in_pool(
        self,
        viewer: Viewer,
        segmentation: bool,
        depth: bool,
        camera: CameraProfile | None,
        vehicle_pose: Pose | None,
    ) -> Render:
        with self.scene.lock:  # time, pose and camera at the instant of the state the worker copies
            cam = camera or viewer.camera
            eye, yaw = camera_pose(viewer, vehicle_pose)
            rot = camera_rotation_ned(viewer, vehicle_pose)
            t = self.now()
            pose = vehicle_pose or viewer.model.pose()
            weather = self.weather
            job = RenderJob(
                viewer.model.name,
                self._scene_state(),
                camera,
                _depth_for(depth, weather),
                pose_tuple(vehicle_pose),
            )
        r = self._pool_run(job, "full", cam.width_px * cam.height_px)
        eye_t = (float(eye[0]), float(eye[1]), float(eye[2]))
        image = r.image_bgr
        if weather is not None:
            image = apply_weather(image, r.seg, r.depth_planar_m, cam, weather, t)
        return Render(
            image,
            r.seg if segmentation else None,
            r.depth_planar_m if depth else None,
            t,
            viewer.model.name,
            pose,
            eye_t,
            yaw,
            cam,
            rot,
        )

    def render_view(
        self,
        viewer: Viewer,
        camera: CameraProfile,
        eye_ned: np.ndarray,
        rotation: np.ndarray,
        depth: bool = False,
        hide_vehicle: bool = True,
    ) -> Render:
        """A frame of a camera at `eye_ned` with any orientation (`rotation`: camera FRD -> world NED),
        e.g. a settings.json camera or one turned by simSetCameraPose (rpc/cameras.py); the vehicle's
        own body is not drawn when `hide_vehicle` (its cameras sit on or inside its mesh). Renders in
        this process (render workers draw the vehicles' own cameras only)."""
        scene = self.scene
        eye = np.asarray(eye_ned, float)
        rot = np.asarray(rotation, float)
        with scene.lock:
            # _image hides the vehicle's body (and puts it back) when given a pose to render it at
            hide = viewer.model.pose() if hide_vehicle else None
            rgba, zbuf, seg = self._image(viewer, camera, eye, 0.0, hide, rotation=rot)
            t = self.now()
            pose = viewer.model.pose()
        weather = self.weather
        rgba, seg_arr, depth_arr = _arrays(camera, rgba, zbuf, seg, _depth_for(depth, weather))
        eye_t = (float(eye[0]), float(eye[1]), float(eye[2]))
        yaw = math.degrees(math.atan2(rot[1, 0], rot[0, 0]))
        if np.allclose(rot[2], (0.0, 0.0, 1.0), rtol=0.0, atol=1e-12):  # level: the level fill's pixels
            fill_background(
                rgba,
                seg_arr,
                depth_arr,
                scene.ground,
                eye_t,
                math.radians(yaw),
                camera.fx_px,
                camera.fy_px,
                camera.cx_px,
                camera.cy_px,
            )
        else:
            fill_background_rotated(rgba, seg_arr, depth_arr, scene.ground, TiltedView(eye_t, rot, camera))
        image = cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGR)
        if weather is not None:
            image = apply_weather(image, seg_arr, depth_arr, camera, weather, t)
            depth_arr = depth_arr if depth else None
        return Render(image, seg_arr, depth_arr, t, viewer.model.name, pose, eye_t, yaw, camera, rot)

    def render_segmentation(
        self, viewer: Viewer, region: tuple[int, int, int, int], vehicle_pose: Pose | None = None
    ) -> np.ndarray:
        """Body ids of the pixels region = (u0, v0, u1, v1) (end exclusive) of the vehicle's frame.

        Renders only that crop, on the full frame's pixel grid (crop_camera), with everything in the
        scene drawn so that occlusion is as in the full render; the ground fill is not needed for ids
        (ground pixels read -1 here, -2 in a full render: neither is an object). Crops render in this
        process even with render workers: a few milliseconds, at the same instant as the distances,
        and never queued behind full frames.
        """
        with self.scene.lock:
            eye, yaw = camera_pose(viewer, vehicle_pose)
            cam = crop_camera(viewer.camera, region)
            rot = camera_rotation_ned(viewer, vehicle_pose)
            _, _, seg = self._image(viewer, cam, eye, yaw, vehicle_pose, "crop", rot)
        return np.asarray(seg, np.int32).reshape(cam.height_px, cam.width_px)

    def _scene_state(self) -> SceneState:
        """The dynamic state a render worker copies (the caller holds the lock)."""
        objects = {
            name: (o.asset, o.scale, (o.pose.x_m, o.pose.y_m, o.pose.z_m, o.pose.yaw_deg), o.body_id)
            for name, o in self.scene.objects.items()
        }
        vehicles, attitudes = {}, {}
        for name, viewer in self.vehicles.items():
            p = viewer.model.pose()
            vehicles[name] = ((p.x_m, p.y_m, p.z_m, p.yaw_deg), viewer.body_id)
            attitudes[name] = (viewer.model.attitude.roll_rad, viewer.model.attitude.pitch_rad)
        return SceneState(objects, vehicles, attitudes)

    def _pool_run(self, job: RenderJob, kind: str, pixels: int) -> Render:
        """A render by a worker process; the caller took the job's state under the lock, the wait is
        outside it (the physics and the RPC go on meanwhile)."""
        assert self.pool is not None
        t0 = time.perf_counter()
        result = self.pool.run(job)
        with self.scene.lock:
            self.stats.add(kind, pixels, time.perf_counter() - t0)
        return result

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def make_gl_renderer(renderer: str) -> GlRenderer | None:
    """The OpenGL renderer, or None for TinyRenderer; 'auto' falls back, with a warning, where no EGL
    context can be made (no libEGL, no Mesa driver, moderngl not installed)."""
    if renderer == "tiny":
        return None
    try:
        from sim_bridge.sim.gl_render import GlRenderer

        return GlRenderer(_load_rgba)
    except Exception as exc:
        if renderer == "gl":
            raise ConfigError(f"the OpenGL renderer cannot start: {type(exc).__name__}: {exc}") from exc
        log.warning(
            "OpenGL renderer unavailable (%s: %s): rendering with TinyRenderer", type(exc).__name__, exc
        )
        return None


def _load_rgba(path: str) -> np.ndarray:
    image = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ConfigError(f"cannot read texture {path}")
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2RGBA)
    if image.shape[2] == 3:
        return cv2.cvtColor(image, cv2.COLOR_BGR2RGBA)
    return cv2.cvtColor(image, cv2.COLOR_BGRA2RGBA)


def pose_tuple(pose: Pose | None) -> tuple[float, float, float, float] | None:
    return None if pose is None else (pose.x_m, pose.y_m, pose.z_m, pose.yaw_deg)


def image_pixel(width_px: int, height_px: int, u: float, v: float) -> tuple[int, int]:
    """(column, row) of image point (u, v), each 0-1000 in image order, clamped to the frame."""
    col = min(width_px - 1, max(0, int(u * width_px / 1000.0)))
    row = min(height_px - 1, max(0, int(v * height_px / 1000.0)))
    return col, row


def crop_camera(cam: CameraProfile, region: tuple[int, int, int, int]) -> CameraProfile:
    """The camera that sees just the pixels region = (u0, v0, u1, v1) (end exclusive) of `cam`'s frame:
    an off-axis sub-frustum with the same fx, fy and the principal point moved by the integer crop
    origin, so its pixel (i, j) is the full frame's pixel (u0 + i, v0 + j) on the same grid."""
    u0, v0, u1, v1 = region
    if not (0 <= u0 < u1 <= cam.width_px and 0 <= v0 < v1 <= cam.height_px):
        raise ConfigError(f"crop {region} is empty or outside the {cam.width_px}x{cam.height_px} frame")
    return msgspec.structs.replace(
        cam,
        name=f"{cam.name}[{u0}:{u1},{v0}:{v1}]",
        width_px=u1 - u0,
        height_px=v1 - v0,
        cx_px=cam.cx_px - u0,
        cy_px=cam.cy_px - v0,
    )


def _depth_for(depth: bool, weather: Weather | None) -> bool:
    """Whether a render reads its depth back: asked for, or the weather's haze needs it."""
    return depth or (weather is not None and weather.needs_depth)


def _arrays(
    cam: CameraProfile, rgba: PbBuffer, zbuf: PbBuffer, seg: PbBuffer, depth: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A render's buffers as arrays: RGBA, segmentation (body ids), planar depth (m) if asked."""
    h, w = cam.height_px, cam.width_px
    rgba_arr = np.ascontiguousarray(np.asarray(rgba, np.uint8).reshape(h, w, 4))
    seg_arr = np.asarray(seg, np.int32).reshape(h, w)
    depth_arr = None
    if depth:
        z = np.asarray(zbuf, np.float32).reshape(h, w)
        depth_arr = FAR_M * NEAR_M / (FAR_M - (FAR_M - NEAR_M) * z)
    return rgba_arr, seg_arr, depth_arr
