"""What differs between the two emulated firmwares where it is a fact rather than a rule: which
parameter holds a speed or a timeout (and in which unit), how a mode is named and encoded in
HEARTBEAT, which setpoint frames are taken, what AUTOPILOT_VERSION says. The rules that differ in
shape (mode changes, failsafes, take-off) branch on `Flavour.px4` in the module that owns them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim_bridge.emulators.mavlink_emulator.protocol import (
    APM_GUIDED,
    APM_LAND,
    APM_LOITER,
    APM_MODES,
    APM_RTL,
    APM_STABILIZE,
    CAP_PARAM_ENCODE_BYTEWISE,
    CAP_PARAM_ENCODE_C_CAST,
    FRAME_BODY_NED,
    FRAME_BODY_OFFSET_NED,
    FRAME_LOCAL_NED,
    FRAME_LOCAL_OFFSET_NED,
    MAV_RESULT_FAILED,
    MAV_RESULT_TEMPORARILY_REJECTED,
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

if TYPE_CHECKING:
    from types import ModuleType


@dataclass(frozen=True)
class Setting:
    """A firmware parameter in SI units: its value divided by `per` (ArduPilot keeps cm, ms), or
    `fixed` where the firmware has no parameter for it."""

    param: str | None
    per: float = 1.0
    fixed: float = 0.0

    def read(self, params: ParamStore) -> float:
        if self.param is None:
            return self.fixed
        value = params.get(self.param)
        return value if self.per == 1.0 else value / self.per


class Flavour(ABC):
    """One firmware's facts; settings are read from the live parameters (PARAM_SET changes them)."""

    px4: bool
    name: str  # the firmware, as `dronecats sim` introduces the emulator
    offboard_mode: int  # the mode that follows SET_POSITION_TARGET_LOCAL_NED
    takeover_mode: int  # where the RC mode switch puts the vehicle (rc_takeover)
    setpoint_frames: tuple[int, ...]
    rtl_mode: tuple[int, int]  # (main, sub) of return to launch
    landing_modes: tuple[tuple[int, int], ...]  # (main, sub): EXTENDED_SYS_STATE says LANDING
    ground_disarm_modes: tuple[tuple[int, int], ...]  # (main, sub) that disarm once landed
    arming_refused_result: int  # MAV_RESULT of a refused arming
    low_battery_text: str
    # AUTOPILOT_VERSION: parameter encoding capability, flight sw version, vendor and product id
    version: tuple[int, int, int, int]
    gcs_timeout_s: Setting  # no GCS heartbeat this long: the data link is lost
    land_speed_m_s: Setting
    cruise_m_s: Setting
    takeoff_speed_m_s: Setting
    setpoint_hold_s: Setting  # a velocity setpoint holds this long before the loss rule
    return_alt_m: Setting
    return_loiter_s: Setting  # hover above home before landing; negative: forever
    landed_disarm_s: Setting
    preflight_disarm_s: Setting  # armed on the ground this long without taking off: disarm

    @property
    def firmware(self) -> str:
        """Name and version as AUTOPILOT_VERSION reports them, e.g. "PX4 v1.15.0"."""
        sw = self.version[1]
        return f"{self.name} v{sw >> 24}.{(sw >> 16) & 0xFF}.{(sw >> 8) & 0xFF}"

    @abstractmethod
    def initial_mode(self, rc_present: bool) -> tuple[int, int]: ...

    @abstractmethod
    def mode_name(self, main: int, sub: int) -> str: ...

    @abstractmethod
    def heartbeat_mode(self, m: ModuleType, main: int, sub: int) -> tuple[int, int, int]:
        """(autopilot, base_mode without the armed bit, custom_mode) for HEARTBEAT."""


