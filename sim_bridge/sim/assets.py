"""Spawnable assets: vehicles, people, cyclists, drones, signs, plates, checkerboards, and scenery parts.

Asset strings: ``KIND[:ARG][@COLOUR]`` with KIND one of ASSET_KINDS, e.g. ``car@red``,
``car:KA4721@blue`` (a car with that licence plate front and rear), ``sign:MAIN ST@white``,
``plate:AB123``, ``checkerboard:9x6:40`` (9 x 6 squares of 40 mm, i.e. OpenCV pattern size (8, 5)
inner corners, on a one-square white margin).

Geometry is described in the object's local PyBullet frame: X forward, Y left, Z up. Ground objects
(vehicles, people, signs, houses) have their origin at ground level under their centre; flying and
panel objects (drone, plate, checkerboard) at their centre. Inscriptions (plates, signs, checkerboard
faces) face the object's forward axis: to show one to a viewer with yaw Y, give it yaw Y + 180.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from common.errors import ConfigError
from sim_bridge.sim.textures import TextureCache, checkerboard_image, text_image, text_width_px

RGBA = tuple[float, float, float, float]

# Nameable colours (what an instruction may say) -> RGBA.
COLOURS: dict[str, RGBA] = {
    "red": (0.80, 0.08, 0.08, 1.0),
    "blue": (0.10, 0.25, 0.85, 1.0),
    "green": (0.10, 0.60, 0.15, 1.0),
    "yellow": (0.95, 0.85, 0.10, 1.0),
    "orange": (0.95, 0.50, 0.05, 1.0),
    "purple": (0.50, 0.15, 0.65, 1.0),
    "white": (0.95, 0.95, 0.95, 1.0),
    "black": (0.06, 0.06, 0.06, 1.0),
    "grey": (0.50, 0.50, 0.50, 1.0),
    "silver": (0.75, 0.76, 0.78, 1.0),
    "brown": (0.45, 0.28, 0.12, 1.0),
    "pink": (0.95, 0.55, 0.70, 1.0),
}
GLASS: RGBA = (0.12, 0.16, 0.22, 1.0)
TYRE: RGBA = (0.04, 0.04, 0.04, 1.0)
SKIN: RGBA = (0.85, 0.65, 0.50, 1.0)
TROUSERS: RGBA = (0.15, 0.18, 0.30, 1.0)
METAL: RGBA = (0.55, 0.55, 0.58, 1.0)

PLATE_SIZE_M = (0.52, 0.16)
PLATE_GLYPH_M = 0.10
SIGN_GLYPH_M = 0.14
TEXEL_M = 0.001  # text textures: 1 texel per millimetre


# A quad's texture coordinates per corner (Part.quad_corners) and its two triangles, counter-clockwise
# seen from the front.
QUAD_UVS = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
QUAD_TRIANGLES = (0, 1, 2, 0, 2, 3)


@dataclass(frozen=True)
class Part:
    """One primitive of a body, in the object's local PyBullet frame (X fwd, Y left, Z up), sizes in metres.

    box: size = full (x, y, z) extents; cylinder: size = (radius, length) along `axis`;
    sphere: size = (radius,); quad: size = (width, height), a textured rectangle facing +X or -X.
    """

    shape: str
    size: tuple[float, ...]
    pos: tuple[float, float, float]
    rgba: RGBA
    axis: str = "z"
    yaw_deg: float = 0.0  # rotation about local Z (counter-clockwise, PyBullet sense)
    texture: Path | None = None
    faces_back: bool = False  # quad faces -X instead of +X
    faces_up: bool = False  # quad lies in the X-Y plane facing +Z; size = (x extent, y extent)
    collide: bool = True

    def quad_corners(self) -> tuple[list[tuple[float, float, float]], tuple[float, float, float]]:
        """A quad's corners, in QUAD_UVS order (bottom-left, bottom-right, top-right, top-left as its
        viewer sees it, so a texture stands upright), and its normal, in the part's frame. Both
        renderers build the quad from these."""
        w, h = self.size
        if self.faces_up:
            corners = [(-w / 2, -h / 2, 0.0), (w / 2, -h / 2, 0.0), (w / 2, h / 2, 0.0), (-w / 2, h / 2, 0.0)]
            return corners, (0.0, 0.0, 1.0)
        if self.faces_back:  # seen from -X, the viewer's right is -Y
            corners = [(0.0, w / 2, -h / 2), (0.0, -w / 2, -h / 2), (0.0, -w / 2, h / 2), (0.0, w / 2, h / 2)]
            return corners, (-1.0, 0.0, 0.0)
        corners = [(0.0, -w / 2, -h / 2), (0.0, w / 2, -h / 2), (0.0, w / 2, h / 2), (0.0, -w / 2, h / 2)]
        return corners, (1.0, 0.0, 0.0)

    def half_extents(self) -> tuple[float, float, float]:
        """Half extents of this part's local-axis-aligned box (rotation by yaw_deg included)."""
        if self.shape == "box":
            hx, hy, hz = (s / 2 for s in self.size)
        elif self.shape == "sphere":
            hx = hy = hz = self.size[0]
        elif self.shape == "cylinder":
            r, half_len = self.size[0], self.size[1] / 2
            hx, hy, hz = {"x": (half_len, r, r), "y": (r, half_len, r), "z": (r, r, half_len)}[self.axis]
        elif self.shape == "quad" and self.faces_up:
            hx, hy, hz = self.size[0] / 2, self.size[1] / 2, 0.002
        elif self.shape == "quad":
            hx, hy, hz = 0.002, self.size[0] / 2, self.size[1] / 2
        else:
            raise ValueError(f"unknown part shape {self.shape!r}")
        if self.yaw_deg:
            c, s = abs(math.cos(math.radians(self.yaw_deg))), abs(math.sin(math.radians(self.yaw_deg)))
            hx, hy = c * hx + s * hy, s * hx + c * hy
        return (hx, hy, hz)

    def scaled(self, sx: float, sy: float, sz: float) -> Part:
        pos = (self.pos[0] * sx, self.pos[1] * sy, self.pos[2] * sz)
        if self.shape == "box":
            size: tuple[float, ...] = (self.size[0] * sx, self.size[1] * sy, self.size[2] * sz)
        elif self.shape == "sphere":
            size = (self.size[0] * (sx + sy + sz) / 3,)
        elif self.shape == "cylinder":
            radial = {"x": (sy + sz) / 2, "y": (sx + sz) / 2, "z": (sx + sy) / 2}[self.axis]
            axial = {"x": sx, "y": sy, "z": sz}[self.axis]
            size = (self.size[0] * radial, self.size[1] * axial)
        elif self.faces_up:
            size = (self.size[0] * sx, self.size[1] * sy)
        else:  # quad in the Y-Z plane
            size = (self.size[0] * sy, self.size[1] * sz)
        return replace(self, pos=pos, size=size)


