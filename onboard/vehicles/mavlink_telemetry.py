"""The receiving side of the MAVLink adapter: one thread reads every message, keeps the vehicle's
state and hands link business (acks, parameters, STATUSTEXT) to the link; a second watches for
silence.

- Telemetry: HEARTBEAT (mode, armed, system_status), LOCAL_POSITION_NED, ATTITUDE (yaw; roll and
  pitch for a body-fixed camera's frames),
  BATTERY_STATUS / SYS_STATUS (battery), EXTENDED_SYS_STATE (landed), GLOBAL_POSITION_INT and
  HOME_POSITION (kept for the log).
- No heartbeat for `link_timeout_s` is "link_lost" (and "link_ok" when they are back).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from onboard.vehicles.camera_mount import AttitudeHistory
from onboard.vehicles.fault_kinds import FaultAction, FaultKind
from onboard.vehicles.mavlink_link import MAV_AUTOPILOT_INVALID, MavlinkLink

if TYPE_CHECKING:
    from pymavlink.dialects.v20.all import MAVLink_heartbeat_message, MAVLink_message

# the adapter's one logger name: its log lines read as before the split
log = logging.getLogger("onboard.vehicles.px4")

PX4_OFFBOARD, PX4_POSCTL, PX4_AUTO, PX4_AUTO_LAND = 6, 3, 4, 6
APM_GUIDED, APM_LAND = 4, 9
MAV_LANDED_STATE_ON_GROUND, MAV_LANDED_STATE_IN_AIR = 1, 2


class MavlinkTelemetry:
    def __init__(self, link: MavlinkLink, on_mode_change: Callable[[], None]) -> None:
        """`on_mode_change` runs on the receiving thread after a HEARTBEAT shows a new mode. Faults go
        to the link's reporter; the silence limit is the target's `link_timeout_s`."""
        self.link = link
        self.px4 = link.px4
        self.faults = link.faults
        self.link_timeout_s = link.target.link_timeout_s
        self._on_mode_change = on_mode_change
        self._state_lock = threading.Lock()
        self._position: tuple[float, ...] | None = None  # x y z vx vy vz (local NED)
        self.yaw_deg = 0.0
        self.attitudes = AttitudeHistory(link.target.gimbal)  # ATTITUDE's roll and pitch, as received
        self.battery: float | None = None
        self.landed_state: int | None = None
        self._battery_status_seen = False
        self.system_status: int | None = None
        self.global_position: tuple[float, float, float] | None = None  # lat, lon deg, alt AMSL m
        self.home_position: tuple[float, float, float] | None = None
        self.was_airborne = False
        self.armed = False
        self.main_mode: int | None = None
        self.sub_mode = 0
        self._last_heartbeat_s = 0.0
        self.link_ok = True

    @property
    def position(self) -> tuple[float, ...] | None:
        """x y z vx vy vz in the autopilot's local NED frame; None before the first estimate."""
        with self._state_lock:
            return self._position

    @property
    def mode_name(self) -> str:
        if self.px4:
            if self.main_mode == PX4_AUTO:
                return {PX4_AUTO_LAND: "AUTO.LAND", 3: "AUTO.LOITER", 2: "AUTO.TAKEOFF"}.get(
                    self.sub_mode, "AUTO"
                )
            return {1: "MANUAL", 2: "ALTCTL", 3: "POSCTL", 6: "OFFBOARD", 7: "STABILIZED"}.get(
                self.main_mode or 0, str(self.main_mode)
            )
        return {0: "STABILIZE", 2: "ALT_HOLD", 4: "GUIDED", 5: "LOITER", 6: "RTL", 9: "LAND"}.get(
            self.main_mode or 0, str(self.main_mode)
        )

    def is_landed(self) -> bool:
        # EXTENDED_SYS_STATE when the autopilot sends it; otherwise disarmed after flying (both
        # autopilots disarm on landing) stands for it
        if self.landed_state is not None:
            return self.landed_state == MAV_LANDED_STATE_ON_GROUND
        return not self.armed

    def on_heartbeat(self, hb: MAVLink_heartbeat_message) -> None:
        self.link.on_any_heartbeat(hb)
        if hb.autopilot == MAV_AUTOPILOT_INVALID:  # a GCS or a component, not the autopilot
            return
        self._last_heartbeat_s = time.monotonic()
        self.system_status = int(hb.system_status)
        armed = bool(hb.base_mode & 128)
        if self.px4:
            main, sub = (hb.custom_mode >> 16) & 0xFF, (hb.custom_mode >> 24) & 0xFF
        else:
            main, sub = hb.custom_mode, 0
        changed = (main, sub) != (self.main_mode, self.sub_mode)
        self.armed, self.main_mode, self.sub_mode = armed, main, sub
        if changed:
            self._on_mode_change()

    def rx_loop(self, stop: threading.Event) -> None:
        conn = self.link.conn
        while not stop.is_set():
            try:
                msg = conn.recv_match(blocking=True, timeout=0.2)
            except Exception:
                if stop.is_set():
                    break
                log.debug("mavlink receive failed", exc_info=True)
                time.sleep(0.1)
                continue
            if msg is not None:
                self._on_message(msg)

    def _on_message(self, msg: MAVLink_message) -> None:
        kind = msg.get_type()
        if kind == "HEARTBEAT":
            self.on_heartbeat(msg)
        elif kind == "PARAM_VALUE":
            self.link.on_param(msg)
        elif kind == "BATTERY_STATUS":
            if msg.battery_remaining >= 0:
                self._battery_status_seen = True
                self.battery = msg.battery_remaining / 100.0
        elif kind == "GLOBAL_POSITION_INT":
            self.global_position = (msg.lat / 1e7, msg.lon / 1e7, msg.alt / 1000.0)
        elif kind == "HOME_POSITION":
            self.home_position = (msg.latitude / 1e7, msg.longitude / 1e7, msg.altitude / 1000.0)
        elif kind == "LOCAL_POSITION_NED":
            with self._state_lock:
                self._position = (msg.x, msg.y, msg.z, msg.vx, msg.vy, msg.vz)
        elif kind == "ATTITUDE":
            self.yaw_deg = math.degrees(msg.yaw)
            # FRD body in the NED frame: the same signs as a frame's camera attitude
            self.attitudes.add(time.monotonic(), math.degrees(msg.roll), math.degrees(msg.pitch))
        elif kind == "SYS_STATUS" and not self._battery_status_seen:
            self.battery = None if msg.battery_remaining < 0 else msg.battery_remaining / 100.0
        elif kind == "EXTENDED_SYS_STATE":
            self.landed_state = msg.landed_state
            if msg.landed_state == MAV_LANDED_STATE_IN_AIR:
                self.was_airborne = True
        elif kind == "STATUSTEXT":
            self.link.on_statustext(msg)
        elif kind == "COMMAND_ACK":
            self.link.on_ack(msg)

    def watch_loop(self, stop: threading.Event) -> None:
        while not stop.wait(0.1):
            age = time.monotonic() - self._last_heartbeat_s
            if self.link_ok and age > self.link_timeout_s:
                self.link_ok = False
                self.faults.emit(FaultKind.LINK_LOST, f"no HEARTBEAT for {age:.1f} s", FaultAction.LAND)
            elif not self.link_ok and age < self.link_timeout_s:
                self.link_ok = True
                self.faults.emit(FaultKind.LINK_OK, "heartbeats are back")
