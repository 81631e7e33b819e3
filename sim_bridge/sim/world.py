"""The built-in simulator's world: PyBullet scene + kinematic multirotors + simulation clock.

This is the in-process API (the episode runner and tests use it directly); `sim_bridge.rpc` is a thin
AirSim-compatible layer over it. PyBullet is not thread-safe, so every call that touches it holds
`self.lock`. Time only moves in fixed ticks of `tick_s` (the last tick of an advance may be shorter),
so a given seed and command sequence in lock-step gives the same trajectory every run.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import cv2
import msgspec
import numpy as np

from common.camera import BUILTIN_CAMERAS, CameraProfile
from common.clock import SimClock
from common.errors import ConfigError, VehicleError
from common.pose import Pose, wrap_deg
from sim_bridge.sim.assets import QUAD_TRIANGLES, QUAD_UVS, AssetSpec, Part, build_asset, tiled
from sim_bridge.sim.battery import BatteryConfig
from sim_bridge.sim.frames import ned_to_pb, pb_to_ned, yaw_quat_pb, yaw_rotation_ned
from sim_bridge.sim.ground import GroundMap, fill_background
from sim_bridge.sim.multirotor import Multirotor, MultirotorLimits, Task
from sim_bridge.sim.pybullet_import import import_pybullet
from sim_bridge.sim.render_pool import RenderJob, RenderPool, SceneState, WorldSpec
from sim_bridge.sim.textures import TextureCache

if TYPE_CHECKING:
    from sim_bridge.sim.gl_render import GlRenderer

log = logging.getLogger(__name__)

CAMERA_OFFSET_FRD_M = (0.5, 0.0, 0.1)  # forward camera: 0.5 m ahead, 0.1 m below the body origin
NEAR_M, FAR_M = 0.05, 300.0
VISIBLE_RANGE_M = 100.0
VISIBLE_PIXELS_640x360 = 20
DRONE_COLLISION_RADIUS_M = 0.3
TAKEOFF_SPEED_M_S = 1.0
SCENERY_TILE_M = 25.0
SCENERY_MAX_LINKS = 100
RENDERERS = ("auto", "gl", "tiny")  # auto: gl where an EGL context can be made, else tiny
# pixels added around a target's projected box: mesh edges rasterise up to a pixel beyond it
REGION_MARGIN_PX = 2
BOX_CORNER_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
BOX_EDGES = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]


@dataclass
class MovingPath:
    """A one-way route through 3-D waypoints (world NED) at a constant speed, started at start_t_s."""

    waypoints_ned: np.ndarray  # (N, 3)
    speed_m_s: float
    start_t_s: float

    def at(self, t_s: float) -> tuple[np.ndarray, float | None]:
        """Position and heading (deg, None when stopped at the end) at sim time t_s."""
        s = max(0.0, (t_s - self.start_t_s) * self.speed_m_s)
        pts = self.waypoints_ned
        for a, b in itertools.pairwise(pts):
            seg = float(np.linalg.norm(b - a))
            if s <= seg and seg > 0:
                d = (b - a) / seg
                return a + d * s, math.degrees(math.atan2(d[1], d[0]))
            s -= seg
        return pts[-1].copy(), None


@dataclass
class SceneObject:
    name: str
    cls: str  # class label: car, suv, van, truck, person, cyclist, drone, sign, plate, checkerboard, scenery
    colour: str
    asset: str
    body_id: int
    pose: Pose  # world NED of the object's origin
    scale: tuple[float, float, float]
    bbox_centre_frd: tuple[float, float, float]  # local NED (fwd, right, down) offset of the bbox centre
    bbox_half_m: tuple[float, float, float]  # half extents along (fwd, right, down)
    path: MovingPath | None = None
    arg: str = ""  # plate/sign text, checkerboard spec

    def bbox_centre_ned(self) -> np.ndarray:
        return np.array([self.pose.x_m, self.pose.y_m, self.pose.z_m]) + yaw_rotation_ned(
            self.pose.yaw_deg
        ) @ (np.asarray(self.bbox_centre_frd))

    def bbox_distance_m(self, point_ned: np.ndarray) -> float:
        """Distance from a world point to the nearest point of this oriented bounding box (0 inside)."""
        local = yaw_rotation_ned(self.pose.yaw_deg).T @ (np.asarray(point_ned) - self.bbox_centre_ned())
        half = np.asarray(self.bbox_half_m)
        return float(np.linalg.norm(local - np.clip(local, -half, half)))


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


@dataclass
class TargetTruth:
    """Ground truth (docs/verifier.md#declarations) of one target seen from one vehicle."""

    distance_m: float  # to the bbox centre
    bbox_distance_m: float
    visible: bool
    pixel_count: int
    min_pixels: int
    target_pose: Pose
    box2d_px: tuple[int, int, int, int] | None = None  # (u_min, v_min, u_max, v_max)


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


@dataclass
class VehicleSlot:
    model: Multirotor
    body_id: int
    camera: CameraProfile
    detection_filters: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


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


class World:
    """A scene, its objects and its vehicles on one simulation clock."""

    def __init__(
        self,
        scene: str = "residential",
        vehicles: int | list[str] = 1,
        camera: CameraProfile | None = None,
        seed: int = 0,
        tick_s: float = 0.02,
        clock_speed: float = 1.0,
        spawns: list[Pose] | None = None,
        render_workers: int = 0,
        renderer: str | None = None,
        battery: BatteryConfig | None = None,
    ) -> None:
        """`renderer`: gl, tiny or auto (see RENDERERS); None takes $DRONECATS_RENDERER, else auto, so
        every entry point (episodes, demo, tests) can be run with either renderer. `battery`: every
        vehicle's pack (sim_bridge.sim.battery; default a 74 Wh 4S LiPo, ~20 min of hover)."""
        renderer = renderer or os.environ.get("DRONECATS_RENDERER", "auto")
        if render_workers < 0:
            raise ConfigError(f"render_workers={render_workers} must be >= 0 (0: render in this process)")
        if renderer not in RENDERERS:
            raise ConfigError(f"renderer {renderer!r} is not one of {RENDERERS}")
        p = import_pybullet()  # heavy: imported when a world is built, not at import time

        from sim_bridge.sim.scenes import build_scene

        self._p = p
        # before PyBullet's client: a renderer that cannot start (renderer="gl") leaves nothing open
        self._gl = _make_gl_renderer(renderer)
        self.renderer = "gl" if self._gl is not None else "tiny"
        self.render_device = self._gl.device if self._gl is not None else "TinyRenderer (CPU)"
        self.client = p.connect(p.DIRECT)
        self.lock = threading.RLock()
        self.clock = SimClock()
        self.tick_s = tick_s
        self.seed = seed
        self.camera = camera or BUILTIN_CAMERAS["sim"]
        self.textures = TextureCache()
        self._texture_ids: dict[str, int] = {}
        self.objects: dict[str, SceneObject] = {}
        self.vehicles: dict[str, VehicleSlot] = {}
        self.render_stats = RenderStats()
        self.render_pool: RenderPool | None = None
        self.ground_ids: set[int] = set()
        self.ground = GroundMap((90, 128, 77))
        self._paused = False
        self._clock_speed = clock_speed
        self._run_cond = threading.Condition()
        self._loop: threading.Thread | None = None
        self._stop = threading.Event()
        self.scene_name = scene
        self.battery_config = battery or BatteryConfig()
        info = build_scene(self, scene, seed)
        names = vehicles if isinstance(vehicles, list) else [f"Drone{i + 1}" for i in range(vehicles)]
        spawn_list = spawns or info.spawns
        if len(spawn_list) < len(names):
            raise ConfigError(
                f"scene {scene!r} has {len(spawn_list)} spawn points, {len(names)} vehicles asked"
            )
        for name, spawn in zip(names, spawn_list, strict=False):
            self.add_vehicle(name, spawn)
        if render_workers:
            # the workers build this scene with these vehicles; objects spawned later follow by state
            spawned = [(n, s.model.spawn) for n, s in self.vehicles.items()]
            spec = WorldSpec(
                scene,
                seed,
                [(n, (p.x_m, p.y_m, p.z_m, p.yaw_deg)) for n, p in spawned],
                self.camera,
                self.renderer,
            )
            self.render_pool = RenderPool(spec, render_workers)

    # ------------------------------------------------------------------ bodies
    def _texture_id(self, path: str) -> int:
        if path not in self._texture_ids:
            self._texture_ids[path] = self._p.loadTexture(path, physicsClientId=self.client)
        return self._texture_ids[path]

    def create_body(
        self,
        parts: list[Part] | tuple[Part, ...],
        pose: Pose,
        mass_kg: float = 0.0,
        base_collision_radius_m: float = 0.0,
    ) -> int:
        """One multi-link body from parts (links on fixed joints), placed at a world NED pose."""
        p, c = self._p, self.client
        vis, col, pos, orn = [], [], [], []
        textured: list[tuple[int, str]] = []
        for i, part in enumerate(parts):
            roll = pitch = 0.0
            if part.shape == "box":
                half = [s / 2 for s in part.size]
                v = p.createVisualShape(p.GEOM_BOX, halfExtents=half, rgbaColor=part.rgba, physicsClientId=c)
                k = (
                    p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=c)
                    if part.collide
                    else -1
                )
            elif part.shape == "sphere":
                r = part.size[0]
                v = p.createVisualShape(p.GEOM_SPHERE, radius=r, rgbaColor=part.rgba, physicsClientId=c)
                k = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=c) if part.collide else -1
            elif part.shape == "cylinder":
                r, length = part.size
                v = p.createVisualShape(
                    p.GEOM_CYLINDER, radius=r, length=length, rgbaColor=part.rgba, physicsClientId=c
                )
                k = (
                    p.createCollisionShape(p.GEOM_CYLINDER, radius=r, height=length, physicsClientId=c)
                    if part.collide
                    else -1
                )
                if part.axis == "x":
                    pitch = math.pi / 2
                elif part.axis == "y":
                    roll = math.pi / 2
            elif part.shape == "quad":
                v = self._quad_visual(part)
                k = -1
                if part.texture is not None:
                    textured.append((i, str(part.texture)))
            else:
                raise ConfigError(f"unknown part shape {part.shape!r}")
            vis.append(v)
            col.append(k)
            pos.append(part.pos)
            orn.append(p.getQuaternionFromEuler((roll, pitch, math.radians(part.yaw_deg))))
        n = len(parts)
        base_col = (
            p.createCollisionShape(p.GEOM_SPHERE, radius=base_collision_radius_m, physicsClientId=c)
            if base_collision_radius_m > 0
            else -1
        )
        body = p.createMultiBody(
            baseMass=mass_kg,
            baseCollisionShapeIndex=base_col,
            baseVisualShapeIndex=-1,
            basePosition=ned_to_pb(pose.x_m, pose.y_m, pose.z_m),
            baseOrientation=yaw_quat_pb(pose.yaw_deg),
            linkMasses=[0.01 if mass_kg > 0 else 0.0] * n,
            linkCollisionShapeIndices=col,
            linkVisualShapeIndices=vis,
            linkPositions=pos,
            linkOrientations=orn,
            linkInertialFramePositions=[(0, 0, 0)] * n,
            linkInertialFrameOrientations=[(0, 0, 0, 1)] * n,
            linkParentIndices=[0] * n,
            linkJointTypes=[p.JOINT_FIXED] * n,
            linkJointAxis=[(0, 0, 1)] * n,
            physicsClientId=c,
        )
        for link, path in textured:
            p.changeVisualShape(body, link, textureUniqueId=self._texture_id(path), physicsClientId=c)
        if self._gl is not None:
            self._gl.add_body(int(body), parts, list(zip(pos, orn, strict=True)))
        return int(body)

    def _quad_visual(self, part: Part) -> int:
        p = self._p
        corners, normal = part.quad_corners()
        return int(
            p.createVisualShape(
                p.GEOM_MESH,
                vertices=[list(c) for c in corners],
                indices=list(QUAD_TRIANGLES),
                uvs=[list(uv) for uv in QUAD_UVS],
                normals=[list(normal)] * 4,
                rgbaColor=part.rgba,
                physicsClientId=self.client,
            )
        )

    def add_scenery(self, name: str, parts: list[Part], ground: bool = False) -> list[SceneObject]:
        """Static scenery merged into few bodies (few bodies keep the renderer fast).

        Long boxes are tiled (see assets.tiled) and a body holds at most SCENERY_MAX_LINKS links: TinyRenderer
        silently drops links of bodies with a few hundred of them (measured: 144 render, 256 do not all).
        """
        parts = [t for part in parts for t in tiled(part, SCENERY_TILE_M)]
        objs = []
        with self.lock:
            for k in range(0, len(parts), SCENERY_MAX_LINKS):
                chunk = tuple(parts[k : k + SCENERY_MAX_LINKS])
                spec = AssetSpec(
                    kind="scenery", cls="ground" if ground else "scenery", colour="", arg="", parts=chunk
                )
                body = self.create_body(chunk, Pose(0, 0, 0, 0))
                if ground:
                    self.ground_ids.add(body)
                obj_name = name if k == 0 else f"{name}_{k // SCENERY_MAX_LINKS + 1}"
                objs.append(
                    self._register(obj_name, spec, body, Pose(0, 0, 0, 0), (1.0, 1.0, 1.0), "scenery")
                )
        return objs

    def _register(
        self, name: str, spec: AssetSpec, body: int, pose: Pose, scale: tuple[float, float, float], asset: str
    ) -> SceneObject:
        centre_pb, half = spec.local_bbox()
        obj = SceneObject(
            name=name,
            cls=spec.cls,
            colour=spec.colour,
            asset=asset,
            body_id=body,
            pose=pose,
            scale=scale,
            bbox_centre_frd=(centre_pb[0], -centre_pb[1], -centre_pb[2]),
            bbox_half_m=half,
            arg=spec.arg,
        )
        self.objects[name] = obj
        return obj

    # ------------------------------------------------------------------ objects
    def unique_name(self, name: str) -> str:
        """AirSim appends a number when the name is taken; so do we."""
        if name not in self.objects and name not in self.vehicles:
            return name
        i = 1
        while f"{name}_{i}" in self.objects or f"{name}_{i}" in self.vehicles:
            i += 1
        return f"{name}_{i}"

    def spawn(
        self, name: str, asset: str, pose: Pose, scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    ) -> SceneObject:
        """Spawn an asset (sim_bridge.sim.assets) at a world NED pose; the returned name may differ."""
        spec = build_asset(asset, self.textures, scale)
        with self.lock:
            name = self.unique_name(name)
            body = self.create_body(spec.parts, pose)
            return self._register(name, spec, body, pose, tuple(float(s) for s in scale), asset)  # type: ignore[arg-type]

    def destroy(self, name: str) -> bool:
        with self.lock:
            obj = self.objects.pop(name, None)
            if obj is None:
                return False
            self._p.removeBody(obj.body_id, physicsClientId=self.client)
            if self._gl is not None:
                self._gl.remove_body(obj.body_id)
            return True

    def get_object(self, name: str) -> SceneObject:
        try:
            return self.objects[name]
        except KeyError:
            raise ConfigError(f"no scene object named {name!r}") from None

    def set_object_pose(self, name: str, pose: Pose) -> None:
        with self.lock:
            obj = self.get_object(name)
            obj.pose = pose
            self._p.resetBasePositionAndOrientation(
                obj.body_id,
                ned_to_pb(pose.x_m, pose.y_m, pose.z_m),
                yaw_quat_pb(pose.yaw_deg),
                physicsClientId=self.client,
            )

    def set_path(self, name: str, waypoints_ned: list[tuple[float, float, float]], speed_m_s: float) -> None:
        """Make an object follow 3-D waypoints (world NED) from now at speed_m_s, in simulation time."""
        if len(waypoints_ned) < 2 or speed_m_s <= 0:
            raise ConfigError(
                f"a path needs >= 2 waypoints and speed > 0 (got {len(waypoints_ned)}, {speed_m_s})"
            )
        with self.lock:
            obj = self.get_object(name)
            obj.path = MovingPath(np.asarray(waypoints_ned, float), float(speed_m_s), self.clock.now())
            self._move_along_path(obj, self.clock.now())

    def object_pose(self, name: str) -> Pose:
        with self.lock:
            if name in self.vehicles:
                return self.vehicles[name].model.pose()
            return self.get_object(name).pose

    # ------------------------------------------------------------------ vehicles
    def add_vehicle(self, name: str, spawn: Pose) -> Multirotor:
        from sim_bridge.sim.assets import COLOURS, _drone

        with self.lock:
            if name in self.vehicles or name in self.objects:
                raise ConfigError(f"vehicle name {name!r} is already used")
            model = Multirotor(name, spawn, MultirotorLimits(), self.battery_config)
            parts = _drone("", COLOURS["black"], self.textures)
            body = self.create_body(
                parts, spawn, mass_kg=1.0, base_collision_radius_m=DRONE_COLLISION_RADIUS_M
            )
            self.vehicles[name] = VehicleSlot(model=model, body_id=body, camera=self.camera)
            return model

    def vehicle(self, name: str = "") -> VehicleSlot:
        if name == "" and self.vehicles:
            return next(iter(self.vehicles.values()))
        try:
            return self.vehicles[name]
        except KeyError:
            raise VehicleError(
                f"Vehicle API for '{name}' is not available. This could either because this is "
                "simulation-only API or this vehicle does not exist"
            ) from None

    def vehicle_pose(self, name: str = "") -> Pose:
        with self.lock:
            return self.vehicle(name).model.pose()

    def set_vehicle_pose(self, name: str, pose: Pose) -> None:
        with self.lock:
            slot = self.vehicle(name)
            slot.model.teleport(pose)
            slot.model.collision = None
            self._place_vehicle(slot)

    def _place_vehicle(self, slot: VehicleSlot) -> None:
        m = slot.model
        self._p.resetBasePositionAndOrientation(
            slot.body_id, ned_to_pb(*m.position_ned), yaw_quat_pb(m.yaw_deg), physicsClientId=self.client
        )

    def takeoff(self, name: str = "", altitude_m: float = 3.0, timeout_s: float = 20.0) -> Task:
        """Climb to altitude_m above the vehicle's floor (its spawn height) at 1 m/s."""
        with self.lock:
            m = self.vehicle(name).model
            if np.linalg.norm(m.velocity_ned) > 0.05:
                raise VehicleError(
                    "Cannot perform takeoff because vehicle is already moving "
                    f"({np.linalg.norm(m.velocity_ned):.2f} m/s > 0.05 m/s)"
                )
            target = np.array([m.position_ned[0], m.position_ned[1], m.floor_z_m - altitude_m])
            return m.move_to(
                target, TAKEOFF_SPEED_M_S, self.clock.now(), timeout_s, False, m.yaw_deg, "takeoff"
            )

    def command(self, name: str, method: str, *args: Any, **kwargs: Any) -> Task:
        """Run a Multirotor command (move_velocity_body, move_velocity, move_to, rotate_rate, rotate_to, land)
        at the current simulation time, under the lock."""
        with self.lock:
            m = self.vehicle(name).model
            task: Task = getattr(m, method)(*args, now_s=self.clock.now(), **kwargs)
            return task

    # ------------------------------------------------------------------ time
    def step(self, dt_s: float | None = None) -> float:
        """Advance the world by one tick (or dt_s); returns the new simulation time."""
        dt = self.tick_s if dt_s is None else dt_s
        with self.lock:
            now = self.clock.now()
            for obj in self.objects.values():
                if obj.path is not None:
                    self._move_along_path(obj, now + dt)
            for slot in self.vehicles.values():
                m = slot.model
                new_pos, new_yaw = m.propose(dt, now)
                old_pos, old_yaw = m.position_ned.copy(), m.yaw_deg
                m.commit(new_pos, new_yaw)
                self._place_vehicle(slot)
                if not m.landed:
                    hit = self._collision(slot)
                    if hit is not None:
                        m.commit(old_pos, old_yaw)
                        self._place_vehicle(slot)
                        hit["time_stamp"] = round((now + dt) * 1e9)
                        m.blocked(hit)
                        log.info("%s collided with %s at t=%.2f s", m.name, hit["object_name"], now + dt)
                self._drain_battery(m, dt, now + dt)
            return self.clock.advance(dt)

    def _drain_battery(self, m: Multirotor, dt_s: float, t_s: float) -> None:
        was_empty = m.battery.empty
        m.battery.drain(dt_s, m.accel_ned, m.velocity_ned, rotors_on=not m.landed)
        if m.battery.config.enforced and m.battery.empty and not m.landed and m.goal_mode != "land":
            # a real pack browns out and the vehicle falls; this kinematic model has no free fall, so an
            # empty battery forces a landing (any command is cancelled), which is never a success
            if not was_empty:
                log.warning("%s: battery empty at t=%.2f s: forced landing", m.name, t_s)
            m.land(t_s, math.inf)

    def _move_along_path(self, obj: SceneObject, t_s: float) -> None:
        assert obj.path is not None
        pos, heading = obj.path.at(t_s)
        yaw = obj.pose.yaw_deg if heading is None else heading
        obj.pose = Pose(float(pos[0]), float(pos[1]), float(pos[2]), wrap_deg(yaw))
        self._p.resetBasePositionAndOrientation(
            obj.body_id, ned_to_pb(*pos), yaw_quat_pb(yaw), physicsClientId=self.client
        )

    def _collision(self, slot: VehicleSlot) -> dict[str, Any] | None:
        p, c = self._p, self.client
        lo, hi = p.getAABB(slot.body_id, -1, physicsClientId=c)
        candidates = {b for b, _ in (p.getOverlappingObjects(lo, hi, physicsClientId=c) or [])}
        # moved bodies may have stale broadphase boxes: always test other vehicles and moving objects
        candidates |= {s.body_id for s in self.vehicles.values()}
        candidates |= {o.body_id for o in self.objects.values() if o.path is not None}
        candidates -= {slot.body_id} | self.ground_ids
        for body in sorted(candidates):
            pts = p.getClosestPoints(slot.body_id, body, 0.0, physicsClientId=c)
            if pts:
                pt = min(pts, key=lambda q: q[8])
                name = self._body_name(body)
                return {
                    "has_collided": True,
                    "penetration_depth": float(-pt[8]),
                    "normal": pb_to_ned(*pt[7]),
                    "impact_point": pb_to_ned(*pt[6]),
                    "position": tuple(float(v) for v in slot.model.position_ned),
                    "object_name": name,
                    "object_id": int(body),
                }
        return None

    def _body_name(self, body: int) -> str:
        for obj in self.objects.values():
            if obj.body_id == body:
                return obj.name
        for name, slot in self.vehicles.items():
            if slot.body_id == body:
                return name
        return f"body{body}"

    def advance(self, duration_s: float, pace: bool = False) -> float:
        """Run the world for duration_s of simulation time in the caller's thread (lock-step use).

        The background loop must be paused (or not started). With pace=True it runs at the clock speed.
        """
        if duration_s < 0:
            raise ValueError(f"cannot advance by a negative duration ({duration_s} s)")
        if self._loop is not None and not self._paused:
            raise VehicleError(
                "advance() needs the simulation paused (World.pause()) or its loop not started"
            )
        end = self.clock.now() + duration_s
        wall0, sim0 = time.monotonic(), self.clock.now()
        while True:
            remaining = end - self.clock.now()
            if remaining <= 1e-9:
                break
            self.step(min(self.tick_s, remaining))
            if pace and self._clock_speed > 0:
                lag = (self.clock.now() - sim0) / self._clock_speed - (time.monotonic() - wall0)
                if lag > 0:
                    time.sleep(lag)
        return self.clock.now()

    def start(self) -> None:
        """Run the world in a background thread at the clock speed (until paused or closed)."""
        if self._loop is None:
            self._loop = threading.Thread(target=self._run, name="sim-loop", daemon=True)
            self._loop.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._run_cond:
                while self._paused and not self._stop.is_set():
                    self._run_cond.wait(0.5)
                wall0, sim0 = time.monotonic(), self.clock.now()
                speed = self._clock_speed
            while not self._stop.is_set() and not self._paused and speed == self._clock_speed:
                self.step()
                ahead_s = (self.clock.now() - sim0) / speed - (time.monotonic() - wall0)
                if ahead_s > 0:
                    time.sleep(ahead_s)
                elif ahead_s < -1.0:  # far behind (slow renders): do not try to catch up in a burst
                    wall0, sim0 = time.monotonic(), self.clock.now()

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self, paused: bool = True) -> None:
        with self._run_cond:
            self._paused = paused
            self._run_cond.notify_all()
        if paused:
            # wait out a tick in progress so that the caller sees a still world
            with self.lock:
                pass

    def set_clock_speed(self, speed: float) -> None:
        if speed <= 0:
            raise ConfigError(f"clock speed {speed} must be > 0")
        self._clock_speed = speed

    @property
    def clock_speed(self) -> float:
        return self._clock_speed

    def continue_for_time(self, duration_s: float) -> None:
        """AirSim's simContinueForTime: run duration_s at the clock speed, then stay paused."""
        self.pause(True)
        self.advance(duration_s, pace=True)

    def close(self) -> None:
        if self.render_pool is not None:
            self.render_pool.close()
        self._stop.set()
        with self._run_cond:
            self._run_cond.notify_all()
        if self._loop is not None:
            self._loop.join(timeout=5)
        for slot in self.vehicles.values():
            slot.model.cancel()
        with self.lock, contextlib.suppress(Exception):  # already disconnected
            self._p.disconnect(physicsClientId=self.client)
        if self._gl is not None:
            self._gl.close()
            self._gl = None
        self.textures.close()

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ rendering & ground truth
    def camera_pose(self, name: str = "", vehicle_pose: Pose | None = None) -> tuple[np.ndarray, float]:
        """World NED position and yaw of the vehicle's camera (at `vehicle_pose` when given)."""
        m = self.vehicle(name).model
        p = vehicle_pose or m.pose()
        pos = np.array([p.x_m, p.y_m, p.z_m]) + yaw_rotation_ned(p.yaw_deg) @ np.asarray(CAMERA_OFFSET_FRD_M)
        pos[2] = min(pos[2], m.floor_z_m - 0.02)  # a landed drone's camera stays above the ground
        return pos, p.yaw_deg

    def _camera_image(
        self,
        slot: VehicleSlot,
        cam: CameraProfile,
        eye: np.ndarray,
        yaw: float,
        vehicle_pose: Pose | None,
        kind: str = "full",
    ) -> tuple[Any, Any, Any]:
        """PyBullet's (rgba, zbuf, seg) for camera `cam` at (eye, yaw); the caller holds the lock.

        With `vehicle_pose`, the vehicle's own body is moved out of the way meanwhile (its camera is
        placed as if the vehicle were there). `cam` may be a crop (see crop_camera): same pixel grid.
        """
        p, c = self._p, self.client
        if vehicle_pose is not None:
            p.resetBasePositionAndOrientation(
                slot.body_id, (0.0, 0.0, -1000.0), (0, 0, 0, 1), physicsClientId=c
            )
        fwd = yaw_rotation_ned(yaw) @ np.array([1.0, 0.0, 0.0])
        view = p.computeViewMatrix(ned_to_pb(*eye), ned_to_pb(*(eye + fwd)), (0, 0, 1), physicsClientId=c)
        t0 = time.perf_counter()
        if self._gl is not None:
            poses = {
                body: p.getBasePositionAndOrientation(body, physicsClientId=c) for body in self._gl.body_ids
            }
            rgba, zbuf, seg = self._gl.render(
                cam.width_px, cam.height_px, view, projection_matrix(cam), poses
            )
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
        self.render_stats.add(kind, cam.width_px * cam.height_px, time.perf_counter() - t0)
        if vehicle_pose is not None:
            self._place_vehicle(slot)
        return rgba, zbuf, seg

    def render(
        self,
        name: str = "",
        segmentation: bool = True,
        depth: bool = False,
        camera: CameraProfile | None = None,
        vehicle_pose: Pose | None = None,
    ) -> Render:
        """The forward camera image (BGR) with segmentation (body ids) and planar depth on request.

        With `vehicle_pose`, the camera is placed as if the vehicle were there (the scene as it is now;
        the vehicle's own body is moved out of the way meanwhile): a frame's view re-rendered later.
        """
        if self.render_pool is not None:
            return self._render_in_pool(name, segmentation, depth, camera, vehicle_pose)
        with self.lock:
            slot = self.vehicle(name)
            cam = camera or slot.camera
            eye, yaw = self.camera_pose(name, vehicle_pose)
            eye_t = (float(eye[0]), float(eye[1]), float(eye[2]))
            rgba, zbuf, seg = self._camera_image(slot, cam, eye, yaw, vehicle_pose)
            t = self.clock.now()
            pose = vehicle_pose or slot.model.pose()
        h, w = cam.height_px, cam.width_px
        rgba = np.ascontiguousarray(np.asarray(rgba, np.uint8).reshape(h, w, 4))
        seg_arr = np.asarray(seg, np.int32).reshape(h, w)
        depth_arr = None
        if depth:
            z = np.asarray(zbuf, np.float32).reshape(h, w)
            depth_arr = FAR_M * NEAR_M / (FAR_M - (FAR_M - NEAR_M) * z)
        fill_background(
            rgba,
            seg_arr,
            depth_arr,
            self.ground,
            eye_t,
            math.radians(yaw),
            cam.fx_px,
            cam.fy_px,
            cam.cx_px,
            cam.cy_px,
        )
        image = cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGR)
        return Render(
            image, seg_arr if segmentation else None, depth_arr, t, slot.model.name, pose, eye_t, yaw, cam
        )

    def _render_in_pool(
        self,
        name: str,
        segmentation: bool,
        depth: bool,
        camera: CameraProfile | None,
        vehicle_pose: Pose | None,
    ) -> Render:
        with self.lock:  # time, pose and camera at the instant of the state the worker copies
            slot = self.vehicle(name)
            cam = camera or slot.camera
            eye, yaw = self.camera_pose(name, vehicle_pose)
            t = self.clock.now()
            pose = vehicle_pose or slot.model.pose()
            job = RenderJob(slot.model.name, self._scene_state(), camera, depth, _pose_tuple(vehicle_pose))
        r = self._pool_run(job, "full", cam.width_px * cam.height_px)
        eye_t = (float(eye[0]), float(eye[1]), float(eye[2]))
        return Render(
            r.image_bgr,
            r.seg if segmentation else None,
            r.depth_planar_m,
            t,
            slot.model.name,
            pose,
            eye_t,
            yaw,
            cam,
        )

    def render_segmentation(
        self, name: str, region: tuple[int, int, int, int], vehicle_pose: Pose | None = None
    ) -> np.ndarray:
        """Body ids of the pixels region = (u0, v0, u1, v1) (end exclusive) of the vehicle's frame.

        Renders only that crop, on the full frame's pixel grid (crop_camera), with everything in the
        scene drawn so that occlusion is as in the full render; the ground fill is not needed for ids
        (ground pixels read -1 here, -2 in a full render: neither is an object). The caller holds the
        lock when the region must match other state read at the same instant. Crops render in this
        process even with render workers: a few milliseconds, at the same instant as the distances,
        and never queued behind full frames.
        """
        with self.lock:
            slot = self.vehicle(name)
            eye, yaw = self.camera_pose(name, vehicle_pose)
            cam = crop_camera(slot.camera, region)
            _, _, seg = self._camera_image(slot, cam, eye, yaw, vehicle_pose, "crop")
        return np.asarray(seg, np.int32).reshape(cam.height_px, cam.width_px)

    def _scene_state(self) -> SceneState:
        """The dynamic state a render worker copies (the caller holds the lock)."""
        objects = {
            name: (o.asset, o.scale, (o.pose.x_m, o.pose.y_m, o.pose.z_m, o.pose.yaw_deg), o.body_id)
            for name, o in self.objects.items()
        }
        vehicles = {}
        for name, slot in self.vehicles.items():
            p = slot.model.pose()
            vehicles[name] = ((p.x_m, p.y_m, p.z_m, p.yaw_deg), slot.body_id)
        return SceneState(objects, vehicles)

    def _pool_run(self, job: RenderJob, kind: str, pixels: int) -> Any:
        """A render by a worker process; the caller took the job's state under the lock, the wait is
        outside it (the physics and the RPC go on meanwhile)."""
        assert self.render_pool is not None
        t0 = time.perf_counter()
        result = self.render_pool.run(job)
        with self.lock:
            self.render_stats.add(kind, pixels, time.perf_counter() - t0)
        return result

    def projected_region(
        self, obj: SceneObject, eye: np.ndarray, yaw_deg: float, cam: CameraProfile
    ) -> tuple[int, int, int, int] | None:
        """The pixels (u0, v0, u1, v1), end exclusive, that can hold `obj` in a frame from (eye, yaw):
        the part of its oriented bounding box in front of the near plane, projected, REGION_MARGIN_PX
        wider, clipped to the frame. None when no pixel can (behind the camera, outside the frustum).

        A box that crosses the near plane is cut there (its corners in front plus its edges' crossing
        points): TinyRenderer does not clip at the near plane, but measured over 107 such poses no
        target pixel of a full render fell outside this region (tests/test_sim_crop_truth.py).
        """
        half = np.asarray(obj.bbox_half_m)
        corners = obj.bbox_centre_ned() + (BOX_CORNER_SIGNS * half) @ yaw_rotation_ned(obj.pose.yaw_deg).T
        rel = (corners - eye) @ yaw_rotation_ned(yaw_deg)  # rows: (forward, right, down) in the camera
        ahead = rel[:, 0] - NEAR_M
        points = [rel[ahead > 0]]
        for a, b in BOX_EDGES:
            if ahead[a] * ahead[b] < 0:  # the edge crosses the near plane: keep the crossing point
                points.append(rel[a] + (ahead[a] / (ahead[a] - ahead[b])) * (rel[b] - rel[a]))
        pts = np.vstack(points)
        if len(pts) == 0:
            return None
        fwd = np.maximum(pts[:, 0], NEAR_M)
        u = cam.fx_px * pts[:, 1] / fwd + cam.cx_px
        v = cam.fy_px * pts[:, 2] / fwd + cam.cy_px
        u0 = max(0, math.floor(u.min()) - REGION_MARGIN_PX)
        v0 = max(0, math.floor(v.min()) - REGION_MARGIN_PX)
        u1 = min(cam.width_px, math.ceil(u.max()) + REGION_MARGIN_PX + 1)
        v1 = min(cam.height_px, math.ceil(v.max()) + REGION_MARGIN_PX + 1)
        if u0 >= u1 or v0 >= v1:
            return None
        return (u0, v0, u1, v1)

    def min_visible_pixels(self, cam: CameraProfile) -> int:
        """20 pixels of a 640x360 frame, scaled with the frame's area (docs/verifier.md#declarations)."""
        return max(1, round(VISIBLE_PIXELS_640x360 * cam.width_px * cam.height_px / (640 * 360)))

    def target_truth(
        self, vehicle: str, target: str, render: Render | None = None, vehicle_pose: Pose | None = None
    ) -> TargetTruth:
        """Distance, bbox distance and visibility of `target` from `vehicle`, read from `render` when
        given; otherwise from a render of just the target's projected region (crop_truth), at the
        vehicle's pose now or at `vehicle_pose`."""
        if render is None:
            return self._crop_truth(vehicle, target, vehicle_pose)
        if render.seg is None:
            raise ConfigError("target_truth needs a render with segmentation")
        with self.lock:
            obj = self.get_object(target)
            body, target_pose = obj.body_id, obj.pose
            drone = np.array([render.vehicle_pose.x_m, render.vehicle_pose.y_m, render.vehicle_pose.z_m])
            dist = float(np.linalg.norm(obj.bbox_centre_ned() - drone))
            bbox_dist = obj.bbox_distance_m(drone)
        return self._truth_from_mask(render.seg == body, (0, 0), dist, bbox_dist, target_pose, render.camera)

    def _crop_truth(self, vehicle: str, target: str, vehicle_pose: Pose | None) -> TargetTruth:
        """target_truth from the target's projected region only: the same pixel count as a full render
        (the crop is the same pixel grid with the same scene; see tests/test_sim_crop_truth.py) at
        the cost of the region's pixels. Not in the frame at all: 0 pixels without rendering."""
        with self.lock:
            slot = self.vehicle(vehicle)
            obj = self.get_object(target)
            pose = vehicle_pose or slot.model.pose()
            drone = np.array([pose.x_m, pose.y_m, pose.z_m])
            dist = float(np.linalg.norm(obj.bbox_centre_ned() - drone))
            bbox_dist = obj.bbox_distance_m(drone)
            eye, yaw = self.camera_pose(vehicle, pose)
            region = self.projected_region(obj, eye, yaw, slot.camera)
            if region is None:
                self.render_stats.skipped += 1
                mask = np.zeros((0, 0), bool)
                origin = (0, 0)
            else:
                mask = self.render_segmentation(vehicle, region, vehicle_pose) == obj.body_id
                origin = (region[0], region[1])
            target_pose = obj.pose
        return self._truth_from_mask(mask, origin, dist, bbox_dist, target_pose, slot.camera)

    def _truth_from_mask(
        self,
        mask: np.ndarray,
        origin: tuple[int, int],
        dist: float,
        bbox_dist: float,
        target_pose: Pose,
        cam: CameraProfile,
    ) -> TargetTruth:
        count = int(mask.sum())
        need = self.min_visible_pixels(cam)
        box = None
        if count:
            vs, us = np.nonzero(mask)
            u0, v0 = origin
            box = (int(us.min()) + u0, int(vs.min()) + v0, int(us.max()) + u0, int(vs.max()) + v0)
        return TargetTruth(
            distance_m=dist,
            bbox_distance_m=bbox_dist,
            visible=count >= need and dist <= VISIBLE_RANGE_M,
            pixel_count=count,
            min_pixels=need,
            target_pose=target_pose,
            box2d_px=box,
        )

    def point_on_target(self, render: Render, target: str, u: float, v: float) -> bool:
        """Whether image point (u, v), each 0-1000 in image order, lies on `target` in this render."""
        if render.seg is None:
            raise ConfigError("point_on_target needs a render with segmentation")
        h, w = render.seg.shape
        col, row = image_pixel(w, h, u, v)
        return bool(render.seg[row, col] == self.get_object(target).body_id)

    def point_on_target_at(
        self, vehicle: str, target: str, u: float, v: float, vehicle_pose: Pose | None = None
    ) -> bool:
        """point_on_target for the vehicle's frame now (or at `vehicle_pose`), rendering that one pixel
        only (none when it lies outside the target's projected region)."""
        with self.lock:
            slot = self.vehicle(vehicle)
            obj = self.get_object(target)
            cam = slot.camera
            col, row = image_pixel(cam.width_px, cam.height_px, u, v)
            eye, yaw = self.camera_pose(vehicle, vehicle_pose)
            region = self.projected_region(obj, eye, yaw, cam)
            if region is None or not (region[0] <= col < region[2] and region[1] <= row < region[3]):
                self.render_stats.skipped += 1
                return False
            seg = self.render_segmentation(vehicle, (col, row, col + 1, row + 1), vehicle_pose)
            return bool(seg[0, 0] == obj.body_id)

    def render_view(
        self,
        name: str,
        camera: CameraProfile,
        eye_ned: np.ndarray,
        rotation: np.ndarray,
        depth: bool = False,
        hide_vehicle: bool = True,
    ) -> Render:
        """A frame of a camera at `eye_ned` with any orientation (`rotation`: camera FRD -> world NED),
        e.g. a settings.json camera or one turned by simSetCameraPose (sim/oriented_camera.py). The
        vehicle's own body is not drawn when `hide_vehicle` (its cameras sit on or inside its mesh).
        Render workers draw level cameras only: this renders in this process."""
        from sim_bridge.sim.oriented_camera import fill_background_oriented, view_matrix

        p, c = self._p, self.client
        with self.lock:
            slot = self.vehicle(name)
            if hide_vehicle:
                p.resetBasePositionAndOrientation(
                    slot.body_id, (0.0, 0.0, -1000.0), (0, 0, 0, 1), physicsClientId=c
                )
            try:
                view = view_matrix(p, c, eye_ned, rotation)
                t0 = time.perf_counter()
                if self._gl is not None:
                    poses = {
                        body: p.getBasePositionAndOrientation(body, physicsClientId=c)
                        for body in self._gl.body_ids
                    }
                    rgba, zbuf, seg = self._gl.render(
                        camera.width_px, camera.height_px, view, projection_matrix(camera), poses
                    )
                else:
                    _, _, rgba, zbuf, seg = p.getCameraImage(
                        camera.width_px,
                        camera.height_px,
                        view,
                        projection_matrix(camera),
                        renderer=p.ER_TINY_RENDERER,
                        flags=0,
                        physicsClientId=c,
                    )
                self.render_stats.add("full", camera.width_px * camera.height_px, time.perf_counter() - t0)
            finally:
                if hide_vehicle:
                    self._place_vehicle(slot)
            t = self.clock.now()
            pose = slot.model.pose()
        h, w = camera.height_px, camera.width_px
        rgba = np.ascontiguousarray(np.asarray(rgba, np.uint8).reshape(h, w, 4))
        seg_arr = np.asarray(seg, np.int32).reshape(h, w)
        depth_arr = None
        if depth:
            z = np.asarray(zbuf, np.float32).reshape(h, w)
            depth_arr = FAR_M * NEAR_M / (FAR_M - (FAR_M - NEAR_M) * z)
        eye = np.asarray(eye_ned, float)
        fill_background_oriented(
            rgba,
            seg_arr,
            depth_arr,
            self.ground,
            eye,
            rotation,
            camera.fx_px,
            camera.fy_px,
            camera.cx_px,
            camera.cy_px,
        )
        image = cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGR)
        yaw = math.degrees(math.atan2(rotation[1, 0], rotation[0, 0]))
        eye_t = (float(eye[0]), float(eye[1]), float(eye[2]))
        return Render(image, seg_arr, depth_arr, t, slot.model.name, pose, eye_t, yaw, camera)

    def ray_test(
        self, starts_ned: np.ndarray, ends_ned: np.ndarray, ignore_body: int = -1
    ) -> tuple[np.ndarray, np.ndarray]:
        """(body id or -1, hit fraction) of each segment's first hit on a collision shape (PyBullet
        ray casts; the analytic ground is not a body). A ray that meets `ignore_body` (a sensor's own
        vehicle) is cast again from where it leaves that body's bounding box. The caller may hold the lock."""
        starts = np.asarray(starts_ned, float).reshape(-1, 3)
        ends = np.asarray(ends_ned, float).reshape(-1, 3)
        bodies = np.full(len(starts), -1, np.int64)
        fractions = np.ones(len(starts))
        if not len(starts):
            return bodies, fractions
        pb = np.array([1.0, -1.0, -1.0])  # NED -> PyBullet (sim.frames.ned_to_pb)
        batch = 8192  # PyBullet's rayTestBatch refuses 16385 rays and drops one of 16384
        with self.lock:
            box = None
            if ignore_body >= 0:
                lo_pb, hi_pb = self._p.getAABB(ignore_body, physicsClientId=self.client)
                corners = np.array([lo_pb, hi_pb]) * pb  # back to NED (y, z flip: reorder below)
                box = (corners.min(axis=0) - 1e-3, corners.max(axis=0) + 1e-3)
            for lo in range(0, len(starts), batch):
                a, b = starts[lo : lo + batch], ends[lo : lo + batch]
                begin = np.zeros(len(a))  # fraction of the segment where each cast starts
                if box is not None:  # rays starting in the own body's box start where they leave it
                    begin = _box_exit(a, b, *box)
                todo = np.nonzero(begin < 1.0)[0]
                for _ in range(2):  # a ray that meets the own body from outside goes on past it
                    seg_a = a[todo] + (b[todo] - a[todo]) * begin[todo, None]
                    hits = self._p.rayTestBatch(
                        (seg_a * pb).tolist(), (b[todo] * pb).tolist(), physicsClientId=self.client
                    )
                    again = []
                    for k, hit in zip(todo, hits, strict=True):
                        body, frac = int(hit[0]), float(hit[2])
                        at = begin[k] + (1.0 - begin[k]) * frac
                        if body >= 0 and body == ignore_body and box is not None:
                            hit_point = a[k] + (b[k] - a[k]) * (at + 1e-6)
                            out = _box_exit(hit_point[None], b[k][None], *box)[0]
                            begin[k] = at + (1.0 - at) * out
                            again.append(k)
                        elif body >= 0:
                            bodies[lo + k], fractions[lo + k] = body, at
                    todo = np.asarray(again, np.int64)
                    if not len(todo):
                        break
        return bodies, fractions
        pb = np.array([1.0, -1.0, -1.0])  # NED -> PyBullet (sim.frames.ned_to_pb)
        batch = 8192  # PyBullet's rayTestBatch refuses 16385 rays and drops one of 16384
        with self.lock:
            for lo in range(0, len(starts), batch):
                a, b = starts[lo : lo + batch], ends[lo : lo + batch]
                offset = np.zeros(len(a))  # fraction already travelled (re-cast past the own body)
                todo = np.arange(len(a))
                for _ in range(4):
                    if not len(todo):
                        break
                    seg_a = a[todo] + (b[todo] - a[todo]) * offset[todo, None]
                    hits = self._p.rayTestBatch(
                        (seg_a * pb).tolist(), (b[todo] * pb).tolist(), physicsClientId=self.client
                    )
                    again = []
                    for k, hit in zip(todo, hits, strict=True):
                        body, frac = int(hit[0]), float(hit[2])
                        total = offset[k] + (1.0 - offset[k]) * frac
                        if body >= 0 and body == ignore_body:
                            offset[k] = min(1.0, total + 1e-4)
                            again.append(k)
                        elif body >= 0:
                            bodies[lo + k], fractions[lo + k] = body, total
                    todo = np.asarray(again, np.int64)
        return bodies, fractions


def _make_gl_renderer(renderer: str) -> GlRenderer | None:
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


def _pose_tuple(pose: Pose | None) -> tuple[float, float, float, float] | None:
    return None if pose is None else (pose.x_m, pose.y_m, pose.z_m, pose.yaw_deg)


def _box_exit(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per segment a->b, the fraction at which it leaves the box [lo, hi] when it starts inside it
    (slab method), else 0."""
    d = b - a
    inside = np.all((a >= lo) & (a <= hi), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - a) / d, (hi - a) / d
    t_far = np.where(d != 0, np.maximum(t1, t2), np.inf).min(axis=1)
    return np.where(inside, np.clip(t_far, 0.0, 1.0), 0.0)


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
