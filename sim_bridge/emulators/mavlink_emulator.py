"""A PX4 (or ArduPilot Copter) autopilot on loopback, flying a built-in simulator vehicle: a real
MAVLink/UDP peer for pymavlink, MAVSDK (mavsdk_server) and MAVProxy, built with pymavlink's own encoder.

It sends to the companion's UDP port like PX4 SITL's offboard link (127.0.0.1:14540 by default) and
answers whoever talks to it. Building a real PX4 or ArduPilot SITL is not possible here, so this
follows the firmware sources (file names cited where a rule comes from):

- Parameters: the parameter protocol (PARAM_REQUEST_LIST/READ, PARAM_SET -> PARAM_VALUE) with the
  firmware defaults (sim_bridge.emulators.mavlink_params); PX4 encodes integers bytewise, ArduPilot
  casts them.
- Identity and position: AUTOPILOT_VERSION on MAV_CMD_REQUEST_MESSAGE (512) or
  REQUEST_AUTOPILOT_CAPABILITIES (520); GLOBAL_POSITION_INT, GPS_RAW_INT and HOME_POSITION from the
  simulator's geo origin (the AirSim server's home point), SYS_STATUS with the sensor and pre-arm
  (MAV_SYS_STATUS_PREARM_CHECK) health bits that MAVSDK's health() reads.
- Streams: PX4 sends its onboard-link defaults (mavlink_main.cpp, MAVLINK_MODE_ONBOARD, capped at
  `telemetry_hz`); ArduPilot sends only HEARTBEAT until asked (a port whose SRn_* rates are 0;
  EXTENDED_SYS_STATE and HOME_POSITION are in none of ArduCopter's stream groups anyway). Both obey
  MAV_CMD_SET_MESSAGE_INTERVAL (511) and ArduPilot REQUEST_DATA_STREAM (66, what MAVProxy sends).
- PX4 offboard (mavlink_receiver.cpp, commander/HealthAndArmingChecks/checks/offboardCheck.cpp):
  SET_POSITION_TARGET_LOCAL_NED in LOCAL_NED or BODY_NED with any type mask (position, velocity,
  yaw, yaw rate as the mask says); OFFBOARD is available while the newest setpoint is younger than
  COM_OF_LOSS_T (one setpoint is enough), otherwise the mode change is TEMPORARILY_REJECTED.
- PX4 offboard loss (commander/failsafe/failsafe.cpp fromOffboardLossActParam, framework.cpp
  getSelectedAction): COM_OBL_RC_ACT picks the action. The "Position/Altitude/Manual" choices are
  fallback modes that need manual control: without RC they fall through to Hold (AUTO.LOITER),
  then Return, then Land. Return/Land/Hold first hold for COM_FAIL_ACT_T.
- PX4 data link (commander/HealthAndArmingChecks/checks/rcAndDataLinkCheck.cpp, Commander::dataLinkCheck):
  only HEARTBEATs of type MAV_TYPE_GCS count; with NAV_DLL_ACT > 0 arming is refused while no GCS
  heartbeat came within COM_DL_LOSS_T ("No connection to the ground control station"), and in flight
  the loss triggers NAV_DLL_ACT (unless COM_DLL_EXCEPT exempts offboard).
- Take-off: PX4 accepts MAV_CMD_NAV_TAKEOFF (AUTO.TAKEOFF to MIS_TAKEOFF_ALT, then AUTO.LOITER);
  ArduCopter takes off in GUIDED when armed (else MAV_RESULT_FAILED, GCS_Mavlink.cpp).
- Return: PX4 AUTO.RTL climbs to RTL_RETURN_ALT, flies home, waits RTL_LAND_DELAY and lands;
  ArduCopter RTL (mode 6, mode_rtl.cpp) climbs to RTL_ALT (cm), returns, loiters RTL_LOIT_TIME (ms), lands.
  Both disarm after landing.
- ArduCopter GUIDED (mode_guided.cpp): velocity targets are zeroed after GUID_TIMEOUT; GCS failsafe
  (FS_GCS_ENABLE, FS_GCS_TIMEOUT) on heartbeats from SYSID_MYGCS, only after one was seen.

Fault injection: `rc_takeover()` (the RC pilot switches to POSCTL/LOITER), `link_down` (silence both
ways), `refuse(command_id, result, text)`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from common.pose import Pose, wrap_deg
from sim_bridge.emulators.h264_out import H264Streamer
from sim_bridge.emulators.mavlink_params import ParamStore
from sim_bridge.sim.multirotor import Multirotor
from sim_bridge.sim.world import World, YawMode

log = logging.getLogger(__name__)

# The simulator's geo origin (the same home point the AirSim server reports) and the earth model
HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M = 47.641468, -122.140165, 122.0
EARTH_RADIUS_M = 6378137.0

# PX4 main modes (custom_mode = main << 16 | sub << 24) and AUTO sub-modes
PX4_MANUAL, PX4_ALTCTL, PX4_POSCTL, PX4_AUTO, PX4_ACRO, PX4_OFFBOARD, PX4_STAB = 1, 2, 3, 4, 5, 6, 7
PX4_AUTO_TAKEOFF, PX4_AUTO_LOITER, PX4_AUTO_MISSION, PX4_AUTO_RTL, PX4_AUTO_LAND = 2, 3, 4, 5, 6
PX4_NEEDS_RC = (PX4_MANUAL, PX4_ALTCTL, PX4_POSCTL, PX4_ACRO, PX4_STAB)
# ArduCopter modes
APM_STABILIZE, APM_ALT_HOLD, APM_AUTO, APM_GUIDED, APM_LOITER, APM_RTL, APM_LAND = 0, 2, 3, 4, 5, 6, 9
APM_POSHOLD, APM_BRAKE = 16, 17
APM_MODES = {0: "STABILIZE", 2: "ALT_HOLD", 3: "AUTO", 4: "GUIDED", 5: "LOITER", 6: "RTL", 9: "LAND"}
APM_MODES.update({16: "POSHOLD", 17: "BRAKE"})
APM_ARMABLE = (APM_STABILIZE, APM_ALT_HOLD, APM_GUIDED, APM_LOITER, APM_POSHOLD, APM_BRAKE)

FRAME_LOCAL_NED, FRAME_LOCAL_OFFSET_NED, FRAME_BODY_NED, FRAME_BODY_OFFSET_NED = 1, 7, 8, 9
IGNORE_POS, IGNORE_VEL, IGNORE_ACC, IGNORE_YAW, IGNORE_YAW_RATE = 7, 56, 448, 1024, 2048

# Message ids and the streams
HEARTBEAT, SYS_STATUS, GPS_RAW_INT, ATTITUDE, LOCAL_POSITION_NED = 0, 1, 24, 30, 32
GLOBAL_POSITION_INT, AUTOPILOT_VERSION, BATTERY_STATUS, HOME_POSITION, EXTENDED_SYS_STATE = (
    33,
    148,
    147,
    242,
    245,
)
FAST = (ATTITUDE, LOCAL_POSITION_NED, GLOBAL_POSITION_INT)
PX4_DEFAULT_RATES_HZ = {
    ATTITUDE: 50.0,
    LOCAL_POSITION_NED: 30.0,
    GLOBAL_POSITION_INT: 50.0,
    SYS_STATUS: 5.0,
    EXTENDED_SYS_STATE: 5.0,
    GPS_RAW_INT: 5.0,
    BATTERY_STATUS: 0.5,
    HOME_POSITION: 0.5,
}
# ArduPilot REQUEST_DATA_STREAM groups (GCS_Mavlink.cpp STREAM_*_msgs), as far as this emulator sends them
APM_STREAMS = {
    2: (SYS_STATUS, GPS_RAW_INT),  # EXTENDED_STATUS
    6: (GLOBAL_POSITION_INT, LOCAL_POSITION_NED),  # POSITION
    10: (ATTITUDE,),  # EXTRA1
    12: (BATTERY_STATUS,),  # EXTRA3
}
SENSORS = 1 | 2 | 4 | 8 | 32 | 0x2000000  # gyro, accel, mag, baro, GPS, battery
SENSOR_RC, SENSOR_PREARM = 0x10000, 0x10000000

# PX4 failsafe actions (failsafe framework's Action) and the parameter encodings that map onto them
ACT_POSCTL, ACT_ALTCTL, ACT_STAB, ACT_HOLD, ACT_RTL, ACT_LAND, ACT_TERMINATE, ACT_DISARM = range(8)
ACTION_NAMES = ["Position", "Altitude", "Manual", "Hold", "Return", "Land", "Terminate", "Disarm"]
COM_OBL_RC_ACT_TO_ACTION = {0: ACT_POSCTL, 1: ACT_ALTCTL, 2: ACT_STAB, 3: ACT_RTL, 4: ACT_LAND}
COM_OBL_RC_ACT_TO_ACTION.update({5: ACT_HOLD, 6: ACT_TERMINATE, 7: ACT_DISARM})
NAV_DLL_ACT_TO_ACTION = {1: ACT_HOLD, 2: ACT_RTL, 3: ACT_LAND, 5: ACT_TERMINATE, 6: ACT_DISARM}

TAKEOFF_SPEED_M_S = 1.5


def _int(value: float) -> int:
    """An integer command parameter; NaN (MAVLink's "unset") and infinities read as 0."""
    return round(value) if math.isfinite(value) else 0


@dataclass
class MavlinkEmulatorConfig:
    dialect: str = "px4"  # or "ardupilot"
    companion: tuple[str, int] = ("127.0.0.1", 14540)
    telemetry_hz: float = 20.0  # the highest rate any stream is sent at (CPU on a shared machine)
    params: dict[str, float] = field(default_factory=dict)  # firmware parameters other than the defaults
    rc_present: bool = True  # an RC transmitter is bound (PX4's fallback modes need one)
    video_dest: tuple[str, int] | None = None
    video_fps: float = 10.0
    refused: dict[int, tuple[int, str]] = field(default_factory=dict)  # command -> (MAV_RESULT, text)


@dataclass
class Flight:
    """An autopilot-flown manoeuvre (take-off, return) advanced by the rules loop."""

    kind: str  # "takeoff" or "rtl"
    phase: str
    altitude_m: float
    until_s: float = 0.0


class MavlinkEmulator:
    def __init__(self, world: World, vehicle: str, config: MavlinkEmulatorConfig | None = None) -> None:
        from pymavlink import mavutil

        self.mavutil = mavutil
        self.m = mavutil.mavlink
        self.world = world
        self.vehicle = vehicle
        self.config = config or MavlinkEmulatorConfig()
        if self.config.dialect not in ("px4", "ardupilot"):
            raise ValueError(f"dialect={self.config.dialect!r} must be 'px4' or 'ardupilot'")
        self.px4 = self.config.dialect == "px4"
        self.params = ParamStore(self.px4, self.config.params)
        host, port = self.config.companion
        self.conn = mavutil.mavlink_connection(f"udpout:{host}:{port}", source_system=1, source_component=1)
        self.home = world.vehicle(vehicle).model.spawn
        self.boot_s = time.monotonic()
        self.armed = False
        self.armed_s = 0.0
        self.landed_s: float | None = None
        if self.px4:
            self.main_mode, self.sub_mode = (
                (PX4_POSCTL, 0) if self.config.rc_present else (PX4_AUTO, PX4_AUTO_LOITER)
            )
        else:
            self.main_mode, self.sub_mode = APM_STABILIZE, 0
        self.link_down = threading.Event()
        self.statustexts: list[str] = []
        self.received: list[tuple[float, str]] = []  # (wall, message type or command)
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
        self._flew = False  # took off since arming (else COM_DISARM_PRFLT disarms)
        self.intervals_s: dict[int, float] = (
            {k: 1.0 / min(hz, self.config.telemetry_hz) for k, hz in PX4_DEFAULT_RATES_HZ.items()}
            if self.px4
            else {}
        )
        self._next_s: dict[int, float] = {}
        self._send_lock = threading.Lock()
        self._lock = threading.RLock()  # mode, arming and failsafe state (rx thread vs tx thread)
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._rx_loop, name="mav-emu-rx", daemon=True),
            threading.Thread(target=self._tx_loop, name="mav-emu-tx", daemon=True),
        ]
        self.video: H264Streamer | None = None
        if self.config.video_dest is not None:
            dest = self.config.video_dest
            self.video = H264Streamer(
                lambda: world.render(vehicle, segmentation=False).image_bgr,
                lambda: None if self.link_down.is_set() else dest,
                fps=self.config.video_fps,
                name="mav-emu-video",
            )

    # ---- lifecycle
    def start(self) -> MavlinkEmulator:
        for t in self._threads:
            t.start()
        if self.video is not None:
            self.video.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self.video is not None:
            self.video.close()
        for t in self._threads:
            t.join(3.0)
        self.conn.close()

    # ---- fault injection
    def refuse(self, command: int, result: int, text: str) -> None:
        self.config.refused[command] = (result, text)

    def rc_takeover(self) -> None:
        """The safety pilot flips the RC mode switch: POSCTL (PX4) / LOITER (ArduPilot), vehicle holds."""
        with self._lock:
            self.statustext(self.m.MAV_SEVERITY_WARNING, "RC override: manual control")
            self.pending_failsafe = None
            self.flight = None
            self._set_mode(PX4_POSCTL if self.px4 else APM_LOITER, 0)
            self._hover()

    # ---- state
    @property
    def mode_name(self) -> str:
        if self.px4:
            if self.main_mode == PX4_AUTO:
                return {
                    PX4_AUTO_LAND: "AUTO.LAND",
                    PX4_AUTO_LOITER: "AUTO.LOITER",
                    PX4_AUTO_RTL: "AUTO.RTL",
                    PX4_AUTO_TAKEOFF: "AUTO.TAKEOFF",
                    PX4_AUTO_MISSION: "AUTO.MISSION",
                }.get(self.sub_mode, "AUTO")
            return {1: "MANUAL", 2: "ALTCTL", 3: "POSCTL", 5: "ACRO", 6: "OFFBOARD", 7: "STABILIZED"}.get(
                self.main_mode, str(self.main_mode)
            )
        return APM_MODES.get(self.main_mode, str(self.main_mode))

    @property
    def battery_pct(self) -> float:
        """The simulated pack's state of charge (sim_bridge.sim.battery), in percent."""
        with self.world.lock:
            return 100.0 * self._model().battery.fraction

    def _battery(self) -> tuple[int, int, int, list[int], int, int]:
        """What SYS_STATUS and BATTERY_STATUS carry: remaining %, pack mV, current cA, cell mV
        (10 fields, UINT16_MAX unused), consumed mAh, consumed energy hJ."""
        with self.world.lock:
            b = self._model().battery
            pct = round(100.0 * b.fraction)
            mv, ca = round(b.voltage_v() * 1000), round(b.current_a() * 100)
            cells = min(b.config.cells, 10)
            per_cell = [round(mv / b.config.cells)] * cells + [65535] * (10 - cells)
            return pct, mv, ca, per_cell, round(b.consumed_mah), round(b.consumed_wh * 36)

    def _model(self) -> Multirotor:
        return self.world.vehicle(self.vehicle).model

    def _landed(self) -> bool:
        with self.world.lock:
            return bool(self._model().landed)

    def _local(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(position NED from home, velocity NED, yaw deg, yaw rate deg/s)."""
        with self.world.lock:
            mdl = self._model()
            p = mdl.position_ned - np.array([self.home.x_m, self.home.y_m, self.home.z_m])
            return p, mdl.velocity_ned.copy(), float(mdl.yaw_deg), float(mdl.yaw_rate_deg_s)

    def _set_mode(self, main: int, sub: int = 0) -> None:
        changed = (main, sub) != (self.main_mode, self.sub_mode)
        if changed:
            log.info("emulator %s: mode %s -> (%d, %d)", self.vehicle, self.mode_name, main, sub)
        self.main_mode, self.sub_mode = main, sub
        if changed:
            self._heartbeat()  # announce a mode change at once, not at the next 1 Hz beat

    def _hover(self) -> None:
        with self.world.lock:
            self._model().hover()

    def _land(self) -> None:
        speed = self.params.get("MPC_LAND_SPEED") if self.px4 else self.params.get("LAND_SPEED") / 100
        with self.world.lock:
            self._model().limits.land_speed_m_s = max(0.1, float(speed))
        self.world.land(self.vehicle, timeout_s=120.0)

    def in_offboard(self) -> bool:
        return self.main_mode == (PX4_OFFBOARD if self.px4 else APM_GUIDED)

    def _gcs_ok(self, now: float) -> bool:
        if self.last_gcs_heartbeat_s is None:
            return False
        timeout_s = self.params.get("COM_DL_LOSS_T") if self.px4 else self.params.get("FS_GCS_TIMEOUT")
        return now - self.last_gcs_heartbeat_s <= timeout_s

    def prearm_failure(self) -> str | None:
        """Why arming would be refused now (PX4 health and arming checks), or None."""
        now = time.monotonic()
        if self.battery_pct < 15:
            return "Arming denied: battery low" if not self.px4 else "Preflight Fail: low battery"
        if self.px4:
            if self.params.get("NAV_DLL_ACT") != 0 and not self._gcs_ok(now):
                # rcAndDataLinkCheck.cpp: "check_rc_dl_no_dllink"
                return "Preflight Fail: No connection to the ground control station"
            if self.main_mode in PX4_NEEDS_RC and not self.config.rc_present:
                return "Preflight Fail: No manual control input"
            if self.main_mode == PX4_AUTO and self.sub_mode in (PX4_AUTO_LAND, PX4_AUTO_RTL):
                return "Arming denied: not possible in this mode"
            if self.main_mode == PX4_OFFBOARD and not self._offboard_available(now):
                return "Arming denied: no offboard signal"
        elif self.main_mode not in APM_ARMABLE:
            return "Arm: Mode not armable"
        return None

    def _offboard_available(self, now: float) -> bool:
        # offboardCheck.cpp: the newest offboard_control_mode must be younger than COM_OF_LOSS_T
        loss_s = self.params.get("COM_OF_LOSS_T")
        return self.last_setpoint_s is not None and now - self.last_setpoint_s < loss_s

    # ---- sending
    def _send(self, fn_name: str, *args: object) -> None:
        if self.link_down.is_set():
            return
        with self._send_lock:
            try:
                getattr(self.conn.mav, fn_name)(*args)
            except OSError:
                log.debug("mavlink send failed", exc_info=True)

    def statustext(self, severity: int, text: str) -> None:
        self.statustexts.append(text)
        log.info("emulator STATUSTEXT: %s", text)
        self._send("statustext_send", severity, text.encode()[:50])

    def _ack(self, command: int, result: int) -> None:
        self._send("command_ack_send", command, result)

    def _heartbeat(self) -> None:
        m = self.m
        if self.px4:
            custom = (self.main_mode << 16) | (self.sub_mode << 24)
            base = m.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | m.MAV_MODE_FLAG_STABILIZE_ENABLED
            if self.main_mode in (PX4_AUTO, PX4_OFFBOARD):
                base |= m.MAV_MODE_FLAG_AUTO_ENABLED | m.MAV_MODE_FLAG_GUIDED_ENABLED
            elif self.main_mode == PX4_POSCTL:
                base |= m.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED | m.MAV_MODE_FLAG_GUIDED_ENABLED
            autopilot = m.MAV_AUTOPILOT_PX4
        else:
            custom = self.main_mode
            base = m.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | m.MAV_MODE_FLAG_STABILIZE_ENABLED
            autopilot = m.MAV_AUTOPILOT_ARDUPILOTMEGA
        if self.armed:
            base |= m.MAV_MODE_FLAG_SAFETY_ARMED
        status = m.MAV_STATE_ACTIVE if self.armed else m.MAV_STATE_STANDBY
        if self.px4 and self.failsafes and self.armed and self._failsafe_active():
            status = m.MAV_STATE_CRITICAL
        self._send("heartbeat_send", m.MAV_TYPE_QUADROTOR, autopilot, base, custom, status)

    def _failsafe_active(self) -> bool:
        return self.offboard_lost or (self.gcs_lost and self.params.get("NAV_DLL_ACT") != 0)

    def _geo(self, p_ned: np.ndarray) -> tuple[int, int, int]:
        """lat, lon (degE7) and altitude AMSL (mm) of a point in the episode's world NED frame."""
        lat = HOME_LAT_DEG + math.degrees(float(p_ned[0]) / EARTH_RADIUS_M)
        lon = HOME_LON_DEG + math.degrees(
            float(p_ned[1]) / (EARTH_RADIUS_M * math.cos(math.radians(HOME_LAT_DEG)))
        )
        return round(lat * 1e7), round(lon * 1e7), round((HOME_ALT_M - float(p_ned[2])) * 1000)

    def send_message(self, msg_id: int) -> bool:
        """Send one message of the streamable kinds; False for an id this emulator does not produce."""
        m = self.m
        t_ms = int((time.monotonic() - self.boot_s) * 1000) & 0xFFFFFFFF
        if msg_id == HEARTBEAT:
            self._heartbeat()
        elif msg_id in (LOCAL_POSITION_NED, ATTITUDE, GLOBAL_POSITION_INT):
            p, v, yaw, yaw_rate = self._local()
            if msg_id == LOCAL_POSITION_NED:
                self._send("local_position_ned_send", t_ms, *(float(a) for a in p), *(float(a) for a in v))
            elif msg_id == ATTITUDE:
                self._send(
                    "attitude_send", t_ms, 0.0, 0.0, math.radians(yaw), 0.0, 0.0, math.radians(yaw_rate)
                )
            else:
                home = np.array([self.home.x_m, self.home.y_m, self.home.z_m])
                lat, lon, alt = self._geo(home + p)
                cm = [round(float(a) * 100) for a in v]
                self._send(
                    "global_position_int_send",
                    t_ms,
                    lat,
                    lon,
                    alt,
                    round(-float(p[2]) * 1000),
                    *cm,
                    round((yaw % 360) * 100),
                )
        elif msg_id == GPS_RAW_INT:
            p, v, _yaw, _ = self._local()
            home = np.array([self.home.x_m, self.home.y_m, self.home.z_m])
            lat, lon, alt = self._geo(home + p)
            ground_cm_s = round(math.hypot(float(v[0]), float(v[1])) * 100)
            cog = round((math.degrees(math.atan2(float(v[1]), float(v[0]))) % 360) * 100)
            self._send("gps_raw_int_send", t_ms * 1000, 3, lat, lon, alt, 80, 120, ground_cm_s, cog, 14)
        elif msg_id == HOME_POSITION:
            lat, lon, alt = self._geo(np.array([self.home.x_m, self.home.y_m, self.home.z_m]))
            self._send("home_position_send", lat, lon, alt, 0.0, 0.0, 0.0, [1, 0, 0, 0], 0.0, 0.0, 0.0)
        elif msg_id == SYS_STATUS:
            health = SENSORS | (0 if self.prearm_failure() else SENSOR_PREARM)
            present = SENSORS | SENSOR_PREARM
            if self.config.rc_present:
                present |= SENSOR_RC
                health |= SENSOR_RC
            pct, mv, ca, _, _, _ = self._battery()
            self._send(
                "sys_status_send",
                present,
                present,
                health,
                250,
                mv,
                ca,
                pct,
                0,
                0,
                0,
                0,
                0,
                0,
            )
        elif msg_id == EXTENDED_SYS_STATE:
            self._send("extended_sys_state_send", m.MAV_VTOL_STATE_MC, self._landed_state())
        elif msg_id == BATTERY_STATUS:
            pct, _, ca, cells, mah, hj = self._battery()
            # id 0, MAV_BATTERY_FUNCTION_ALL, MAV_BATTERY_TYPE_LIPO, temperature unknown (INT16_MAX)
            self._send("battery_status_send", 0, 1, 1, 32767, cells, ca, mah, hj, pct)
        elif msg_id == AUTOPILOT_VERSION:
            self._autopilot_version()
        else:
            return False
        return True

    def _landed_state(self) -> int:
        m = self.m
        if self._landed():
            return int(m.MAV_LANDED_STATE_ON_GROUND)
        landing = (self.px4 and self.main_mode == PX4_AUTO and self.sub_mode == PX4_AUTO_LAND) or (
            not self.px4 and self.main_mode == APM_LAND
        )
        if landing or (self.flight is not None and self.flight.phase == "land"):
            return int(m.MAV_LANDED_STATE_LANDING)
        if self.flight is not None and self.flight.kind == "takeoff":
            return int(m.MAV_LANDED_STATE_TAKEOFF)
        return int(m.MAV_LANDED_STATE_IN_AIR)

    def _autopilot_version(self) -> None:
        m = self.m
        caps = (
            m.MAV_PROTOCOL_CAPABILITY_MAVLINK2
            | m.MAV_PROTOCOL_CAPABILITY_PARAM_FLOAT
            | m.MAV_PROTOCOL_CAPABILITY_COMMAND_INT
            | m.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED
            | m.MAV_PROTOCOL_CAPABILITY_MISSION_INT
        )
        if self.px4:
            caps |= m.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE
            version = (1 << 24) | (15 << 16) | (0 << 8) | 255  # v1.15.0, FIRMWARE_VERSION_TYPE_OFFICIAL
            vendor, product = 0x26AC, 0x0011  # what PX4 SITL reports
        else:
            caps |= m.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_C_CAST
            version = (4 << 24) | (5 << 16) | (7 << 8) | 255  # ArduCopter V4.5.7
            vendor, product = 0x1209, 0x5740  # ArduPilot SITL
        self._send(
            "autopilot_version_send",
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
            0x5E3F_0001 + self.config.companion[1],
        )

    def _send_param(self, name: str) -> None:
        names = self.params.names()
        p = self.params.params[name]
        self._send(
            "param_value_send", name.encode(), self.params.encode(name), p.kind, len(names), names.index(name)
        )

    def _tx_loop(self) -> None:
        tick_s = 1.0 / max(self.config.telemetry_hz, 1.0)
        last_hb = 0.0
        while not self._stop.wait(tick_s):
            now = time.monotonic()
            if now - last_hb >= 1.0:
                self._heartbeat()
                last_hb = now
            for msg_id, interval_s in list(self.intervals_s.items()):
                due = self._next_s.get(msg_id, 0.0)
                if now >= due:
                    self._next_s[msg_id] = max(due + interval_s, now - tick_s)
                    self.send_message(msg_id)
            try:
                with self._lock:
                    self._rules(now)
            except Exception:
                log.exception("emulator rules failed")

    # ---- the firmware's automatic behaviour, checked at the telemetry rate
    def _rules(self, now: float) -> None:
        if self.px4:
            self._px4_offboard_rules(now)
            self._px4_datalink_rules(now)
            if self.pending_failsafe is not None and now >= self.pending_failsafe[1]:
                action, _, why = self.pending_failsafe
                self.pending_failsafe = None
                self._do_action(action, why)
        else:
            self._apm_rules(now)
        self._advance_flight(now)
        self._disarm_rules(now)

    def _px4_offboard_rules(self, now: float) -> None:
        available = self._offboard_available(now)
        if self.main_mode == PX4_OFFBOARD and self.armed and not available and not self.offboard_lost:
            gap = None if self.last_setpoint_s is None else now - self.last_setpoint_s
            why = f"offboard signal lost ({gap:.1f} s without setpoints)" if gap else "no offboard signal"
            self.offboard_lost = True
            self.failsafes.append(why)
            requested = COM_OBL_RC_ACT_TO_ACTION.get(int(self.params.get("COM_OBL_RC_ACT")), ACT_POSCTL)
            log.warning("emulator %s: failsafe: %s", self.vehicle, why)
            self._failsafe(requested, "Failsafe activated: no offboard signal", why)
        elif self.offboard_lost and available:
            self.offboard_lost = False  # the condition cleared (WhenConditionClears)
            if self.pending_failsafe is not None and self.main_mode == PX4_AUTO:
                self.pending_failsafe = None
                self._set_mode(PX4_OFFBOARD)

    def _px4_datalink_rules(self, now: float) -> None:
        ok = self._gcs_ok(now)
        if ok and self.gcs_lost:
            self.gcs_lost = False
            if self.last_gcs_heartbeat_s is not None and self.armed:
                self.statustext(self.m.MAV_SEVERITY_INFO, "Data link regained")
        elif not ok and not self.gcs_lost:
            self.gcs_lost = True
            act = int(self.params.get("NAV_DLL_ACT"))
            exempt = self.main_mode == PX4_OFFBOARD and int(self.params.get("COM_DLL_EXCEPT")) & 4
            if self.armed and act in NAV_DLL_ACT_TO_ACTION and not exempt:
                self.failsafes.append("data link lost")
                self._failsafe(
                    NAV_DLL_ACT_TO_ACTION[act], "Failsafe activated: no data link", "data link lost"
                )
            elif self.armed:
                self.statustext(self.m.MAV_SEVERITY_CRITICAL, "Connection to ground station lost")

    def _failsafe(self, action: int, text: str, why: str) -> None:
        """failsafe framework: fallback modes need RC; Hold/Return/Land wait COM_FAIL_ACT_T in Hold."""
        if action in (ACT_POSCTL, ACT_ALTCTL, ACT_STAB) and not self.config.rc_present:
            action = ACT_HOLD  # framework.cpp getSelectedAction: the fallback mode cannot run
        self.statustext(self.m.MAV_SEVERITY_CRITICAL, f"{text}, {ACTION_NAMES[action]}")
        delay_s = self.params.get("COM_FAIL_ACT_T")
        if action in (ACT_HOLD, ACT_RTL, ACT_LAND) and delay_s > 0 and self.armed and not self._landed():
            self.flight = None
            self._set_mode(PX4_AUTO, PX4_AUTO_LOITER)
            self._hover()
            self.pending_failsafe = (action, time.monotonic() + delay_s, why)
        else:
            self._do_action(action, why)

    def _do_action(self, action: int, why: str) -> None:
        log.warning("emulator %s: failsafe action %s (%s)", self.vehicle, ACTION_NAMES[action], why)
        self.flight = None
        if action in (ACT_POSCTL, ACT_ALTCTL, ACT_STAB):
            self._set_mode({ACT_POSCTL: PX4_POSCTL, ACT_ALTCTL: PX4_ALTCTL, ACT_STAB: PX4_STAB}[action])
            self._hover()
        elif action == ACT_HOLD:
            self._set_mode(PX4_AUTO, PX4_AUTO_LOITER)
            self._hover()
        elif action == ACT_RTL:
            self._start_rtl()
        elif action == ACT_LAND:
            self._set_mode(PX4_AUTO, PX4_AUTO_LAND)
            self._land()
        else:  # Terminate / Disarm: motors off, the vehicle drops (teleported: the sim has no free fall)
            self._motors_off()

    def _motors_off(self) -> None:
        with self.world.lock:
            mdl = self._model()
            p = mdl.position_ned
            pose = Pose(float(p[0]), float(p[1]), float(mdl.floor_z_m), mdl.yaw_deg)
        self.world.set_vehicle_pose(self.vehicle, pose)
        self._disarm()

    def _apm_rules(self, now: float) -> None:
        gap = None if self.last_setpoint_s is None else now - self.last_setpoint_s
        timeout_s = min(5.0, max(0.1, self.params.get("GUID_TIMEOUT")))  # mode_guided.cpp get_timeout_ms
        if (
            self.main_mode == APM_GUIDED
            and gap is not None
            and gap > timeout_s
            and not self.guided_stopped
            and self.flight is None
        ):
            self.guided_stopped = True
            if not self._landed():
                self._hover()
                self.failsafes.append(f"guided velocity target timed out ({gap:.1f} s)")
        fs = int(self.params.get("FS_GCS_ENABLE"))
        if fs and self.armed and self.last_gcs_heartbeat_s is not None and not self._gcs_ok(now):
            if not self.gcs_lost and self.main_mode not in (APM_RTL, APM_LAND):
                self.gcs_lost = True
                self.failsafes.append("GCS failsafe")
                self.statustext(self.m.MAV_SEVERITY_CRITICAL, "GCS Failsafe")
                if fs in (4, 5):
                    self._set_mode(APM_LAND)
                    self._land()
                elif fs == 7:
                    self._set_mode(APM_BRAKE)
                    self._hover()
                else:
                    self._start_rtl()
        elif self.gcs_lost and self._gcs_ok(now):
            self.gcs_lost = False
            self.statustext(self.m.MAV_SEVERITY_INFO, "GCS Failsafe Cleared")

    def _disarm_rules(self, now: float) -> None:
        if not self.armed:
            return
        if not self._landed():
            self.landed_s = None
            return
        if self.flight is not None and self.flight.kind == "takeoff":
            return
        landing = (
            self.px4 and self.main_mode == PX4_AUTO and self.sub_mode in (PX4_AUTO_LAND, PX4_AUTO_RTL)
        ) or (not self.px4 and self.main_mode in (APM_LAND, APM_RTL))
        if self.landed_s is None:
            self.landed_s = now
        since_arm = now - self.armed_s
        if landing:
            wait_s = self.params.get("COM_DISARM_LAND") if self.px4 else 0.0
            if now - self.landed_s >= wait_s:
                self._disarm()
                self.statustext(self.m.MAV_SEVERITY_INFO, "Landing detected, disarmed")
        elif not self._flew and since_arm > (self.params.get("COM_DISARM_PRFLT") if self.px4 else 10.0):
            self._disarm()
            self.statustext(self.m.MAV_SEVERITY_INFO, "Disarmed: no takeoff")

    def _disarm(self) -> None:
        self.armed = False
        self._flew = False
        self.flight = None
        self.offboard_lost = False
        self.pending_failsafe = None
        with self.world.lock:
            self._model().armed = False
        self._heartbeat()

    # ---- autopilot-flown manoeuvres
    def _start_takeoff(self, altitude_m: float) -> None:
        _p, _v, yaw, _ = self._local()
        self.flight = Flight("takeoff", "climb", altitude_m)
        self._flew = True
        with self.world.lock:
            mdl = self._model()
            target = np.array([mdl.position_ned[0], mdl.position_ned[1], self.home.z_m - altitude_m])
        speed = self.params.get("MPC_TKO_SPEED") if self.px4 else TAKEOFF_SPEED_M_S
        self.world.move_to(self.vehicle, target, speed, timeout_s=120.0, yaw=YawMode(False, yaw))

    def _start_rtl(self) -> None:
        if self.px4:
            self._set_mode(PX4_AUTO, PX4_AUTO_RTL)
            return_alt_m = self.params.get("RTL_RETURN_ALT")
        else:
            self._set_mode(APM_RTL)
            return_alt_m = self.params.get("RTL_ALT") / 100.0
        if self._landed():
            self.flight = None
            return
        p, _v, _yaw, _ = self._local()
        altitude_m = max(-float(p[2]), return_alt_m)
        self.flight = Flight("rtl", "climb", altitude_m)
        self._fly_to(np.array([p[0], p[1], -altitude_m]), 2.0)

    def _fly_to(self, local_ned: np.ndarray, speed_m_s: float) -> None:
        _p, _v, yaw, _ = self._local()
        target = np.array([self.home.x_m, self.home.y_m, self.home.z_m]) + local_ned
        self.world.move_to(self.vehicle, target, speed_m_s, timeout_s=300.0, yaw=YawMode(False, yaw))

    def _advance_flight(self, now: float) -> None:
        f = self.flight
        if f is None:
            return
        p, v, _yaw, _ = self._local()
        settled = float(np.linalg.norm(v)) < 0.15
        if f.kind == "takeoff":
            if abs(-float(p[2]) - f.altitude_m) < 0.15 and settled:
                self.flight = None
                if self.px4 and self.main_mode == PX4_AUTO and self.sub_mode == PX4_AUTO_TAKEOFF:
                    self._set_mode(PX4_AUTO, PX4_AUTO_LOITER)
            return
        if f.phase == "climb" and abs(-float(p[2]) - f.altitude_m) < 0.2:
            f.phase = "return"
            cruise = self.params.get("MPC_XY_CRUISE") if self.px4 else self.params.get("WPNAV_SPEED") / 100
            self._fly_to(np.array([0.0, 0.0, -f.altitude_m]), cruise)
        elif f.phase == "return" and math.hypot(float(p[0]), float(p[1])) < 0.3 and settled:
            f.phase = "loiter"
            delay_s = (
                self.params.get("RTL_LAND_DELAY") if self.px4 else self.params.get("RTL_LOIT_TIME") / 1000
            )
            f.until_s = now + (math.inf if delay_s < 0 else delay_s)
        elif f.phase == "loiter" and now >= f.until_s:
            f.phase = "land"
            self._land()

    # ---- receiving
    def _rx_loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.conn.recv_match(blocking=True, timeout=0.2)
            except Exception:
                if self._stop.is_set():
                    break
                log.debug("mavlink receive failed", exc_info=True)
                continue
            if msg is None or self.link_down.is_set():
                continue
            kind = msg.get_type()
            if kind == "BAD_DATA":
                continue
            try:
                with self._lock:
                    self._dispatch(kind, msg)
            except Exception:
                log.exception("emulator: handling %s failed", kind)

    def _dispatch(self, kind: str, msg: Any) -> None:
        if kind == "SET_POSITION_TARGET_LOCAL_NED":
            self._setpoint(msg)
            return
        if kind in ("COMMAND_LONG", "COMMAND_INT"):
            self.received.append((time.monotonic(), f"{kind} {msg.command}"))
            self._command(msg, kind == "COMMAND_INT")
            return
        self.received.append((time.monotonic(), kind))
        if kind == "HEARTBEAT":
            self._on_heartbeat(msg)
        elif kind == "PARAM_REQUEST_LIST":
            for name in self.params.names():
                self._send_param(name)
        elif kind == "PARAM_REQUEST_READ":
            pid = msg.param_id if isinstance(msg.param_id, str) else msg.param_id.decode(errors="replace")
            names = self.params.names()
            if msg.param_index >= 0 and msg.param_index < len(names):
                self._send_param(names[msg.param_index])
            elif pid in self.params.params:
                self._send_param(pid)
        elif kind == "PARAM_SET":
            self._param_set(msg)
        elif kind == "REQUEST_DATA_STREAM" and not self.px4:
            ids = (
                [i for g in APM_STREAMS.values() for i in g]
                if msg.req_stream_id == 0
                else APM_STREAMS.get(msg.req_stream_id, ())
            )
            for msg_id in ids:
                self._set_interval(
                    msg_id, 1e6 / msg.req_message_rate if msg.start_stop and msg.req_message_rate else -1
                )
        elif kind == "SET_MODE":  # the legacy message (MAVProxy's "mode" uses it on ArduPilot)
            self._do_set_mode(
                msg.custom_mode & 0xFFFF if not self.px4 else (msg.custom_mode >> 16) & 0xFF,
                (msg.custom_mode >> 24) & 0xFF if self.px4 else 0,
            )

    def _on_heartbeat(self, msg: Any) -> None:
        now = time.monotonic()
        if self.px4:
            # Commander::dataLinkCheck: only MAV_TYPE_GCS heartbeats are the ground station
            if msg.type == self.m.MAV_TYPE_GCS:
                self.last_gcs_heartbeat_s = now
                self._px4_datalink_rules(now)
        elif msg.get_srcSystem() == int(self.params.get("SYSID_MYGCS")):
            self.last_gcs_heartbeat_s = now  # ArduPilot: any heartbeat from SYSID_MYGCS

    def _param_set(self, msg: Any) -> None:
        name = msg.param_id if isinstance(msg.param_id, str) else msg.param_id.decode(errors="replace")
        if name not in self.params.params:
            self.statustext(self.m.MAV_SEVERITY_ERROR, f"unknown param: {name}")
            return
        try:
            value = self.params.decode(name, float(msg.param_value), int(msg.param_type))
            self.params.set(name, value)
        except (ValueError, OverflowError) as exc:
            self.statustext(self.m.MAV_SEVERITY_ERROR, f"param set failed: {exc}")
        self._send_param(name)  # the value now held, whether the set was taken or not

    def _set_interval(self, msg_id: int, interval_us: float) -> int:
        m = self.m
        probe_ok = msg_id in (*PX4_DEFAULT_RATES_HZ, HEARTBEAT)
        if not probe_ok:
            return int(m.MAV_RESULT_UNSUPPORTED)
        if interval_us < 0:
            self.intervals_s.pop(msg_id, None)
        elif interval_us == 0:  # the default rate
            if self.px4:
                self.intervals_s[msg_id] = 1.0 / min(PX4_DEFAULT_RATES_HZ[msg_id], self.config.telemetry_hz)
            else:
                self.intervals_s.pop(msg_id, None)
        else:
            self.intervals_s[msg_id] = max(interval_us / 1e6, 1.0 / self.config.telemetry_hz)
        self._next_s.pop(msg_id, None)
        return int(m.MAV_RESULT_ACCEPTED)

    def _setpoint(self, msg: Any) -> None:
        now = time.monotonic()
        frame, mask = int(msg.coordinate_frame), int(msg.type_mask)
        allowed = (
            (FRAME_LOCAL_NED, FRAME_BODY_NED)
            if self.px4
            else (FRAME_LOCAL_NED, FRAME_LOCAL_OFFSET_NED, FRAME_BODY_NED, FRAME_BODY_OFFSET_NED)
        )
        if frame not in allowed:
            self.statustext(
                self.m.MAV_SEVERITY_ERROR,
                f"SET_POSITION_TARGET_LOCAL_NED: frame {frame} unsupported",  # 50 chars max
            )
            return
        if self.last_setpoint_s is not None:
            self.setpoint_intervals_s.append(now - self.last_setpoint_s)
            del self.setpoint_intervals_s[:-2000]
        self.last_setpoint_s = now
        self.guided_stopped = False
        self.setpoints += 1
        if not (self.in_offboard() and self.armed):
            return  # proof of life only (PX4 forwards the trajectory only in OFFBOARD)
        if self.offboard_lost:
            return  # the failsafe still has the vehicle until the rules loop sees the stream back
        if not self.px4 and self.flight is not None:
            return  # ArduCopter: the take-off in GUIDED runs to its altitude first
        self._follow(msg, frame, mask)

    def _follow(self, msg: Any, frame: int, mask: int) -> None:
        use_pos = (mask & IGNORE_POS) != IGNORE_POS
        use_vel = (mask & IGNORE_VEL) != IGNORE_VEL
        p, _v, yaw_now, _ = self._local()
        body = frame in (FRAME_BODY_NED, FRAME_BODY_OFFSET_NED)
        if self.px4 and frame == FRAME_BODY_NED:
            use_pos = False  # PX4: positions in BODY_NED are ignored (mavlink_receiver.cpp)
        if self._landed():
            if not self.px4:
                return  # ArduCopter does not take off from GUIDED targets: NAV_TAKEOFF first
            climbing = (use_vel and msg.vz < -0.05) or (use_pos and msg.z < float(p[2]) - 0.05)
            if not climbing:
                return  # on the ground only a climb starts flight
            self._flew = True
        if not (mask & IGNORE_YAW):
            yaw_is_rate, yaw_value = False, math.degrees(msg.yaw)
        elif not (mask & IGNORE_YAW_RATE):
            yaw_is_rate, yaw_value = True, math.degrees(msg.yaw_rate)
        else:
            yaw_is_rate, yaw_value = False, yaw_now
        c, s = math.cos(math.radians(yaw_now)), math.sin(math.radians(yaw_now))
        if use_pos:
            target = np.array([msg.x, msg.y, msg.z], dtype=float)
            if body:
                target = p + np.array([c * msg.x - s * msg.y, s * msg.x + c * msg.y, msg.z])
            elif frame == FRAME_LOCAL_OFFSET_NED:
                target = p + target
            home = np.array([self.home.x_m, self.home.y_m, self.home.z_m])
            speed = self.params.get("MPC_XY_CRUISE") if self.px4 else self.params.get("WPNAV_SPEED") / 100
            self.world.move_to(
                self.vehicle, home + target, speed, timeout_s=300.0, yaw=YawMode(yaw_is_rate, yaw_value)
            )
        elif use_vel:
            vel = np.array([msg.vx, msg.vy, msg.vz], dtype=float)
            if body:
                vel = np.array([c * msg.vx - s * msg.vy, s * msg.vx + c * msg.vy, msg.vz])
            # the setpoint holds until the next one or the loss rule (COM_OF_LOSS_T / GUID_TIMEOUT)
            hold_s = self.params.get("COM_OF_LOSS_T") if self.px4 else self.params.get("GUID_TIMEOUT")
            self.world.move_velocity(
                self.vehicle,
                list(map(float, vel)),
                max(0.1, hold_s) + 0.1,
                yaw=YawMode(yaw_is_rate, yaw_value),
            )
        elif not (mask & IGNORE_YAW) or not (mask & IGNORE_YAW_RATE):
            if yaw_is_rate:
                self.world.rotate_rate(self.vehicle, yaw_value, 0.5)
            else:
                self.world.rotate_to(self.vehicle, yaw_value, timeout_s=30.0, margin_deg=1.0)

    def _command(self, msg: Any, is_int: bool) -> None:
        m = self.m
        cmd = int(msg.command)
        if is_int:
            p = [msg.param1, msg.param2, msg.param3, msg.param4, msg.x / 1e7, msg.y / 1e7, msg.z]
        else:
            p = [msg.param1, msg.param2, msg.param3, msg.param4, msg.param5, msg.param6, msg.param7]
        if cmd in self.config.refused:
            result, text = self.config.refused[cmd]
            self.statustext(m.MAV_SEVERITY_CRITICAL, text)
            self._ack(cmd, result)
            return
        if cmd == m.MAV_CMD_DO_SET_MODE:
            self._ack(cmd, self._do_set_mode(_int(p[1]), _int(p[2])))
        elif cmd == m.MAV_CMD_COMPONENT_ARM_DISARM:
            self._ack(cmd, self._arm(_int(p[0]) == 1, _int(p[1]) == 21196))
        elif cmd == m.MAV_CMD_NAV_LAND:
            if self.px4:
                self._set_mode(PX4_AUTO, PX4_AUTO_LAND)
            else:
                self._set_mode(APM_LAND)
            self.flight = None
            self._land()
            self._ack(cmd, m.MAV_RESULT_ACCEPTED)
        elif cmd == m.MAV_CMD_NAV_TAKEOFF:
            self._ack(cmd, self._takeoff(float(p[6])))
        elif cmd == m.MAV_CMD_NAV_RETURN_TO_LAUNCH:
            self._start_rtl()
            self._ack(cmd, m.MAV_RESULT_ACCEPTED)
        elif cmd == m.MAV_CMD_SET_MESSAGE_INTERVAL:
            self._ack(cmd, self._set_interval(_int(p[0]), float(p[1]) if math.isfinite(p[1]) else 0.0))
        elif cmd == m.MAV_CMD_REQUEST_MESSAGE:
            msg_id = _int(p[0])
            known = msg_id in (AUTOPILOT_VERSION, *PX4_DEFAULT_RATES_HZ, HEARTBEAT)
            self._ack(cmd, m.MAV_RESULT_ACCEPTED if known else m.MAV_RESULT_UNSUPPORTED)
            if known:
                self.send_message(msg_id)
        elif cmd == m.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES:
            self._ack(cmd, m.MAV_RESULT_ACCEPTED)
            self._autopilot_version()
        else:
            self._ack(cmd, m.MAV_RESULT_UNSUPPORTED)

    def _do_set_mode(self, main: int, sub: int) -> int:
        m = self.m
        now = time.monotonic()
        if self.px4:
            if main == PX4_OFFBOARD and not self._offboard_available(now):
                self.statustext(m.MAV_SEVERITY_CRITICAL, "Switching to Offboard is currently not available")
                return int(m.MAV_RESULT_TEMPORARILY_REJECTED)
            if main in PX4_NEEDS_RC and not self.config.rc_present:
                name = {PX4_POSCTL: "Position", PX4_ALTCTL: "Altitude"}.get(main, "Manual")
                self.statustext(m.MAV_SEVERITY_CRITICAL, f"Switching to {name} is currently not available")
                return int(m.MAV_RESULT_TEMPORARILY_REJECTED)
            if main not in (*PX4_NEEDS_RC, PX4_AUTO, PX4_OFFBOARD) or (
                main == PX4_AUTO
                and sub not in (PX4_AUTO_TAKEOFF, PX4_AUTO_LOITER, PX4_AUTO_RTL, PX4_AUTO_LAND)
            ):
                return int(m.MAV_RESULT_UNSUPPORTED)
            self.pending_failsafe = None
            self.offboard_lost = False
            if main == PX4_AUTO and sub == PX4_AUTO_RTL:
                self._start_rtl()
                return int(m.MAV_RESULT_ACCEPTED)
            if main == PX4_AUTO and sub == PX4_AUTO_TAKEOFF:
                self._set_mode(main, sub)
                if self.armed:
                    self._start_takeoff(self.params.get("MIS_TAKEOFF_ALT"))
                return int(m.MAV_RESULT_ACCEPTED)
            self.flight = None
            self._set_mode(main, sub)
            if main == PX4_AUTO and sub == PX4_AUTO_LAND:
                self._land()
            elif main != PX4_OFFBOARD:
                self._hover()
            return int(m.MAV_RESULT_ACCEPTED)
        if main not in APM_MODES or main == APM_AUTO:
            return int(m.MAV_RESULT_UNSUPPORTED)  # AUTO needs a mission: not emulated
        if main == APM_RTL:
            self._start_rtl()
            return int(m.MAV_RESULT_ACCEPTED)
        self.flight = None
        self._set_mode(main, 0)
        if main == APM_LAND:
            self._land()
        elif main != APM_GUIDED:
            self._hover()
        return int(m.MAV_RESULT_ACCEPTED)

    def _arm(self, arm: bool, force: bool) -> int:
        m = self.m
        if not arm:
            if not self._landed() and not force:
                self.statustext(m.MAV_SEVERITY_CRITICAL, "Disarming denied: not landed")
                return int(m.MAV_RESULT_DENIED)
            if not self._landed():
                self._motors_off()
            self._disarm()
            return int(m.MAV_RESULT_ACCEPTED)
        if self.armed:
            return int(m.MAV_RESULT_ACCEPTED)
        why = None if force else self.prearm_failure()
        if why is not None:
            self.statustext(m.MAV_SEVERITY_CRITICAL, why)
            # PX4 commander: a refused arming transition is TEMPORARILY_REJECTED; ArduPilot: FAILED
            return int(m.MAV_RESULT_TEMPORARILY_REJECTED if self.px4 else m.MAV_RESULT_FAILED)
        self.armed = True
        self.armed_s = time.monotonic()
        self.landed_s = None
        self._flew = False
        with self.world.lock:
            self._model().armed = True
        self._heartbeat()
        if self.px4 and self.main_mode == PX4_AUTO and self.sub_mode == PX4_AUTO_TAKEOFF:
            self._start_takeoff(self.params.get("MIS_TAKEOFF_ALT"))
        return int(m.MAV_RESULT_ACCEPTED)

    def _takeoff(self, altitude: float) -> int:
        m = self.m
        if self.px4:
            # Commander: NAV_TAKEOFF switches to AUTO.TAKEOFF; param7 is AMSL (NaN: MIS_TAKEOFF_ALT)
            rel_m = altitude - HOME_ALT_M if math.isfinite(altitude) else self.params.get("MIS_TAKEOFF_ALT")
            if not self._landed():
                return int(m.MAV_RESULT_TEMPORARILY_REJECTED)
            self.pending_failsafe = None
            self._set_mode(PX4_AUTO, PX4_AUTO_TAKEOFF)
            if self.armed:
                self._start_takeoff(max(0.5, rel_m))
            return int(m.MAV_RESULT_ACCEPTED)
        # ArduCopter GCS_MAVLINK_Copter::handle_MAV_CMD_NAV_TAKEOFF -> do_user_takeoff
        if not self.armed or self.main_mode != APM_GUIDED or not self._landed():
            self.statustext(m.MAV_SEVERITY_CRITICAL, "Takeoff denied: arm in GUIDED first")
            return int(m.MAV_RESULT_FAILED)
        self._start_takeoff(max(0.5, altitude))
        return int(m.MAV_RESULT_ACCEPTED)

    def pose(self) -> Pose:
        return self.world.vehicle_pose(self.vehicle)

    def distance_from_home_m(self) -> float:
        p = self.pose()
        return math.hypot(p.x_m - self.home.x_m, p.y_m - self.home.y_m)

    def altitude_m(self) -> float:
        return float(self.home.z_m - self.pose().z_m)

    @property
    def heading_deg(self) -> float:
        return wrap_deg(self.pose().yaw_deg)
