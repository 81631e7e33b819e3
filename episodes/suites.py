"""Episode suites: a named list of episode records, each with the start its author declared, generated
deterministically from a seed and accepted only when its pre-flight checks pass.

A suite file is JSON: {"name", "seed", "episodes": [{"record": EpisodeRecord, "expect": Expectation}]}.
`single` is the single-drone suite of issue 10: approach, search, track and search+track on the
residential and blocks scenes (10 each, 80), plus indoor approach and search (5 each, δ 2.5 m).
Every episode carries a same-colour distractor of another class and a same-class distractor of
another colour. The generator samples a layout, builds it in the simulator and keeps it only when
episodes.preflight accepts it; the same seed always gives the same suite.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from common.config import file_errors
from common.errors import ConfigError, RecordError
from common.pose import wrap_deg
from episodes.preflight import Expectation, check, expectation_for
from episodes.records import (
    DEFAULT_DELTA_M,
    DEFAULT_T_MAX_S,
    DroneStart,
    EpisodeRecord,
    SceneObject,
    record_from_dict,
)
from episodes.scenario import build_world

SINGLE_TASKS = ("approach", "search", "track", "search+track")
# Colours the instruction may name that no scene object of a target class already wears in a way that
# would make the instruction ambiguous (checked per scene against its parked vehicles).
TARGET_COLOURS = ("red", "blue", "green", "yellow", "orange", "purple", "pink")
VEHICLE_CLASSES = ("car", "suv", "van")
SPEED_M_S = {"outdoor": 0.3, "indoor": 0.15}
ROUTE_MARGIN = 1.05  # a route is longer than the target covers in T_max, by this factor
MAX_TRIES = 400


class SuiteEntry(msgspec.Struct, frozen=True):
    record: EpisodeRecord
    expect: Expectation


class Suite(msgspec.Struct, frozen=True):
    name: str
    episodes: list[SuiteEntry]
    seed: int = 0
    description: str = ""


def load_suite(path: str | Path) -> Suite:
    """A suite file, or a single episode record file (a one-episode suite)."""
    path = Path(path)
    with file_errors("suite", path, "JSON", msgspec.DecodeError, RecordError):
        data = msgspec.json.decode(path.read_bytes())
    if isinstance(data, dict) and "episodes" in data:
        entries = []
        for i, item in enumerate(data["episodes"]):
            if not isinstance(item, dict) or "record" not in item:
                raise RecordError(f"suite {path}: `episodes[{i}]` needs a `record` object")
            record = record_from_dict(item["record"], f"{path} episodes[{i}]")
            expect = (
                msgspec.convert(item["expect"], Expectation)
                if item.get("expect")
                else expectation_for(record)
            )
            entries.append(SuiteEntry(record, expect))
        ids = [e.record.id for e in entries]
        if len(set(ids)) != len(ids):
            raise RecordError(f"suite {path}: episode ids repeat")
        return Suite(str(data.get("name") or path.stem), entries, int(data.get("seed", 0)))
    record = record_from_dict(data, str(path))
    return Suite(record.id, [SuiteEntry(record, expectation_for(record))])


def save_suite(suite: Suite, path: str | Path) -> None:
    Path(path).write_bytes(msgspec.json.format(msgspec.json.encode(suite), indent=1) + b"\n")


# ---- layouts --------------------------------------------------------------------------------------
def _xy(heading_deg: float, along_m: float, lateral_m: float, origin: tuple[float, float] = (0.0, 0.0)):
    """A point `along` a heading and `lateral` to its right (world NED)."""
    h = math.radians(heading_deg)
    return (
        origin[0] + along_m * math.cos(h) - lateral_m * math.sin(h),
        origin[1] + along_m * math.sin(h) + lateral_m * math.cos(h),
    )


class _Corridor(msgspec.Struct, frozen=True):
    """A straight stretch the drone starts in, looking along `heading_deg`."""

    heading_deg: float
    start_along: tuple[float, float]  # drone start, metres along the heading (range)
    lane_m: float  # targets sit this far left or right of the centre line
    far_end_m: float  # along-distance where the open route turns (track)
    turn_right: bool  # the route turns this way at the far end


def _corridors(scene: str) -> list[_Corridor]:
    if scene == "residential":  # the street runs north; parked vehicles at ±2.9 m
        return [_Corridor(0.0, (-22.0, 8.0), 1.0, 0.0, False)]
    if scene == "blocks":  # four 8 m corridors from the plaza; blocks end 44 m out
        return [_Corridor(h, (-2.0, 0.0), 1.5, 48.0, True) for h in (0.0, 90.0, 180.0, 270.0)]
    if scene == "indoor":  # the living room, looking north from near the sofa
        return [_Corridor(0.0, (-6.5, -5.5), 0.0, 0.0, False)]
    raise RecordError(f"no suite layout for scene {scene!r}")


def _route(
    corridor: _Corridor, start: tuple[float, float], along_m: float, lateral_m: float, length_m: float
) -> list[tuple[float, float, float]]:
    """A one-way route from the target's place, away from the drone, `length_m` long."""
    first = _xy(corridor.heading_deg, along_m, lateral_m, start)
    if corridor.far_end_m <= 0:  # a straight street
        last = _xy(corridor.heading_deg, along_m + length_m, lateral_m, start)
        return [(first[0], first[1], 0.0), (last[0], last[1], 0.0)]
    straight = max(0.0, corridor.far_end_m - along_m)
    corner = _xy(corridor.heading_deg, corridor.far_end_m, lateral_m, (0.0, 0.0))
    side = corridor.heading_deg + (90.0 if corridor.turn_right else -90.0)
    end = _xy(side, max(1.0, length_m - straight), 0.0, corner)
    return [(first[0], first[1], 0.0), (corner[0], corner[1], 0.0), (end[0], end[1], 0.0)]