class Px4(Flavour):
    px4 = True
    name = "PX4"
    offboard_mode = PX4_OFFBOARD
    takeover_mode = PX4_POSCTL
    setpoint_frames = (FRAME_LOCAL_NED, FRAME_BODY_NED)
    rtl_mode = (PX4_AUTO, PX4_AUTO_RTL)
    landing_modes = ((PX4_AUTO, PX4_AUTO_LAND),)
    ground_disarm_modes = ((PX4_AUTO, PX4_AUTO_LAND), (PX4_AUTO, PX4_AUTO_RTL))
    arming_refused_result = MAV_RESULT_TEMPORARILY_REJECTED  # commander: a refused transition
    low_battery_text = "Preflight Fail: low battery"
    # v1.15.0 FIRMWARE_VERSION_TYPE_OFFICIAL; vendor and product as PX4 SITL reports them
    version = (CAP_PARAM_ENCODE_BYTEWISE, (1 << 24) | (15 << 16) | (0 << 8) | 255, 0x26AC, 0x0011)
    gcs_timeout_s = Setting("COM_DL_LOSS_T")
    land_speed_m_s = Setting("MPC_LAND_SPEED")
    cruise_m_s = Setting("MPC_XY_CRUISE")
    takeoff_speed_m_s = Setting("MPC_TKO_SPEED")
    setpoint_hold_s = Setting("COM_OF_LOSS_T")
    return_alt_m = Setting("RTL_RETURN_ALT")
    return_loiter_s = Setting("RTL_LAND_DELAY")
    landed_disarm_s = Setting("COM_DISARM_LAND")
    preflight_disarm_s = Setting("COM_DISARM_PRFLT")

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

    def heartbeat_mode(self, m: ModuleType, main: int, sub: int) -> tuple[int, int, int]:
        custom = (main << 16) | (sub << 24)
        base = m.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | m.MAV_MODE_FLAG_STABILIZE_ENABLED
        if main in (PX4_AUTO, PX4_OFFBOARD):
            base |= m.MAV_MODE_FLAG_AUTO_ENABLED | m.MAV_MODE_FLAG_GUIDED_ENABLED
        elif main == PX4_POSCTL:
            base |= m.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED | m.MAV_MODE_FLAG_GUIDED_ENABLED
        return m.MAV_AUTOPILOT_PX4, base, custom


class ArduPilot(Flavour):
    px4 = False
    name = "ArduCopter"
    offboard_mode = APM_GUIDED
    takeover_mode = APM_LOITER
    setpoint_frames = (FRAME_LOCAL_NED, FRAME_LOCAL_OFFSET_NED, FRAME_BODY_NED, FRAME_BODY_OFFSET_NED)
    # ArduCopter modes have no sub-mode: it is always 0 here
    rtl_mode = (APM_RTL, 0)
    landing_modes = ((APM_LAND, 0),)
    ground_disarm_modes = ((APM_LAND, 0), (APM_RTL, 0))
    arming_refused_result = MAV_RESULT_FAILED
    low_battery_text = "Arming denied: battery low"
    # ArduCopter V4.5.7; vendor and product as ArduPilot SITL reports them
    version = (CAP_PARAM_ENCODE_C_CAST, (4 << 24) | (5 << 16) | (7 << 8) | 255, 0x1209, 0x5740)
    gcs_timeout_s = Setting("FS_GCS_TIMEOUT")
    land_speed_m_s = Setting("LAND_SPEED", per=100)  # cm/s
    cruise_m_s = Setting("WPNAV_SPEED", per=100)  # cm/s
    takeoff_speed_m_s = Setting(None, fixed=TAKEOFF_SPEED_M_S)
    setpoint_hold_s = Setting("GUID_TIMEOUT")
    return_alt_m = Setting("RTL_ALT", per=100)  # cm
    return_loiter_s = Setting("RTL_LOIT_TIME", per=1000)  # ms
    landed_disarm_s = Setting(None, fixed=0.0)
    preflight_disarm_s = Setting(None, fixed=10.0)

    def initial_mode(self, rc_present: bool) -> tuple[int, int]:
        return APM_STABILIZE, 0

    def mode_name(self, main: int, sub: int) -> str:
        return APM_MODES.get(main, str(main))

    def heartbeat_mode(self, m: ModuleType, main: int, sub: int) -> tuple[int, int, int]:
        base = m.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | m.MAV_MODE_FLAG_STABILIZE_ENABLED
        return m.MAV_AUTOPILOT_ARDUPILOTMEGA, base, main


def flavour_for(dialect: str) -> Flavour:
    return Px4() if dialect == "px4" else ArduPilot()
