"""The demo's episode record from its options: the scene, and a target that is what the instruction
names, placed where the drone starts looking. Options that cannot mean what they say are refused
(ConfigError) with the choices, before any flight.

    --scene residential|blocks   outdoor: drone at the origin facing north, target D m north (δ 5 m)
    --scene indoor               the living room: drone at (-5.5, 0) facing north, target D m on (δ 2.5 m)

The target is the instruction's class and colour (the asset's own colour when none is named). An
instruction the scene would make ambiguous, a scene object of the same class (and colour, when one
is named) not far beyond the target, is refused with the colours that would be unambiguous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from common.errors import ConfigError
from episodes.records import DEFAULT_DELTA_M, DroneStart, EpisodeRecord, SceneObject

SCENES = ("residential", "blocks", "indoor")
# Where the drone starts (x, y, yaw) and how far ahead a target may stand (the street, a corridor
# of the blocks up to the far signs, the living room).
START = {"residential": (0.0, 0.0, 0.0), "blocks": (0.0, 0.0, 0.0), "indoor": (-5.5, 0.0, 0.0)}
DISTANCE_RANGE_M = {"residential": (5.0, 40.0), "blocks": (5.0, 36.0), "indoor": (2.5, 6.5)}
DEFAULT_DISTANCE_M = {"residential": 25.0, "blocks": 25.0, "indoor": 4.0}
# People and bicycles are small: 25 m away they fill too little of the frame to be seen.
SMALL_CLASSES = ("person", "cyclist")
SMALL_DEFAULT_DISTANCE_M = 6.0
DEFAULT_INSTRUCTION = {
    "residential": "go to the red car",
    "blocks": "go to the red car",
    "indoor": "go to the blue person",
}
TARGET_CLASSES = {
    "outdoor": ("car", "suv", "van", "truck", "person", "cyclist"),
    "indoor": ("person", "cyclist"),
}
# A same-class scene object nearer the start than this (x the target distance, + a margin) competes
# with the target for "the nearest one that fits the words".
AMBIGUOUS_RANGE = 1.5
AMBIGUOUS_MARGIN_M = 10.0


@dataclass(frozen=True)
class DemoScene:
    record: EpisodeRecord
    distance_m: float


def demo_record(
    run_id: str, scene: str, instruction: str | None, distance_m: float | None, t_max_s: float, seed: int
) -> DemoScene:
    """The record the demo flies; ConfigError (naming the choices) when the options cannot hold."""
    from models.baseline.instruction import parse_instruction
    from sim_bridge.sim.assets import ASSET_KINDS

    if scene not in SCENES:
        raise ConfigError(f"--scene {scene!r}: choose {', '.join(SCENES)}")
    environment = "indoor" if scene == "indoor" else "outdoor"
    instruction = instruction or DEFAULT_INSTRUCTION[scene]
    if not math.isfinite(t_max_s) or t_max_s <= 0:
        raise ConfigError(f"--t-max-s {t_max_s:g}: must be > 0")
    try:
        target = parse_instruction(instruction)
    except ConfigError:
        raise ConfigError(
            f"--instruction {instruction!r} names no target the demo can place; say e.g. 'go to the "
            f"red car' ({environment} targets: {', '.join(TARGET_CLASSES[environment])})"
        ) from None
    low, high = DISTANCE_RANGE_M[scene]
    if distance_m is None:
        small = environment == "outdoor" and target.object_class in SMALL_CLASSES
        distance_m = SMALL_DEFAULT_DISTANCE_M if small else DEFAULT_DISTANCE_M[scene]
    if not math.isfinite(distance_m) or not low <= distance_m <= high:
        raise ConfigError(f"--distance-m {distance_m:g}: the {scene} scene has room for {low:g}-{high:g} m")
    if target.follow:
        raise ConfigError(
            f"--instruction {instruction!r}: the demo flies an approach to a parked target; "
            "moving targets are episodes (dronecats episodes new --task track)"
        )
    if target.object_class not in TARGET_CLASSES[environment]:
        raise ConfigError(
            f"--instruction {instruction!r}: no {target.object_class} in the {scene} demo; "
            f"{environment} targets: {', '.join(TARGET_CLASSES[environment])}"
        )
    colour = target.colour or ASSET_KINDS[target.object_class][2]
    sx, sy, yaw = START[scene]
    tx, ty = sx + distance_m * math.cos(math.radians(yaw)), sy + distance_m * math.sin(math.radians(yaw))
    _refuse_ambiguous(scene, seed, instruction, target.object_class, target.colour, (sx, sy), distance_m)
    record = EpisodeRecord(
        id=run_id,
        scene=scene,
        task_type="approach",
        instruction=instruction,
        environment=environment,  # type: ignore[arg-type]
        delta_m=DEFAULT_DELTA_M[environment],
        t_max_s=t_max_s,
        drones=[DroneStart("Drone1", (sx, sy, 0.0, yaw))],
        targets=[SceneObject("demo_target", target.object_class, (tx, ty, 0.0, 90.0), colour=colour)],
        flight_profile=environment,
        camera=environment,
        seed=seed,
    )
    return DemoScene(record, distance_m)


def _refuse_ambiguous(
    scene: str,
    seed: int,
    instruction: str,
    cls: str,
    colour: str | None,
    start: tuple[float, float],
    distance_m: float,
) -> None:
    from sim_bridge.sim.assets import COLOURS
    from sim_bridge.sim.world import World

    # Only the scene's objects are read: no OpenGL context (which would also load Mesa before an
    # in-process model's triton, and triton after Mesa crashes the process).
    world = World(scene, vehicles=1, seed=seed, renderer="tiny")
    try:
        same_class = [o for o in world.objects.values() if o.cls == cls]
    finally:
        world.close()
    reach_m = AMBIGUOUS_RANGE * distance_m + AMBIGUOUS_MARGIN_M
    rivals = [
        o
        for o in same_class
        if (colour is None or o.colour == colour)
        and math.hypot(o.pose.x_m - start[0], o.pose.y_m - start[1]) <= reach_m
    ]
    if not rivals:
        return
    taken = {o.colour for o in same_class}
    free = [c for c in COLOURS if c not in taken]
    seen = ", ".join(
        f"a {o.colour} {cls} {math.hypot(o.pose.x_m - start[0], o.pose.y_m - start[1]):.0f} m away"
        for o in rivals
    )
    raise ConfigError(
        f"--instruction {instruction!r} is ambiguous in the {scene} scene ({seen}); name a colour no "
        f"{cls} there wears: {', '.join(free)}"
    )