def _scene_colours(scene: str, seed: int) -> dict[str, set[str]]:
    """class -> colours worn by the scene's own named objects (to keep instructions unambiguous)."""
    from sim_bridge.sim.world import World

    world = World(scene, vehicles=1, seed=seed)
    try:
        taken: dict[str, set[str]] = {}
        for obj in world.objects.values():
            taken.setdefault(obj.cls, set()).add(obj.colour)
        return taken
    finally:
        world.close()


def _instruction(task: str, colour: str, cls: str, rng: random.Random) -> str:
    noun = f"{colour} {cls}"
    if task in ("track", "search+track"):
        return rng.choice((f"follow the {noun}", f"track the {noun}", f"go to the {noun}"))
    if task == "search":
        return rng.choice((f"find the {noun}", f"search for the {noun}", f"go to the {noun}"))
    return rng.choice((f"go to the {noun}", f"fly to the {noun}", f"approach the {noun}"))


def sample_record(
    scene: str, task: str, index: int, rng: random.Random, taken: dict[str, set[str]], world_seed: int = 0
) -> EpisodeRecord:
    """One candidate layout (not yet checked)."""
    environment = "indoor" if scene == "indoor" else "outdoor"
    delta_m = DEFAULT_DELTA_M[environment]
    corridor = rng.choice(_corridors(scene))
    indoor = environment == "indoor"
    start_along = rng.uniform(*corridor.start_along)
    start_lateral = rng.uniform(-0.8, 0.8) if indoor else rng.uniform(-1.5, 1.5)
    start = _xy(corridor.heading_deg, start_along, start_lateral)
    if indoor:
        cls = "person"
        distance = rng.uniform(3.5, 6.5)
        lateral = rng.uniform(-1.2, 1.2)
    else:
        cls = rng.choice(VEHICLE_CLASSES)
        distance = rng.uniform(10.0, 22.0)
        lateral = rng.choice((-1.0, 1.0)) * corridor.lane_m
    free = [c for c in TARGET_COLOURS if c not in taken.get(cls, set())]
    colour = rng.choice(free)
    along = start_along + distance
    target_xy = _xy(corridor.heading_deg, along, lateral)
    target_yaw = wrap_deg(corridor.heading_deg + rng.choice((0.0, 180.0)) + rng.uniform(-15.0, 15.0))
    moving = task in ("track", "search+track")
    path = speed = None
    if moving:
        speed = SPEED_M_S[environment]
        length = speed * DEFAULT_T_MAX_S[environment] * ROUTE_MARGIN
        path = _route(corridor, (0.0, 0.0), along, lateral, length)
        target_yaw = corridor.heading_deg  # it drives along its route
    # Distractors: same colour, another class; same class, another colour. Away from the target and
    # off its route (the other lane), somewhere the drone may see them on the way.
    other_classes = ["person", "cyclist"] if not indoor else ["cyclist"]
    other_classes += [c for c in VEHICLE_CLASSES if c != cls and colour not in taken.get(c, set())]
    if indoor:
        other_classes = ["sign"]
    same_colour_cls = rng.choice(other_classes)
    other_colour = rng.choice([c for c in TARGET_COLOURS if c != colour and c not in taken.get(cls, set())])
    d_along = start_along + rng.uniform(0.4, 1.4) * distance
    d_lateral = -lateral if lateral else rng.choice((-1.5, 1.5))
    if same_colour_cls in ("person", "cyclist") and not indoor:
        d_lateral = math.copysign(5.2 if scene == "residential" else 3.0, d_lateral)  # on the pavement
    colour_xy = _xy(corridor.heading_deg, d_along, d_lateral)
    c_along = start_along + (
        distance + rng.choice((-1.0, 1.0)) * rng.uniform(6.0, 10.0) if not indoor else distance
    )
    c_lateral = -lateral if not indoor else (lateral + rng.choice((-1.5, 1.5)))
    class_xy = _xy(corridor.heading_deg, c_along, c_lateral)
    facing = math.degrees(math.atan2(target_xy[1] - start[1], target_xy[0] - start[0]))
    start_yaw = wrap_deg(facing + rng.uniform(-10.0, 10.0) + (180.0 if task.startswith("search") else 0.0))
    inscription = "EXIT" if same_colour_cls == "sign" else None
    tag = task.replace("+", "_")
    return EpisodeRecord(
        id=f"{scene}-{tag}-{index:02d}",
        scene=scene,
        task_type=task,  # type: ignore[arg-type]
        instruction=_instruction(task, colour, cls, rng),
        environment=environment,  # type: ignore[arg-type]
        delta_m=delta_m,
        t_max_s=DEFAULT_T_MAX_S[environment],
        drones=[DroneStart("Drone1", (start[0], start[1], 0.0, round(start_yaw, 1)))],
        targets=[
            SceneObject(
                "ep_target",
                cls,
                (round(target_xy[0], 2), round(target_xy[1], 2), 0.0, round(target_yaw, 1)),
                colour=colour,
                path=[tuple(round(v, 2) for v in p) for p in path] if path else None,  # type: ignore[misc]
                speed_m_s=speed,
            )
        ],
        distractors=[
            SceneObject(
                "ep_same_colour",
                same_colour_cls,
                (round(colour_xy[0], 2), round(colour_xy[1], 2), 0.0, round(rng.uniform(-180, 180), 1)),
                colour=colour,
                inscription=inscription,
            ),
            SceneObject(
                "ep_same_class",
                cls,
                (
                    round(class_xy[0], 2),
                    round(class_xy[1], 2),
                    0.0,
                    round(target_yaw + 180.0 * rng.randint(0, 1), 1),
                ),
                colour=other_colour,
            ),
        ],
        flight_profile="indoor" if indoor else "outdoor",
        camera="indoor" if indoor else "outdoor",
        seed=world_seed,
    )


