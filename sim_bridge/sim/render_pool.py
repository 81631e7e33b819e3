"""Render worker processes for one world's cameras (`dronecats sim --render-workers K`).

A render holds the GIL for the whole frame (TinyRenderer ~35-60 ms at 640x360; the OpenGL
renderer ~11 ms, which makes workers matter much less), so in one process the renders of several
drones run one after another and every RPC (telemetry, setpoints) waits behind them. Each worker
here builds the same scene (same scene name and seed, same vehicle bodies at the same spawns) in its
own PyBullet instance, and cameras over it, and renders on request: a scene and cameras, no world
(no physics, no clock, no flight models). The main process keeps the physics, the clock and the
RPC, and waits for a render without holding the GIL or the world lock.

A request carries the scene's dynamic state at the moment it was taken (every object's asset, scale
and pose, every vehicle's pose): the worker spawns, destroys and moves its bodies to match, renders,
and maps its body ids in the segmentation back to the main world's ids by name.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import queue
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from common.camera import CameraProfile
from common.errors import VehicleError
from common.pose import Pose
from sim_bridge.sim.camera import Cameras, Render, RenderJob, SceneState, make_gl_renderer, place_vehicle_body
from sim_bridge.sim.gimbal import STABILISED, CameraMount
from sim_bridge.sim.multirotor import Multirotor
from sim_bridge.sim.pybullet_import import import_pybullet
from sim_bridge.sim.scene import Scene
from sim_bridge.sim.scenes import build_scene

log = logging.getLogger(__name__)

WORKER_START_TIMEOUT_S = 120.0


class RenderPool:
    """K worker processes, each with a copy of the world; `run` blocks the calling thread only."""

    def __init__(self, spec: SceneSpec, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"a render pool needs >= 1 worker, got {workers}")
        ctx = mp.get_context("spawn")  # never fork a process with PyBullet and threads in it
        self._procs: list[Any] = []
        self._idle: queue.Queue[Connection] = queue.Queue()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._alive = workers
        self.workers = workers
        conns = []
        for index in range(workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_worker_main, args=(child, spec), name=f"render-worker-{index}", daemon=True
            )
            proc.start()
            child.close()
            self._procs.append(proc)
            conns.append(parent)
        for index, conn in enumerate(conns):  # the workers build their worlds in parallel
            if not conn.poll(WORKER_START_TIMEOUT_S):
                self.close()
                raise VehicleError(
                    f"render worker {index} did not build its world in {WORKER_START_TIMEOUT_S} s"
                )
            status = conn.recv()
            if status != "ready":
                self.close()
                raise VehicleError(f"render worker {index} failed to start: {status}")
            self._idle.put(conn)

    def run(self, job: RenderJob) -> Render:
        """The Render (body ids in the main world's numbering), by the next idle worker."""
        conn = self._take()
        try:
            conn.send(job)
            ok, result = conn.recv()
        except (EOFError, OSError) as exc:
            with self._lock:
                self._alive -= 1  # its connection is not handed out again
            conn.close()
            raise VehicleError(f"a render worker died ({self._alive} of {self.workers} left): {exc}") from exc
        self._idle.put(conn)
        if not ok:
            raise VehicleError(f"render worker: {result}")
        assert isinstance(result, Render)
        return result

    def _take(self) -> Connection:
        while True:
            if self._closed.is_set():
                raise VehicleError("the render pool is closed")
            if self._alive <= 0:
                raise VehicleError(f"no render worker is left (all {self.workers} died)")
            try:
                return self._idle.get(timeout=0.5)
            except queue.Empty:
                continue  # all busy: wait on, unless the pool closed or its workers died meanwhile

    def close(self) -> None:
        self._closed.set()
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                break
            with contextlib.suppress(OSError):  # a worker that died already
                conn.send(None)
            conn.close()
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)


@dataclass(frozen=True)
class SceneSpec:
    """What a worker needs to build the same static scene with the same vehicle bodies."""

    scene: str
    seed: int
    vehicles: list[tuple[str, tuple[float, float, float, float]]]  # (name, spawn pose)
    camera: CameraProfile
    renderer: str = "tiny"  # the main world's renderer, so workers draw the same pixels
    camera_mount: CameraMount = STABILISED  # the vehicles' camera mount and gimbal


