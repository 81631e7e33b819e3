# ruff: noqa: N802 -- the method names are wire names
"""The built-in simulator's own RPC methods, prefixed `dc` (see EXTENSIONS), beside AirSim's stock
surface (sim_bridge.rpc.airsim_api): ground truth, point-on-target questions about served frames,
render counts, object paths and information, spawn poses, simulation time and clock speed, and the
command-silence landing (sim_bridge.rpc.silence).

`dronecats sim --strict-airsim` serves none of them (sim_bridge.rpc.strict), as a real AirSim would not.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from common.errors import ConfigError
from common.pose import Pose, wrap_deg
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.silence import SilenceLanding
from sim_bridge.rpc.wire import pose_list, pose_msg, vec3
from sim_bridge.sim.camera import Render, RenderStats, image_pixel
from sim_bridge.sim.world import World

# Segmentations of each vehicle's last frames kept for dcPointOnTargetInFrame: a frame is asked about
# once its model call returns (~1-2 s on a Jetson-class model, 5-10 frames at 5 fps). int16 ids:
# 0.46 MB per 640x360 frame, ~7 MB per vehicle.
FRAME_RING_SIZE = 16
RING_TIME_TOLERANCE_NS = 1000  # time stamps travel as float seconds in a Frame: allow rounding
RING_POSE_TOLERANCE = 1e-3  # metres and degrees: the pose the frame reports vs the render's
TRUTH_RENDER_MODES = ("crop", "full")

EXTENSIONS = {
    "dcGroundTruth": "(vehicle_name, object_name) -> {distance_m, bbox_distance_m, visible, "
    "pixel_count, min_pixels, box2d, target_pose}: the verifier's ground truth from a fresh render",
    "dcPointOnTarget": "(vehicle_name, object_name, u, v) -> bool: image point (0-1000) on the object now",
    "dcPointOnTargetAt": "(vehicle_name, object_name, u, v, [x, y, z, yaw_deg]) -> bool: the same for "
    "a frame taken at that world vehicle pose (re-rendered with the scene as it is now)",
    "dcPointOnTargetInFrame": "(vehicle_name, object_name, u, v, time_stamp_ns, [x, y, z, yaw_deg]) -> "
    "bool: the same for the frame simGetImages served with that time_stamp (and vehicle pose), read from "
    "its segmentation kept in a ring of the vehicle's last frames; an unknown frame is re-rendered "
    "at the pose with the scene as it is now (as dcPointOnTargetAt)",
    "dcRenderStats": "(reset) -> {frames, full, full_pixels, full_s, crop, crop_pixels, crop_s, skipped, "
    "ring_hits, ring_misses, truth_render, renderer, render_device}: renders since start (or the last "
    "reset); frames per vehicle",
    "dcSetTruthRender": "(mode) -> None: 'crop' (default: ground truth renders only the target's region, "
    "point-on-target answers from the frame ring) or 'full' (a full-frame render for each, for comparison)",
    "dcSetObjectPath": "(object_name, [[x, y, z], ...] world NED, speed_m_s) -> True: follow from now",
    "dcGetObjectInfo": "(object_name) -> {name, cls, colour, asset, text, bbox_centre, bbox_half_m, pose}",
    "dcGetObstacles": "() -> [{name, north_m, east_m, radius_m, top_z_m, velocity_ne_m_s}, ...]: the "
    "placed objects a drone can hit (cars, people, signs) as upright cylinders in world NED, for the "
    "onboard safety envelope's clearance (common.obstacles)",
    "dcGetVehicleSpawn": "(vehicle_name) -> Pose: the vehicle's spawn pose in the world NED frame",
    "dcGetSimTime": "() -> float: simulation time in seconds",
    "dcSetClockSpeed": "(speed) -> None: simulated seconds per wall second while running",
    "dcSetSilenceLanding": "(vehicle_name, silence_s) -> float: land the vehicle by itself after "
    "silence_s (simulation and wall time) in the air without a command (0: off, the default); the "
    "bound now in effect. `reset` restores the server's --land-on-silence-s",
    "dcGetSilenceLanding": "(vehicle_name) -> float: the vehicle's command-silence bound (0: off)",
    "dcGetWorldEffects": "() -> {wind, weather_enabled, weather, trace_lines}: what simSetWind, "
    "simEnableWeather, simSetWeatherParameter and simSetTraceLine set (trace lines are stored only: "
    "the built-in renderers do not draw them)",
}


@dataclass
class WorldEffects:
    """What simSetWind, simEnableWeather, simSetWeatherParameter and simSetTraceLine set (the stock
    surface writes it, dcGetWorldEffects reports it)."""

    wind_ned: np.ndarray = field(default_factory=lambda: np.zeros(3))
    weather_enabled: bool = False
    weather: dict[str, float] = field(default_factory=dict)
    trace_lines: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class FrameSeg:
    """One served frame's segmentation (body ids), for point-on-target questions about it later."""

    time_stamp_ns: int
    vehicle_pose: Pose  # world NED at capture
    seg: np.ndarray


