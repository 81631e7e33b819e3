"""A PX4 (or ArduPilot Copter) autopilot on loopback, flying a built-in simulator vehicle: a real
MAVLink/UDP peer for pymavlink, MAVSDK (mavsdk_server) and MAVProxy, built with pymavlink's own encoder.

It sends to the companion's UDP port like PX4 SITL's offboard link (127.0.0.1:14540 by default) and
answers whoever talks to it. Building a real PX4 or ArduPilot SITL is not possible here, so this
follows the firmware sources; each module names the source files of the rules it implements:

- `link`: the UDP link and its `link_down` fault; `parameters`: the parameter protocol over
  sim_bridge.emulators.mavlink_params (firmware defaults; PX4 encodes integers bytewise, ArduPilot
  casts them).
- `commands`: COMMAND_LONG/INT and mode changes (arming, take-off, land, return, identity).
- `offboard`: SET_POSITION_TARGET_LOCAL_NED (PX4 offboard, ArduCopter GUIDED).
- `failsafes`: PX4 offboard and data-link loss, ArduCopter GUIDED timeout and GCS failsafe.
- `manoeuvres`: take-off, return to launch, disarm after landing.
- `telemetry`: HEARTBEAT, the streams and their intervals, single messages on request.
- `core`: the mode/arming state the parts share; `flavour`: PX4 vs ArduPilot facts;
  `airframe`: the simulator vehicle; `protocol`: the numbers.

Fault injection: `rc_takeover()` (the RC pilot switches to POSCTL/LOITER), `link_down` (silence both
ways), `refuse(command_id, result, text)`.
"""

from sim_bridge.emulators.mavlink_emulator.config import MavlinkEmulatorConfig
from sim_bridge.emulators.mavlink_emulator.core import Flight
from sim_bridge.emulators.mavlink_emulator.emulator import MavlinkEmulator
from sim_bridge.emulators.mavlink_emulator.protocol import (
    EARTH_RADIUS_M,
    HOME_ALT_M,
    HOME_LAT_DEG,
    HOME_LON_DEG,
)

__all__ = [
    "EARTH_RADIUS_M",
    "HOME_ALT_M",
    "HOME_LAT_DEG",
    "HOME_LON_DEG",
    "Flight",
    "MavlinkEmulator",
    "MavlinkEmulatorConfig",
]
