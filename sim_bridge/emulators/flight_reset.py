"""One emulated drone's flights on a long-lived `dronecats sim`: each new flight starts where the
server's printed URL says (`spawn=`), with a fresh pack, as if the drone had been carried back to its
launch point and its battery swapped.

Why reset rather than refuse a second flight: the printed URL is what every client is given (the
`tello://` and `mavlink://` adapters place their frame with its `spawn=`; PX4's home, and so MAVSDK's
and MAVProxy's local frame, is that spawn), and a user re-running a script expects the same start,
not a drone left 14 m away next to the target (the baseline pilot then declares at once). Refusing
would only make every user restart the server between runs.

When: the emulator calls `flight_ended()` when a flight is over on the ground (Tello: landed or
emergency; MAVLink: disarmed after being airborne) and `new_flight()` when the next one begins
(Tello: a new "command" session; MAVLink: arming). The vehicle goes back only if it is still on the
ground where that flight left it: a client that placed it since (simSetVehiclePose, AirSim's
`reset`) chose its start, and that choice stands. A vehicle served as both a Tello and an autopilot
(`--tello --mavlink`) has one flight record (`FlightReset.of`): a Tello flight's landing is the end of
a flight for the MAVLink client that arms next, too.

What: the vehicle's part of AirSim's `reset` (sim_bridge/rpc/session_api.py SessionApi.reset): the
World's teleport to the spawn (it cancels the running task, zeroes the velocity, the wind response
and the attitude), landed, and the pack replaced at the configured start charge. The rest of that
reset is AirSim-session state of every vehicle (API control, collision info, manual RC, sensors,
silence landing): an emulator's client has none of it, and another vehicle's flight must not end
because this one restarts.
"""

from __future__ import annotations

import logging
import math
import threading
import weakref

from common.pose import Pose, wrap_deg
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)

# Where "still where the flight left it" ends: a landed body does not move (ground friction holds it),
# so anything beyond this was put there by someone.
MOVED_M = 0.05
TURNED_DEG = 1.0

# the flight records, one per vehicle of a world, gone with the world
_RECORDS: weakref.WeakKeyDictionary[World, dict[str, FlightReset]] = weakref.WeakKeyDictionary()
_RECORDS_LOCK = threading.Lock()


class FlightReset:
    @classmethod
    def of(cls, world: World, vehicle: str) -> FlightReset:
        """The one flight record of `vehicle` in `world`, whichever emulator asks."""
        with _RECORDS_LOCK:
            per_vehicle = _RECORDS.setdefault(world, {})
            if vehicle not in per_vehicle:
                per_vehicle[vehicle] = cls(world, vehicle)
            return per_vehicle[vehicle]

    def __init__(self, world: World, vehicle: str) -> None:
        self.world = world
        self.vehicle = vehicle
        self.resets = 0  # how many flights started back at the spawn (tests and logs read it)
        self._ended_at: Pose | None = None
        self._lock = threading.Lock()  # the command thread and a manoeuvre's thread both end flights

    @property
    def spawn(self) -> Pose:
        return self.world.vehicle(self.vehicle).model.spawn

    def flight_ended(self) -> None:
        """The flight is over and the vehicle on the ground: remember where it was left."""
        with self._lock:
            self._ended_at = self.world.vehicle_pose(self.vehicle)

    def new_flight(self) -> bool:
        """A new flight begins: back to the spawn if the last flight left the vehicle where it still
        is, on the ground. True when it was reset."""
        with self._lock:
            ended, self._ended_at = self._ended_at, None
        if ended is None:
            return False
        with self.world.lock:
            model = self.world.vehicle(self.vehicle).model
            here = model.pose()
            moved_m = math.dist((here.x_m, here.y_m, here.z_m), (ended.x_m, ended.y_m, ended.z_m))
            if (
                not model.landed
                or moved_m > MOVED_M
                or abs(wrap_deg(here.yaw_deg - ended.yaw_deg)) > TURNED_DEG
            ):
                return False
            reset_vehicle(self.world, self.vehicle)
        self.resets += 1
        s = self.spawn
        log.info(
            "%s: new flight: back at the spawn %g,%g,%g,%g (the last one ended at %.2f,%.2f,%.2f,%.1f)",
            self.vehicle,
            s.x_m,
            s.y_m,
            s.z_m,
            s.yaw_deg,
            here.x_m,
            here.y_m,
            here.z_m,
            here.yaw_deg,
        )
        return True


def reset_vehicle(world: World, vehicle: str) -> None:
    """The vehicle's own part of AirSim's `reset`, for this vehicle alone (see the module docstring)."""
    with world.lock:
        model = world.vehicle(vehicle).model
        world.set_vehicle_pose(vehicle, model.spawn)  # cancels the task, stops it, places the body
        model.landed = True
        model.battery.replace()
