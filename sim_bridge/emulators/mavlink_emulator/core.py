"""The autopilot's state machine core: mode, arming and failsafe state, the checks that read it
(pre-arm, offboard availability, data link) and the transitions every other part shares (mode
change announced by HEARTBEAT, arm, disarm, hover, land, motors off).

PX4's mode after disarming (commander/UserModeIntention.cpp, v1.14+): a mode the user (a command, the
RC switch, the navigator's end of take-off) selects is remembered unless it prevents arming (Land,
Return) or is a take-off; a failsafe's mode is not the user's. PX4 goes back to the one remembered
when it disarms, so a drone that landed in AUTO.LAND can be armed again (MAVSDK's `arm()` does not
leave Land first: without this a second MAVSDK flight is refused "Arming denied"). Here the switch
waits for the next arm command (`leave_landing_mode`), so the landed, disarmed vehicle still reads
AUTO.LAND / AUTO.RTL until a new flight begins, as this emulator's callers have always read it.
ArduCopter stays in its mode (LAND after a landing) and refuses to arm there, as the firmware does.

Callers hold the emulator's lock: the receive thread (commands, setpoints) and the telemetry thread
(the rules) both change this state.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sim_bridge.emulators.mavlink_emulator.airframe import Airframe
from sim_bridge.emulators.mavlink_emulator.config import MavlinkEmulatorConfig as EmulatorConfig
from sim_bridge.emulators.mavlink_emulator.flavour import Setting, flavour_for
from sim_bridge.emulators.mavlink_emulator.link import MavLink
from sim_bridge.emulators.mavlink_emulator.protocol import (
    APM_ARMABLE,
    PX4_AUTO,
    PX4_AUTO_LAND,
    PX4_AUTO_RTL,
    PX4_AUTO_TAKEOFF,
    PX4_NEEDS_RC,
    PX4_OFFBOARD,
)
from sim_bridge.emulators.mavlink_params import ParamStore

log = logging.getLogger(__name__)


def prevents_arming(main: int, sub: int) -> bool:
    """PX4's modes that refuse arming (mode_requirements: mode_req_prevent_arming): Land and Return."""
    return main == PX4_AUTO and sub in (PX4_AUTO_LAND, PX4_AUTO_RTL)


@dataclass
class Flight:
    """An autopilot-flown manoeuvre (take-off, return) advanced by the rules loop."""

    kind: str  # "takeoff" or "rtl"
    phase: str
    altitude_m: float
    until_s: float = 0.0


