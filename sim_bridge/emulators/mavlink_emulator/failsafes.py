"""The firmware's failsafes, checked at the telemetry rate, and the GCS heartbeats they watch.

PX4:
- Offboard loss: the newest setpoint older than COM_OF_LOSS_T (default 1 s) is offboard lost
  (commander/HealthAndArmingChecks/checks/offboardCheck.cpp; PX4's parameter reference: "time-out for
  detecting offboard loss"), and COM_OBL_RC_ACT picks the action (commander/failsafe/failsafe.cpp
  fromOffboardLossActParam, framework.cpp getSelectedAction). (Parameter names, defaults and values
  as PX4's parameter reference documents them; the source files named from PX4 main as we know it,
  not re-read for this emulator.) The "Position/Altitude/Manual" choices are
  fallback modes that need manual control: without RC they fall through to Hold (AUTO.LOITER),
  then Return, then Land. Return/Land/Hold first hold for COM_FAIL_ACT_T.
- Data link (commander/HealthAndArmingChecks/checks/rcAndDataLinkCheck.cpp, Commander::dataLinkCheck):
  only HEARTBEATs of type MAV_TYPE_GCS count; in flight the loss triggers NAV_DLL_ACT (unless
  COM_DLL_EXCEPT exempts offboard). Arming without a GCS is refused in core.Autopilot.prearm_failure.

ArduCopter:
- GUIDED (mode_guided.cpp): velocity targets are zeroed after GUID_TIMEOUT.
- GCS failsafe (FS_GCS_ENABLE, FS_GCS_TIMEOUT) on heartbeats from SYSID_MYGCS, only after one was seen.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Protocol

from sim_bridge.emulators.mavlink_emulator.core import Autopilot
from sim_bridge.emulators.mavlink_emulator.manoeuvres import Manoeuvres
from sim_bridge.emulators.mavlink_emulator.protocol import (
    ACT_ALTCTL,
    ACT_HOLD,
    ACT_LAND,
    ACT_POSCTL,
    ACT_RTL,
    ACT_STAB,
    ACTION_NAMES,
    APM_BRAKE,
    APM_GUIDED,
    APM_LAND,
    APM_RTL,
    COM_OBL_RC_ACT_TO_ACTION,
    NAV_DLL_ACT_TO_ACTION,
    PX4_ALTCTL,
    PX4_AUTO,
    PX4_AUTO_LAND,
    PX4_AUTO_LOITER,
    PX4_OFFBOARD,
    PX4_POSCTL,
    PX4_STAB,
)

if TYPE_CHECKING:
    from pymavlink.dialects.v20.all import MAVLink_heartbeat_message

log = logging.getLogger(__name__)


class FailsafeRules(Protocol):
    def on_heartbeat(self, msg: MAVLink_heartbeat_message, now: float) -> None:
        """A HEARTBEAT came in (it may be the ground station's)."""

    def check(self, now: float) -> None:
        """The periodic rules (called with the emulator's lock held)."""


class Px4Failsafes:
    def __init__(self, autopilot: Autopilot, manoeuvres: Manoeuvres) -> None:
        self.ap = autopilot
        self.manoeuvres = manoeuvres

    def on_heartbeat(self, msg: MAVLink_heartbeat_message, now: float) -> None:
        # Commander::dataLinkCheck: only MAV_TYPE_GCS heartbeats are the ground station
        if msg.type == self.ap.m.MAV_TYPE_GCS:
            self.ap.last_gcs_heartbeat_s = now
            self._datalink_rules(now)

    def check(self, now: float) -> None:
        ap = self.ap
        self._offboard_rules(now)
        self._datalink_rules(now)
        if ap.pending_failsafe is not None and now >= ap.pending_failsafe[1]:
            action, _, why = ap.pending_failsafe
            ap.pending_failsafe = None
            self._do_action(action, why)

    def _offboard_rules(self, now: float) -> None:
        ap = self.ap
        available = ap.offboard_available(now)
        if ap.main_mode == PX4_OFFBOARD and ap.armed and not available and not ap.offboard_lost:
            gap = None if ap.last_setpoint_s is None else now - ap.last_setpoint_s
            why = f"offboard signal lost ({gap:.1f} s without setpoints)" if gap else "no offboard signal"
            ap.offboard_lost = True
            ap.failsafes.append(why)
            requested = COM_OBL_RC_ACT_TO_ACTION.get(int(ap.params.get("COM_OBL_RC_ACT")), ACT_POSCTL)
            log.warning("emulator %s: failsafe: %s", ap.vehicle, why)
            self._failsafe(requested, "Failsafe activated: no offboard signal", why)
        elif ap.offboard_lost and available:
            ap.offboard_lost = False  # the condition cleared (WhenConditionClears)
            if ap.pending_failsafe is not None and ap.main_mode == PX4_AUTO:
                ap.pending_failsafe = None
                ap.set_mode(PX4_OFFBOARD, intended=False)

    def _datalink_rules(self, now: float) -> None:
        ap = self.ap
        ok = ap.gcs_ok(now)
        if ok and ap.gcs_lost:
            ap.gcs_lost = False
            if ap.last_gcs_heartbeat_s is not None and ap.armed:
                ap.statustext(ap.m.MAV_SEVERITY_INFO, "Data link regained")
        elif not ok and not ap.gcs_lost:
            ap.gcs_lost = True
            act = int(ap.params.get("NAV_DLL_ACT"))
            exempt = ap.main_mode == PX4_OFFBOARD and int(ap.params.get("COM_DLL_EXCEPT")) & 4
            if ap.armed and act in NAV_DLL_ACT_TO_ACTION and not exempt:
                ap.failsafes.append("data link lost")
                self._failsafe(
                    NAV_DLL_ACT_TO_ACTION[act], "Failsafe activated: no data link", "data link lost"
                )
            elif ap.armed:
                ap.statustext(ap.m.MAV_SEVERITY_CRITICAL, "Connection to ground station lost")

    def _failsafe(self, action: int, text: str, why: str) -> None:
        """failsafe framework: fallback modes need RC; Hold/Return/Land wait COM_FAIL_ACT_T in Hold."""
        ap = self.ap
        if action in (ACT_POSCTL, ACT_ALTCTL, ACT_STAB) and not ap.config.rc_present:
            action = ACT_HOLD  # framework.cpp getSelectedAction: the fallback mode cannot run
        ap.statustext(ap.m.MAV_SEVERITY_CRITICAL, f"{text}, {ACTION_NAMES[action]}")
        delay_s = ap.params.get("COM_FAIL_ACT_T")
        if action in (ACT_HOLD, ACT_RTL, ACT_LAND) and delay_s > 0 and ap.armed and not ap.airframe.landed():
            ap.flight = None
            ap.set_mode(PX4_AUTO, PX4_AUTO_LOITER, intended=False)
            ap.hover()
            ap.pending_failsafe = (action, time.monotonic() + delay_s, why)
        else:
            self._do_action(action, why)

    def _do_action(self, action: int, why: str) -> None:
        ap = self.ap
        log.warning("emulator %s: failsafe action %s (%s)", ap.vehicle, ACTION_NAMES[action], why)
        ap.flight = None
        if action in (ACT_POSCTL, ACT_ALTCTL, ACT_STAB):
            ap.set_mode(
                {ACT_POSCTL: PX4_POSCTL, ACT_ALTCTL: PX4_ALTCTL, ACT_STAB: PX4_STAB}[action], intended=False
            )
            ap.hover()
        elif action == ACT_HOLD:
            ap.set_mode(PX4_AUTO, PX4_AUTO_LOITER, intended=False)
            ap.hover()
        elif action == ACT_RTL:
            self.manoeuvres.start_rtl()
        elif action == ACT_LAND:
            ap.set_mode(PX4_AUTO, PX4_AUTO_LAND, intended=False)
            ap.land()
        else:  # Terminate / Disarm: motors off, the vehicle drops
            ap.motors_off()


class ArduPilotFailsafes:
    def __init__(self, autopilot: Autopilot, manoeuvres: Manoeuvres) -> None:
        self.ap = autopilot
        self.manoeuvres = manoeuvres

    def on_heartbeat(self, msg: MAVLink_heartbeat_message, now: float) -> None:
        if msg.get_srcSystem() == int(self.ap.params.get("SYSID_MYGCS")):
            self.ap.last_gcs_heartbeat_s = now  # ArduPilot: any heartbeat from SYSID_MYGCS

    def check(self, now: float) -> None:
        ap = self.ap
        gap = None if ap.last_setpoint_s is None else now - ap.last_setpoint_s
        timeout_s = min(5.0, max(0.1, ap.params.get("GUID_TIMEOUT")))  # mode_guided.cpp get_timeout_ms
        if (
            ap.main_mode == APM_GUIDED
            and gap is not None
            and gap > timeout_s
            and not ap.guided_stopped
            and ap.flight is None
        ):
            ap.guided_stopped = True
            if not ap.airframe.landed():
                ap.hover()
                why = f"guided velocity target timed out ({gap:.1f} s)"
                ap.failsafes.append(why)
                log.warning("emulator %s: %s: stopping, holding in GUIDED (GUID_TIMEOUT)", ap.vehicle, why)
        fs = int(ap.params.get("FS_GCS_ENABLE"))
        if fs and ap.armed and ap.last_gcs_heartbeat_s is not None and not ap.gcs_ok(now):
            if not ap.gcs_lost and ap.main_mode not in (APM_RTL, APM_LAND):
                ap.gcs_lost = True
                ap.failsafes.append("GCS failsafe")
                ap.statustext(ap.m.MAV_SEVERITY_CRITICAL, "GCS Failsafe")
                if fs in (4, 5):
                    ap.set_mode(APM_LAND)
                    ap.land()
                elif fs == 7:
                    ap.set_mode(APM_BRAKE)
                    ap.hover()
                else:
                    self.manoeuvres.start_rtl()
        elif ap.gcs_lost and ap.gcs_ok(now):
            ap.gcs_lost = False
            ap.statustext(ap.m.MAV_SEVERITY_INFO, "GCS Failsafe Cleared")
