"""The built-in simulator's OpenGL renderer: the same scene PyBullet holds, drawn through EGL.

PyBullet's TinyRenderer rasterises on one core inside the interpreter lock: about 40 ms per
640x360 frame of `residential`, most of the simulator's CPU with a fleet at 5 fps (issue 9). This
draws the same bodies with OpenGL 3.3 through EGL, headless: Mesa's llvmpipe on a machine with no
GPU (about 7 ms to draw and read back the same frame), the GPU's driver where there is one. No
window and no display are needed.

It is a drop-in for `getCameraImage(..., renderer=ER_TINY_RENDERER)`:
- the same view and projection matrices (PyBullet's, column-major), moved half a pixel to sample at
  pixel corners as TinyRenderer does, so pixels land where they did;
- back faces culled, as TinyRenderer culls them;
- the segmentation holds PyBullet body ids, -1 where no body covers the pixel;
- the depth buffer holds OpenGL's non-linear [0, 1] depth, as PyBullet's does;
- TinyRenderer's lighting (fixed world light, ambient 0.6, diffuse 0.35, specular 0.05, the same
  truncations), so colour thresholds tuned on TinyRenderer frames hold on these.

Geometry is kept per body in the body's own frame (its parts baked in at their link offsets); each
frame reads every body's base pose from PyBullet, so physics, teleports and spawns show as they are.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from common.errors import ConfigError
from sim_bridge.sim.assets import QUAD_TRIANGLES, QUAD_UVS, Part
from sim_bridge.sim.frames import rotation_from_pb_quat

log = logging.getLogger(__name__)

# TinyRenderer's light as PyBullet sets it when getCameraImage gets no lightDirection (world frame,
# Z up), and its specular exponent: fitted to TinyRenderer's faces of a white box (every face
# within one grey level; tests/sim_bridge/test_gl_render.py compares whole frames).
LIGHT_DIR_PB = (-0.426, 0.257, 0.863)
SPECULAR_EXPONENT = 2.4
CYLINDER_SEGMENTS = 24
SPHERE_RINGS, SPHERE_SEGMENTS = 12, 18

VERTEX_SHADER = """
#version 330
uniform mat4 proj;
uniform mat4 view;
uniform mat4 model;
uniform vec3 light_dir;
uniform float shininess;
in vec3 in_pos;
in vec3 in_normal;
in vec4 in_rgba;
in vec2 in_uv;
out float v_intensity;
out vec4 v_rgba;
out vec2 v_uv;
void main() {
    gl_Position = proj * view * model * vec4(in_pos, 1.0);
    // TinyRenderer's Shader::fragment lighting, per vertex: the faces here are flat (one normal per
    // face) but for spheres' and cylinders' sides, and per-pixel work is what costs on a CPU
    vec3 n = normalize(mat3(model) * in_normal);  // rotation only: sizes are baked into the vertices
    float ndotl = dot(n, light_dir);
    vec3 r = normalize(n * (2.0 * ndotl) - light_dir);
    float specular = pow(max(r.z, 0.0), shininess);
    float diffuse = max(0.0, ndotl);
    v_intensity = 0.6 + min(diffuse * 0.35 + specular * 0.05, 0.4);
    v_rgba = in_rgba;
    v_uv = in_uv;
}
"""

FRAGMENT_SHADER = """
#version 330
uniform sampler2D tex;
uniform int seg_id;
in float v_intensity;
in vec4 v_rgba;
in vec2 v_uv;
layout(location = 0) out vec4 f_colour;
layout(location = 1) out int f_seg;
void main() {
    // TinyRenderer's integer truncations: texel x intensity, then x the part's colour
    vec3 texel = floor(texture(tex, v_uv).rgb * 255.0 + 0.5);
    vec3 lit = floor(texel * v_intensity);
    f_colour = vec4(floor(lit * v_rgba.rgb) / 255.0, 1.0);
    f_seg = seg_id + 1;  // 0 is the cleared background: -1 once read back
}
"""


def pose_matrix(pos: Sequence[float], quat: Sequence[float]) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rotation_from_pb_quat(quat)
    m[:3, 3] = pos
    return m


def _box(size: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Triangles (positions, normals, uvs per vertex) of a box of full extents `size`, centred.

    Every triangle here and below winds counter-clockwise seen from outside: back faces are culled,
    as TinyRenderer culls them (a camera inside a box sees out of it)."""
    h = np.asarray(size, np.float64) / 2
    pos, nrm, uv = [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            u_axis, v_axis = [a for a in range(3) if a != axis]
            corners = []
            for du, dv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                c = np.zeros(3)
                c[axis] = sign * h[axis]
                c[u_axis] = du * h[u_axis]
                c[v_axis] = dv * h[v_axis]
                corners.append(c)
            n = np.zeros(3)
            n[axis] = sign
            # the corners run counter-clockwise about u x v; reversed where that points inwards
            outward = sign * np.cross(np.eye(3)[u_axis], np.eye(3)[v_axis])[axis] > 0
            for i in (0, 1, 2, 0, 2, 3) if outward else (0, 2, 1, 0, 3, 2):
                pos.append(corners[i])
                nrm.append(n)
                uv.append((0.5, 0.5))
    return np.array(pos), np.array(nrm), np.array(uv)


def _cylinder(radius: float, length: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A capped cylinder along Z, centred."""
    pos, nrm, uv = [], [], []
    angles = np.linspace(0.0, 2 * math.pi, CYLINDER_SEGMENTS + 1)
    z0, z1 = -length / 2, length / 2
    for a0, a1 in itertools.pairwise(angles):
        c0, s0, c1, s1 = math.cos(a0), math.sin(a0), math.cos(a1), math.sin(a1)
        p00, p01 = (radius * c0, radius * s0, z0), (radius * c0, radius * s0, z1)
        p10, p11 = (radius * c1, radius * s1, z0), (radius * c1, radius * s1, z1)
        n0, n1 = (c0, s0, 0.0), (c1, s1, 0.0)
        for p, n in ((p00, n0), (p10, n1), (p11, n1), (p00, n0), (p11, n1), (p01, n0)):
            pos.append(p)
            nrm.append(n)
        top = ((0.0, 0.0, z1), (radius * c0, radius * s0, z1), (radius * c1, radius * s1, z1))
        bottom = ((0.0, 0.0, z0), (radius * c1, radius * s1, z0), (radius * c0, radius * s0, z0))
        for cap, nz in ((top, 1.0), (bottom, -1.0)):
            for p in cap:
                pos.append(p)
                nrm.append((0.0, 0.0, nz))
    uv = [(0.5, 0.5)] * len(pos)
    return np.array(pos), np.array(nrm), np.array(uv)


def _sphere(radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pos, nrm = [], []

    def point(ring: int, seg: int) -> np.ndarray:
        theta = math.pi * ring / SPHERE_RINGS
        phi = 2 * math.pi * seg / SPHERE_SEGMENTS
        return np.array([math.sin(theta) * math.cos(phi), math.sin(theta) * math.sin(phi), math.cos(theta)])

    for ring in range(SPHERE_RINGS):
        for seg in range(SPHERE_SEGMENTS):
            a, b = point(ring, seg), point(ring + 1, seg)
            c, d = point(ring + 1, seg + 1), point(ring, seg + 1)
            for n in (a, b, c, a, c, d):
                pos.append(n * radius)
                nrm.append(n)
    uv = [(0.5, 0.5)] * len(pos)
    return np.array(pos), np.array(nrm), np.array(uv)


def _quad(part: Part) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The textured rectangle World._quad_visual gives PyBullet, as two triangles."""
    corners, normal = part.quad_corners()
    return (
        np.array([corners[i] for i in QUAD_TRIANGLES]),
        np.array([normal] * len(QUAD_TRIANGLES)),
        np.array([QUAD_UVS[i] for i in QUAD_TRIANGLES]),
    )


def part_triangles(part: Part) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, normals and uvs of a part in its own (link) frame."""
    if part.shape == "box":
        return _box(part.size)
    if part.shape == "cylinder":
        return _cylinder(part.size[0], part.size[1])
    if part.shape == "sphere":
        return _sphere(part.size[0])
    if part.shape == "quad":
        return _quad(part)
    raise ConfigError(f"unknown part shape {part.shape!r}")


def body_vertices(
    parts: Sequence[Part], link_frames: Sequence[tuple[Sequence[float], Sequence[float]]]
) -> list[tuple[str | None, np.ndarray]]:
    """Vertex arrays in the body's frame: one for the untextured parts, one per textured part."""
    plain: list[np.ndarray] = []
    textured: list[tuple[str | None, np.ndarray]] = []
    for part, (link_pos, link_quat) in zip(parts, link_frames, strict=True):
        pos, nrm, uv = part_triangles(part)
        rot = rotation_from_pb_quat(link_quat)
        pos = pos @ rot.T + np.asarray(link_pos)
        nrm = nrm @ rot.T
        rgba = np.broadcast_to(np.asarray(part.rgba, np.float64), (len(pos), 4))
        verts = np.hstack([pos, nrm, rgba, uv]).astype(np.float32)
        if part.texture is not None:
            textured.append((str(part.texture), verts))
        else:
            plain.append(verts)
    out: list[tuple[str | None, np.ndarray]] = []
    if plain:
        out.append((None, np.vstack(plain)))
    return out + textured


@dataclass
class _Body:
    draws: list[tuple[Any, Any]] = field(default_factory=list)  # (vertex array, texture or None)
    buffers: list[Any] = field(default_factory=list)


class GlRenderer:
    """OpenGL (EGL, headless) rendering of a PyBullet world's bodies; thread-safe, one frame at a time."""

    def __init__(self, load_texture: Callable[[str], np.ndarray]) -> None:
        """`load_texture(path)` gives an RGBA uint8 image, first row at the top (as files store it)."""
        import moderngl  # heavy, and absent where only TinyRenderer is wanted: imported here

        self._mgl: Any = moderngl  # its stubs type uniforms and settings loosely: used untyped
        self._lock = threading.Lock()
        self._ctx: Any = self._mgl.create_standalone_context(backend="egl")
        self.device = str(self._ctx.info.get("GL_RENDERER", "unknown"))
        self._prog: Any = self._ctx.program(vertex_shader=VERTEX_SHADER, fragment_shader=FRAGMENT_SHADER)
        self._prog["light_dir"].value = LIGHT_DIR_PB
        self._prog["shininess"].value = SPECULAR_EXPONENT
        self._prog["tex"].value = 0
        self._white = self._ctx.texture((1, 1), 4, bytes([255, 255, 255, 255]))
        self._load_texture = load_texture
        self._textures: dict[str, Any] = {}
        self._bodies: dict[int, _Body] = {}
        self._fbo: Any = None
        self._fbo_size = (0, 0)
        # a new context is current in the creating thread, and an EGL context can be current in one
        # thread only: entering and leaving it once leaves it current nowhere (glcontext's exit
        # makes no context current), so any thread may take it for a frame
        self._ctx.__enter__()
        self._ctx.__exit__(None, None, None)

    # ------------------------------------------------------------------ scene
    def add_body(
        self,
        body_id: int,
        parts: Sequence[Part],
        link_frames: Sequence[tuple[Sequence[float], Sequence[float]]],
    ) -> None:
        """Body `body_id` made of `parts`, each at its link frame (position, quaternion) in the body."""
        with self._current():
            body = _Body()
            for texture_path, verts in body_vertices(parts, link_frames):
                buf = self._ctx.buffer(verts.tobytes())
                # position, normal, colour, uv: as body_vertices packs them
                layout = (buf, "3f 3f 4f 2f", "in_pos", "in_normal", "in_rgba", "in_uv")
                vao = self._ctx.vertex_array(self._prog, [layout])
                tex = self._texture(texture_path) if texture_path is not None else None
                body.buffers.append(buf)
                body.draws.append((vao, tex))
            old = self._bodies.pop(body_id, None)
            if old is not None:
                self._release(old)
            self._bodies[body_id] = body

    def remove_body(self, body_id: int) -> None:
        with self._current():
            body = self._bodies.pop(body_id, None)
            if body is not None:
                self._release(body)

    @property
    def body_ids(self) -> list[int]:
        return list(self._bodies)

    def _texture(self, path: str) -> Any:
        if path not in self._textures:
            image = np.asarray(self._load_texture(path), np.uint8)
            if image.ndim != 3 or image.shape[2] != 4:
                raise ConfigError(f"texture {path} must be RGBA (H, W, 4), got shape {image.shape}")
            # OpenGL's first texture row is at v = 0, which the quads put at the bottom edge: upload
            # the image's bottom row first, so text reads as TinyRenderer draws it
            image = np.ascontiguousarray(image[::-1])
            tex = self._ctx.texture((image.shape[1], image.shape[0]), 4, image.tobytes())
            # TinyRenderer samples the nearest texel
            tex.filter = (self._mgl.NEAREST, self._mgl.NEAREST)
            tex.repeat_x = tex.repeat_y = False
            self._textures[path] = tex
        return self._textures[path]

    def _release(self, body: _Body) -> None:
        for vao, _ in body.draws:
            vao.release()
        for buf in body.buffers:
            buf.release()

    # ------------------------------------------------------------------ frames
    def render(
        self,
        width_px: int,
        height_px: int,
        view: Sequence[float],
        projection: Sequence[float],
        body_poses: dict[int, tuple[Sequence[float], Sequence[float]]],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rgba (H, W, 4) uint8, depth buffer (H, W) float32 in [0, 1], body ids (H, W) int32, -1 = none).

        `view` and `projection` are PyBullet's (column-major 4x4); `body_poses` maps each body to draw
        to its base (position, quaternion); bodies not named there are not drawn.
        """
        if width_px <= 0 or height_px <= 0:
            raise ConfigError(f"render size {width_px}x{height_px} must be positive")
        # PyBullet's images have their first row at the top, OpenGL's at the bottom: flipping clip-space
        # y draws upside down, so the rows read back come top first without a copy
        flip = np.diag([1.0, -1.0, 1.0, 1.0])
        # TinyRenderer samples each pixel at its corner, OpenGL at its centre: moving the image half a
        # pixel right and up (in the image) puts every edge where TinyRenderer puts it (measured:
        # body centroids agree to 0.01 px instead of differing by 0.4 px across and 0.5 px down)
        half_pixel = np.eye(4)
        half_pixel[0, 3], half_pixel[1, 3] = 1.0 / width_px, -1.0 / height_px
        proj = half_pixel @ flip @ np.asarray(projection, np.float64).reshape(4, 4).T
        with self._current():
            fbo = self._framebuffer(width_px, height_px)
            fbo.use()
            self._ctx.viewport = (0, 0, width_px, height_px)
            self._ctx.enable(self._mgl.DEPTH_TEST)
            self._ctx.enable(self._mgl.CULL_FACE)
            # the flipped y mirrors the image, which turns counter-clockwise front faces clockwise
            self._ctx.front_face = "cw"
            fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0, viewport=(0, 0, width_px, height_px))
            self._prog["proj"].write(proj.T.astype(np.float32).tobytes())
            self._prog["view"].write(np.asarray(view, np.float32).tobytes())
            for body_id, (pos, quat) in body_poses.items():
                body = self._bodies.get(body_id)
                if body is None:
                    continue
                self._prog["model"].write(pose_matrix(pos, quat).T.astype(np.float32).tobytes())
                self._prog["seg_id"].value = body_id
                for vao, tex in body.draws:
                    (tex or self._white).use(0)
                    vao.render()
            box = (0, 0, width_px, height_px)
            rgba = np.frombuffer(fbo.read(viewport=box, components=4, attachment=0), np.uint8)
            seg = np.frombuffer(fbo.read(viewport=box, components=1, attachment=1, dtype="i4"), np.int32)
            depth = np.frombuffer(fbo.read(viewport=box, components=1, attachment=-1, dtype="f4"), np.float32)
        return (
            rgba.reshape(height_px, width_px, 4).copy(),
            depth.reshape(height_px, width_px),
            seg.reshape(height_px, width_px) - 1,
        )

    def _framebuffer(self, width_px: int, height_px: int) -> Any:
        """One framebuffer, grown to the largest size asked; smaller frames use its lower-left corner."""
        w, h = self._fbo_size
        if width_px > w or height_px > h:
            if self._fbo is not None:
                for attachment in (*self._fbo.color_attachments, self._fbo.depth_attachment):
                    attachment.release()
                self._fbo.release()
            w, h = max(w, width_px), max(h, height_px)
            colour = self._ctx.renderbuffer((w, h), 4)
            seg = self._ctx.renderbuffer((w, h), 1, dtype="i4")
            depth = self._ctx.depth_renderbuffer((w, h))
            self._fbo = self._ctx.framebuffer([colour, seg], depth)
            self._fbo_size = (w, h)
        return self._fbo

    # ------------------------------------------------------------------ context
    def _current(self) -> _Current:
        return _Current(self)

    def close(self) -> None:
        with self._current():
            for body in self._bodies.values():
                self._release(body)
            self._bodies.clear()
            for tex in self._textures.values():
                tex.release()
            self._textures.clear()
        self._ctx.release()


class _Current:
    """Holds the renderer's lock and makes its context current in this thread meanwhile (EGL
    contexts are current per thread; the simulator renders from its RPC threads)."""

    def __init__(self, renderer: GlRenderer) -> None:
        self._r = renderer

    def __enter__(self) -> None:
        self._r._lock.acquire()
        try:
            self._r._ctx.__enter__()
        except BaseException:
            self._r._lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self._r._ctx.__exit__(*exc)
        finally:
            self._r._lock.release()