class FrameRing:
    """The last FRAME_RING_SIZE forward-camera frames served to each vehicle (simGetImages keeps them)."""

    def __init__(self) -> None:
        self.frames: dict[str, deque[FrameSeg]] = {}
        self.served: dict[str, int] = {}
        self.hits = 0
        self.misses = 0
        self.lock = threading.Lock()

    def keep(self, render: Render) -> None:
        if render.seg is None:
            return
        seg = render.seg
        if seg.size and int(seg.min()) >= -32768 and int(seg.max()) <= 32767:
            seg = seg.astype(np.int16)
        frame = FrameSeg(round(render.time_s * 1e9), render.vehicle_pose, seg)
        with self.lock:
            self.frames.setdefault(render.vehicle, deque(maxlen=FRAME_RING_SIZE)).append(frame)
            self.served[render.vehicle] = self.served.get(render.vehicle, 0) + 1

    def find(self, vehicle: str, time_stamp_ns: int, pose: Pose) -> FrameSeg | None:
        """The newest kept frame of `vehicle` with this time stamp and pose (frames rendered at one
        paused instant share a time stamp; the pose tells them apart)."""
        with self.lock:
            for frame in reversed(self.frames.get(vehicle, ())):
                p = frame.vehicle_pose
                if (
                    abs(frame.time_stamp_ns - time_stamp_ns) <= RING_TIME_TOLERANCE_NS
                    and max(abs(p.x_m - pose.x_m), abs(p.y_m - pose.y_m), abs(p.z_m - pose.z_m))
                    <= RING_POSE_TOLERANCE
                    and abs(wrap_deg(p.yaw_deg - pose.yaw_deg)) <= RING_POSE_TOLERANCE
                ):
                    self.hits += 1
                    return frame
            self.misses += 1
        return None


