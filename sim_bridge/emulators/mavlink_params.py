"""The MAVLink parameter protocol of the emulated autopilots, with the firmware's default values for
the parameters that matter to an offboard companion.

Defaults as the firmware declares them:
- PX4 (v1.15): src/modules/commander/commander_params.c (COM_OF_LOSS_T, COM_OBL_RC_ACT, COM_DL_LOSS_T,
  COM_DISARM_*, COM_FAIL_ACT_T, COM_DLL_EXCEPT, COM_RCL_EXCEPT), src/modules/navigator/navigator_params.c
  (NAV_DLL_ACT, NAV_RCL_ACT), geofence_params.c (GF_ACTION), mission_params.c (MIS_TAKEOFF_ALT),
  rtl_params.c (RTL_RETURN_ALT, RTL_DESCEND_ALT, RTL_LAND_DELAY, RTL_CONE_ANG, RTL_MIN_DIST),
  navigator_params.c (NAV_ACC_RAD), mc_pos_control_params.c (MPC_*).
- ArduCopter (4.5): ArduCopter/Parameters.cpp (GUID_TIMEOUT, FS_GCS_ENABLE, FS_GCS_TIMEOUT, FS_OPTIONS,
  RTL_ALT, RTL_CONE_SLOPE, RTL_CLIMB_MIN, RTL_LOIT_TIME, SYSID_MYGCS), AC_Fence (FENCE_ENABLE,
  FENCE_ACTION).

Encoding of integers in PARAM_VALUE.param_value (a float field): PX4 copies the bytes of the int32
(MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE, what MAVSDK and QGroundControl expect from PX4);
ArduPilot casts the integer to float (MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_C_CAST).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

# MAV_PARAM_TYPE
INT8, INT16, INT32, REAL32 = 2, 4, 6, 9


@dataclass
class Param:
    value: float
    kind: int  # MAV_PARAM_TYPE


PX4_DEFAULTS: dict[str, Param] = {
    "COM_OF_LOSS_T": Param(1.0, REAL32),  # s, offboard signal timeout
    "COM_OBL_RC_ACT": Param(0, INT32),  # 0 Position, 1 Altitude, 2 Manual, 3 Return, 4 Land, 5 Hold, ...
    "COM_DL_LOSS_T": Param(10, INT32),  # s without a GCS heartbeat: data link lost
    "COM_DLL_EXCEPT": Param(0, INT32),  # bits: 0 Mission, 1 Hold, 2 Offboard
    "COM_RCL_EXCEPT": Param(0, INT32),  # bits: 0 Mission, 1 Hold, 2 Offboard
    "COM_FAIL_ACT_T": Param(5.0, REAL32),  # s in Hold before a Return/Land failsafe acts
    "COM_DISARM_PRFLT": Param(10.0, REAL32),  # s armed on the ground without taking off
    "COM_DISARM_LAND": Param(2.0, REAL32),  # s after landing detected
    "NAV_DLL_ACT": Param(0, INT32),  # 0 Disabled, 1 Hold, 2 Return, 3 Land, 5 Terminate, 6 Disarm
    "NAV_RCL_ACT": Param(2, INT32),  # 1 Hold, 2 Return, 3 Land, 5 Terminate, 6 Disarm
    "GF_ACTION": Param(2, INT32),  # 0 None, 1 Warning, 2 Hold, 3 Return, 4 Terminate, 5 Land
    "MIS_TAKEOFF_ALT": Param(2.5, REAL32),  # m above home
    "RTL_RETURN_ALT": Param(60.0, REAL32),  # m above home
    "RTL_DESCEND_ALT": Param(30.0, REAL32),
    "RTL_LAND_DELAY": Param(0.0, REAL32),  # s hovering above home, then land
    "RTL_CONE_ANG": Param(45, INT32),  # deg, half angle of the return cone over home (0: no cone)
    "RTL_MIN_DIST": Param(10.0, REAL32),  # m from home within which the cone lowers the return
    "NAV_ACC_RAD": Param(10.0, REAL32),  # m, acceptance radius
    "MPC_XY_CRUISE": Param(5.0, REAL32),  # m/s
    "MPC_LAND_SPEED": Param(0.7, REAL32),
    "MPC_TKO_SPEED": Param(1.5, REAL32),
    "MAV_SYS_ID": Param(1, INT32),
    "SYS_AUTOSTART": Param(4001, INT32),
}

APM_DEFAULTS: dict[str, Param] = {
    "GUID_TIMEOUT": Param(3.0, REAL32),  # s: GUIDED velocity targets are zeroed after this
    "FS_GCS_ENABLE": Param(0, INT8),  # 0 off, 1 RTL, 3 SmartRTL/RTL, 4 SmartRTL/Land, 5 Land, 6 Auto, 7 Brake
    "FS_GCS_TIMEOUT": Param(5.0, REAL32),  # s
    "FS_OPTIONS": Param(0, INT32),
    "SYSID_MYGCS": Param(255, INT16),  # only heartbeats from this system id are the GCS
    "RTL_ALT": Param(1500, INT16),  # cm
    "RTL_CONE_SLOPE": Param(3.0, REAL32),  # return altitude per horizontal distance (< 0.5: no cone)
    "RTL_CLIMB_MIN": Param(0, INT16),  # cm, the least climb before returning
    "RTL_LOIT_TIME": Param(5000, INT32),  # ms above home before landing
    "LAND_SPEED": Param(50, INT16),  # cm/s
    "WPNAV_SPEED": Param(1000, REAL32),  # cm/s
    "FENCE_ENABLE": Param(0, INT8),
    "FENCE_ACTION": Param(1, INT8),
    "ARMING_CHECK": Param(1, INT32),
    "SYSID_THISMAV": Param(1, INT16),
}

INT_LIMITS = {INT8: (-128, 127), INT16: (-32768, 32767), INT32: (-(2**31), 2**31 - 1)}


class ParamStore:
    """name -> Param for one autopilot; `encode`/`decode` map values to PARAM_VALUE's float field."""

    def __init__(self, px4: bool, overrides: dict[str, float] | None = None) -> None:
        self.bytewise = px4
        base = PX4_DEFAULTS if px4 else APM_DEFAULTS
        self.params = {k: Param(p.value, p.kind) for k, p in base.items()}
        for name, value in (overrides or {}).items():
            if name not in self.params:
                raise ValueError(f"unknown {'PX4' if px4 else 'ArduPilot'} parameter {name!r}")
            self.set(name, float(value))

    def names(self) -> list[str]:
        return sorted(self.params)

    def get(self, name: str) -> float:
        return self.params[name].value

    def set(self, name: str, value: float) -> None:
        p = self.params[name]
        if p.kind == REAL32:
            if not math.isfinite(value):
                raise ValueError(f"{name}: {value} is not a finite number")
            p.value = float(value)
            return
        lo, hi = INT_LIMITS[p.kind]
        if not (math.isfinite(value) and lo <= value <= hi):
            raise ValueError(f"{name}: {value} is outside {lo}..{hi}")
        p.value = int(value)

    def encode(self, name: str) -> float:
        p = self.params[name]
        if p.kind == REAL32 or not self.bytewise:
            return float(p.value)
        return float(struct.unpack("<f", struct.pack("<i", int(p.value)))[0])

    def decode(self, name: str, raw: float, kind: int) -> float:
        """The value a PARAM_SET carries for `name`, in the parameter's own units."""
        p = self.params[name]
        if p.kind == REAL32 or not self.bytewise or kind == REAL32:
            return float(raw)
        return float(struct.unpack("<i", struct.pack("<f", raw))[0])