def generate(
    plan: list[tuple[str, str, int]],
    seed: int = 0,
    name: str = "suite",
    on_reject: Callable[[EpisodeRecord, list[str]], None] | None = None,
) -> Suite:
    """Episodes for (scene, task, count) items, each sampled until its pre-flight checks pass."""
    entries: list[SuiteEntry] = []
    for scene, task, count in plan:
        taken = _scene_colours(scene, 0)
        for index in range(1, count + 1):
            # One stream per episode: changing one episode's checks never reshuffles the others.
            rng = random.Random(f"{seed}/{scene}/{task}/{index}")
            entries.append(_accepted(scene, task, index, rng, taken, on_reject))
    return Suite(name, entries, seed)


def _accepted(
    scene: str,
    task: str,
    index: int,
    rng: random.Random,
    taken: dict[str, set[str]],
    on_reject: Callable[[EpisodeRecord, list[str]], None] | None,
) -> SuiteEntry:
    return first_accepted(
        lambda: sample_record(scene, task, index, rng, taken), MAX_TRIES, f"{scene} {task}", on_reject
    )


def first_accepted(
    sample: Callable[[], EpisodeRecord],
    tries: int,
    what: str,
    on_reject: Callable[[EpisodeRecord, list[str]], None] | None,
) -> SuiteEntry:
    """The first of up to `tries` sampled records whose world passes the pre-flight checks."""
    for _ in range(tries):
        record = sample()
        expect = expectation_for(record)
        world = build_world(record)
        try:
            report = check(world, record, expect)
        finally:
            world.close()
        if report.ok:
            return SuiteEntry(record, expect)
        if on_reject is not None:
            on_reject(record, report.problems)
    raise RecordError(f"no {what} layout passed the pre-flight checks in {tries} tries")