class Autopilot:
    def __init__(self, config: EmulatorConfig, link: MavLink, airframe: Airframe, params: ParamStore) -> None:
        self.config = config
        self.link = link
        self.airframe = airframe
        self.params = params
        self.flavour = flavour_for(config.dialect)
        self.m = link.m  # pymavlink's dialect module (enums)
        self.px4 = self.flavour.px4
        self.vehicle = airframe.vehicle
        self.armed = False
        self.armed_s = 0.0
        self.landed_s: float | None = None
        self.main_mode, self.sub_mode = self.flavour.initial_mode(config.rc_present)
        self.failsafes: list[str] = []
        self.last_setpoint_s: float | None = None
        self.setpoints = 0
        self.setpoint_intervals_s: list[float] = []
        self.last_gcs_heartbeat_s: float | None = None
        self.gcs_lost = self.px4  # PX4: lost until the first GCS heartbeat; ArduPilot: none seen yet
        self.offboard_lost = False
        self.pending_failsafe: tuple[int, float, str] | None = None  # (action, due, why)
        self.flight: Flight | None = None
        self.guided_stopped = False
        self.flew = False  # took off since arming (else COM_DISARM_PRFLT disarms)
        self.airborne = False  # left the ground since arming, however (take-off, offboard climb)
        self.mode_after_disarm = (self.main_mode, self.sub_mode)  # PX4's UserModeIntention
        self.disarmed_in_landing_mode = False  # PX4 leaves it for mode_after_disarm at the next arm

    # ---- reading the state
    def setting(self, setting: Setting) -> float:
        """One of the flavour's settings, from the parameters as they are now."""
        return setting.read(self.params)

    @property
    def mode_name(self) -> str:
        return self.flavour.mode_name(self.main_mode, self.sub_mode)

    def in_offboard(self) -> bool:
        return self.main_mode == self.flavour.offboard_mode

    def gcs_ok(self, now: float) -> bool:
        if self.last_gcs_heartbeat_s is None:
            return False
        return now - self.last_gcs_heartbeat_s <= self.setting(self.flavour.gcs_timeout_s)

    def offboard_available(self, now: float) -> bool:
        # offboardCheck.cpp: the newest offboard_control_mode must be younger than COM_OF_LOSS_T
        loss_s = self.params.get("COM_OF_LOSS_T")
        return self.last_setpoint_s is not None and now - self.last_setpoint_s < loss_s

    def failsafe_active(self) -> bool:
        return self.offboard_lost or (self.gcs_lost and self.params.get("NAV_DLL_ACT") != 0)

    def prearm_failure(self) -> str | None:
        """Why arming would be refused now (PX4 health and arming checks), or None."""
        now = time.monotonic()
        if self.airframe.battery_pct() < 15:
            return self.flavour.low_battery_text
        if self.px4:
            if self.params.get("NAV_DLL_ACT") != 0 and not self.gcs_ok(now):
                # rcAndDataLinkCheck.cpp: "check_rc_dl_no_dllink"
                return "Preflight Fail: No connection to the ground control station"
            if self.main_mode in PX4_NEEDS_RC and not self.config.rc_present:
                return "Preflight Fail: No manual control input"
            if prevents_arming(self.main_mode, self.sub_mode):
                return "Arming denied: not possible in this mode"
            if self.main_mode == PX4_OFFBOARD and not self.offboard_available(now):
                return "Arming denied: no offboard signal"
        elif self.main_mode not in APM_ARMABLE:
            return "Arm: Mode not armable"
        return None

    # ---- announcing it
    def heartbeat(self) -> None:
        m = self.m
        autopilot, base, custom = self.flavour.heartbeat_mode(m, self.main_mode, self.sub_mode)
        if self.armed:
            base |= m.MAV_MODE_FLAG_SAFETY_ARMED
        status = m.MAV_STATE_ACTIVE if self.armed else m.MAV_STATE_STANDBY
        if self.px4 and self.failsafes and self.armed and self.failsafe_active():
            status = m.MAV_STATE_CRITICAL
        self.link.send(self.link.mav.heartbeat_send, m.MAV_TYPE_QUADROTOR, autopilot, base, custom, status)

    def statustext(self, severity: int, text: str) -> None:
        self.link.statustext(severity, text)

    # ---- transitions
    def set_mode(self, main: int, sub: int = 0, intended: bool = True) -> None:
        """`intended`: the user's choice (False: a failsafe's), remembered for after disarming (PX4)."""
        if (
            self.px4
            and intended
            and not prevents_arming(main, sub)
            and (main, sub) != (PX4_AUTO, PX4_AUTO_TAKEOFF)
        ):
            self.mode_after_disarm = (main, sub)
        self.disarmed_in_landing_mode = False  # a mode chosen since the disarm stands
        changed = (main, sub) != (self.main_mode, self.sub_mode)
        if changed:
            log.info("emulator %s: mode %s -> (%d, %d)", self.vehicle, self.mode_name, main, sub)
        self.main_mode, self.sub_mode = main, sub
        if changed:
            self.heartbeat()  # announce a mode change at once, not at the next 1 Hz beat

    def hover(self) -> None:
        self.airframe.hover()

    def land(self) -> None:
        self.airframe.land(self.setting(self.flavour.land_speed_m_s))

    def arm(self) -> None:
        self.armed = True
        self.armed_s = time.monotonic()
        self.landed_s = None
        self.flew = False
        self.airborne = False
        self.airframe.set_armed(True)
        self.heartbeat()

    def disarm(self) -> None:
        if self.airborne:  # a flight is over, on the ground: the next arm starts the next one
            self.airframe.flights.flight_ended()
        self.airborne = False
        self.disarmed_in_landing_mode = self.px4 and prevents_arming(self.main_mode, self.sub_mode)
        self.armed = False
        self.flew = False
        self.flight = None
        self.offboard_lost = False
        self.pending_failsafe = None
        self.airframe.set_armed(False)
        self.heartbeat()

    def leave_landing_mode(self) -> None:
        """An arm command after disarming in Land/Return: PX4's mode after disarming first (see above)."""
        if self.disarmed_in_landing_mode:
            self.set_mode(*self.mode_after_disarm)

    def motors_off(self) -> None:
        self.airframe.drop_to_floor()
        self.disarm()
