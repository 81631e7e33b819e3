"""The numbers both emulated autopilots speak: mode ids, message ids, stream tables, setpoint frames
and type-mask bits, health bits and the PX4 failsafe actions, as the firmware and the MAVLink common
dialect define them."""

from __future__ import annotations

import math

# The simulator's geo origin (the same home point the AirSim server reports) and the earth model
HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M = 47.641468, -122.140165, 122.0
EARTH_RADIUS_M = 6378137.0

# PX4 main modes (custom_mode = main << 16 | sub << 24) and AUTO sub-modes
PX4_MANUAL, PX4_ALTCTL, PX4_POSCTL, PX4_AUTO, PX4_ACRO, PX4_OFFBOARD, PX4_STAB = 1, 2, 3, 4, 5, 6, 7
PX4_AUTO_TAKEOFF, PX4_AUTO_LOITER, PX4_AUTO_MISSION, PX4_AUTO_RTL, PX4_AUTO_LAND = 2, 3, 4, 5, 6
PX4_NEEDS_RC = (PX4_MANUAL, PX4_ALTCTL, PX4_POSCTL, PX4_ACRO, PX4_STAB)
# ArduCopter modes
APM_STABILIZE, APM_ALT_HOLD, APM_AUTO, APM_GUIDED, APM_LOITER, APM_RTL, APM_LAND = 0, 2, 3, 4, 5, 6, 9
APM_POSHOLD, APM_BRAKE = 16, 17
APM_MODES = {0: "STABILIZE", 2: "ALT_HOLD", 3: "AUTO", 4: "GUIDED", 5: "LOITER", 6: "RTL", 9: "LAND"}
APM_MODES.update({16: "POSHOLD", 17: "BRAKE"})
APM_ARMABLE = (APM_STABILIZE, APM_ALT_HOLD, APM_GUIDED, APM_LOITER, APM_POSHOLD, APM_BRAKE)

FRAME_LOCAL_NED, FRAME_LOCAL_OFFSET_NED, FRAME_BODY_NED, FRAME_BODY_OFFSET_NED = 1, 7, 8, 9
IGNORE_POS, IGNORE_VEL, IGNORE_ACC, IGNORE_YAW, IGNORE_YAW_RATE = 7, 56, 448, 1024, 2048

# Message ids and the streams
HEARTBEAT, SYS_STATUS, GPS_RAW_INT, ATTITUDE, LOCAL_POSITION_NED = 0, 1, 24, 30, 32
GLOBAL_POSITION_INT, AUTOPILOT_VERSION, BATTERY_STATUS, HOME_POSITION, EXTENDED_SYS_STATE = (
    33,
    148,
    147,
    242,
    245,
)
FAST = (ATTITUDE, LOCAL_POSITION_NED, GLOBAL_POSITION_INT)
PX4_DEFAULT_RATES_HZ = {
    ATTITUDE: 50.0,
    LOCAL_POSITION_NED: 30.0,
    GLOBAL_POSITION_INT: 50.0,
    SYS_STATUS: 5.0,
    EXTENDED_SYS_STATE: 5.0,
    GPS_RAW_INT: 5.0,
    BATTERY_STATUS: 0.5,
    HOME_POSITION: 0.5,
}
# ArduPilot REQUEST_DATA_STREAM groups (GCS_Mavlink.cpp STREAM_*_msgs), as far as this emulator sends them
APM_STREAMS = {
    2: (SYS_STATUS, GPS_RAW_INT),  # EXTENDED_STATUS
    6: (GLOBAL_POSITION_INT, LOCAL_POSITION_NED),  # POSITION
    10: (ATTITUDE,),  # EXTRA1
    12: (BATTERY_STATUS,),  # EXTRA3
}
SENSORS = 1 | 2 | 4 | 8 | 32 | 0x2000000  # gyro, accel, mag, baro, GPS, battery
SENSOR_RC, SENSOR_PREARM = 0x10000, 0x10000000

# PX4 failsafe actions (failsafe framework's Action) and the parameter encodings that map onto them
ACT_POSCTL, ACT_ALTCTL, ACT_STAB, ACT_HOLD, ACT_RTL, ACT_LAND, ACT_TERMINATE, ACT_DISARM = range(8)
ACTION_NAMES = ["Position", "Altitude", "Manual", "Hold", "Return", "Land", "Terminate", "Disarm"]
COM_OBL_RC_ACT_TO_ACTION = {0: ACT_POSCTL, 1: ACT_ALTCTL, 2: ACT_STAB, 3: ACT_RTL, 4: ACT_LAND}
COM_OBL_RC_ACT_TO_ACTION.update({5: ACT_HOLD, 6: ACT_TERMINATE, 7: ACT_DISARM})
NAV_DLL_ACT_TO_ACTION = {1: ACT_HOLD, 2: ACT_RTL, 3: ACT_LAND, 5: ACT_TERMINATE, 6: ACT_DISARM}

TAKEOFF_SPEED_M_S = 1.5


def int_param(value: float) -> int:
    """An integer command parameter; NaN (MAVLink's "unset") and infinities read as 0."""
    return round(value) if math.isfinite(value) else 0


# MAVLink common enums that differ between the firmwares (MAV_RESULT, MAV_PROTOCOL_CAPABILITY)
MAV_RESULT_TEMPORARILY_REJECTED, MAV_RESULT_FAILED = 1, 4
CAP_PARAM_ENCODE_BYTEWISE, CAP_PARAM_ENCODE_C_CAST = 16, 131072
