"""SET_POSITION_TARGET_LOCAL_NED: PX4 offboard and ArduCopter GUIDED setpoints.

PX4 (mavlink_receiver.cpp, commander/HealthAndArmingChecks/checks/offboardCheck.cpp): LOCAL_NED or
BODY_NED with any type mask (position, velocity, yaw, yaw rate as the mask says); every setpoint is
proof of life for the offboard check (one is enough to make OFFBOARD available), but only in OFFBOARD
and armed is it flown. ArduCopter takes the offset frames too and flies GUIDED targets only once in
the air (a take-off comes first). Their loss is failsafes' business.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from common.frames import forward_right_to_north_east
from sim_bridge.emulators.mavlink_emulator.core import Autopilot
from sim_bridge.emulators.mavlink_emulator.protocol import (
    FRAME_BODY_NED,
    FRAME_BODY_OFFSET_NED,
    FRAME_LOCAL_OFFSET_NED,
    IGNORE_POS,
    IGNORE_VEL,
    IGNORE_YAW,
    IGNORE_YAW_RATE,
)
from sim_bridge.sim.world import YawMode

if TYPE_CHECKING:
    from pymavlink.dialects.v20.all import MAVLink_set_position_target_local_ned_message


class Offboard:
    """Takes setpoints for the autopilot (`ap`) and flies them with its airframe."""

    def __init__(self, autopilot: Autopilot) -> None:
        self.ap = autopilot
        self.airframe = autopilot.airframe

    def on_setpoint(self, msg: MAVLink_set_position_target_local_ned_message) -> None:
        ap = self.ap
        now = time.monotonic()
        frame, mask = int(msg.coordinate_frame), int(msg.type_mask)
        if frame not in ap.flavour.setpoint_frames:
            ap.statustext(
                ap.m.MAV_SEVERITY_ERROR,
                f"SET_POSITION_TARGET_LOCAL_NED: frame {frame} unsupported",  # 50 chars max
            )
            return
        if ap.last_setpoint_s is not None:
            ap.setpoint_intervals_s.append(now - ap.last_setpoint_s)
            del ap.setpoint_intervals_s[:-2000]
        ap.last_setpoint_s = now
        ap.guided_stopped = False
        ap.setpoints += 1
        if not (ap.in_offboard() and ap.armed):
            return  # proof of life only (PX4 forwards the trajectory only in OFFBOARD)
        if ap.offboard_lost:
            return  # the failsafe still has the vehicle until the rules loop sees the stream back
        if not ap.px4 and ap.flight is not None:
            return  # ArduCopter: the take-off in GUIDED runs to its altitude first
        self._follow(msg, frame, mask)

    def _follow(self, msg: MAVLink_set_position_target_local_ned_message, frame: int, mask: int) -> None:
        ap, airframe = self.ap, self.airframe
        use_pos = (mask & IGNORE_POS) != IGNORE_POS
        use_vel = (mask & IGNORE_VEL) != IGNORE_VEL
        p, _v, yaw_now, _ = airframe.local()
        body = frame in (FRAME_BODY_NED, FRAME_BODY_OFFSET_NED)
        if ap.px4 and frame == FRAME_BODY_NED:
            use_pos = False  # PX4: positions in BODY_NED are ignored (mavlink_receiver.cpp)
        if airframe.landed():
            if not ap.px4:
                return  # ArduCopter does not take off from GUIDED targets: NAV_TAKEOFF first
            climbing = (use_vel and msg.vz < -0.05) or (use_pos and msg.z < float(p[2]) - 0.05)
            if not climbing:
                return  # on the ground only a climb starts flight
            ap.flew = True
        if not (mask & IGNORE_YAW):
            yaw_is_rate, yaw_value = False, math.degrees(msg.yaw)
        elif not (mask & IGNORE_YAW_RATE):
            yaw_is_rate, yaw_value = True, math.degrees(msg.yaw_rate)
        else:
            yaw_is_rate, yaw_value = False, yaw_now
        if use_pos:
            target = np.array([msg.x, msg.y, msg.z], dtype=float)
            if body:
                target = p + np.array([*forward_right_to_north_east(msg.x, msg.y, yaw_now), msg.z])
            elif frame == FRAME_LOCAL_OFFSET_NED:
                target = p + target
            airframe.fly_to(target, ap.setting(ap.flavour.cruise_m_s), yaw=YawMode(yaw_is_rate, yaw_value))
        elif use_vel:
            vel = np.array([msg.vx, msg.vy, msg.vz], dtype=float)
            if body:
                vel = np.array([*forward_right_to_north_east(msg.vx, msg.vy, yaw_now), msg.vz])
            # the setpoint holds until the next one or the loss rule (COM_OF_LOSS_T / GUID_TIMEOUT)
            hold_s = ap.setting(ap.flavour.setpoint_hold_s)
            airframe.fly_velocity(
                list(map(float, vel)), max(0.1, hold_s) + 0.1, YawMode(yaw_is_rate, yaw_value)
            )
        elif not (mask & IGNORE_YAW) or not (mask & IGNORE_YAW_RATE):
            if yaw_is_rate:
                airframe.turn_rate(yaw_value)
            else:
                airframe.turn_to(yaw_value)
