"""Frames with ground truth for scoring and timing the baseline pilot: the built-in simulator renders
a named target (and, in some frames, a same-colour object of another class) from random drone poses;
the segmentation image is the truth for "is this point on the target".

It lives with the simulator because it drives the `World` and reads its truth; the pilot
(models.baseline) never imports it, and both the tests and benchmarks/bench_baseline.py use it."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.pose import Pose

if TYPE_CHECKING:  # the world imports PyBullet: only its callers pay for that
    import numpy as np

    from sim_bridge.sim.camera import Render
    from sim_bridge.sim.world import World

VEHICLES = {"car", "suv", "van", "truck"}
TARGET_CLASSES = ("car", "person", "van")
COLOURS = ("red", "blue", "green", "yellow", "orange", "purple")
OTHER_CLASS = {"car": "person", "van": "person", "person": "car"}


@dataclass
class SimCase:
    kind: str  # "target" (target in front, maybe with a distractor), "distractor_only", "empty"
    instruction: str
    image: np.ndarray  # BGR
    render: Render
    target: str | None
    distractor: str | None
    visible: bool
    distance_m: float | None
    drone_pose: Pose
    target_class: str
    colour: str  # of the target and of its distractor
    target_id: int | None  # segmentation body ids in `render`
    distractor_id: int | None
    pixel_count: int = 0
    box2d_px: tuple[int, int, int, int] | None = None


def _free_spot(
    rng: random.Random,
    occupied: list[tuple[float, float]],
    pose: Pose,
    bearing_deg: float,
    distance_m: float,
    max_abs_y: float,
) -> tuple[float, float] | None:
    yaw = math.radians(pose.yaw_deg + bearing_deg)
    x = pose.x_m + distance_m * math.cos(yaw)
    y = pose.y_m + distance_m * math.sin(yaw)
    if abs(y) > max_abs_y or any(math.hypot(x - ox, y - oy) < 4.0 for ox, oy in occupied):
        return None
    return x, y


def make_cases(
    world: World, n_target: int = 36, n_distractor_only: int = 8, n_empty: int = 6, seed: int = 7
) -> list[SimCase]:
    """Render `n_target` frames with the target in view (half with a same-colour distractor of
    another class), `n_distractor_only` with only the distractor, and `n_empty` with neither."""
    rng = random.Random(seed)
    scene_objects = list(world.objects.values())
    occupied = [(o.pose.x_m, o.pose.y_m) for o in scene_objects if o.cls in VEHICLES | {"person", "sign"}]
    cases: list[SimCase] = []
    plan = ["target"] * n_target + ["distractor_only"] * n_distractor_only + ["empty"] * n_empty
    vehicle_colours = {o.colour for o in scene_objects if o.cls in VEHICLES}
    person_colours = {o.colour for o in scene_objects if o.cls == "person"}
    for index, kind in enumerate(plan):
        while True:
            cls = TARGET_CLASSES[index % len(TARGET_CLASSES)]
            taken = vehicle_colours if cls in VEHICLES else person_colours
            colours = [c for c in COLOURS if c not in taken and c not in (vehicle_colours | person_colours)]
            colour = rng.choice(colours or [c for c in COLOURS if c not in taken])
            drone = Pose(
                rng.uniform(-5.0, 45.0),
                rng.uniform(-2.0, 2.0),
                -rng.uniform(2.0, 4.0),
                rng.uniform(-20.0, 20.0),
            )
            max_y = 2.0 if cls in VEHICLES else 5.5
            target_spot = _free_spot(
                rng, occupied, drone, rng.uniform(-30, 30), rng.uniform(6.0, 30.0), max_y
            )
            other = OTHER_CLASS[cls]
            other_spot = _free_spot(
                rng,
                occupied + ([target_spot] if target_spot else []),
                drone,
                rng.uniform(-35, 35),
                rng.uniform(6.0, 25.0),
                2.0 if other in VEHICLES else 5.5,
            )
            if target_spot is None or other_spot is None:
                continue
            with_distractor = kind == "distractor_only" or (kind == "target" and index % 2 == 0)
            break
        spawned: list[str] = []
        target_name = distractor_name = None
        if kind == "target":
            target_name = world.spawn(
                "baseline_target", f"{cls}@{colour}", Pose(*target_spot, 0.0, rng.uniform(-180, 180))
            ).name
            spawned.append(target_name)
        if with_distractor:
            distractor_name = world.spawn(
                "baseline_distractor", f"{other}@{colour}", Pose(*other_spot, 0.0, rng.uniform(-180, 180))
            ).name
            spawned.append(distractor_name)
        world.set_vehicle_pose("Drone1", drone)
        render = world.render("Drone1", segmentation=True)
        truth = world.target_truth("Drone1", target_name, render) if target_name else None
        cases.append(
            SimCase(
                kind=kind,
                instruction=rng.choice(
                    ["go to the {} {}", "fly to the {} {}", "find the {} {}", "follow the {} {}"]
                ).format(colour, cls),
                image=render.image_bgr,
                render=render,
                target=target_name,
                distractor=distractor_name,
                visible=bool(truth and truth.visible),
                distance_m=truth.distance_m if truth else None,
                pixel_count=truth.pixel_count if truth else 0,
                box2d_px=truth.box2d_px if truth else None,
                drone_pose=drone,
                target_class=cls,
                colour=colour,
                # Segmentation ids are kept with the render: cases are scored against the stored
                # masks, so the ids of bodies destroyed below need not stay valid in the world.
                target_id=world.get_object(target_name).body_id if target_name else None,
                distractor_id=world.get_object(distractor_name).body_id if distractor_name else None,
            )
        )
        for name in spawned:
            world.destroy(name)
    return cases


def on_body(case: SimCase, body_id: int | None, point: tuple[int, int]) -> bool:
    """Whether the image point (0-1000, image order) lies on body `body_id` in the case's render."""
    seg = case.render.seg
    if body_id is None or seg is None:
        return False
    h, w = seg.shape
    col = min(w - 1, max(0, int(point[0] * w / 1000.0)))
    row = min(h - 1, max(0, int(point[1] * h / 1000.0)))
    return bool(seg[row, col] == body_id)
