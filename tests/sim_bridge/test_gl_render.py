"""The OpenGL renderer draws what TinyRenderer draws: same bodies at the same pixels, same colours.

Both renderers render the same worlds (same scene, seed, spawned assets and camera poses) and the
frames are compared pixel by pixel. They differ only at a few edge pixels (well under 0.1% of the
frame), on curved parts (TinyRenderer's tessellation of cylinders and spheres) and on drones:
TinyRenderer draws a body's collision shapes where the body has no visual shape, so it shows each
drone's collision sphere (radius 0.3 m, white) around its frame; the OpenGL renderer draws the
drone's parts only. Pixels showing a drone in either frame are left out.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.sim.assets import Part
from sim_bridge.sim.world import World

pytest.importorskip("moderngl")

ASSETS = [
    "car:KA4721@red",
    "suv@blue",
    "van@white",
    "truck@yellow",
    "person@green",
    "cyclist@orange",
    "sign:STOP 42@white",
    "plate:AB12CDE",
    "checkerboard:9x6:40",
]

SCENE_POSES = {
    "residential": [Pose(0, 0, -2, 0), Pose(10, 0, -3, 90), Pose(30, 3, -1.5, 10), Pose(60, -4, -6, 300)],
    "blocks": [Pose(0, 0, -2, 0), Pose(0, 0, -2, 90), Pose(5, -5, -4, 225)],
    "indoor": [Pose(0, 0, -1.2, 0), Pose(0, 0, -1.5, 135), Pose(1, 1, -1.0, 270)],
}


def _populate(world: World) -> list[str]:
    """Every asset kind in a ring 4-9 m around the first drone, plus the second drone 3 m ahead."""
    spawn = world.vehicle("Drone1").model.spawn
    names = []
    for i, asset in enumerate(ASSETS):
        a = 2 * math.pi * i / len(ASSETS)
        r = 4.0 + (i % 3) * 2.5
        pose = Pose(spawn.x_m + r * math.cos(a), spawn.y_m + r * math.sin(a), 0.0, math.degrees(a) + 180)
        names.append(world.spawn(f"t{i}", asset, pose).name)
    return names


def _frames(renderer: str, scene: str) -> tuple[list, list[int]]:
    """The frames at SCENE_POSES[scene] and the drones' body ids."""
    with World(scene, vehicles=2, renderer=renderer) as w:
        assert w.renderer == renderer
        w.pause(True)
        _populate(w)
        out = []
        for pose in SCENE_POSES[scene]:
            spawn = w.vehicle("Drone1").model.spawn
            at = Pose(spawn.x_m + pose.x_m, spawn.y_m + pose.y_m, pose.z_m, pose.yaw_deg)
            w.set_vehicle_pose("Drone1", at)
            ahead = (math.cos(math.radians(at.yaw_deg)), math.sin(math.radians(at.yaw_deg)))
            w.set_vehicle_pose("Drone2", Pose(at.x_m + 3 * ahead[0], at.y_m + 3 * ahead[1], at.z_m, 0.0))
            out.append(w.render("Drone1", segmentation=True, depth=True))
        return out, [slot.body_id for slot in w.vehicles.values()]


@pytest.mark.parametrize("scene", list(SCENE_POSES))
def test_gl_frames_match_tinyrenderer_frames(scene: str) -> None:
    (tiny, drones), (gl, drones_gl) = _frames("tiny", scene), _frames("gl", scene)
    assert drones == drones_gl
    for a, b in zip(tiny, gl, strict=True):
        assert a.image_bgr.shape == b.image_bgr.shape
        keep = ~(np.isin(a.seg, drones) | np.isin(b.seg, drones))
        assert keep.mean() > 0.9
        # the same body (or sky / ground) at nearly every pixel (measured: 99.92% or more)
        assert (a.seg == b.seg)[keep].mean() >= 0.998
        # every body that covers a few hundred pixels covers about as many in both
        ids, counts = np.unique(a.seg[keep], return_counts=True)
        for body, n in zip(ids, counts, strict=True):
            if n >= 400:
                assert abs(int((b.seg[keep] == body).sum()) - int(n)) <= 0.02 * n + 20, (body, n)
        # the same colours: curved parts aside, within a grey level (measured: mean 0.1-0.7 levels,
        # at most 0.7% of pixels more than 8 levels off)
        diff = np.abs(a.image_bgr.astype(np.int16) - b.image_bgr.astype(np.int16)).max(axis=2)[keep]
        assert np.mean(diff) <= 1.5
        assert np.mean(diff > 8) <= 0.015
        # the same depth where both see the same body
        same = (a.seg == b.seg) & (a.seg >= 0) & keep
        if same.any():
            assert np.median(np.abs(a.depth_planar_m[same] - b.depth_planar_m[same])) <= 0.005


