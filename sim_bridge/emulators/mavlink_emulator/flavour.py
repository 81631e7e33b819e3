"""What differs between the two emulated firmwares where it is a fact rather than a rule: which
parameter holds a speed or a timeout (and in which unit), how a mode is named and encoded in
HEARTBEAT, which setpoint frames are taken, what AUTOPILOT_VERSION says. The rules that differ in
shape (mode changes, failsafes, take-off) branch on `Flavour.px4` in the module that owns them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from sim_bridge.emulators.mavlink_emulator.protocol import (
    APM_GUIDED,
    APM_LAND,
    APM_LOITER,
    APM_MODES,
    APM_RTL,
    APM_STABILIZE,
    FRAME_BODY_NED,
    FRAME_BODY_OFFSET_NED,
    FRAME_LOCAL_NED,
    FRAME_LOCAL_OFFSET_NED,
    PX4_AUTO,
    PX4_AUTO_LAND,
    PX4_AUTO_LOITER,
    PX4_AUTO_MISSION,
    PX4_AUTO_RTL,
    PX4_AUTO_TAKEOFF,
    PX4_OFFBOARD,
    PX4_POSCTL,
    TAKEOFF_SPEED_M_S,
)
from sim_bridge.emulators.mavlink_params import ParamStore


class Flavour(ABC):
    """One firmware's facts, reading its parameters from `params` (they can change by PARAM_SET)."""

    px4: bool
    offboard_mode: int  # the mode that follows SET_POSITION_TARGET_LOCAL_NED
    takeover_mode: int  # where the RC mode switch puts the vehicle (rc_takeover)
    setpoint_frames: tuple[int, ...]
    low_battery_text: str

    def __init__(self, params: ParamStore) -> None:
        self.params = params

    @abstractmethod
    def initial_mode(self, rc_present: bool) -> tuple[int, int]: ...

    @abstractmethod
    def mode_name(self, main: int, sub: int) -> str: ...

    @abstractmethod
    def heartbeat_mode(self, m: Any, main: int, sub: int) -> tuple[int, int, int]:
        """(autopilot, base_mode without the armed bit, custom_mode) for HEARTBEAT."""

    @abstractmethod
    def version(self, m: Any) -> tuple[int, int, int, int]:
        """(encoding capability bit, flight sw version, vendor id, product id) for AUTOPILOT_VERSION."""

    @abstractmethod
    def arming_refused(self, m: Any) -> int:
        """The COMMAND_ACK result of a refused arming."""

    @abstractmethod
    def is_landing(self, main: int, sub: int) -> bool:
        """A landing mode (EXTENDED_SYS_STATE says LANDING)."""

    @abstractmethod
    def disarms_on_ground(self, main: int, sub: int) -> bool:
        """A mode that disarms once landed (land or return)."""

    @abstractmethod
    def gcs_timeout_s(self) -> float: ...

    @abstractmethod
    def land_speed_m_s(self) -> float: ...

    @abstractmethod
    def cruise_m_s(self) -> float: ...

    @abstractmethod
    def takeoff_speed_m_s(self) -> float: ...

    @abstractmethod
    def setpoint_hold_s(self) -> float:
        """How long a velocity setpoint holds before the loss rule (COM_OF_LOSS_T / GUID_TIMEOUT)."""

    @abstractmethod
    def return_alt_m(self) -> float: ...

    @abstractmethod
    def return_loiter_s(self) -> float:
        """Hover above home before landing; negative: forever."""

    @abstractmethod
    def landed_disarm_s(self) -> float: ...

    @abstractmethod
    def preflight_disarm_s(self) -> float:
        """Armed on the ground this long without taking off: disarm."""