def single_plan(per_type: int = 10, indoor_per_type: int = 5) -> list[tuple[str, str, int]]:
    plan = [(scene, task, per_type) for scene in ("residential", "blocks") for task in SINGLE_TASKS]
    plan += [("indoor", task, indoor_per_type) for task in ("approach", "search")]
    return [item for item in plan if item[2] > 0]


SUITES: dict[str, Callable[[], list[tuple[str, str, int]]]] = {
    "single": single_plan,
    "single-outdoor": lambda: single_plan(10, 0),
    "smoke": lambda: [("residential", "approach", 2), ("residential", "search", 1)],
}


def open_suite(
    spec: str, seed: int = 0, only: str | None = None, say: Callable[[str], None] | None = None
) -> Suite:
    """A suite file, record file or built-in suite name (generated from `seed`), cut to the
    comma-separated episode ids of `only` when given; a ConfigError names what is wrong (an unknown
    suite, an unknown id and its close matches)."""
    if Path(spec).is_file():
        suite = load_suite(spec)
    elif spec in SUITES:
        if say is not None:
            say(f"generating the built-in suite {spec!r} (seed {seed}) ...")
        suite = generate(SUITES[spec](), seed=seed, name=spec)
    else:
        raise ConfigError(f"{spec!r} is neither a file nor a built-in suite ({', '.join(sorted(SUITES))})")
    if only is None:
        return suite
    wanted = [part.strip() for part in only.split(",") if part.strip()]
    problem = unknown_ids(wanted, [e.record.id for e in suite.episodes])
    if problem:
        raise ConfigError(f"--only: {problem}")
    return Suite(suite.name, [e for e in suite.episodes if e.record.id in set(wanted)], suite.seed)


def unknown_ids(wanted: list[str], known: list[str]) -> str | None:
    """None when every id is in the suite; else one line naming each unknown id and its close matches."""
    import difflib

    if not wanted:
        return "no episode ids given"
    parts = []
    for episode_id in wanted:
        if episode_id in known:
            continue
        close = difflib.get_close_matches(episode_id, known, n=3, cutoff=0.6)
        parts.append(
            f"unknown episode id {episode_id!r}" + (f" (did you mean {', '.join(close)}?)" if close else "")
        )
    if not parts:
        return None
    sample = ", ".join(known[:3]) + (", ..." if len(known) > 3 else "")
    return "; ".join(parts) + f" (the suite's {len(known)} ids: {sample})"


def iter_ids(suite: Suite, repeat: int = 1) -> Iterator[tuple[SuiteEntry, str]]:
    """(entry, run directory name) for every run of the suite, `repeat` times each."""
    for entry in suite.episodes:
        for k in range(repeat):
            yield entry, entry.record.id if repeat == 1 else f"{entry.record.id}-r{k + 1}"
