"""What the autopilot flies by itself once asked: take-off, return to launch, and disarming after a
landing (or when armed on the ground too long), advanced at the telemetry rate.

- Take-off: PX4 AUTO.TAKEOFF climbs to MIS_TAKEOFF_ALT (or the commanded altitude), then AUTO.LOITER;
  ArduCopter climbs in GUIDED.
- Return: PX4 AUTO.RTL climbs to RTL_RETURN_ALT, flies home, waits RTL_LAND_DELAY and lands;
  ArduCopter RTL (mode 6, mode_rtl.cpp) climbs to RTL_ALT (cm), returns, loiters RTL_LOIT_TIME (ms), lands.
  Both disarm after landing (PX4 after COM_DISARM_LAND).
"""

from __future__ import annotations

import math

import numpy as np

from sim_bridge.emulators.mavlink_emulator.core import Autopilot, Flight
from sim_bridge.emulators.mavlink_emulator.protocol import PX4_AUTO, PX4_AUTO_LOITER, PX4_AUTO_TAKEOFF


class Manoeuvres:
    """The autopilot's (`ap`) own flights; the current one is `ap.flight`."""

    def __init__(self, autopilot: Autopilot) -> None:
        self.ap = autopilot

    def start_takeoff(self, altitude_m: float) -> None:
        ap = self.ap
        ap.flight = Flight("takeoff", "climb", altitude_m)
        ap.flew = True
        ap.airframe.climb_to(altitude_m, ap.setting(ap.flavour.takeoff_speed_m_s))

    def start_rtl(self) -> None:
        ap = self.ap
        ap.set_mode(*ap.flavour.rtl_mode)
        return_alt_m = ap.setting(ap.flavour.return_alt_m)
        if ap.airframe.landed():
            ap.flight = None
            return
        p, _v, _yaw, _ = ap.airframe.local()
        altitude_m = max(-float(p[2]), return_alt_m)
        ap.flight = Flight("rtl", "climb", altitude_m)
        ap.airframe.fly_to(np.array([p[0], p[1], -altitude_m]), 2.0)

    def advance(self, now: float) -> None:
        ap = self.ap
        f = ap.flight
        if f is None:
            return
        p, v, _yaw, _ = ap.airframe.local()
        settled = float(np.linalg.norm(v)) < 0.15
        if f.kind == "takeoff":
            if abs(-float(p[2]) - f.altitude_m) < 0.15 and settled:
                ap.flight = None
                if ap.px4 and ap.main_mode == PX4_AUTO and ap.sub_mode == PX4_AUTO_TAKEOFF:
                    ap.set_mode(PX4_AUTO, PX4_AUTO_LOITER)
            return
        if f.phase == "climb" and abs(-float(p[2]) - f.altitude_m) < 0.2:
            f.phase = "return"
            ap.airframe.fly_to(np.array([0.0, 0.0, -f.altitude_m]), ap.setting(ap.flavour.cruise_m_s))
        elif f.phase == "return" and math.hypot(float(p[0]), float(p[1])) < 0.3 and settled:
            f.phase = "loiter"
            delay_s = ap.setting(ap.flavour.return_loiter_s)
            f.until_s = now + (math.inf if delay_s < 0 else delay_s)
        elif f.phase == "loiter" and now >= f.until_s:
            f.phase = "land"
            ap.land()

    def disarm_rules(self, now: float) -> None:
        ap = self.ap
        if not ap.armed:
            return
        if not ap.airframe.landed():
            ap.landed_s = None
            return
        if ap.flight is not None and ap.flight.kind == "takeoff":
            return
        landing = (ap.main_mode, ap.sub_mode) in ap.flavour.ground_disarm_modes
        if ap.landed_s is None:
            ap.landed_s = now
        since_arm = now - ap.armed_s
        if landing:
            if now - ap.landed_s >= ap.setting(ap.flavour.landed_disarm_s):
                ap.disarm()
                ap.statustext(ap.m.MAV_SEVERITY_INFO, "Landing detected, disarmed")
        elif not ap.flew and since_arm > ap.setting(ap.flavour.preflight_disarm_s):
            ap.disarm()
            ap.statustext(ap.m.MAV_SEVERITY_INFO, "Disarmed: no takeoff")
