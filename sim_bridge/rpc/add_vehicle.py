"""AirSim's simAddVehicle checks, shared by the multirotor and the car servers (one set of rules)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.rpc.wire import PoseMsg, parse_pose
from sim_bridge.sim.world import VehicleSlot, World

log = logging.getLogger(__name__)


def add_vehicle(
    world: World,
    vehicle_name: str,
    vehicle_type: str,
    pose: PoseMsg,
    types: Collection[str],
    kind_word: str,
    configure: Callable[[VehicleSlot, Pose], None],
) -> bool:
    """Add `vehicle_name` at `pose` (world NED) as AirSim's addVehicle does: False for a type not in
    `types` (lower case; `kind_word` names them in the log) or a name in use; an error while render
    workers hold copies of the scene. `configure(slot, spawn)` finishes the new vehicle under the
    world's lock."""
    name, kind = str(vehicle_name), str(vehicle_type)
    if kind.lower() not in types:
        log.info("simAddVehicle(%s): vehicle type %r is not a %s", name, kind, kind_word)
        return False
    if world.render_pool is not None:
        raise ConfigError("simAddVehicle: render workers hold copies of the scene; use --render-workers 0")
    spawn = parse_pose(pose)
    with world.lock:
        if name in world.vehicles or name in world.objects:
            log.info("simAddVehicle(%s): the name is in use", name)
            return False
        world.add_vehicle(name, spawn)
        configure(world.vehicle(name), spawn)
    return True
