"""Set an episode record up in the built-in simulator: the scene, the drones at their start poses, the
targets and distractors spawned by their ids, moving ones on their paths.

The same spawn list drives a `dronecats sim` server over the AirSim API (episodes.hil); here it
builds an in-process World for lock-step runs and pre-flight checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from common.pose import Pose
from episodes.records import EpisodeRecord, SceneObject

if TYPE_CHECKING:
    from sim_bridge.sim.world import World

# Take-off altitude per environment: above the parked vehicles outdoors, below the 2.8 m walls indoors.
TAKEOFF_ALTITUDE_M = {"outdoor": 3.0, "indoor": 1.5, "real": 1.5}


def asset_string(obj: SceneObject) -> str:
    """The simulator's asset string (sim_bridge.sim.assets): KIND[:TEXT][@COLOUR]."""
    text = f":{obj.inscription}" if obj.inscription else ""
    colour = f"@{obj.colour}" if obj.colour else ""
    return f"{obj.class_}{text}{colour}"


def object_pose(obj: SceneObject) -> Pose:
    return Pose.from_list(list(obj.pose))


def start_pose(record: EpisodeRecord, index: int = 0) -> Pose:
    return Pose.from_list(list(record.drones[index].start_pose))


def takeoff_altitude_m(record: EpisodeRecord) -> float:
    return TAKEOFF_ALTITUDE_M[record.environment]


def build_world(record: EpisodeRecord) -> World:
    """A paused World with the record's scene, drones at their start poses and objects spawned."""
    from sim_bridge.sim.world import World

    world = World(
        record.scene,
        vehicles=[d.name for d in record.drones],
        seed=record.seed,
        spawns=[start_pose(record, i) for i in range(len(record.drones))],
    )
    try:
        world.pause(True)
        spawn_objects(world, record)
    except BaseException:
        world.close()
        raise
    return world


def spawn_objects(world: World, record: EpisodeRecord) -> None:
    """Spawn the record's targets and distractors by their ids; moving ones start on their paths.

    Object ids are used as simulator names; an id that clashes with a scene object is an error (the
    verifier and the truth adapters look targets up by id)."""
    from common.errors import ConfigError

    for obj in (*record.targets, *record.distractors):
        spawned = world.spawn(obj.id, asset_string(obj), object_pose(obj))
        if spawned.name != obj.id:
            raise ConfigError(
                f"episode {record.id}: object id {obj.id!r} clashes with a {record.scene} scene object"
            )
        if obj.moving:
            assert obj.path is not None and obj.speed_m_s is not None
            world.set_path(obj.id, [tuple(p) for p in obj.path], obj.speed_m_s)  # type: ignore[misc]
