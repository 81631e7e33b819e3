"""The telemetry the autopilot sends: HEARTBEAT at 1 Hz, the streams at their intervals, and single
messages on request (MAV_CMD_REQUEST_MESSAGE, AUTOPILOT_VERSION).

- Streams: PX4 sends its onboard-link defaults (mavlink_main.cpp, MAVLINK_MODE_ONBOARD, capped at
  `telemetry_hz`); ArduPilot sends only HEARTBEAT until asked (a port whose SRn_* rates are 0;
  EXTENDED_SYS_STATE and HOME_POSITION are in none of ArduCopter's stream groups anyway). Both obey
  MAV_CMD_SET_MESSAGE_INTERVAL (511) and ArduPilot REQUEST_DATA_STREAM (66, what MAVProxy sends).
- Position: GLOBAL_POSITION_INT, GPS_RAW_INT and HOME_POSITION from the simulator's geo origin (the
  AirSim server's home point); SYS_STATUS with the sensor and pre-arm (MAV_SYS_STATUS_PREARM_CHECK)
  health bits that MAVSDK's health() reads.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from sim_bridge.emulators.mavlink_emulator.core import Autopilot
from sim_bridge.emulators.mavlink_emulator.protocol import (
    APM_STREAMS,
    ATTITUDE,
    AUTOPILOT_VERSION,
    BATTERY_STATUS,
    EARTH_RADIUS_M,
    EXTENDED_SYS_STATE,
    GLOBAL_POSITION_INT,
    GPS_RAW_INT,
    HEARTBEAT,
    HOME_ALT_M,
    HOME_LAT_DEG,
    HOME_LON_DEG,
    HOME_POSITION,
    LOCAL_POSITION_NED,
    PX4_DEFAULT_RATES_HZ,
    SENSOR_PREARM,
    SENSOR_RC,
    SENSORS,
    SYS_STATUS,
)

if TYPE_CHECKING:
    from pymavlink.dialects.v20.all import MAVLink_request_data_stream_message


def geo(p_ned: np.ndarray) -> tuple[int, int, int]:
    """lat, lon (degE7) and altitude AMSL (mm) of a point in the episode's world NED frame."""
    lat = HOME_LAT_DEG + math.degrees(float(p_ned[0]) / EARTH_RADIUS_M)
    lon = HOME_LON_DEG + math.degrees(
        float(p_ned[1]) / (EARTH_RADIUS_M * math.cos(math.radians(HOME_LAT_DEG)))
    )
    return round(lat * 1e7), round(lon * 1e7), round((HOME_ALT_M - float(p_ned[2])) * 1000)


