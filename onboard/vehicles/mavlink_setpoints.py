"""The offboard/guided setpoint writer: SET_POSITION_TARGET_LOCAL_NED in MAV_FRAME_BODY_NED (8)
with type_mask 1479 (velocity + yaw rate). PX4 rotates (vx forward, vy right) by yaw only and takes
vz as NED down, the same convention as the Vehicle protocol; yaw rate goes in rad/s.

Our own stream ("bridge") runs only before and during take-off: PX4 only enters OFFBOARD with
setpoints already flowing, and the climb is streamed. The actuation loop takes the stream over at
its first setpoint; after that the stream is only the actuation loop's, so if the onboard loop
stalls, PX4's own offboard-loss failsafe acts, as it should.
"""

from __future__ import annotations

import logging
import math
import threading
import time

from onboard.vehicles.mavlink_link import MavlinkLink

# the adapter's one logger name: its log lines read as before the split
log = logging.getLogger("onboard.vehicles.px4")

FRAME_BODY_NED = 8
MASK_VELOCITY_YAW_RATE = 1479  # ignore position (7), acceleration (448), yaw (1024)
STREAM_HZ = 20.0

Setpoint = tuple[float, float, float, float]  # forward, right, down (m/s), yaw rate (deg/s)


class SetpointWriter:
    def __init__(self, link: MavlinkLink) -> None:
        self.link = link
        self.last_setpoint_s: float | None = None
        self.setpoints_sent = 0
        self._bridge = threading.Event()  # set: our thread streams setpoints (take-off, handover)
        self._bridge_setpoint: Setpoint = (0.0, 0.0, 0.0, 0.0)

    def send(self, forward_m_s: float, right_m_s: float, down_m_s: float, yaw_rate_deg_s: float) -> None:
        conn = self.link.conn
        self.link.send(
            lambda mav: mav.set_position_target_local_ned_send(
                int((time.monotonic() * 1000) % 2**32),
                conn.target_system,
                conn.target_component,
                FRAME_BODY_NED,
                MASK_VELOCITY_YAW_RATE,
                0.0,
                0.0,
                0.0,
                float(forward_m_s),
                float(right_m_s),
                float(down_m_s),
                0.0,
                0.0,
                0.0,
                0.0,
                math.radians(yaw_rate_deg_s),
            )
        )
        self.last_setpoint_s = time.monotonic()
        self.setpoints_sent += 1

    def bridge(self, setpoint: Setpoint) -> None:
        """Our thread streams this setpoint from now on (until `stop_bridge`)."""
        self._bridge_setpoint = setpoint
        self._bridge.set()

    def retarget_bridge(self, setpoint: Setpoint) -> None:
        """What our stream sends, if it runs (it is not started by this)."""
        self._bridge_setpoint = setpoint

    def stop_bridge(self) -> None:
        self._bridge.clear()

    def stream_loop(self, stop: threading.Event) -> None:
        """Our own setpoint stream, only while the bridge is on (before and during take-off)."""
        period = 1.0 / STREAM_HZ
        while not stop.wait(period):
            if self._bridge.is_set():
                try:
                    self.send(*self._bridge_setpoint)
                except Exception:
                    log.debug("bridge setpoint failed", exc_info=True)
