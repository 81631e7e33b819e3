"""The commanding suite (issue 10, docs/episodes/README.md#the-commanding-suite): four drones on a
2 x 2 grid 2 m apart, three task types of ten episodes each, generated from a seed and accepted by the
pre-flight placement checks.

- plate (residential): four cars of one colour and class that differ only in their licence plates;
  "find the red car with the licence plate KX482".
- sign (blocks): four signs of one colour, one in each corridor, that differ only in their text.
- sign_sum (blocks): three red signs show one-digit numbers; each corridor's blue entrance sign shows
  a candidate sum (one is right); the goal is the yellow END sign at the end of the corridor whose
  entrance shows the sum (every corridor has an identical END sign).

Every look-alike is a same-colour, same-class distractor. Flying these needs a multi-drone runner
(one context, or commander + sub-agents); records only here.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

from common.pose import wrap_deg
from episodes.records import DEFAULT_DELTA_M, DEFAULT_T_MAX_S, DroneStart, EpisodeRecord, SceneObject
from episodes.suites import TARGET_COLOURS, Suite, SuiteEntry, _scene_colours, _xy, first_accepted

GRID_SPACING_M = 2.0
N_DRONES = 4
WORDS = ("MAPLE", "CEDAR", "BIRCH", "ASPEN", "ELM", "OAK", "PINE", "WILLOW", "HAZEL", "LARCH", "ROWAN")
LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"
COMMANDING_TASKS = ("plate", "sign", "sign_sum")
CORRIDORS = (0.0, 90.0, 180.0, 270.0)


def grid(base: tuple[float, float], yaw_deg: float) -> list[DroneStart]:
    """Four drones 2 m apart: two abreast, two behind, all facing yaw_deg."""
    starts = []
    for i, (back, right) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        x, y = _xy(yaw_deg, -back * GRID_SPACING_M, right * GRID_SPACING_M, base)
        starts.append(DroneStart(f"Drone{i + 1}", (round(x, 2), round(y, 2), 0.0, round(yaw_deg, 1))))
    return starts


def _plate(rng: random.Random) -> str:
    return "".join(rng.choice(LETTERS) for _ in range(2)) + "".join(
        rng.choice("0123456789") for _ in range(3)
    )


def _obj(obj_id: str, cls: str, xy: tuple[float, float], yaw: float, colour: str, text: str) -> SceneObject:
    return SceneObject(
        obj_id,
        cls,
        (round(xy[0], 2), round(xy[1], 2), 0.0, round(wrap_deg(yaw), 1)),
        colour=colour,
        inscription=text,
    )


def _record(
    task: str,
    index: int,
    scene: str,
    instruction: str,
    drones: list[DroneStart],
    objects: list[SceneObject],
    target: int,
) -> EpisodeRecord:
    target_obj = objects[target]
    others = [o for i, o in enumerate(objects) if i != target]
    return EpisodeRecord(
        id=f"{scene}-{task}-{index:02d}",
        scene=scene,
        task_type=task,  # type: ignore[arg-type]
        instruction=instruction,
        environment="outdoor",
        delta_m=DEFAULT_DELTA_M["outdoor"],
        t_max_s=DEFAULT_T_MAX_S["outdoor"],
        drones=drones,
        targets=[
            SceneObject(
                "ep_target",
                target_obj.class_,
                target_obj.pose,
                colour=target_obj.colour,
                inscription=target_obj.inscription,
            )
        ],
        distractors=others,
        structure="commander",
    )


def sample_plate(index: int, rng: random.Random, taken: dict[str, set[str]]) -> EpisodeRecord:
    colour = rng.choice([c for c in TARGET_COLOURS if c not in taken.get("car", set())])
    plates: list[str] = []
    while len(plates) < 4:
        p = _plate(rng)
        if p not in plates:
            plates.append(p)
    xs = sorted(rng.sample(range(16, 104, 11), 4))
    cars = [
        _obj(
            f"ep_lookalike_{i + 1}",
            "car",
            (x + rng.uniform(-1.5, 1.5), rng.choice((-1.0, 1.0))),
            rng.choice((0.0, 180.0)),
            colour,
            plates[i],
        )
        for i, x in enumerate(xs)
    ]
    target = rng.randrange(4)
    drones = grid((rng.uniform(-8.0, 0.0), -1.0), 0.0)
    text = f"Find the {colour} car with the licence plate {plates[target]} and go to it."
    return _record("plate", index, "residential", text, drones, cars, target)


def sample_sign(index: int, rng: random.Random) -> EpisodeRecord:
    colour = rng.choice([c for c in TARGET_COLOURS if c != "white"])
    words = rng.sample(WORDS, 4)
    signs = [
        _obj(
            f"ep_lookalike_{i + 1}", "sign", _xy(h, rng.uniform(18.0, 30.0), 3.0), h + 180.0, colour, words[i]
        )
        for i, h in enumerate(CORRIDORS)
    ]
    target = rng.randrange(4)
    drones = grid((1.0, -1.0), rng.choice(CORRIDORS))
    text = f"Find the {colour} sign that reads {words[target]} and go to it."
    return _record("sign", index, "blocks", text, drones, signs, target)


def sample_sign_sum(index: int, rng: random.Random) -> EpisodeRecord:
    numbers = [rng.randint(1, 9) for _ in range(3)]
    total = sum(numbers)
    candidates = {total}
    while len(candidates) < 4:
        candidates.add(max(1, total + rng.choice((-5, -4, -3, -2, -1, 1, 2, 3, 4, 5))))
    sums = rng.sample(sorted(candidates), 4)
    objects: list[SceneObject] = []
    number_corridors = rng.sample(CORRIDORS, 3)
    for i, (h, n) in enumerate(zip(number_corridors, numbers, strict=True)):
        objects.append(
            _obj(f"ep_number_{i + 1}", "sign", _xy(h, rng.uniform(9.0, 14.0), -3.0), h + 180.0, "red", str(n))
        )
    for i, (h, s) in enumerate(zip(CORRIDORS, sums, strict=True)):
        objects.append(_obj(f"ep_entrance_{i + 1}", "sign", _xy(h, 6.0, 3.0), h + 180.0, "blue", str(s)))
    goals = [
        _obj(f"ep_end_{i + 1}", "sign", _xy(h, 36.0, 0.0), h + 180.0, "yellow", "END")
        for i, h in enumerate(CORRIDORS)
    ]
    target = sums.index(total)
    drones = grid((1.0, -1.0), rng.choice(CORRIDORS))
    text = (
        "Three red signs show numbers. Read them, add them up, and go to the yellow END sign at the end "
        "of the corridor whose blue entrance sign shows the sum."
    )
    record = _record("sign_sum", index, "blocks", text, drones, goals, target)
    return EpisodeRecord(
        **{
            **{f: getattr(record, f) for f in record.__struct_fields__},
            "distractors": [*record.distractors, *objects],
        }
    )


def _sample(task: str, index: int, rng: random.Random, taken: dict[str, set[str]]) -> EpisodeRecord:
    if task == "plate":
        return sample_plate(index, rng, taken)
    if task == "sign":
        return sample_sign(index, rng)
    return sample_sign_sum(index, rng)


def generate_commanding(
    seed: int = 0,
    per_type: int = 10,
    on_reject: Callable[[EpisodeRecord, list[str]], None] | None = None,
) -> Suite:
    taken = _scene_colours("residential", 0)
    entries: list[SuiteEntry] = []
    for task in COMMANDING_TASKS:
        for index in range(1, per_type + 1):
            rng = random.Random(f"{seed}/commanding/{task}/{index}")
            sample = functools.partial(_sample, task, index, rng, taken)
            entries.append(first_accepted(sample, 200, task, on_reject))
    description = "plate, sign and sign_sum with four drones (commander and sub-agents)"
    return Suite("commanding", entries, seed, description)