class DcExtensions:
    """The `dc*` handlers over a world, the frame ring and the effects the stock surface stores."""

    def __init__(
        self,
        world: World,
        frames: FrameRing,
        effects: WorldEffects,
        silence: SilenceLanding,
        truth_render: str = "crop",
    ) -> None:
        self.world = world
        self.frames = frames
        self.effects = effects
        self.silence = silence
        self.dcSetTruthRender(truth_render)

    def dcGetWorldEffects(self) -> dict[str, Any]:
        e = self.effects
        return {
            "wind": vec3(*e.wind_ned),
            "weather_enabled": e.weather_enabled,
            "weather": dict(e.weather),
            "trace_lines": dict(e.trace_lines),
        }

    def dcGroundTruth(self, vehicle_name: str, object_name: str) -> dict[str, Any]:
        if self._truth_render == "full":
            render = self.world.render(str(vehicle_name), segmentation=True)
            t = self.world.target_truth(str(vehicle_name), str(object_name), render)
        else:
            t = self.world.target_truth(str(vehicle_name), str(object_name))
        p = t.target_pose
        return {
            "distance_m": t.distance_m,
            "bbox_distance_m": t.bbox_distance_m,
            "visible": t.visible,
            "pixel_count": t.pixel_count,
            "min_pixels": t.min_pixels,
            "box2d": list(t.box2d_px) if t.box2d_px else None,
            "target_pose": p.as_list(),
            "time_s": self.world.clock.now(),
        }

    def dcPointOnTarget(self, vehicle_name: str, object_name: str, u: float, v: float) -> bool:
        return self._point_on_target(str(vehicle_name), str(object_name), float(u), float(v), None)

    def dcPointOnTargetAt(
        self, vehicle_name: str, object_name: str, u: float, v: float, vehicle_pose_world: list[float]
    ) -> bool:
        """point_on_target for a frame taken earlier: re-render from the frame's vehicle pose
        ([x, y, z, yaw_deg] world NED) with the scene as it is now."""
        pose = pose_list(vehicle_pose_world)
        return self._point_on_target(str(vehicle_name), str(object_name), float(u), float(v), pose)

    def dcPointOnTargetInFrame(
        self,
        vehicle_name: str,
        object_name: str,
        u: float,
        v: float,
        time_stamp_ns: int,
        vehicle_pose_world: list[float],
    ) -> bool:
        """point_on_target for the served frame with this time stamp and pose, from the frame ring;
        a frame no longer (or never) in it is re-rendered at the pose (dcPointOnTargetAt)."""
        name = self.world.vehicle(str(vehicle_name)).model.name
        pose = pose_list(vehicle_pose_world)
        if self._truth_render == "crop":
            frame = self.frames.find(name, int(time_stamp_ns), pose)
            if frame is not None:
                h, w = frame.seg.shape
                col, row = image_pixel(w, h, float(u), float(v))
                return bool(frame.seg[row, col] == self.world.get_object(str(object_name)).body_id)
        return self._point_on_target(name, str(object_name), float(u), float(v), pose)

    def _point_on_target(self, vehicle: str, target: str, u: float, v: float, pose: Pose | None) -> bool:
        if self._truth_render == "full":
            render = self.world.render(vehicle, segmentation=True, vehicle_pose=pose)
            return self.world.point_on_target(render, target, u, v)
        return self.world.point_on_target_at(vehicle, target, u, v, pose)

    def dcRenderStats(self, reset: bool) -> dict[str, Any]:
        w, ring = self.world, self.frames
        with w.lock, ring.lock:
            out: dict[str, Any] = dict(vars(w.cameras.stats))
            out.update(
                frames=dict(ring.served),
                ring_hits=ring.hits,
                ring_misses=ring.misses,
                truth_render=self._truth_render,
                renderer=w.renderer,
                render_device=w.render_device,
            )
            if reset:
                w.cameras.stats = RenderStats()
                ring.served.clear()
                ring.hits = ring.misses = 0
        return out

    def dcSetTruthRender(self, mode: str) -> None:
        if str(mode) not in TRUTH_RENDER_MODES:
            raise ConfigError(f"truth render mode {mode!r} is not one of {TRUTH_RENDER_MODES}")
        self._truth_render = str(mode)

    def dcSetObjectPath(self, object_name: str, waypoints: list[list[float]], speed_m_s: float) -> bool:
        pts = [(float(a), float(b), float(c)) for a, b, c in waypoints]
        self.world.set_path(str(object_name), pts, float(speed_m_s))
        return True

    def dcGetObstacles(self) -> list[dict[str, Any]]:
        return [msgspec.to_builtins(o) for o in self.world.known_obstacles()]

    def dcGetObjectInfo(self, object_name: str) -> dict[str, Any]:
        o = self.world.get_object(str(object_name))
        return {
            "name": o.name,
            "cls": o.cls,
            "colour": o.colour,
            "asset": o.asset,
            "text": o.arg,
            "bbox_centre": o.bbox_centre_ned().tolist(),
            "bbox_half_m": list(o.bbox_half_m),
            "pose": o.pose.as_list(),
        }

    def dcGetVehicleSpawn(self, vehicle_name: str) -> dict[str, Any]:
        s = self.world.vehicle(str(vehicle_name)).model.spawn
        return pose_msg(s.x_m, s.y_m, s.z_m, s.yaw_deg)

    def dcGetSimTime(self) -> float:
        return self.world.clock.now()

    def dcSetClockSpeed(self, speed: float) -> None:
        self.world.set_clock_speed(float(speed))

    def dcSetSilenceLanding(self, vehicle_name: str, silence_s: float) -> float:
        return self.silence.set(str(vehicle_name), float(silence_s))

    def dcGetSilenceLanding(self, vehicle_name: str) -> float:
        return self.silence.get(str(vehicle_name))

    def table(self) -> HandlerTable:
        """Name -> handler of every extension, named explicitly as the stock families' tables are; a
        name documented in EXTENSIONS without a handler (or the reverse) is a wiring mistake."""
        table: HandlerTable = {
            "dcGroundTruth": self.dcGroundTruth,
            "dcPointOnTarget": self.dcPointOnTarget,
            "dcPointOnTargetAt": self.dcPointOnTargetAt,
            "dcPointOnTargetInFrame": self.dcPointOnTargetInFrame,
            "dcRenderStats": self.dcRenderStats,
            "dcSetTruthRender": self.dcSetTruthRender,
            "dcSetObjectPath": self.dcSetObjectPath,
            "dcGetObjectInfo": self.dcGetObjectInfo,
            "dcGetObstacles": self.dcGetObstacles,
            "dcGetVehicleSpawn": self.dcGetVehicleSpawn,
            "dcGetSimTime": self.dcGetSimTime,
            "dcSetClockSpeed": self.dcSetClockSpeed,
            "dcSetSilenceLanding": self.dcSetSilenceLanding,
            "dcGetSilenceLanding": self.dcGetSilenceLanding,
            "dcGetWorldEffects": self.dcGetWorldEffects,
        }
        if set(table) != set(EXTENSIONS):
            raise ConfigError(
                f"extension table and EXTENSIONS differ: {sorted(set(table) ^ set(EXTENSIONS))}"
            )
        return table
