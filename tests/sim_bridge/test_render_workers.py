"""`World(render_workers=K)` / `dronecats sim --render-workers K`: renders in worker processes that copy
the scene's state, identical to rendering in-process, without holding the world lock while they run."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

from common.errors import ConfigError, VehicleError
from common.pose import Pose
from sim_bridge.sim.world import World


def _same_changes(w: World) -> None:
    """Spawns, moves, a destroy and vehicle moves: what the workers must follow."""
    w.spawn("target", "car:AB123@red", Pose(15.0, 0.0, 0.0, 90.0))
    w.spawn("walker", "person@blue", Pose(9.0, 1.0, 0.0, 0.0))
    w.spawn("gone", "truck@white", Pose(20.0, -3.0, 0.0, 0.0))
    w.set_vehicle_pose("Drone1", Pose(0.0, 0.0, -2.0, 0.0))
    w.set_vehicle_pose("Drone2", Pose(6.0, 1.5, -2.5, 30.0))


def test_worker_renders_equal_in_process_renders() -> None:
    with (
        World("residential", vehicles=2) as local,
        World("residential", vehicles=2, render_workers=1) as pooled,
    ):
        for w in (local, pooled):
            w.pause(True)
            _same_changes(w)
        for step in range(3):
            a, b = local.render("Drone1", depth=True), pooled.render("Drone1", depth=True)
            assert np.array_equal(a.image_bgr, b.image_bgr)
            assert np.array_equal(a.seg, b.seg)  # in the main world's body ids
            assert np.allclose(a.depth_planar_m, b.depth_planar_m)
            assert (a.time_s, a.vehicle_pose, a.camera_yaw_deg) == (
                b.time_s,
                b.vehicle_pose,
                b.camera_yaw_deg,
            )
            ta, tb = local.target_truth("Drone1", "target"), pooled.target_truth("Drone1", "target")
            assert (ta.pixel_count, ta.visible, ta.box2d_px) == (tb.pixel_count, tb.visible, tb.box2d_px)
            assert ta.visible
            rows, cols = np.nonzero(a.seg == local.objects["target"].body_id)
            on = ((cols[0] + 0.5) * 1000 / 640, (rows[0] + 0.5) * 1000 / 360)
            assert local.point_on_target_at("Drone1", "target", *on)
            assert pooled.point_on_target_at("Drone1", "target", *on)
            for w in (local, pooled):  # the scene changes between renders
                w.set_object_pose("walker", Pose(9.0, 1.0 - step, 0.0, 45.0 * step))
                w.set_vehicle_pose("Drone2", Pose(6.0, 1.5 - step, -2.5, 30.0))
                if step == 0:
                    w.destroy("gone")
                w.advance(0.1)
        pose = Pose(3.0, 0.5, -3.0, -10.0)
        a, b = local.render("Drone1", vehicle_pose=pose), pooled.render("Drone1", vehicle_pose=pose)
        assert np.array_equal(a.image_bgr, b.image_bgr) and np.array_equal(a.seg, b.seg)
        assert pooled.render_stats.full == local.render_stats.full
        assert pooled.render_stats.crop == local.render_stats.crop


def test_the_world_lock_is_free_while_a_worker_renders() -> None:
    with World("blocks", vehicles=1, render_workers=1) as w:
        w.pause(True)
        pool = w.render_pool
        assert pool is not None
        free: list[bool] = []
        run = pool.run

        def probing_run(job):  # another thread (an RPC, the physics) tries the lock meanwhile
            def probe() -> None:
                got = w.lock.acquire(timeout=5.0)
                if got:
                    w.lock.release()
                free.append(got)

            t = threading.Thread(target=probe)
            t.start()
            t.join()
            return run(job)

        pool.run = probing_run  # type: ignore[method-assign]
        w.render("Drone1")
        w.render("Drone1", vehicle_pose=Pose(1.0, 0.0, -2.0, 90.0))
        assert free == [True, True]


def test_render_workers_must_not_be_negative() -> None:
    with pytest.raises(ConfigError, match="render_workers=-1 must be >= 0"):
        World("blocks", vehicles=1, render_workers=-1)


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def test_sim_server_with_render_workers_serves_frames_and_truth_and_stops_them() -> None:
    airsim = pytest.importorskip("airsim")
    from tests.support.processes import sim_server

    before = set(_children(os.getpid()))
    with sim_server("--scene", "residential", "--vehicles", "2", "--render-workers", "2") as port:
        sims = [pid for pid in _children(os.getpid()) if pid not in before]
        workers = [w for pid in sims for w in _children(pid)]
        assert len(workers) >= 2  # the two workers (and multiprocessing's resource tracker)
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
        c.confirmConnection()
        c.simSetVehiclePose(airsim.Pose(airsim.Vector3r(5.0, 0.0, -2.0)), True, "Drone1")
        car = c.simSpawnObject(
            "w_car", "car@blue", airsim.Pose(airsim.Vector3r(15.0, 0.0, 0.0)), airsim.Vector3r(1, 1, 1)
        )
        frames = []

        def grab(name: str) -> None:  # one client per thread: the airsim client is not thread-safe
            own = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
            frames.append(
                own.simGetImages([airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)], name)[0]
            )

        threads = [threading.Thread(target=grab, args=(name,)) for name in ("Drone1", "Drone2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (
            sorted((f.width, f.height, len(f.image_data_uint8)) for f in frames)
            == [(640, 360, 640 * 360 * 3)] * 2
        )
        truth = c.client.call("dcGroundTruth", "Drone1", car)
        assert truth["visible"] is True and truth["pixel_count"] > 500
        stats = c.client.call("dcRenderStats", False)
        assert stats["full"] == 2 and stats["crop"] == 1  # crops render in the server process
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.1)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    for pid in alive:  # do not leave them behind even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not alive, "render workers outlived the simulator"


def test_a_dead_worker_is_an_error_not_a_hang() -> None:
    with World("blocks", vehicles=1, render_workers=1) as w:
        w.pause(True)
        pool = w.render_pool
        assert pool is not None
        w.render("Drone1")
        for proc in pool._procs:
            proc.kill()
            proc.join(5)
        with pytest.raises(VehicleError, match="a render worker died"):
            w.render("Drone1")
        with pytest.raises(VehicleError, match="no render worker is left"):
            w.render("Drone1")
        assert w.target_truth("Drone1", "sign_north").pixel_count >= 0  # crops render in-process still


def test_a_worker_builds_a_scene_and_cameras_not_a_world() -> None:
    """No module a render worker imports reaches sim_bridge.sim.world (no render_pool <-> world
    circle): read from the sources, every import (also those inside functions or for types only)."""
    import ast

    sim = Path(__file__).resolve().parents[2] / "sim_bridge" / "sim"

    def imports(module: str) -> set[str]:
        tree = ast.parse((sim / f"{module}.py").read_text())
        found = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        return {m.rsplit(".", 1)[1] for m in found if m.startswith("sim_bridge.sim.")}

    seen, todo = set(), ["render_pool"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(imports(module))
    assert "world" not in seen, sorted(seen)
    assert {"scene", "camera", "scenes"} <= seen
