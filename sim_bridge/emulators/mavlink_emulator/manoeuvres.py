"""What the autopilot flies by itself once asked: take-off, return to launch, and disarming after a
landing (or when armed on the ground too long), advanced at the telemetry rate.

- Take-off: PX4 AUTO.TAKEOFF climbs to MIS_TAKEOFF_ALT (or the commanded altitude), then AUTO.LOITER;
  ArduCopter climbs in GUIDED.
- Return: PX4 AUTO.RTL climbs to its return altitude, flies home, waits RTL_LAND_DELAY and lands;
  ArduCopter RTL (mode 6, mode_rtl.cpp) climbs to its return altitude, returns, loiters RTL_LOIT_TIME
  (ms), lands. Near home both return low, through a cone over home (`return_altitude_m`): a drone
  4 m from home does not climb to a 60 m RTL_RETURN_ALT first.
  Both disarm after landing (PX4 after COM_DISARM_LAND).
"""

from __future__ import annotations

import math

import numpy as np

from sim_bridge.emulators.mavlink_emulator.core import Autopilot, Flight
from sim_bridge.emulators.mavlink_emulator.protocol import PX4_AUTO, PX4_AUTO_LOITER, PX4_AUTO_TAKEOFF

# ArduCopter config.h: the least RTL altitude, the least climb the cone leaves, the shallowest cone.
APM_RTL_ALT_MIN_M = 0.30
APM_RTL_ABS_MIN_CLIMB_M = 2.50
APM_RTL_MIN_CONE_SLOPE = 0.5


def return_altitude_m(ap: Autopilot, distance_m: float, altitude_m: float, return_alt_m: float) -> float:
    """The altitude above home a return flies at, from `distance_m` (horizontal, from home) and the
    current `altitude_m`; never below the current altitude.

    PX4 (v1.15, navigator/rtl.cpp calculate_return_alt_from_cone_half_angle, multicopters with
    RTL_CONE_ANG > 0): within NAV_ACC_RAD of home, twice the distance; within RTL_MIN_DIST, the
    cone's height over home (distance / tan(RTL_CONE_ANG), the angle held to 1..89 deg) if lower
    than RTL_RETURN_ALT, but at least twice NAV_ACC_RAD; farther, RTL_RETURN_ALT.
    ArduCopter (4.5, mode_rtl.cpp compute_return_target, home as the target): the largest of the
    current altitude plus RTL_CLIMB_MIN and RTL_ALT (at least RTL_ALT_MIN); with RTL_CONE_SLOPE >= 0.5,
    no more than the slope times the distance, but at least a 2.5 m climb."""
    if ap.px4:
        cone_deg = ap.params.get("RTL_CONE_ANG")
        if cone_deg <= 0:
            return max(altitude_m, return_alt_m)
        acceptance_m = ap.params.get("NAV_ACC_RAD")
        if distance_m <= acceptance_m:
            target_m = 2.0 * distance_m
        else:
            target_m = return_alt_m
            if distance_m <= ap.params.get("RTL_MIN_DIST"):
                cone_m = distance_m / math.tan(math.radians(min(89.0, max(1.0, cone_deg))))
                target_m = min(cone_m, target_m)
            target_m = max(target_m, 2.0 * acceptance_m)
        return max(target_m, altitude_m)
    target_m = max(0.0, altitude_m + max(0.0, ap.params.get("RTL_CLIMB_MIN") / 100.0))
    target_m = max(target_m, max(return_alt_m, APM_RTL_ALT_MIN_M))
    slope = ap.params.get("RTL_CONE_SLOPE")
    if slope >= APM_RTL_MIN_CONE_SLOPE:
        target_m = max(
            altitude_m, min(target_m, max(distance_m * slope, altitude_m + APM_RTL_ABS_MIN_CLIMB_M))
        )
    return max(target_m, altitude_m)


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
        distance_m = math.hypot(float(p[0]), float(p[1]))  # the local frame's origin is home
        altitude_m = return_altitude_m(ap, distance_m, -float(p[2]), return_alt_m)
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
            ap.airborne = True
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