class Px4(Flavour):
    px4 = True
    offboard_mode = PX4_OFFBOARD
    takeover_mode = PX4_POSCTL
    setpoint_frames = (FRAME_LOCAL_NED, FRAME_BODY_NED)
    low_battery_text = "Preflight Fail: low battery"

    def initial_mode(self, rc_present: bool) -> tuple[int, int]:
        return (PX4_POSCTL, 0) if rc_present else (PX4_AUTO, PX4_AUTO_LOITER)

    def mode_name(self, main: int, sub: int) -> str:
        if main == PX4_AUTO:
            return {
                PX4_AUTO_LAND: "AUTO.LAND",
                PX4_AUTO_LOITER: "AUTO.LOITER",
                PX4_AUTO_RTL: "AUTO.RTL",
                PX4_AUTO_TAKEOFF: "AUTO.TAKEOFF",
                PX4_AUTO_MISSION: "AUTO.MISSION",
            }.get(sub, "AUTO")
        return {1: "MANUAL", 2: "ALTCTL", 3: "POSCTL", 5: "ACRO", 6: "OFFBOARD", 7: "STABILIZED"}.get(
            main, str(main)
        )

    def heartbeat_mode(self, m: Any, main: int, sub: int) -> tuple[int, int, int]:
        custom = (main << 16) | (sub << 24)
        base = m.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | m.MAV_MODE_FLAG_STABILIZE_ENABLED
        if main in (PX4_AUTO, PX4_OFFBOARD):
            base |= m.MAV_MODE_FLAG_AUTO_ENABLED | m.MAV_MODE_FLAG_GUIDED_ENABLED
        elif main == PX4_POSCTL:
            base |= m.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED | m.MAV_MODE_FLAG_GUIDED_ENABLED
        return m.MAV_AUTOPILOT_PX4, base, custom

    def version(self, m: Any) -> tuple[int, int, int, int]:
        version = (1 << 24) | (15 << 16) | (0 << 8) | 255  # v1.15.0, FIRMWARE_VERSION_TYPE_OFFICIAL
        # vendor, product: what PX4 SITL reports
        return m.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE, version, 0x26AC, 0x0011

    def arming_refused(self, m: Any) -> int:
        return int(m.MAV_RESULT_TEMPORARILY_REJECTED)  # commander: a refused transition

    def is_landing(self, main: int, sub: int) -> bool:
        return main == PX4_AUTO and sub == PX4_AUTO_LAND

    def disarms_on_ground(self, main: int, sub: int) -> bool:
        return main == PX4_AUTO and sub in (PX4_AUTO_LAND, PX4_AUTO_RTL)

    def gcs_timeout_s(self) -> float:
        return self.params.get("COM_DL_LOSS_T")

    def land_speed_m_s(self) -> float:
        return self.params.get("MPC_LAND_SPEED")

    def cruise_m_s(self) -> float:
        return self.params.get("MPC_XY_CRUISE")

    def takeoff_speed_m_s(self) -> float:
        return self.params.get("MPC_TKO_SPEED")

    def setpoint_hold_s(self) -> float:
        return self.params.get("COM_OF_LOSS_T")

    def return_alt_m(self) -> float:
        return self.params.get("RTL_RETURN_ALT")

    def return_loiter_s(self) -> float:
        return self.params.get("RTL_LAND_DELAY")

    def landed_disarm_s(self) -> float:
        return self.params.get("COM_DISARM_LAND")

    def preflight_disarm_s(self) -> float:
        return self.params.get("COM_DISARM_PRFLT")


class ArduPilot(Flavour):
    px4 = False
    offboard_mode = APM_GUIDED
    takeover_mode = APM_LOITER
    setpoint_frames = (FRAME_LOCAL_NED, FRAME_LOCAL_OFFSET_NED, FRAME_BODY_NED, FRAME_BODY_OFFSET_NED)
    low_battery_text = "Arming denied: battery low"

    def initial_mode(self, rc_present: bool) -> tuple[int, int]:
        return APM_STABILIZE, 0

    def mode_name(self, main: int, sub: int) -> str:
        return APM_MODES.get(main, str(main))

    def heartbeat_mode(self, m: Any, main: int, sub: int) -> tuple[int, int, int]:
        base = m.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | m.MAV_MODE_FLAG_STABILIZE_ENABLED
        return m.MAV_AUTOPILOT_ARDUPILOTMEGA, base, main

    def version(self, m: Any) -> tuple[int, int, int, int]:
        version = (4 << 24) | (5 << 16) | (7 << 8) | 255  # ArduCopter V4.5.7
        # vendor, product: ArduPilot SITL
        return m.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_C_CAST, version, 0x1209, 0x5740

    def arming_refused(self, m: Any) -> int:
        return int(m.MAV_RESULT_FAILED)

    def is_landing(self, main: int, sub: int) -> bool:
        return main == APM_LAND

    def disarms_on_ground(self, main: int, sub: int) -> bool:
        return main in (APM_LAND, APM_RTL)

    def gcs_timeout_s(self) -> float:
        return self.params.get("FS_GCS_TIMEOUT")

    def land_speed_m_s(self) -> float:
        return self.params.get("LAND_SPEED") / 100  # cm/s

    def cruise_m_s(self) -> float:
        return self.params.get("WPNAV_SPEED") / 100  # cm/s

    def takeoff_speed_m_s(self) -> float:
        return TAKEOFF_SPEED_M_S

    def setpoint_hold_s(self) -> float:
        return self.params.get("GUID_TIMEOUT")

    def return_alt_m(self) -> float:
        return self.params.get("RTL_ALT") / 100.0  # cm

    def return_loiter_s(self) -> float:
        return self.params.get("RTL_LOIT_TIME") / 1000  # ms

    def landed_disarm_s(self) -> float:
        return 0.0

    def preflight_disarm_s(self) -> float:
        return 10.0


def flavour_for(dialect: str, params: ParamStore) -> Flavour:
    return Px4(params) if dialect == "px4" else ArduPilot(params)
