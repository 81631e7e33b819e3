"""AirSim's CollisionInfo as its server reports it (Unreal/Plugins/AirSim/Source/PawnSimApi.cpp,
AirLib/src/api/RpcLibServerBase.cpp):

- `simGetCollisionInfo` is PawnSimApi::getCollisionInfoAndReset: the last collision, then has_collided
  cleared; the other fields keep the last collision's values. A new contact sets it again (Unreal
  raises a hit on every tick the pawn pushes into something; here each tick a motion is blocked).
- Fields as PawnSimApi::onCollision fills them: impact_point and position in the vehicle's local NED
  frame (NedTransform::toLocalNed: relative to its spawn), object_id the other object's stencil value,
  i.e. its segmentation object id (-1 where none was set here).
- `simSetVehiclePose` keeps the info (PawnSimApi::setPose does not touch it); `reset` clears it
  (resetImplementation: state_ = initial_state_).
- `getMultirotorState().collision` is always the empty CollisionInfo: MultirotorApiBase::
  getMultirotorState never fills it (AirLib/include/vehicles/multirotor/api/MultirotorApiBase.hpp).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sim_bridge.rpc.wire import vec3
from sim_bridge.sim.world import World


def empty_collision() -> dict[str, Any]:
    """AirLib's CollisionInfo() on the wire (RpcLibAdaptorsBase::CollisionInfo)."""
    return {
        "has_collided": False,
        "penetration_depth": 0.0,
        "time_stamp": 0,
        "normal": vec3(0, 0, 0),
        "impact_point": vec3(0, 0, 0),
        "position": vec3(0, 0, 0),
        "object_name": "",
        "object_id": -1,
    }


@dataclass
class _Record:
    msg: dict[str, Any] = field(default_factory=empty_collision)
    seen: dict[str, Any] | None = None  # the model's collision last taken in (each collision is a new dict:
    # two in one tick share a time stamp)


class Collisions:
    """Per vehicle: the last collision taken from the flight model and whether it is unread."""

    def __init__(self, world: World, object_id: Callable[[int], int]) -> None:
        self.world = world
        self._object_id = object_id  # body id -> segmentation object id (-1: none)
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def _sync(self, name: str) -> _Record:
        """Take in a collision the world recorded since the last look (caller holds self._lock)."""
        rec = self._records.setdefault(name, _Record())
        with self.world.lock:
            model = self.world.vehicle(name).model
            info, spawn = model.collision, model.spawn
        if info is not None and info is not rec.seen:
            s = (spawn.x_m, spawn.y_m, spawn.z_m)
            impact, position = info["impact_point"], info["position"]
            rec.msg = {
                "has_collided": True,
                "penetration_depth": float(info["penetration_depth"]),
                "time_stamp": int(info["time_stamp"]),
                "normal": vec3(*info["normal"]),
                "impact_point": vec3(*(float(impact[i]) - s[i] for i in range(3))),
                "position": vec3(*(float(position[i]) - s[i] for i in range(3))),
                "object_name": str(info["object_name"]),
                "object_id": self._object_id(int(info["object_id"])),
            }
            rec.seen = info
        return rec

    def take(self, name: str) -> dict[str, Any]:
        """simGetCollisionInfo: the info, has_collided cleared after it is read."""
        with self._lock:
            rec = self._sync(name)
            msg = dict(rec.msg)
            rec.msg["has_collided"] = False
        return msg

    def keep(self, name: str) -> None:
        """Before the world forgets the model's collision (a teleport): keep it here, unread."""
        with self._lock:
            self._sync(name)

    def clear(self, name: str) -> None:
        """reset: the initial, empty info."""
        with self._lock:
            self._records[name] = _Record()