@dataclass
class MirrorVehicle:
    """A vehicle in a worker (a camera's Viewer): a flight model only placed, never flown."""

    model: Multirotor
    body_id: int
    camera: CameraProfile
    mount: CameraMount = STABILISED


def _worker_main(conn: Connection, spec: SceneSpec) -> None:
    try:
        mirror = _Mirror(spec)
    except Exception as exc:  # reported to the parent, which refuses to start
        conn.send(f"{type(exc).__name__}: {exc}")
        return
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            break
        if job is None:
            break
        try:
            conn.send((True, mirror.run(job)))
        except Exception as exc:
            log.exception("render job failed")
            conn.send((False, f"{type(exc).__name__}: {exc}"))
    mirror.scene.close()


class _Mirror:
    """A worker's scene and cameras, kept equal to the main world's state as each job describes it."""

    def __init__(self, spec: SceneSpec) -> None:
        p = import_pybullet()
        gl = make_gl_renderer(spec.renderer)  # before PyBullet's client, as the main world
        self.scene = Scene(p, gl)
        build_scene(self.scene, spec.scene, spec.seed)
        self.vehicles: dict[str, MirrorVehicle] = {}
        for name, (x, y, z, yaw) in spec.vehicles:
            spawn = Pose(x, y, z, yaw)
            body = self.scene.add_vehicle_body(name, spawn)
            self.vehicles[name] = MirrorVehicle(Multirotor(name, spawn), body, spec.camera, spec.camera_mount)
        self.cameras = Cameras(self.scene, self.vehicles, lambda: 0.0)
        self._poses: dict[str, tuple[float, ...]] = {}

    def sync(self, state: SceneState) -> np.ndarray:
        """Copy the state; returns the lookup table worker body id -> main body id."""
        scene = self.scene
        for name in [n for n in scene.objects if n not in state.objects]:
            scene.destroy(name)
            self._poses.pop(name, None)
        for name, (asset, scale, pose, _) in state.objects.items():
            if name not in scene.objects:
                if asset == "scenery":
                    raise VehicleError(f"scenery {name!r} is not in the worker's scene")
                spawned = scene.spawn(name, asset, Pose(*pose), scale)
                if spawned.name != name:
                    raise VehicleError(f"worker spawned {name!r} as {spawned.name!r}")
            elif self._poses.get(name) != pose:
                scene.set_object_pose(name, Pose(*pose))
            self._poses[name] = pose
        for name, (pose, _) in state.vehicles.items():
            if self._poses.get(name) != pose:
                v = self.vehicles[name]
                v.model.teleport(Pose(*pose))
                place_vehicle_body(scene, v)
                self._poses[name] = pose
        for name, (roll, pitch) in state.attitudes.items():  # after the poses: a teleport levels the body
            v = self.vehicles[name]
            a = v.model.attitude
            if (a.roll_rad, a.pitch_rad) != (roll, pitch):
                a.roll_rad, a.pitch_rad = roll, pitch
                place_vehicle_body(scene, v)
        pairs = [(scene.objects[n].body_id, main) for n, (_, _, _, main) in state.objects.items()]
        pairs += [(self.vehicles[n].body_id, main) for n, (_, main) in state.vehicles.items()]
        lut = np.full(max(b for b, _ in pairs) + 1 if pairs else 1, -1, np.int32)
        for body, main in pairs:
            lut[body] = main
        return lut

    def run(self, job: RenderJob) -> Render:
        lut = self.sync(job.state)
        pose = Pose(*job.vehicle_pose) if job.vehicle_pose is not None else None
        render = self.cameras.render(
            self.vehicles[job.vehicle],
            segmentation=True,
            depth=job.depth,
            camera=job.camera,
            vehicle_pose=pose,
        )
        assert render.seg is not None
        render.seg = _to_main_ids(render.seg, lut)
        return render


def _to_main_ids(seg: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Worker body ids -> the main world's; -1 (nothing) and -2 (ground) stay as they are."""
    out = seg.copy()
    bodies = (seg >= 0) & (seg < len(lut))
    out[bodies] = lut[seg[bodies]]
    return out