@dataclass(frozen=True)
class AssetSpec:
    """What `World.spawn` builds: parts plus the labels the ground truth and instructions use."""

    kind: str
    cls: str
    colour: str
    arg: str
    parts: tuple[Part, ...]

    def local_bbox(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """(centre, half extents) of the local axis-aligned bounding box, in the local PyBullet frame."""
        lo = [math.inf] * 3
        hi = [-math.inf] * 3
        for part in self.parts:
            half = part.half_extents()
            for i in range(3):
                lo[i] = min(lo[i], part.pos[i] - half[i])
                hi[i] = max(hi[i], part.pos[i] + half[i])
        centre = tuple((a + b) / 2 for a, b in zip(lo, hi, strict=True))
        half_ext = tuple((b - a) / 2 for a, b in zip(lo, hi, strict=True))
        return centre, half_ext  # type: ignore[return-value]


def parse_asset(asset: str) -> tuple[str, str, str]:
    """'car:KA4721@blue' -> ('car', 'KA4721', 'blue'); colour '' when not given."""
    body, _, colour = asset.partition("@")
    kind, _, arg = body.partition(":")
    kind = kind.strip().lower()
    colour = colour.strip().lower()
    if kind not in ASSET_KINDS:
        raise ConfigError(f"unknown asset kind {kind!r} in {asset!r}; known: {sorted(ASSET_KINDS)}")
    if colour and colour not in COLOURS:
        raise ConfigError(f"unknown colour {colour!r} in {asset!r}; known: {sorted(COLOURS)}")
    return kind, arg, colour


def build_asset(
    asset: str, textures: TextureCache, scale: tuple[float, float, float] = (1, 1, 1)
) -> AssetSpec:
    kind, arg, colour = parse_asset(asset)
    builder, cls, default_colour = ASSET_KINDS[kind]
    colour = colour or default_colour
    parts = builder(arg, COLOURS[colour], textures)
    if tuple(scale) != (1, 1, 1):
        if min(scale) <= 0:
            raise ConfigError(f"asset {asset!r}: scale {tuple(scale)} must be > 0 on every axis")
        parts = [p.scaled(*scale) for p in parts]
    return AssetSpec(kind=kind, cls=cls, colour=colour, arg=arg, parts=tuple(parts))


def _box(size: tuple[float, float, float], pos: tuple[float, float, float], rgba: RGBA, **kw: object) -> Part:
    return Part("box", size, pos, rgba, **kw)  # type: ignore[arg-type]


def _wheels(xs: tuple[float, ...], half_track_m: float, radius_m: float, width_m: float = 0.25) -> list[Part]:
    return [
        Part("cylinder", (radius_m, width_m), (x, side * half_track_m, radius_m), TYRE, axis="y")
        for x in xs
        for side in (-1, 1)
    ]


def _plates(text: str, front_x_m: float, rear_x_m: float, z_m: float, textures: TextureCache) -> list[Part]:
    if not text:
        return []
    tex = _plate_texture(text, textures)
    w, h = PLATE_SIZE_M
    return [
        Part("quad", (w, h), (front_x_m + 0.01, 0.0, z_m), COLOURS["white"], texture=tex, collide=False),
        Part(
            "quad",
            (w, h),
            (rear_x_m - 0.01, 0.0, z_m),
            COLOURS["white"],
            texture=tex,
            faces_back=True,
            collide=False,
        ),
    ]


def _plate_texture(text: str, textures: TextureCache) -> Path:
    w_px, h_px = (round(s / TEXEL_M) for s in PLATE_SIZE_M)
    glyph_px = round(PLATE_GLYPH_M / TEXEL_M)
    return textures.path_for(
        f"plate:{text}", lambda: text_image(text.upper(), w_px, h_px, glyph_px, border_px=6)
    )


def _car(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    return [
        _box((4.4, 1.8, 0.7), (0.0, 0.0, 0.65), rgba),
        _box((2.2, 1.6, 0.5), (-0.2, 0.0, 1.25), rgba),
        _box((0.04, 1.5, 0.42), (0.92, 0.0, 1.24), GLASS, collide=False),
        _box((0.04, 1.5, 0.42), (-1.32, 0.0, 1.24), GLASS, collide=False),
        *_wheels((1.4, -1.4), 0.8, 0.33),
        *_plates(arg, 2.2, -2.2, 0.55, textures),
    ]


def _suv(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    return [
        _box((4.8, 1.95, 0.85), (0.0, 0.0, 0.83), rgba),
        _box((3.3, 1.85, 0.6), (-0.55, 0.0, 1.55), rgba),
        _box((0.04, 1.75, 0.5), (1.12, 0.0, 1.55), GLASS, collide=False),
        _box((0.04, 1.75, 0.5), (-2.22, 0.0, 1.55), GLASS, collide=False),
        *_wheels((1.5, -1.5), 0.85, 0.4, 0.3),
        *_plates(arg, 2.4, -2.4, 0.65, textures),
    ]


def _van(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    return [
        _box((4.2, 2.0, 1.9), (-0.5, 0.0, 1.3), rgba),
        _box((1.0, 2.0, 0.7), (2.1, 0.0, 0.75), rgba),
        _box((0.04, 1.85, 0.6), (1.62, 0.0, 1.55), GLASS, collide=False),
        *_wheels((1.8, -1.8), 0.9, 0.36),
        *_plates(arg, 2.6, -2.6, 0.6, textures),
    ]


def _truck(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    return [
        _box((7.5, 1.2, 0.3), (0.0, 0.0, 0.65), TYRE),
        _box((2.0, 2.5, 2.4), (2.75, 0.0, 1.75), rgba),
        _box((0.04, 2.3, 0.8), (3.77, 0.0, 2.4), GLASS, collide=False),
        _box((5.3, 2.5, 2.9), (-1.1, 0.0, 2.25), rgba),
        *_wheels((2.9, -1.0, -2.6), 1.1, 0.5, 0.35),
        *_plates(arg, 3.75, -3.75, 0.65, textures),
    ]


def _person(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    return [
        _box((0.25, 0.36, 0.85), (0.0, 0.0, 0.425), TROUSERS),
        _box((0.28, 0.46, 0.6), (0.0, 0.0, 1.15), rgba),
        Part("sphere", (0.12,), (0.0, 0.0, 1.6), SKIN),
    ]


def _cyclist(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    return [
        Part("cylinder", (0.34, 0.05), (0.55, 0.0, 0.34), TYRE, axis="y"),
        Part("cylinder", (0.34, 0.05), (-0.55, 0.0, 0.34), TYRE, axis="y"),
        _box((1.1, 0.06, 0.06), (0.0, 0.0, 0.62), METAL),
        _box((0.3, 0.3, 0.55), (-0.15, 0.0, 0.9), TROUSERS),
        _box((0.42, 0.42, 0.55), (0.0, 0.0, 1.42), rgba),
        Part("sphere", (0.12,), (0.1, 0.0, 1.82), SKIN),
    ]


def _drone(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    parts = [_box((0.22, 0.22, 0.1), (0.0, 0.0, 0.0), rgba)]
    parts += [
        _box((0.6, 0.04, 0.03), (0.0, 0.0, 0.02), METAL, yaw_deg=a, collide=False) for a in (45.0, -45.0)
    ]
    parts += [
        Part("cylinder", (0.11, 0.01), (x, y, 0.05), TYRE, collide=False)
        for x in (-0.21, 0.21)
        for y in (-0.21, 0.21)
    ]
    return parts


def _sign(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    text = arg.upper() or "SIGN"
    glyph_px = round(SIGN_GLYPH_M / TEXEL_M)
    width_m = max(0.5, text_width_px(text, glyph_px) * TEXEL_M + 0.2)
    height_m = 0.32
    dark = sum(rgba[:3]) < 1.6
    fg, bg = ((255, 255, 255) if dark else (0, 0, 0)), tuple(int(255 * c) for c in rgba[2::-1])
    w_px, h_px = round(width_m / TEXEL_M), round(height_m / TEXEL_M)
    tex = textures.path_for(
        f"sign:{text}:{bg}",
        lambda: text_image(text, w_px, h_px, glyph_px, fg_bgr=fg, bg_bgr=bg, border_px=8),  # type: ignore[arg-type]
    )
    panel_z = 2.0 + height_m / 2
    return [
        Part("cylinder", (0.04, 2.0), (-0.05, 0.0, 1.0), METAL),
        _box((0.03, width_m + 0.02, height_m + 0.02), (0.0, 0.0, panel_z), METAL),
        Part(
            "quad", (width_m, height_m), (0.017, 0.0, panel_z), COLOURS["white"], texture=tex, collide=False
        ),
        Part(
            "quad",
            (width_m, height_m),
            (-0.017, 0.0, panel_z),
            COLOURS["white"],
            texture=tex,
            faces_back=True,
            collide=False,
        ),
    ]


def _plate(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    w, h = PLATE_SIZE_M
    return [
        _box((0.01, w + 0.02, h + 0.02), (-0.006, 0.0, 0.0), METAL),
        Part("quad", (w, h), (0.0, 0.0, 0.0), COLOURS["white"], texture=_plate_texture(arg or "0", textures)),
    ]


def parse_checkerboard(arg: str) -> tuple[int, int, float]:
    """'9x6:40' -> (9 columns, 6 rows of squares, 0.040 m squares); a ':IMAGE' tail is the texture."""
    try:
        dims, _, rest = arg.partition(":")
        square, _, _image = rest.partition(":")
        cols, _, rows = dims.lower().partition("x")
        c, r, sq_m = int(cols), int(rows), float(square) / 1000.0
    except ValueError:
        expected = "COLSxROWS:SQUARE_MM[:IMAGE], e.g. 9x6:40"
        raise ConfigError(f"checkerboard {arg!r}: expected {expected}") from None
    if c < 2 or r < 2 or not 0.001 <= sq_m <= 1.0:
        raise ConfigError(f"checkerboard {arg!r}: need >= 2x2 squares of 1-1000 mm")
    return c, r, sq_m


def _checkerboard(arg: str, rgba: RGBA, textures: TextureCache) -> list[Part]:
    """COLSxROWS:SQUARE_MM squares on a one-square white margin; with ':IMAGE', that image file (e.g.
    `dronecats calibrate-board`'s PNG, the same layout) is the texture instead of the drawn one."""
    cols, rows, sq_m = parse_checkerboard(arg)
    image_path = arg.split(":", 2)[2] if arg.count(":") >= 2 else ""
    w, h = (cols + 2) * sq_m, (rows + 2) * sq_m
    if image_path:
        tex = Path(image_path)
        size = _image_size(tex)
        if size is None:
            raise ConfigError(f"checkerboard texture {image_path!r}: not a readable image")
        if abs(size[0] / size[1] - w / h) > 0.01 * w / h:
            raise ConfigError(
                f"checkerboard texture {image_path!r} is {size[0]}x{size[1]} px: a {cols}x{rows}-square "
                f"board on a one-square margin is {cols + 2}:{rows + 2}"
            )
    else:
        square_px = 48
        margin_px = square_px
        tex = textures.path_for(
            f"checkerboard:{cols}x{rows}:{square_px}",
            lambda: checkerboard_image(cols, rows, square_px, margin_px),
        )
    return [
        _box((0.01, w, h), (-0.006, 0.0, 0.0), METAL),
        Part("quad", (w, h), (0.0, 0.0, 0.0), COLOURS["white"], texture=tex),
    ]


def _image_size(path: Path) -> tuple[int, int] | None:
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    return None if image is None else (int(image.shape[1]), int(image.shape[0]))


def house_parts(
    x: float,
    y: float,
    width_m: float,
    depth_m: float,
    height_m: float,
    wall: RGBA,
    roof: RGBA,
    door_faces: int,
) -> list[Part]:
    """A house footprint centred at (x, y) (local PyBullet frame) with a flat-ish roof, door and windows.

    door_faces: +1 = the door faces +Y, -1 = faces -Y.
    """
    face_y = y + door_faces * (depth_m / 2 + 0.02)
    return [
        _box((width_m, depth_m, height_m), (x, y, height_m / 2), wall),
        _box((width_m + 0.6, depth_m + 0.6, 0.35), (x, y, height_m + 0.175), roof),
        _box((1.0, 0.04, 2.1), (x, face_y, 1.05), COLOURS["brown"], collide=False),
        _box((1.2, 0.04, 1.0), (x - width_m / 4 - 0.3, face_y, height_m * 0.62), GLASS, collide=False),
        _box((1.2, 0.04, 1.0), (x + width_m / 4 + 0.3, face_y, height_m * 0.62), GLASS, collide=False),
    ]


def tree_parts(x: float, y: float, height_m: float = 5.0) -> list[Part]:
    return [
        Part("cylinder", (0.18, height_m * 0.55), (x, y, height_m * 0.275), COLOURS["brown"]),
        _box((2.2, 2.2, height_m * 0.5), (x, y, height_m * 0.72), (0.13, 0.42, 0.12, 1.0), yaw_deg=20.0),
    ]


# kind -> (builder, class label, default colour)
ASSET_KINDS = {
    "car": (_car, "car", "silver"),
    "suv": (_suv, "suv", "black"),
    "van": (_van, "van", "white"),
    "truck": (_truck, "truck", "white"),
    "person": (_person, "person", "red"),
    "cyclist": (_cyclist, "cyclist", "yellow"),
    "drone": (_drone, "drone", "black"),
    "sign": (_sign, "sign", "white"),
    "plate": (_plate, "plate", "white"),
    "checkerboard": (_checkerboard, "checkerboard", "white"),
}


def flat(size_x_m: float, size_y_m: float, pos: tuple[float, float, float], rgba: RGBA) -> Part:
    """A horizontal rectangle (2 triangles) for ground layers.

    TinyRenderer scans a whole-screen bounding box for every triangle that crosses the camera plane, so a
    ground made of boxes (12 triangles each, most of them crossing) costs ~1 ms per triangle at 640x360.
    """
    return Part("quad", (size_x_m, size_y_m), pos, rgba, faces_up=True, collide=False)


def tiled(part: Part, tile_m: float) -> list[Part]:
    """Split a long box into tiles of at most tile_m along X and Y (keeps scenery triangles small)."""
    if part.shape != "box" or part.yaw_deg or (part.size[0] <= tile_m and part.size[1] <= tile_m):
        return [part]
    nx, ny = max(1, math.ceil(part.size[0] / tile_m)), max(1, math.ceil(part.size[1] / tile_m))
    sx, sy = part.size[0] / nx, part.size[1] / ny
    x0, y0 = part.pos[0] - part.size[0] / 2 + sx / 2, part.pos[1] - part.size[1] / 2 + sy / 2
    return [
        replace(part, size=(sx, sy, part.size[2]), pos=(x0 + i * sx, y0 + j * sy, part.pos[2]))
        for i in range(nx)
        for j in range(ny)
    ]
