"""`moveByRC` and `moveByManual`: remote-control sticks through the API, as SimpleFlight takes them.

AirLib (MultirotorRpcLibServer.cpp binds both):
- `moveByRC(rcdata)`: SimpleFlightApi::moveByRC stores the RC data (setRCData); getMultirotorState's
  `rc_data` reports the last one (getRCData).
- `moveByManual(vx_max, vy_max, z_min, duration, drivetrain, yaw_mode)`
  (MultirotorApiBase::moveByManual): a task that, every command period (SimpleFlight: 50 Hz) until
  `duration` has passed, reads the last RC data and, when it is valid and not older than 0.1 s (or
  has no time stamp), flies moveByVelocityZ with
      v = (pitch * vy_max / 10000, roll * vx_max / 10000, 0) turned into the body frame of the attitude
      the task started with, z = throttle / 10000 * z_min + the current z,
  and the yaw mode's `yaw_or_rate` plus yaw * 100 / 10000. (AirLib's scale is kMaxRCValue = 10000;
  the Python client's sticks are -1..1, so a full stick asks for 1/10000 of the maxima.) It returns
  True when the duration ran out, False when another command replaced it. No RC trims are applied
  (AirLib subtracts them only after a trim calibration, which the RPC cannot start).
The drivetrain is not applied (as in the other motion calls of this server: yaw follows the yaw mode).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from common.frames import yaw_rotation_ned
from sim_bridge.rpc.server import release_order
from sim_bridge.sim.multirotor import YawMode
from sim_bridge.sim.world import World

MAX_RC_VALUE = 10000.0  # MultirotorApiBase::moveByManual's kMaxRCValue
MAX_MESSAGE_AGE_S = 0.1  # its kMaxMessageAge
COMMAND_PERIOD_S = 1.0 / 50  # SimpleFlightApi::getCommandPeriod
WAIT_WALL_S = 24 * 3600.0

RCDataMsg = dict[str, float | int | bool]  # RCData: pitch, roll, throttle, yaw, switch1-8, timestamp, ...


def empty_rc() -> dict[str, Any]:
    """RCData as AirLib initialises it (all zero, not valid)."""
    rc: dict[str, Any] = {k: 0.0 for k in ("pitch", "roll", "throttle", "yaw")}
    rc.update({f"switch{i}": 0 for i in range(1, 9)})
    rc.update({"timestamp": 0, "is_initialized": False, "is_valid": False})
    return rc


def parse_rc(data: object) -> dict[str, Any]:
    from common.errors import ConfigError

    if not isinstance(data, dict):
        raise ConfigError(f"rcdata: expected an RCData map, got {type(data).__name__}")
    rc = empty_rc()
    try:
        for k in ("pitch", "roll", "throttle", "yaw"):
            if k in data:
                rc[k] = float(data[k])
                if not math.isfinite(rc[k]):
                    raise ValueError(k)
        for i in range(1, 9):
            if f"switch{i}" in data:
                rc[f"switch{i}"] = int(data[f"switch{i}"])
        rc["timestamp"] = int(data.get("timestamp", 0))
    except (TypeError, ValueError):
        raise ConfigError(f"rcdata: expected numbers in {data!r:.120}") from None
    rc["is_initialized"] = bool(data.get("is_initialized", False))
    rc["is_valid"] = bool(data.get("is_valid", False))
    return rc


class ManualFlight:
    """The last RC data of each vehicle and the moveByManual task loop."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._rc: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def set_rc(self, vehicle_name: str, data: RCDataMsg) -> None:
        name = self.world.vehicle(str(vehicle_name)).model.name
        rc = parse_rc(data)
        with self._lock:
            self._rc[name] = rc

    def rc(self, vehicle_name: str) -> dict[str, Any]:
        name = self.world.vehicle(str(vehicle_name)).model.name
        with self._lock:
            return dict(self._rc.get(name) or empty_rc())

    def fly(
        self,
        vehicle_name: str,
        vx_max: float,
        vy_max: float,
        z_min: float,
        duration_s: float,
        yaw_is_rate: bool,
        yaw_value: float,
    ) -> bool:
        w = self.world
        with w.lock:
            m = w.vehicle(str(vehicle_name)).model
            start_yaw = m.yaw_deg  # AirLib freezes the starting attitude
            end_s = w.clock.now() + duration_s
        to_body = yaw_rotation_ned(start_yaw).T
        task = None
        released = False
        while True:
            now = w.clock.now()
            if now >= end_s:
                return True
            rc = self.rc(vehicle_name)
            age_s = now - rc["timestamp"] * 1e-9
            # the check and the next command under the world lock: a command another call starts
            # either ended our task before (we stop) or replaces the one issued now (seen next tick)
            with w.lock:
                if task is not None and task.done and task.result is False:
                    return False  # another command (or a collision) ended it
                if rc["is_valid"] and (rc["timestamp"] == 0 or age_s <= MAX_MESSAGE_AGE_S):
                    v_world = np.array([rc["pitch"] * vy_max, rc["roll"] * vx_max, 0.0]) / MAX_RC_VALUE
                    v = to_body @ v_world
                    z = rc["throttle"] / MAX_RC_VALUE * z_min + m.position_ned[2]  # world z: spawn cancels
                    # until the task's end: with stale or invalid RC data the last command goes on
                    # (AirLib skips the tick); the next tick's command replaces it
                    task = w.move_velocity_z(
                        m.name,
                        float(v[0]),
                        float(v[1]),
                        float(z),
                        end_s - now,
                        YawMode(yaw_is_rate, yaw_value + rc["yaw"] * 100.0 / MAX_RC_VALUE),
                    )
            if not released:
                release_order()  # the connection's next request (moveByRC) may start
                released = True
            w.clock.sleep_until(min(now + COMMAND_PERIOD_S, end_s), WAIT_WALL_S)


__all__ = ["ManualFlight", "empty_rc", "parse_rc"]
