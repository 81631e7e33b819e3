"""The built-in simulator's world: a scene, its vehicles and one simulation clock.

This is the in-process API (the episode runner and tests use it directly); `sim_bridge.rpc` is a thin
AirSim-compatible layer over it. `World` keeps the registry of vehicles, their commands and time, and
hands the rest to its parts: the PyBullet scene and its named objects (sim_bridge.sim.scene), the
cameras (sim_bridge.sim.camera) and the targets' ground truth (sim_bridge.sim.truth). PyBullet is not
thread-safe, so every call that touches it holds `self.lock`. Time only moves in fixed ticks of
`tick_s` (the last tick of an advance may be shorter), so a given seed and command sequence in
lock-step gives the same trajectory every run.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from common.camera import BUILTIN_CAMERAS, CameraProfile
from common.clock import SimClock
from common.errors import ConfigError, VehicleError
from common.obstacles import Obstacle
from common.pose import Pose
from sim_bridge.sim.assets import Part
from sim_bridge.sim.battery import BatteryConfig
from sim_bridge.sim.camera import (
    FAR_M,
    NEAR_M,
    RENDERERS,
    Cameras,
    Render,
    RenderRunner,
    RenderStats,
    camera_pose,
    camera_rotation_ned,
    crop_camera,
    image_pixel,
    make_gl_renderer,
    place_vehicle_body,
    projection_matrix,
)
from sim_bridge.sim.gimbal import CAMERA_OFFSET_FRD_M, STABILISED, CameraMount
from sim_bridge.sim.ground import GroundMap
from sim_bridge.sim.loop import SimLoop
from sim_bridge.sim.multirotor import NO_TURN, PATH_LOOKAHEAD_M, Multirotor, MultirotorLimits, Task, YawMode
from sim_bridge.sim.pybullet_import import import_pybullet
from sim_bridge.sim.render_pool import RenderPool, SceneSpec
from sim_bridge.sim.scene import OBSTACLE_CLASSES, MovingPath, Scene, SceneBody
from sim_bridge.sim.scenes import build_scene
from sim_bridge.sim.truth import (
    REGION_MARGIN_PX,
    VISIBLE_RANGE_M,
    SimTruth,
    TargetTruth,
    min_visible_pixels,
)

log = logging.getLogger(__name__)

TAKEOFF_SPEED_M_S = 1.0


@dataclass
class VehicleSlot:
    """A vehicle of the world: its flight model, its body in the scene and its camera."""

    model: Multirotor
    body_id: int
    camera: CameraProfile
    detection_filters: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    mount: CameraMount = STABILISED  # the forward camera's mount and gimbal (sim_bridge.sim.gimbal)


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
        camera_mount: CameraMount = STABILISED,
    ) -> None:
        """`renderer`: gl, tiny or auto (see RENDERERS); None takes $DRONECATS_RENDERER, else auto, so
        every entry point (episodes, demo, tests) can be run with either renderer. `battery`: every
        vehicle's pack (sim_bridge.sim.battery; default a 74 Wh 4S LiPo, ~20 min of hover).
        `camera_mount`: every vehicle's forward camera; the default is gimbal-stabilised (level), AirSim's
        is gimbal.BODY_FIXED (it pitches and rolls with the body)."""
        renderer = renderer or os.environ.get("DRONECATS_RENDERER", "auto")
        if render_workers < 0:
            raise ConfigError(f"render_workers={render_workers} must be >= 0 (0: render in this process)")
        if renderer not in RENDERERS:
            raise ConfigError(f"renderer {renderer!r} is not one of {RENDERERS}")
        self.camera_mount = camera_mount
        p = import_pybullet()  # heavy: imported when a world is built, not at import time
        # before PyBullet's client: a renderer that cannot start (renderer="gl") leaves nothing open
        gl = make_gl_renderer(renderer)
        self.renderer = "gl" if gl is not None else "tiny"
        self.render_device = gl.device if gl is not None else "TinyRenderer (CPU)"
        self.lock = threading.RLock()
        self.scene = Scene(p, gl, self.lock)
        self.clock = SimClock()
        self.loop = SimLoop(self.step, self.clock, tick_s, self.lock, clock_speed)
        self.seed = seed
        self.camera = camera or BUILTIN_CAMERAS["sim"]
        self.vehicles: dict[str, VehicleSlot] = {}
        self.cameras = Cameras(self.scene, self.vehicles, self.clock.now)
        self.truth = SimTruth(self.cameras, self.vehicle)
        self.scene_name = scene
        self.battery_config = battery or BatteryConfig()
        info = build_scene(self.scene, scene, seed)
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
            spec = SceneSpec(
                scene,
                seed,
                [(n, (p.x_m, p.y_m, p.z_m, p.yaw_deg)) for n, p in spawned],
                self.camera,
                self.renderer,
                self.camera_mount,
            )
            self.cameras.pool = RenderPool(spec, render_workers)

    # ------------------------------------------------------------------ the parts' state, as before
    @property
    def tick_s(self) -> float:
        return self.loop.tick_s

    @property
    def objects(self) -> dict[str, SceneBody]:
        return self.scene.objects

    @property
    def ground(self) -> GroundMap:
        return self.scene.ground

    @property
    def render_pool(self) -> RenderRunner | None:
        return self.cameras.pool

    @property
    def render_stats(self) -> RenderStats:
        return self.cameras.stats

    @render_stats.setter
    def render_stats(self, stats: RenderStats) -> None:
        self.cameras.stats = stats

    # ------------------------------------------------------------------ objects (see Scene)
    def add_scenery(self, name: str, parts: list[Part], ground: bool = False) -> list[SceneBody]:
        return self.scene.add_scenery(name, parts, ground)

    def spawn(
        self, name: str, asset: str, pose: Pose, scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    ) -> SceneBody:
        """Spawn an asset (sim_bridge.sim.assets) at a world NED pose; the returned name may differ."""
        return self.scene.spawn(name, asset, pose, scale)

    def destroy(self, name: str) -> bool:
        return self.scene.destroy(name)

    def get_object(self, name: str) -> SceneBody:
        return self.scene.get_object(name)

    def set_object_pose(self, name: str, pose: Pose) -> None:
        self.scene.set_object_pose(name, pose)

    def known_obstacles(self) -> list[Obstacle]:
        """The placed objects a drone can hit (OBSTACLE_CLASSES), as the safety envelope sees them."""
        with self.lock:
            now_s = self.clock.now()
            return [o.obstacle(now_s) for o in self.scene.objects.values() if o.cls in OBSTACLE_CLASSES]

    def set_path(self, name: str, waypoints_ned: list[tuple[float, float, float]], speed_m_s: float) -> None:
        """Make an object follow 3-D waypoints (world NED) from now at speed_m_s, in simulation time."""
        if len(waypoints_ned) < 2 or speed_m_s <= 0:
            raise ConfigError(
                f"a path needs >= 2 waypoints and speed > 0 (got {len(waypoints_ned)}, {speed_m_s})"
            )
        with self.lock:
            obj = self.get_object(name)
            obj.path = MovingPath(np.asarray(waypoints_ned, float), float(speed_m_s), self.clock.now())
            self.scene.move_along_path(obj, self.clock.now())

    def object_pose(self, name: str) -> Pose:
        with self.lock:
            if name in self.vehicles:
                return self.vehicles[name].model.pose()
            return self.get_object(name).pose

    # ------------------------------------------------------------------ vehicles
    def add_vehicle(self, name: str, spawn: Pose) -> Multirotor:
        with self.lock:
            body = self.scene.add_vehicle_body(name, spawn)
            model = Multirotor(name, spawn, MultirotorLimits(), self.battery_config)
            self.vehicles[name] = VehicleSlot(model, body, self.camera, mount=self.camera_mount)
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
        place_vehicle_body(self.scene, slot)  # tilted by its roll and pitch

    # ------------------------------------------------------------------ commands (each returns its Task)
    def _command(self, name: str, start: Callable[[Multirotor, float], Task]) -> Task:
        """Start a Multirotor command at the current simulation time, under the lock."""
        with self.lock:
            return start(self.vehicle(name).model, self.clock.now())

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
                target, TAKEOFF_SPEED_M_S, self.clock.now(), timeout_s, YawMode(False, m.yaw_deg), "takeoff"
            )

    def land(self, name: str, timeout_s: float) -> Task:
        return self._command(name, lambda m, now: m.land(now, timeout_s))

    def move_velocity(
        self, name: str, velocity_ned: Sequence[float] | np.ndarray, duration_s: float, yaw: YawMode = NO_TURN
    ) -> Task:
        """World NED velocity (m/s) for duration_s."""
        return self._command(name, lambda m, now: m.move_velocity(velocity_ned, duration_s, now, yaw))

    def move_velocity_body(
        self, name: str, velocity_frd: tuple[float, float, float], duration_s: float, yaw: YawMode = NO_TURN
    ) -> Task:
        """(forward, right) turned by the yaw at the start, down world-down (m/s), for duration_s."""
        fwd, right, down = velocity_frd
        return self._command(
            name, lambda m, now: m.move_velocity_body(fwd, right, down, duration_s, now, yaw)
        )

    def move_velocity_z(
        self, name: str, vx_m_s: float, vy_m_s: float, z_m: float, duration_s: float, yaw: YawMode = NO_TURN
    ) -> Task:
        """World (vx, vy) while holding the world NED height z_m, for duration_s."""
        return self._command(
            name, lambda m, now: m.move_velocity_z(vx_m_s, vy_m_s, z_m, duration_s, now, yaw)
        )

    def move_to(
        self,
        name: str,
        target_ned: Sequence[float] | np.ndarray,
        speed_m_s: float,
        timeout_s: float,
        yaw: YawMode = NO_TURN,
    ) -> Task:
        """To a world NED point at speed_m_s."""
        return self._command(name, lambda m, now: m.move_to(target_ned, speed_m_s, now, timeout_s, yaw))

    def move_on_path(
        self,
        name: str,
        path_ned: list[np.ndarray],
        speed_m_s: float,
        timeout_s: float,
        yaw: YawMode = NO_TURN,
        lookahead_m: float = PATH_LOOKAHEAD_M,
    ) -> Task:
        """Along world NED waypoints at speed_m_s (a carrot lookahead_m ahead), stopping at the last."""
        return self._command(
            name, lambda m, now: m.move_on_path(path_ned, speed_m_s, now, timeout_s, yaw, lookahead_m)
        )

    def rotate_rate(self, name: str, yaw_rate_deg_s: float, duration_s: float) -> Task:
        return self._command(name, lambda m, now: m.rotate_rate(yaw_rate_deg_s, duration_s, now))

    def rotate_to(self, name: str, yaw_deg: float, timeout_s: float, margin_deg: float) -> Task:
        return self._command(name, lambda m, now: m.rotate_to(yaw_deg, now, timeout_s, margin_deg))

    # ------------------------------------------------------------------ time
    def step(self, dt_s: float | None = None) -> float:
        """Advance the world by one tick (or dt_s); returns the new simulation time."""
        dt = self.tick_s if dt_s is None else dt_s
        with self.lock:
            now = self.clock.now()
            for obj in self.scene.objects.values():
                if obj.path is not None:
                    self.scene.move_along_path(obj, now + dt)
            for slot in self.vehicles.values():
                m = slot.model
                new_pos, new_yaw = m.propose(dt, now)
                old_pos, old_yaw = m.position_ned.copy(), m.yaw_deg
                m.commit(new_pos, new_yaw)
                self._place_vehicle(slot)
                if not m.landed:
                    hit = self.scene.collision(slot.body_id, m.position_ned)
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

    def advance(self, duration_s: float, pace: bool = False) -> float:
        """Run duration_s of simulation time in the caller's thread (lock-step; see SimLoop.advance)."""
        return self.loop.advance(duration_s, pace)

    def start(self) -> None:
        """Run in a background thread at the clock speed (until paused or closed)."""
        self.loop.start()

    @property
    def paused(self) -> bool:
        return self.loop.paused

    def pause(self, paused: bool = True) -> None:
        self.loop.pause(paused)

    def set_clock_speed(self, speed: float) -> None:
        self.loop.set_clock_speed(speed)

    @property
    def clock_speed(self) -> float:
        return self.loop.clock_speed

    def continue_for_time(self, duration_s: float) -> None:
        """AirSim's simContinueForTime: run duration_s at the clock speed, then stay paused."""
        self.loop.continue_for_time(duration_s)

    def close(self) -> None:
        self.cameras.close()
        self.loop.stop()
        for slot in self.vehicles.values():
            slot.model.cancel()
        self.scene.close()

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ rendering & ground truth
    def camera_pose(self, name: str = "", vehicle_pose: Pose | None = None) -> tuple[np.ndarray, float]:
        """World NED position and yaw of the vehicle's camera (at `vehicle_pose` when given)."""
        return camera_pose(self.vehicle(name), vehicle_pose)

    def camera_rotation(self, name: str = "", vehicle_pose: Pose | None = None) -> np.ndarray | None:
        """The vehicle's camera (FRD) -> world NED rotation; None when it is level (see camera.py)."""
        return camera_rotation_ned(self.vehicle(name), vehicle_pose)

    def render(
        self,
        name: str = "",
        segmentation: bool = True,
        depth: bool = False,
        camera: CameraProfile | None = None,
        vehicle_pose: Pose | None = None,
    ) -> Render:
        """The vehicle's forward camera image (see Cameras.render)."""
        return self.cameras.render(self.vehicle(name), segmentation, depth, camera, vehicle_pose)

    def render_segmentation(
        self, name: str, region: tuple[int, int, int, int], vehicle_pose: Pose | None = None
    ) -> np.ndarray:
        """Body ids of a region of the vehicle's frame (see Cameras.render_segmentation)."""
        return self.cameras.render_segmentation(self.vehicle(name), region, vehicle_pose)

    def min_visible_pixels(self, cam: CameraProfile) -> int:
        return min_visible_pixels(cam)

    def target_truth(
        self, vehicle: str, target: str, render: Render | None = None, vehicle_pose: Pose | None = None
    ) -> TargetTruth:
        """Distance, bbox distance and visibility of `target` from `vehicle` (see SimTruth)."""
        return self.truth.target_truth(vehicle, target, render, vehicle_pose)

    def point_on_target(self, render: Render, target: str, u: float, v: float) -> bool:
        return self.truth.point_on_target(render, target, u, v)

    def point_on_target_at(
        self, vehicle: str, target: str, u: float, v: float, vehicle_pose: Pose | None = None
    ) -> bool:
        return self.truth.point_on_target_at(vehicle, target, u, v, vehicle_pose)

    def ray_test(
        self, starts_ned: np.ndarray, ends_ned: np.ndarray, ignore_body: int = -1
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each segment's first hit (Scene.ray_test)."""
        return self.scene.ray_test(starts_ned, ends_ned, ignore_body)


# the names callers import from here (the parts' modules define them)
__all__ = [
    "CAMERA_OFFSET_FRD_M",
    "FAR_M",
    "NEAR_M",
    "REGION_MARGIN_PX",
    "RENDERERS",
    "VISIBLE_RANGE_M",
    "MovingPath",
    "Render",
    "RenderStats",
    "SceneBody",
    "TargetTruth",
    "VehicleSlot",
    "World",
    "YawMode",
    "crop_camera",
    "image_pixel",
    "projection_matrix",
]
