"""COMMAND_LONG / COMMAND_INT and the mode changes (also the legacy SET_MODE), each answered with one
COMMAND_ACK.

- Modes: PX4 takes OFFBOARD only while offboard is available (a setpoint younger than COM_OF_LOSS_T,
  offboardCheck.cpp), else TEMPORARILY_REJECTED; its RC modes need an RC link. ArduCopter AUTO needs
  a mission, which is not emulated.
- Arming: refused with the pre-arm failure's text (core.Autopilot.prearm_failure); force (21196)
  skips the checks and disarms in the air. An arm after a flight starts the next flight: the vehicle
  back at home (airframe.flights, flight_reset.py) and PX4 out of the Land/Return it disarmed in
  (core.Autopilot.leave_landing_mode), both before the checks.
- Take-off: PX4 accepts MAV_CMD_NAV_TAKEOFF (AUTO.TAKEOFF to MIS_TAKEOFF_ALT, then AUTO.LOITER);
  ArduCopter takes off in GUIDED when armed (else MAV_RESULT_FAILED, GCS_Mavlink.cpp).
- Identity: AUTOPILOT_VERSION on MAV_CMD_REQUEST_MESSAGE (512) or REQUEST_AUTOPILOT_CAPABILITIES (520).
- Fault injection: a command in the config's `refused` gets its result and text.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from sim_bridge.emulators.mavlink_emulator.core import Autopilot
from sim_bridge.emulators.mavlink_emulator.manoeuvres import Manoeuvres
from sim_bridge.emulators.mavlink_emulator.protocol import (
    APM_AUTO,
    APM_GUIDED,
    APM_LAND,
    APM_MODES,
    APM_RTL,
    AUTOPILOT_VERSION,
    HEARTBEAT,
    HOME_ALT_M,
    PX4_ALTCTL,
    PX4_AUTO,
    PX4_AUTO_LAND,
    PX4_AUTO_LOITER,
    PX4_AUTO_RTL,
    PX4_AUTO_TAKEOFF,
    PX4_DEFAULT_RATES_HZ,
    PX4_NEEDS_RC,
    PX4_OFFBOARD,
    PX4_POSCTL,
    int_param,
)
from sim_bridge.emulators.mavlink_emulator.telemetry import TelemetrySender

if TYPE_CHECKING:
    from pymavlink.dialects.v20.all import (
        MAVLink_command_int_message,
        MAVLink_command_long_message,
        MAVLink_set_mode_message,
    )


class Commands:
    def __init__(self, autopilot: Autopilot, manoeuvres: Manoeuvres, telemetry: TelemetrySender) -> None:
        self.ap = autopilot
        self.manoeuvres = manoeuvres
        self.telemetry = telemetry

    def on_command(
        self, msg: MAVLink_command_long_message | MAVLink_command_int_message, is_int: bool
    ) -> None:
        ap, m = self.ap, self.ap.m
        ack = ap.link.ack
        cmd = int(msg.command)
        if is_int:
            p = [msg.param1, msg.param2, msg.param3, msg.param4, msg.x / 1e7, msg.y / 1e7, msg.z]
        else:
            p = [msg.param1, msg.param2, msg.param3, msg.param4, msg.param5, msg.param6, msg.param7]
        if cmd in ap.config.refused:
            result, text = ap.config.refused[cmd]
            ap.statustext(m.MAV_SEVERITY_CRITICAL, text)
            ack(cmd, result)
            return
        if cmd == m.MAV_CMD_DO_SET_MODE:
            ack(cmd, self.set_mode(int_param(p[1]), int_param(p[2])))
        elif cmd == m.MAV_CMD_COMPONENT_ARM_DISARM:
            ack(cmd, self._arm(int_param(p[0]) == 1, int_param(p[1]) == 21196))
        elif cmd == m.MAV_CMD_NAV_LAND:
            if ap.px4:
                ap.set_mode(PX4_AUTO, PX4_AUTO_LAND)
            else:
                ap.set_mode(APM_LAND)
            ap.flight = None
            ap.land()
            ack(cmd, m.MAV_RESULT_ACCEPTED)
        elif cmd == m.MAV_CMD_NAV_TAKEOFF:
            ack(cmd, self._takeoff(float(p[6])))
        elif cmd == m.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            self.manoeuvres.start_rtl()
            ack(cmd, m.MAV_RESULT_ACCEPTED)
        elif cmd == m.MAV_CMD_SET_MESSAGE_INTERVAL:
            ack(
                cmd, self.telemetry.set_interval(int_param(p[0]), float(p[1]) if math.isfinite(p[1]) else 0.0)
            )
        elif cmd == m.MAV_CMD_REQUEST_MESSAGE:
            msg_id = int_param(p[0])
            known = msg_id in (AUTOPILOT_VERSION, *PX4_DEFAULT_RATES_HZ, HEARTBEAT)
            ack(cmd, m.MAV_RESULT_ACCEPTED if known else m.MAV_RESULT_UNSUPPORTED)
            if known:
                self.telemetry.send_message(msg_id)
        elif cmd == m.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES:
            ack(cmd, m.MAV_RESULT_ACCEPTED)
            self.telemetry.autopilot_version()
        else:
            ack(cmd, m.MAV_RESULT_UNSUPPORTED)

    def on_set_mode(self, msg: MAVLink_set_mode_message) -> None:
        """The legacy SET_MODE message (MAVProxy's "mode" uses it on ArduPilot); no ack."""
        if self.ap.px4:
            self.set_mode((msg.custom_mode >> 16) & 0xFF, (msg.custom_mode >> 24) & 0xFF)
        else:
            self.set_mode(msg.custom_mode & 0xFFFF, 0)

    def set_mode(self, main: int, sub: int) -> int:
        """A requested mode change; the MAV_RESULT."""
        return self._px4_set_mode(main, sub) if self.ap.px4 else self._apm_set_mode(main)

    def _px4_set_mode(self, main: int, sub: int) -> int:
        ap, m = self.ap, self.ap.m
        if main == PX4_OFFBOARD and not ap.offboard_available(time.monotonic()):
            ap.statustext(m.MAV_SEVERITY_CRITICAL, "Switching to Offboard is currently not available")
            return int(m.MAV_RESULT_TEMPORARILY_REJECTED)
        if main in PX4_NEEDS_RC and not ap.config.rc_present:
            name = {PX4_POSCTL: "Position", PX4_ALTCTL: "Altitude"}.get(main, "Manual")
            ap.statustext(m.MAV_SEVERITY_CRITICAL, f"Switching to {name} is currently not available")
            return int(m.MAV_RESULT_TEMPORARILY_REJECTED)
        if main not in (*PX4_NEEDS_RC, PX4_AUTO, PX4_OFFBOARD) or (
            main == PX4_AUTO and sub not in (PX4_AUTO_TAKEOFF, PX4_AUTO_LOITER, PX4_AUTO_RTL, PX4_AUTO_LAND)
        ):
            return int(m.MAV_RESULT_UNSUPPORTED)
        ap.pending_failsafe = None
        ap.offboard_lost = False
        if main == PX4_AUTO and sub == PX4_AUTO_RTL:
            self.manoeuvres.start_rtl()
            return int(m.MAV_RESULT_ACCEPTED)
        if main == PX4_AUTO and sub == PX4_AUTO_TAKEOFF:
            ap.set_mode(main, sub)
            if ap.armed:
                self.manoeuvres.start_takeoff(ap.params.get("MIS_TAKEOFF_ALT"))
            return int(m.MAV_RESULT_ACCEPTED)
        ap.flight = None
        ap.set_mode(main, sub)
        if main == PX4_AUTO and sub == PX4_AUTO_LAND:
            ap.land()
        elif main != PX4_OFFBOARD:
            ap.hover()
        return int(m.MAV_RESULT_ACCEPTED)

    def _apm_set_mode(self, main: int) -> int:
        ap, m = self.ap, self.ap.m
        if main not in APM_MODES or main == APM_AUTO:
            return int(m.MAV_RESULT_UNSUPPORTED)  # AUTO needs a mission: not emulated
        if main == APM_RTL:
            self.manoeuvres.start_rtl()
            return int(m.MAV_RESULT_ACCEPTED)
        ap.flight = None
        ap.set_mode(main, 0)
        if main == APM_LAND:
            ap.land()
        elif main != APM_GUIDED:
            ap.hover()
        return int(m.MAV_RESULT_ACCEPTED)

    def _arm(self, arm: bool, force: bool) -> int:
        ap, m = self.ap, self.ap.m
        if not arm:
            if not ap.airframe.landed() and not force:
                ap.statustext(m.MAV_SEVERITY_CRITICAL, "Disarming denied: not landed")
                return int(m.MAV_RESULT_DENIED)
            if not ap.airframe.landed():
                ap.motors_off()
            ap.disarm()
            return int(m.MAV_RESULT_ACCEPTED)
        if ap.armed:
            return int(m.MAV_RESULT_ACCEPTED)
        # a new flight: back at home first if the last one left the vehicle there (airframe.flights),
        # so the pre-arm checks see the fresh pack
        ap.airframe.flights.new_flight()
        ap.leave_landing_mode()
        why = None if force else ap.prearm_failure()
        if why is not None:
            ap.statustext(m.MAV_SEVERITY_CRITICAL, why)
            return ap.flavour.arming_refused_result
        ap.arm()
        if ap.px4 and ap.main_mode == PX4_AUTO and ap.sub_mode == PX4_AUTO_TAKEOFF:
            self.manoeuvres.start_takeoff(ap.params.get("MIS_TAKEOFF_ALT"))
        return int(m.MAV_RESULT_ACCEPTED)

    def _takeoff(self, altitude: float) -> int:
        ap, m = self.ap, self.ap.m
        if ap.px4:
            # Commander: NAV_TAKEOFF switches to AUTO.TAKEOFF; param7 is AMSL (NaN: MIS_TAKEOFF_ALT)
            rel_m = altitude - HOME_ALT_M if math.isfinite(altitude) else ap.params.get("MIS_TAKEOFF_ALT")
            if not ap.airframe.landed():
                return int(m.MAV_RESULT_TEMPORARILY_REJECTED)
            ap.pending_failsafe = None
            ap.set_mode(PX4_AUTO, PX4_AUTO_TAKEOFF)
            if ap.armed:
                self.manoeuvres.start_takeoff(max(0.5, rel_m))
            return int(m.MAV_RESULT_ACCEPTED)
        # ArduCopter GCS_MAVLINK_Copter::handle_MAV_CMD_NAV_TAKEOFF -> do_user_takeoff
        if not ap.armed or ap.main_mode != APM_GUIDED or not ap.airframe.landed():
            ap.statustext(m.MAV_SEVERITY_CRITICAL, "Takeoff denied: arm in GUIDED first")
            return int(m.MAV_RESULT_FAILED)
        self.manoeuvres.start_takeoff(max(0.5, altitude))
        return int(m.MAV_RESULT_ACCEPTED)