def test_text_reads_the_same_way_round() -> None:
    """A plate's glyphs land on the same pixels in both renderers (not so if flipped or mirrored)."""
    crops = []
    for renderer in ("tiny", "gl"):
        with World("blocks", vehicles=1, renderer=renderer) as w:
            w.pause(True)
            w.spawn("car", "car:KA4721@blue", Pose(3.0, 0.0, 0.0, 180.0))
            w.set_vehicle_pose("Drone1", Pose(-0.5, 0.0, -0.9, 0.0))
            frame = w.render("Drone1").image_bgr
            crops.append(frame[240:320, 200:440].astype(np.float32).mean(axis=2))
    a, b = crops
    assert a.std() > 20  # dark glyphs on a light plate
    corr = np.corrcoef(a.ravel(), b.ravel())[0, 1]
    # measured: 0.99999 as drawn, 0.44 flipped either way
    assert corr > 0.99
    assert np.corrcoef(a.ravel(), b[::-1].ravel())[0, 1] < 0.6
    assert np.corrcoef(a.ravel(), b[:, ::-1].ravel())[0, 1] < 0.6


def test_back_faces_are_culled_as_tinyrenderer_culls_them() -> None:
    """A camera inside a box sees out of it in both renderers."""
    for renderer in ("tiny", "gl"):
        with World("blocks", vehicles=1, renderer=renderer) as w:
            w.pause(True)
            (crate,) = w.add_scenery(
                "crate", [Part("box", (4.0, 4.0, 4.0), (10.0, 0.0, 2.0), (0.8, 0.2, 0.2, 1))]
            )
            w.set_vehicle_pose("Drone1", Pose(9.5, 0.0, -1.2, 0.0))  # the camera inside the crate
            seg = w.render("Drone1").seg
            assert seg is not None
            assert not (seg == crate.body_id).any(), renderer
            w.set_vehicle_pose("Drone1", Pose(3.0, 0.0, -1.2, 0.0))  # and outside, it is there
            seg = w.render("Drone1").seg
            assert seg is not None
            assert (seg == crate.body_id).mean() > 0.2, renderer


def test_spawned_moved_and_destroyed_bodies_show_as_they_are() -> None:
    with World("blocks", vehicles=1, renderer="gl") as w:
        w.pause(True)
        w.set_vehicle_pose("Drone1", Pose(0.0, 0.0, -1.5, 0.0))
        car = w.spawn("car", "car@red", Pose(6.0, 0.0, 0.0, 90.0))
        seg = w.render("Drone1").seg
        assert seg is not None
        ahead = int((seg == car.body_id).sum())
        assert ahead > 2000
        w.set_object_pose("car", Pose(-6.0, 0.0, 0.0, 90.0))  # behind the camera
        seg = w.render("Drone1").seg
        assert seg is not None and not (seg == car.body_id).any()
        w.set_object_pose("car", Pose(6.0, 0.0, 0.0, 90.0))
        assert w.destroy("car")
        seg = w.render("Drone1").seg
        assert seg is not None and not (seg == car.body_id).any()


def test_frames_render_from_any_thread() -> None:
    """The simulator renders from its RPC threads: an EGL context is current in one thread at a time."""
    with World("blocks", vehicles=1, renderer="gl") as w:
        w.pause(True)
        first = w.render("Drone1").image_bgr
        results: list[np.ndarray] = []
        errors: list[BaseException] = []

        def render() -> None:
            try:
                results.append(w.render("Drone1").image_bgr)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=render) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not errors
        assert len(results) == 4
        for image in results:
            assert np.array_equal(image, first)


def test_the_environment_chooses_the_renderer_when_the_caller_does_not(monkeypatch) -> None:
    monkeypatch.setenv("DRONECATS_RENDERER", "tiny")
    with World("blocks", vehicles=1) as w:
        assert w.renderer == "tiny"
    with World("blocks", vehicles=1, renderer="gl") as w:  # an explicit choice wins
        assert w.renderer == "gl"
    monkeypatch.setenv("DRONECATS_RENDERER", "vulkan")
    with pytest.raises(ConfigError, match="renderer 'vulkan'"):
        World("blocks", vehicles=1)


def test_renderer_choice_is_checked() -> None:
    with pytest.raises(ConfigError, match="renderer 'vulkan'"):
        World("blocks", vehicles=1, renderer="vulkan")
    with World("blocks", vehicles=1, renderer="auto") as w:
        assert w.renderer in ("gl", "tiny")
        assert w.render_device


def test_without_an_egl_device_auto_falls_back_to_tinyrenderer_and_gl_refuses() -> None:
    """A machine with no EGL driver (libglvnd pointed at no vendor file): 'auto' renders with
    TinyRenderer and says so; 'gl' is refused with the reason."""
    code = (
        "from common.errors import ConfigError\n"
        "from sim_bridge.sim.world import World\n"
        "with World('blocks', vehicles=1) as w:\n"
        "    print('auto:', w.renderer, w.render('Drone1').image_bgr.shape)\n"
        "try:\n"
        "    World('blocks', vehicles=1, renderer='gl')\n"
        "except ConfigError as exc:\n"
        "    print('gl refused:', exc)\n"
    )
    env = {**os.environ, "__EGL_VENDOR_LIBRARY_FILENAMES": "/nonexistent/egl_vendor.json"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "auto: tiny (360, 640, 3)" in out.stdout
    assert "gl refused: the OpenGL renderer cannot start" in out.stdout
    assert "rendering with TinyRenderer" in out.stderr
