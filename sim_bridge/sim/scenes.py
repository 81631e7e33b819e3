"""The three built-in scenes: `residential` (a street), `blocks` (four corridors with signs) and `indoor`.

Static scenery is merged into a few multi-link bodies (the renderer's cost grows with bodies and
triangles); vehicles, people and signs that an instruction could name are separate, named objects so
that they can serve as targets or distractors. Layout variation (colours of parked cars) follows the seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.sim.assets import Part, house_parts, tree_parts
from sim_bridge.sim.ground import GroundMap, rgba_to_bgr

if TYPE_CHECKING:
    from sim_bridge.sim.scene import Scene

GRASS = (0.30, 0.50, 0.25, 1.0)
ASPHALT = (0.22, 0.22, 0.23, 1.0)
PAVEMENT = (0.62, 0.62, 0.60, 1.0)
KERB = (0.75, 0.75, 0.72, 1.0)
FLOOR = (0.60, 0.48, 0.35, 1.0)
WALL = (0.88, 0.86, 0.80, 1.0)


@dataclass
class SceneInfo:
    name: str
    spawns: list[Pose]
    description: str


def _box(
    size: tuple[float, float, float], pos: tuple[float, float, float], rgba: tuple[float, ...], **kw: object
) -> Part:
    return Part("box", size, pos, rgba, **kw)  # type: ignore[arg-type]


def _spawn_grid(points: list[tuple[float, float]], yaw_deg: float = 0.0) -> list[Pose]:
    return [Pose(x, y, 0.0, yaw_deg) for x, y in points]


def residential(world: Scene, seed: int) -> SceneInfo:
    """A 140 m street running north (+x): road, kerbs, pavements, houses and trees both sides, parked cars."""
    rng = random.Random(seed)
    # local PyBullet frame: +Y is west, i.e. NED y = -Y
    g = GroundMap(rgba_to_bgr(GRASS))
    g.add(-30.0, 130.0, -4.0, 4.0, ASPHALT)
    g.add(-30.0, 130.0, 4.0, 4.2, KERB)
    g.add(-30.0, 130.0, -4.2, -4.0, KERB)
    g.add(-30.0, 130.0, 4.2, 6.7, PAVEMENT)
    g.add(-30.0, 130.0, -6.7, -4.2, PAVEMENT)
    world.ground = g
    wall_colours = [
        (0.85, 0.78, 0.65, 1.0),
        (0.80, 0.70, 0.60, 1.0),
        (0.90, 0.88, 0.82, 1.0),
        (0.70, 0.75, 0.80, 1.0),
    ]
    roof_colours = [(0.45, 0.18, 0.15, 1.0), (0.30, 0.30, 0.32, 1.0)]
    for side, label in ((1, "west"), (-1, "east")):
        parts: list[Part] = []
        for i in range(8):
            x = 5.0 + 15.0 * i
            parts += house_parts(
                x,
                side * 14.0,
                10.0,
                8.0,
                rng.choice((5.5, 6.0, 6.5)),
                rng.choice(wall_colours),
                rng.choice(roof_colours),
                door_faces=-side,
            )
        world.add_scenery(f"houses_{label}", parts)
        trees: list[Part] = []
        for i in range(8):
            trees += tree_parts(12.5 + 15.0 * i, side * 7.5, rng.choice((4.5, 5.0, 5.5)))
        world.add_scenery(f"trees_{label}", trees)
    # Parked vehicles along both kerbs (NED y: +east). They are named distractors/targets.
    kinds = ["car", "car", "suv", "van", "car", "truck", "suv", "car"]
    colours = ["red", "blue", "white", "black", "silver", "green", "yellow", "grey"]
    for i, kind in enumerate(kinds):
        east = i % 2 == 0
        x = 18.0 + 11.0 * i
        y = 2.9 if east else -2.9
        if kind == "truck":
            y = 2.6 if east else -2.6
        world.spawn(
            f"parked_{kind}_{i + 1}",
            f"{kind}:{_plate_text(rng)}@{rng.choice(colours)}",
            Pose(x, y, 0.0, 0.0 if east else 180.0),
        )
    world.spawn("pedestrian_1", "person@blue", Pose(30.0, 5.2, 0.0, 90.0))
    world.spawn("pedestrian_2", "person@orange", Pose(62.0, -5.6, 0.0, -90.0))
    world.spawn("street_sign_1", "sign:MAPLE ST@green", Pose(40.0, 6.2, 0.0, 180.0))
    world.spawn("street_sign_2", "sign:OAK AVE@blue", Pose(95.0, -6.2, 0.0, 180.0))
    return SceneInfo(
        "residential",
        _spawn_grid([(0, 0), (0, 2), (0, -2), (-3, 0), (-3, 2), (-3, -2), (-6, 0), (-6, 2)]),
        "a street running north with houses, trees and parked vehicles",
    )


def _plate_text(rng: random.Random) -> str:
    letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return "".join(rng.choice(letters) for _ in range(2)) + "".join(
        rng.choice("0123456789") for _ in range(3)
    )


def blocks(world: Scene, seed: int) -> SceneInfo:
    """A plaza at the origin with four 8 m wide corridors (north, east, south, west), a sign at each end."""
    world.ground = GroundMap(rgba_to_bgr(PAVEMENT))
    half_w, length, height = 4.0, 40.0, 6.0
    size = length
    centre = half_w + size / 2
    quadrant_colours = [
        (0.75, 0.35, 0.30, 1.0),
        (0.35, 0.55, 0.75, 1.0),
        (0.55, 0.70, 0.40, 1.0),
        (0.80, 0.72, 0.40, 1.0),
    ]
    parts = [
        _box((size, size, height), (sx * centre, sy * centre, height / 2), quadrant_colours[i])
        for i, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, -1), (-1, 1)))
    ]
    world.add_scenery("blocks", parts)
    end = half_w + length - 2.0
    for name, text, pose in (
        ("sign_north", "NORTH", Pose(end, 0.0, 0.0, 180.0)),
        ("sign_east", "EAST", Pose(0.0, end, 0.0, -90.0)),
        ("sign_south", "SOUTH", Pose(-end, 0.0, 0.0, 0.0)),
        ("sign_west", "WEST", Pose(0.0, -end, 0.0, 90.0)),
    ):
        world.spawn(name, f"sign:{text}@white", pose)
    return SceneInfo(
        "blocks",
        _spawn_grid([(0, 0), (0, 2), (0, -2), (2, 0), (-2, 0), (2, 2), (-2, -2), (2, -2)]),
        "a plaza with four corridors and a sign at the end of each",
    )


def indoor(world: Scene, seed: int) -> SceneInfo:
    """A 16 x 10 m single-storey house interior: living room, kitchen, bedroom, hall (no ceiling)."""
    world.ground = GroundMap(rgba_to_bgr(GRASS))
    world.ground.add(-8.0, 8.0, -5.0, 5.0, FLOOR)
    h, t = 2.8, 0.15
    # Local frame: X north in [-8, 8], Y west in [-5, 5]. Doorways are 1.0 m gaps.
    walls = [
        _box((16.0, t, h), (0.0, 5.0, h / 2), WALL),
        _box((16.0, t, h), (0.0, -5.0, h / 2), WALL),
        _box((t, 10.0, h), (8.0, 0.0, h / 2), WALL),
        _box((t, 10.0, h), (-8.0, 0.0, h / 2), WALL),
        # partition at X = 2 (living room south of it), doorway at Y in [-0.5, 0.5]
        _box((t, 4.5, h), (2.0, 2.75, h / 2), WALL),
        _box((t, 4.5, h), (2.0, -2.75, h / 2), WALL),
        # bedroom/kitchen split at Y = 0 north of X = 2, doorway near the partition
        _box((4.5, t, h), (5.75, 0.0, h / 2), WALL),
    ]
    world.add_scenery("walls", walls)
    wood, fabric, white = (0.55, 0.38, 0.22, 1.0), (0.35, 0.40, 0.55, 1.0), (0.92, 0.92, 0.92, 1.0)
    furniture = [
        _box((0.9, 2.2, 0.45), (-7.2, 2.5, 0.225), fabric),  # sofa seat
        _box((0.25, 2.2, 0.5), (-7.6, 2.5, 0.7), fabric),  # sofa back
        _box((1.2, 0.7, 0.45), (-5.5, 2.5, 0.225), wood),  # coffee table
        _box((1.6, 0.9, 0.75), (-2.0, -3.0, 0.375), wood),  # dining table
        _box((0.6, 3.0, 1.8), (-4.0, -4.6, 0.9), wood),  # shelf along the east wall
        _box((2.0, 1.6, 0.5), (6.5, 3.5, 0.25), white),  # bed (north-west room)
        _box((3.0, 0.6, 0.9), (5.5, -4.6, 0.45), white),  # kitchen counter
        _box((0.7, 0.7, 1.8), (7.5, -4.5, 0.9), (0.8, 0.8, 0.82, 1.0)),  # fridge
    ]
    world.add_scenery("furniture", furniture)
    world.spawn("person_1", "person@red", Pose(-2.0, -1.8, 0.0, 180.0))
    world.spawn("sign_kitchen", "sign:KITCHEN@white", Pose(1.8, 1.2, 0.0, 180.0), scale=(0.6, 0.6, 0.6))
    return SceneInfo(
        "indoor",
        _spawn_grid([(-5.5, 0.0), (-5.5, 1.0), (-5.5, -1.0), (-6.5, 0.0)]),
        "a house interior: living room, dining area, kitchen and bedroom",
    )


SCENES = {"residential": residential, "blocks": blocks, "indoor": indoor}


def build_scene(world: Scene, name: str, seed: int) -> SceneInfo:
    if name not in SCENES:
        raise ConfigError(f"unknown scene {name!r}; built-in scenes: {sorted(SCENES)}")
    return SCENES[name](world, seed)
