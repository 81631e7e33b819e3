"""A PyBullet scene: its bodies, the named objects among them, the vehicles' bodies and the ground.

What a render worker builds (with sim_bridge.sim.scenes) and what `World` moves: a scene knows
shapes and poses, not time or flight. PyBullet is not thread-safe: every call here holds `lock` (the
world's), and the callers that read several things at one instant hold it around them.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from common.errors import ConfigError
from common.frames import yaw_rotation_ned
from common.obstacles import Obstacle
from common.pose import Pose, wrap_deg
from sim_bridge.sim.assets import COLOURS, QUAD_TRIANGLES, QUAD_UVS, AssetSpec, Part, build_asset, tiled
from sim_bridge.sim.assets import _drone as drone_parts
from sim_bridge.sim.frames import ned_to_pb, pb_to_ned, yaw_quat_pb
from sim_bridge.sim.ground import GroundMap
from sim_bridge.sim.textures import TextureCache

if TYPE_CHECKING:
    from sim_bridge.sim.gl_render import GlRenderer

DRONE_COLLISION_RADIUS_M = 0.3
SCENERY_TILE_M = 25.0
SCENERY_MAX_LINKS = 100
# The classes an episode places on the ground that a drone can hit, reported as obstacles to the
# onboard safety envelope (common.obstacles). Drones are traffic (fleet separation), scenery is not
# placed by episodes (houses, trees: the ceiling and the fence bound those flights).
OBSTACLE_CLASSES = frozenset({"car", "suv", "van", "truck", "person", "cyclist", "sign"})


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
class SceneBody:
    """A named object in the scene: its PyBullet body, class, pose and bounding box."""

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

    def obstacle(self, t_s: float) -> Obstacle:
        """This object as the safety envelope sees it at simulation time t_s: its bounding box's
        footprint and top, and its velocity along its path (0 when stopped)."""
        centre = self.bbox_centre_ned()
        half_fwd, half_right, half_down = self.bbox_half_m
        velocity = (0.0, 0.0)
        if self.path is not None and t_s >= self.path.start_t_s:
            _, heading_deg = self.path.at(t_s)
            if heading_deg is not None:
                speed = self.path.speed_m_s
                rad = math.radians(heading_deg)
                velocity = (speed * math.cos(rad), speed * math.sin(rad))
        return Obstacle(
            self.name,
            float(centre[0]),
            float(centre[1]),
            self.pose.yaw_deg,
            half_fwd,
            half_right,
            float(centre[2]) - half_down,
            velocity,
        )

    def bbox_distance_m(self, point_ned: np.ndarray) -> float:
        """Distance from a world point to the nearest point of this oriented bounding box (0 inside)."""
        local = yaw_rotation_ned(self.pose.yaw_deg).T @ (np.asarray(point_ned) - self.bbox_centre_ned())
        half = np.asarray(self.bbox_half_m)
        return float(np.linalg.norm(local - np.clip(local, -half, half)))


class Scene:
    """One PyBullet client with named objects and vehicle bodies; `gl` (the OpenGL renderer, when
    rendering with it) mirrors every body created and removed here."""

    def __init__(
        self, p: ModuleType, gl: GlRenderer | None = None, lock: threading.RLock | None = None
    ) -> None:
        self._p = p
        self.gl = gl
        self.client = p.connect(p.DIRECT)
        self.lock = lock or threading.RLock()
        self.textures = TextureCache()
        self._texture_ids: dict[str, int] = {}
        self.objects: dict[str, SceneBody] = {}
        self.vehicle_bodies: dict[str, int] = {}  # vehicle name -> its body
        self.ground_ids: set[int] = set()
        self.ground = GroundMap((90, 128, 77))

    # ------------------------------------------------------------------ bodies
    def _texture_id(self, path: str) -> int:
        if path not in self._texture_ids:
            self._texture_ids[path] = self._p.loadTexture(path, physicsClientId=self.client)
        return self._texture_ids[path]

    def _shapes(self, part: Part) -> tuple[int, int, float, float]:
        """(visual shape, collision shape or -1, roll, pitch) of one part."""
        p, c = self._p, self.client
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
            v, k = self._quad_visual(part), -1
        else:
            raise ConfigError(f"unknown part shape {part.shape!r}")
        return v, k, roll, pitch

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
            v, k, roll, pitch = self._shapes(part)
            if part.shape == "quad" and part.texture is not None:
                textured.append((i, str(part.texture)))
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
        if self.gl is not None:
            self.gl.add_body(int(body), parts, list(zip(pos, orn, strict=True)))
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

    def place_body(
        self,
        body: int,
        position_ned: Sequence[float] | np.ndarray,
        yaw_deg: float,
        orientation_pb: tuple[float, float, float, float] | None = None,
    ) -> None:
        """Move a body to a world NED position, turned by yaw_deg, or by `orientation_pb` (PyBullet's
        (x, y, z, w)) where given: a vehicle's tilted body (sim_bridge.sim.tilted.body_quat_pb)."""
        quat = orientation_pb if orientation_pb is not None else yaw_quat_pb(yaw_deg)
        self._p.resetBasePositionAndOrientation(
            body, ned_to_pb(*position_ned), quat, physicsClientId=self.client
        )

    def add_vehicle_body(self, name: str, spawn: Pose) -> int:
        """A drone's body at its spawn; the name is the vehicle's (never an object's)."""
        with self.lock:
            if name in self.vehicle_bodies or name in self.objects:
                raise ConfigError(f"vehicle name {name!r} is already used")
            parts = drone_parts("", COLOURS["black"], self.textures)
            body = self.create_body(
                parts, spawn, mass_kg=1.0, base_collision_radius_m=DRONE_COLLISION_RADIUS_M
            )
            self.vehicle_bodies[name] = body
            return body

    # ------------------------------------------------------------------ named objects
    def add_scenery(self, name: str, parts: list[Part], ground: bool = False) -> list[SceneBody]:
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
    ) -> SceneBody:
        centre_pb, half = spec.local_bbox()
        obj = SceneBody(
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

    def unique_name(self, name: str) -> str:
        """AirSim appends a number when the name is taken; so do we."""
        taken = self.objects.keys() | self.vehicle_bodies.keys()
        if name not in taken:
            return name
        i = 1
        while f"{name}_{i}" in taken:
            i += 1
        return f"{name}_{i}"

    def spawn(
        self, name: str, asset: str, pose: Pose, scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    ) -> SceneBody:
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
            if self.gl is not None:
                self.gl.remove_body(obj.body_id)
            return True

    def get_object(self, name: str) -> SceneBody:
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

    def move_along_path(self, obj: SceneBody, t_s: float) -> None:
        assert obj.path is not None
        pos, heading = obj.path.at(t_s)
        yaw = obj.pose.yaw_deg if heading is None else heading
        obj.pose = Pose(float(pos[0]), float(pos[1]), float(pos[2]), wrap_deg(yaw))
        self.place_body(obj.body_id, pos, yaw)

    # ------------------------------------------------------------------ contacts and rays
    def collision(self, body: int, position_ned: np.ndarray) -> dict[str, Any] | None:
        """The contact of vehicle body `body` (at position_ned) with anything but itself and the ground,
        in AirSim's CollisionInfo fields (no time stamp), or None."""
        p, c = self._p, self.client
        lo, hi = p.getAABB(body, -1, physicsClientId=c)
        candidates = {b for b, _ in (p.getOverlappingObjects(lo, hi, physicsClientId=c) or [])}
        # moved bodies may have stale broadphase boxes: always test other vehicles and moving objects
        candidates |= set(self.vehicle_bodies.values())
        candidates |= {o.body_id for o in self.objects.values() if o.path is not None}
        candidates -= {body} | self.ground_ids
        for other in sorted(candidates):
            pts = p.getClosestPoints(body, other, 0.0, physicsClientId=c)
            if pts:
                pt = min(pts, key=lambda q: q[8])
                return {
                    "has_collided": True,
                    "penetration_depth": float(-pt[8]),
                    "normal": pb_to_ned(*pt[7]),
                    "impact_point": pb_to_ned(*pt[6]),
                    "position": tuple(float(v) for v in position_ned),
                    "object_name": self.body_name(other),
                    "object_id": int(other),
                }
        return None

    def body_name(self, body: int) -> str:
        for obj in self.objects.values():
            if obj.body_id == body:
                return obj.name
        for name, vehicle_body in self.vehicle_bodies.items():
            if vehicle_body == body:
                return name
        return f"body{body}"

    def line_of_sight(self, a_ned: np.ndarray, b_ned: np.ndarray) -> bool:
        """True when no body with a collision shape lies on the segment between two world points."""
        with self.lock:
            hits = self._p.rayTest(ned_to_pb(*a_ned), ned_to_pb(*b_ned), physicsClientId=self.client)
        return not hits or int(hits[0][0]) < 0

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

    def close(self) -> None:
        with self.lock, contextlib.suppress(Exception):  # already disconnected
            self._p.disconnect(physicsClientId=self.client)
        if self.gl is not None:
            self.gl.close()
            self.gl = None
        self.textures.close()


def _box_exit(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per segment a->b, the fraction at which it leaves the box [lo, hi] when it starts inside it
    (slab method), else 0."""
    d = b - a
    inside = np.all((a >= lo) & (a <= hi), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - a) / d, (hi - a) / d
    t_far = np.where(d != 0, np.maximum(t1, t2), np.inf).min(axis=1)
    return np.where(inside, np.clip(t_far, 0.0, 1.0), 0.0)