class TelemetrySender:
    """Sends what the autopilot streams and what it is asked for, on its schedule."""

    def __init__(self, autopilot: Autopilot) -> None:
        self.ap = autopilot
        self.link = autopilot.link
        self.mav = autopilot.link.mav
        self.boot_s = time.monotonic()
        self.max_hz = autopilot.config.telemetry_hz
        self.intervals_s: dict[int, float] = (
            {k: 1.0 / min(hz, self.max_hz) for k, hz in PX4_DEFAULT_RATES_HZ.items()} if autopilot.px4 else {}
        )
        self._next_s: dict[int, float] = {}
        self._last_heartbeat_s = 0.0

    # ---- the schedule
    def tick(self, now: float, tick_s: float) -> None:
        """Send what is due at `now` (the telemetry thread calls this every `tick_s`)."""
        if now - self._last_heartbeat_s >= 1.0:
            self.ap.heartbeat()
            self._last_heartbeat_s = now
        for msg_id, interval_s in list(self.intervals_s.items()):
            due = self._next_s.get(msg_id, 0.0)
            if now >= due:
                self._next_s[msg_id] = max(due + interval_s, now - tick_s)
                self.send_message(msg_id)

    def set_interval(self, msg_id: int, interval_us: float) -> int:
        """MAV_CMD_SET_MESSAGE_INTERVAL: <0 stops, 0 is the default rate; the MAV_RESULT."""
        m = self.ap.m
        probe_ok = msg_id in (*PX4_DEFAULT_RATES_HZ, HEARTBEAT)
        if not probe_ok:
            return int(m.MAV_RESULT_UNSUPPORTED)
        if interval_us < 0:
            self.intervals_s.pop(msg_id, None)
        elif interval_us == 0:  # the default rate
            if self.ap.px4:
                self.intervals_s[msg_id] = 1.0 / min(PX4_DEFAULT_RATES_HZ[msg_id], self.max_hz)
            else:
                self.intervals_s.pop(msg_id, None)
        else:
            self.intervals_s[msg_id] = max(interval_us / 1e6, 1.0 / self.max_hz)
        self._next_s.pop(msg_id, None)
        return int(m.MAV_RESULT_ACCEPTED)

    def request_data_stream(self, msg: MAVLink_request_data_stream_message) -> None:
        """ArduPilot REQUEST_DATA_STREAM: a stream group (0: all) at a rate, or stopped."""
        ids = (
            [i for g in APM_STREAMS.values() for i in g]
            if msg.req_stream_id == 0
            else APM_STREAMS.get(msg.req_stream_id, ())
        )
        for msg_id in ids:
            self.set_interval(
                msg_id, 1e6 / msg.req_message_rate if msg.start_stop and msg.req_message_rate else -1
            )

    # ---- the messages
    def send_message(self, msg_id: int) -> bool:
        """Send one message of the streamable kinds; False for an id this emulator does not produce."""
        ap, mav, send = self.ap, self.mav, self.link.send
        m = ap.m
        t_ms = int((time.monotonic() - self.boot_s) * 1000) & 0xFFFFFFFF
        if msg_id == HEARTBEAT:
            ap.heartbeat()
        elif msg_id in (LOCAL_POSITION_NED, ATTITUDE, GLOBAL_POSITION_INT):
            p, v, yaw, yaw_rate = ap.airframe.local()
            if msg_id == LOCAL_POSITION_NED:
                send(mav.local_position_ned_send, t_ms, *(float(a) for a in p), *(float(a) for a in v))
            elif msg_id == ATTITUDE:
                roll, pitch = ap.airframe.roll_pitch_rad()  # the body tilts as it accelerates
                yaw_rad, rate_rad_s = math.radians(yaw), math.radians(yaw_rate)
                send(mav.attitude_send, t_ms, roll, pitch, yaw_rad, 0.0, 0.0, rate_rad_s)
            else:
                lat, lon, alt = geo(ap.airframe.home_ned() + p)
                cm = [round(float(a) * 100) for a in v]
                send(
                    mav.global_position_int_send,
                    t_ms,
                    lat,
                    lon,
                    alt,
                    round(-float(p[2]) * 1000),
                    *cm,
                    round((yaw % 360) * 100),
                )
        elif msg_id == GPS_RAW_INT:
            p, v, _yaw, _ = ap.airframe.local()
            lat, lon, alt = geo(ap.airframe.home_ned() + p)
            ground_cm_s = round(math.hypot(float(v[0]), float(v[1])) * 100)
            cog = round((math.degrees(math.atan2(float(v[1]), float(v[0]))) % 360) * 100)
            send(mav.gps_raw_int_send, t_ms * 1000, 3, lat, lon, alt, 80, 120, ground_cm_s, cog, 14)
        elif msg_id == HOME_POSITION:
            lat, lon, alt = geo(ap.airframe.home_ned())
            send(mav.home_position_send, lat, lon, alt, 0.0, 0.0, 0.0, [1, 0, 0, 0], 0.0, 0.0, 0.0)
        elif msg_id == SYS_STATUS:
            health = SENSORS | (0 if ap.prearm_failure() else SENSOR_PREARM)
            present = SENSORS | SENSOR_PREARM
            if ap.config.rc_present:
                present |= SENSOR_RC
                health |= SENSOR_RC
            pct, mv, ca, _, _, _ = ap.airframe.battery()
            send(mav.sys_status_send, present, present, health, 250, mv, ca, pct, 0, 0, 0, 0, 0, 0)
        elif msg_id == EXTENDED_SYS_STATE:
            send(mav.extended_sys_state_send, m.MAV_VTOL_STATE_MC, self._landed_state())
        elif msg_id == BATTERY_STATUS:
            pct, _, ca, cells, mah, hj = ap.airframe.battery()
            # id 0, MAV_BATTERY_FUNCTION_ALL, MAV_BATTERY_TYPE_LIPO, temperature unknown (INT16_MAX)
            send(mav.battery_status_send, 0, 1, 1, 32767, cells, ca, mah, hj, pct)
        elif msg_id == AUTOPILOT_VERSION:
            self.autopilot_version()
        else:
            return False
        return True

    def _landed_state(self) -> int:
        ap, m = self.ap, self.ap.m
        if ap.airframe.landed():
            return int(m.MAV_LANDED_STATE_ON_GROUND)
        landing = (ap.main_mode, ap.sub_mode) in ap.flavour.landing_modes
        if landing or (ap.flight is not None and ap.flight.phase == "land"):
            return int(m.MAV_LANDED_STATE_LANDING)
        if ap.flight is not None and ap.flight.kind == "takeoff":
            return int(m.MAV_LANDED_STATE_TAKEOFF)
        return int(m.MAV_LANDED_STATE_IN_AIR)

    def autopilot_version(self) -> None:
        """AUTOPILOT_VERSION (MAV_CMD_REQUEST_MESSAGE 512 or REQUEST_AUTOPILOT_CAPABILITIES 520)."""
        m = self.ap.m
        encoding, version, vendor, product = self.ap.flavour.version
        caps = (
            m.MAV_PROTOCOL_CAPABILITY_MAVLINK2
            | m.MAV_PROTOCOL_CAPABILITY_PARAM_FLOAT
            | m.MAV_PROTOCOL_CAPABILITY_COMMAND_INT
            | m.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED
            | m.MAV_PROTOCOL_CAPABILITY_MISSION_INT
            | encoding
        )
        self.link.send(
            self.mav.autopilot_version_send,
            caps,
            version,
            version,
            0,
            0,
            [0] * 8,
            [0] * 8,
            [0] * 8,
            vendor,
            product,
            0x5E3F_0001 + self.ap.config.companion[1],
        )
