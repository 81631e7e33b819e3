"""PX4 offboard (and ArduPilot GUIDED) over MAVLink with unmodified pymavlink: the Vehicle and Camera.

URL: ``mavlink://CONNECTION[?dialect=px4|ardupilot][&spawn=x,y,z,yaw_deg][&camera=SPEC]
[&max_frame_age_s=0.5][&link_timeout_s=1.5][&gcs_heartbeat=0|1]`` where CONNECTION is a pymavlink
connection string (``udpin:0.0.0.0:14540`` for PX4's offboard link, ``tcp:127.0.0.1:5760``,
``/dev/ttyTHS1,921600``) and SPEC is ``h264udp://0.0.0.0:5600`` (raw H.264 datagrams), a V4L2 device
number, an RTSP URL or a GStreamer pipeline (onboard.vehicles.video).

- Motion: SET_POSITION_TARGET_LOCAL_NED in MAV_FRAME_BODY_NED (8) with type_mask 1479 (velocity +
  yaw rate), one per actuation tick. PX4 rotates (vx forward, vy right) by yaw only and takes vz as
  NED down, the same convention as the Vehicle protocol; yaw rate goes in rad/s.
- Take-off (PX4): setpoints stream (our own thread) for `prestream_s` before OFFBOARD is requested,
  then arm, then climb by streaming vz until the altitude is reached; the actuation loop takes the
  stream over at its first setpoint. After that the stream is only the actuation loop's: if the
  onboard loop stalls, PX4's own offboard-loss failsafe acts, as it should.
  ArduPilot: GUIDED, arm, MAV_CMD_NAV_TAKEOFF.
- Every mode change, arming and landing is checked with COMMAND_ACK; a refusal raises VehicleError
  carrying the result and the autopilot's last STATUSTEXT, and is reported as a "refused" fault.
- Leaving OFFBOARD/GUIDED without being asked (RC takeover, another GCS, a failsafe) stops all
  commanding (setpoints, and our landing: the pilot or the failsafe has the vehicle) and is reported
  as "control_lost" or "failsafe" (when the autopilot announced a failsafe / the stream had a gap).
  No heartbeat for `link_timeout_s` is "link_lost".
- Telemetry: HEARTBEAT (mode, armed, system_status), LOCAL_POSITION_NED (+ `spawn` = the EKF origin
  in the episode's world frame), ATTITUDE (yaw), BATTERY_STATUS / SYS_STATUS (battery),
  EXTENDED_SYS_STATE (landed), GLOBAL_POSITION_INT and HOME_POSITION (kept for the log). Every one is
  requested with MAV_CMD_SET_MESSAGE_INTERVAL: ArduPilot sends what its SRn_* stream rates say, and
  EXTENDED_SYS_STATE is in none of its stream groups, so without the request "landed" never arrives.
  STATUSTEXT is kept for the log and for refusals' wording, never to decide anything.
- Failsafes are read from the autopilot's state, not its words: a mode we did not ask for, with the
  HEARTBEAT's system_status CRITICAL/EMERGENCY (both PX4 and ArduCopter report an active failsafe so)
  or with our own setpoint stream silent for longer than the loss timeout, is a "failsafe"; any other
  unasked mode change is "control_lost".
- Companion identity: HEARTBEAT at 1 Hz as MAV_TYPE_ONBOARD_CONTROLLER (system 1, component 191,
  MAV_COMP_ID_ONBOARD_COMPUTER). PX4 clears its data-link arming check only on MAV_TYPE_GCS
  heartbeats (commander/HealthAndArmingChecks/checks/rcAndDataLinkCheck.cpp), so with NAV_DLL_ACT > 0
  a GCS must be heard on the link, or `gcs_heartbeat=1` sends GCS heartbeats (system 255, component
  190) on the ground station's behalf while `set_ground_link(True)` says its link is up; when that link
  drops they stop, and the autopilot's own data-link failsafe (NAV_DLL_ACT / FS_GCS_ENABLE) follows it.
- E-stop: `emergency_stop()` is a forced disarm (motors off wherever the vehicle is).
- Before arming, the parameters the runtime relies on are read and checked (onboard.vehicles.
  mavlink_checks): a value outside its range refuses the arming with the parameter, value and range.
"""

from __future__ import annotations

import logging
import math
import queue
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from common.checks import query_float
from common.errors import ConfigError, LinkError, VehicleError
from common.interfaces import Telemetry, Vehicle
from common.pose import Pose, wrap_deg
from common.spawn import ORIGIN, parse_spawn
from onboard.vehicles.faults import FaultReporter
from onboard.vehicles.mavlink_checks import APM_READ, PX4_READ, check_params, nav_dll_refusal
from onboard.vehicles.video import FrameSource, FreshFrameCamera, open_frame_source

log = logging.getLogger(__name__)

FRAME_BODY_NED = 8
MASK_VELOCITY_YAW_RATE = 1479  # ignore position (7), acceleration (448), yaw (1024)
PX4_OFFBOARD, PX4_POSCTL, PX4_AUTO, PX4_AUTO_LAND = 6, 3, 4, 6
APM_GUIDED, APM_LAND = 4, 9
AUTOPILOT_PX4, AUTOPILOT_ARDUPILOT = 12, 3
ACK_TIMEOUT_S = 3.0
FORCE_DISARM_MAGIC = 21196  # COMPONENT_ARM_DISARM param2: disarm even in the air (MAVLink common.xml)
PARAM_TIMEOUT_S = 2.0
STREAM_HZ = 20.0
COMPANION_SYSID, COMPANION_COMPID = 1, 191  # MAV_COMP_ID_ONBOARD_COMPUTER on the vehicle's system
GCS_SYSID, GCS_COMPID = 255, 190  # a ground station (QGroundControl's ids; ArduPilot's SYSID_MYGCS)
MAV_TYPE_GCS, MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID = 6, 18, 8
MAV_STATE_ACTIVE, MAV_STATE_CRITICAL, MAV_STATE_EMERGENCY = 4, 5, 6
# message id -> rate (Hz) asked for with MAV_CMD_SET_MESSAGE_INTERVAL
STREAMS_HZ = {
    32: 20.0,  # LOCAL_POSITION_NED
    30: 20.0,  # ATTITUDE
    245: 2.0,  # EXTENDED_SYS_STATE (landed state)
    147: 1.0,  # BATTERY_STATUS
    1: 2.0,  # SYS_STATUS
    33: 5.0,  # GLOBAL_POSITION_INT
    242: 0.5,  # HOME_POSITION
}


@dataclass(frozen=True)
class MavlinkTarget:
    connection: str
    dialect: str = "px4"
    spawn: Pose = ORIGIN
    camera: str | None = None
    max_frame_age_s: float = 0.5
    link_timeout_s: float = 1.5
    prestream_s: float = 0.3
    climb_m_s: float = 1.0
    gcs_heartbeat: bool = False


_FLOAT_PARAMS = {
    "max_frame_age_s": (0.01, 10.0),
    "link_timeout_s": (0.1, 60.0),
    "prestream_s": (0.0, 10.0),
    "climb_m_s": (0.1, 5.0),
}


def parse_mavlink_url(url: str) -> MavlinkTarget:
    if not url.startswith("mavlink://"):
        raise ConfigError(f"not a mavlink:// URL: {url!r}")
    connection, _, query = url[len("mavlink://") :].partition("?")
    if not connection:
        raise ConfigError(f"{url!r}: no pymavlink connection string (e.g. udpin:0.0.0.0:14540)")
    q = {k: v[0] for k, v in parse_qs(query).items()}
    spawn = parse_spawn(url, q)
    dialect = q.pop("dialect", "px4")
    if dialect not in ("px4", "ardupilot"):
        raise ConfigError(f"{url!r}: dialect={dialect!r} must be 'px4' or 'ardupilot'")
    floats = {  # each with its valid range
        k: query_float(url, q, k, getattr(MavlinkTarget, k), low, high)
        for k, (low, high) in _FLOAT_PARAMS.items()
        if k in q
    }
    gcs = q.pop("gcs_heartbeat", "0")
    if gcs not in ("0", "1"):
        raise ConfigError(f"{url!r}: gcs_heartbeat={gcs!r} must be 0 or 1")
    target = MavlinkTarget(
        connection, dialect, spawn, q.pop("camera", None), **floats, gcs_heartbeat=gcs == "1"
    )
    if q:
        raise ConfigError(f"{url!r}: unknown parameters {sorted(q)}")
    return target


class MavlinkVehicle(Vehicle):
    def __init__(self, target: MavlinkTarget, name: str = "MAV") -> None:
        self.target = target
        self.name = name
        self.px4 = target.dialect == "px4"
        self.faults = FaultReporter(name)
        self.conn: Any = None
        self.mavlink: Any = None
        self.video: FrameSource | None = None
        self.statustexts: deque[tuple[float, int, str]] = deque(maxlen=100)
        self.poses: deque[tuple[float, Pose]] = deque(maxlen=200)
        self._acks: dict[int, queue.Queue[int]] = {}
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._position: tuple[float, ...] | None = None  # x y z vx vy vz (local NED)
        self._yaw_deg = 0.0
        self._battery: float | None = None
        self._landed_state: int | None = None
        self._battery_status_seen = False
        self.system_status: int | None = None
        self.global_position: tuple[float, float, float] | None = None  # lat, lon deg, alt AMSL m
        self.home_position: tuple[float, float, float] | None = None
        self.params: dict[str, float] = {}
        self._param_events: dict[str, threading.Event] = {}
        self._gcs_heard_s: float | None = None  # a real ground station's heartbeat on this link
        self._ground_link_up = False
        self.gcs_heartbeats_sent = 0
        self._gcs_mav: Any = None
        self.was_airborne = False
        self.armed = False
        self.main_mode: int | None = None
        self.sub_mode = 0
        self._last_heartbeat_s = 0.0
        self._link_ok = True
        self.in_control = False  # we put the vehicle in OFFBOARD/GUIDED and nobody took it from us
        self.control_lost: str | None = None
        self.last_setpoint_s: float | None = None
        self.setpoints_sent = 0
        self._bridge_stream = threading.Event()  # set: our thread streams setpoints (take-off, handover)
        self._bridge_setpoint = (0.0, 0.0, 0.0, 0.0)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._connected = False

    # ---- plumbing
    def connect(self) -> None:
        from pymavlink import mavutil

        self.mavlink = mavutil.mavlink
        try:
            self.conn = mavutil.mavlink_connection(
                self.target.connection,
                source_system=COMPANION_SYSID,
                source_component=COMPANION_COMPID,
                autoreconnect=True,
            )
        except Exception as exc:
            raise LinkError(f"{self.name}: cannot open {self.target.connection!r}: {exc}") from exc
        hb = self.conn.wait_heartbeat(timeout=10)
        if hb is None:
            raise LinkError(f"{self.name}: no HEARTBEAT on {self.target.connection} within 10 s")
        want = AUTOPILOT_PX4 if self.px4 else AUTOPILOT_ARDUPILOT
        if hb.autopilot != want:
            log.warning("%s: autopilot type %d but dialect=%s", self.name, hb.autopilot, self.target.dialect)
        self._on_heartbeat(hb)
        # GCS heartbeats on the ground station's behalf: their own system id, the same link
        self._gcs_mav = mavutil.mavlink.MAVLink(self.conn, srcSystem=GCS_SYSID, srcComponent=GCS_COMPID)
        loops = (
            ("rx", self._rx_loop),
            ("stream", self._stream_loop),
            ("watch", self._watch_loop),
            ("heartbeat", self._heartbeat_loop),
        )
        for name, fn in loops:
            t = threading.Thread(target=fn, name=f"{self.name}-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self._heartbeat()
        for msg_id, hz in STREAMS_HZ.items():
            try:
                self._command_long(self.mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, 1e6 / hz, quiet=True)
            except VehicleError as exc:
                log.warning("%s: %s (continuing with the autopilot's own rate)", self.name, exc)
        deadline = time.monotonic() + 3.0
        while self._position is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._position is None:
            raise LinkError(f"{self.name}: no LOCAL_POSITION_NED within 3 s (no position estimate?)")
        if self.target.camera:
            self.video = open_frame_source(self.target.camera)
        self._connected = True
        log.info("%s: connected (%s, mode %s)", self.name, self.target.dialect, self.mode_name)

    @property
    def is_connected(self) -> bool:
        return self._connected

    def _send(self, fn_name: str, *args: Any) -> None:
        with self._send_lock:
            getattr(self.conn.mav, fn_name)(*args)

    def _command_long(self, command: int, *params: float, quiet: bool = False) -> None:
        """COMMAND_LONG, then the COMMAND_ACK for it; raises VehicleError unless ACCEPTED (a "refused"
        fault too, unless quiet: a stream request the autopilot declines is not a refusal to fly)."""
        p = [float(x) for x in params] + [0.0] * (7 - len(params))
        q: queue.Queue[int] = queue.Queue()
        self._acks[command] = q
        try:
            self._send(
                "command_long_send", self.conn.target_system, self.conn.target_component, command, 0, *p
            )
            try:
                result = q.get(timeout=ACK_TIMEOUT_S)
            except queue.Empty:
                raise VehicleError(
                    f"{self.name}: no COMMAND_ACK for command {command} within {ACK_TIMEOUT_S} s"
                ) from None
        finally:
            self._acks.pop(command, None)
        if result != self.mavlink.MAV_RESULT_ACCEPTED:
            names = {
                0: "ACCEPTED",
                1: "TEMPORARILY_REJECTED",
                2: "DENIED",
                3: "UNSUPPORTED",
                4: "FAILED",
                5: "IN_PROGRESS",
            }
            recent = [t for s, _, t in self.statustexts if time.monotonic() - s < 2.0]
            said = f"; autopilot: {recent[-1]!r}" if recent else ""
            why = f"command {command} params {p[:3]} -> {names.get(result, result)}{said}"
            if not quiet:
                self.faults.emit("refused", why)
            raise VehicleError(f"{self.name}: {why}")

    def _set_mode(self, main: int, sub: int = 0, confirm_s: float = 2.5) -> None:
        """DO_SET_MODE, checked twice: its COMMAND_ACK, then a HEARTBEAT showing the mode."""
        self._command_long(self.mavlink.MAV_CMD_DO_SET_MODE, 1, main, sub)
        deadline = time.monotonic() + confirm_s
        while (self.main_mode, self.sub_mode if self.px4 else 0) != (main, sub):
            if time.monotonic() > deadline:
                raise VehicleError(
                    f"{self.name}: mode ({main}, {sub}) acknowledged, heartbeat still says {self.mode_name}"
                )
            time.sleep(0.02)

    # ---- receiving
    def _on_heartbeat(self, hb: Any) -> None:
        if hb.type == MAV_TYPE_GCS and hb.get_srcSystem() != GCS_SYSID:
            self._gcs_heard_s = time.monotonic()  # another ground station, forwarded onto this link
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
        if changed and self.in_control and main != (PX4_OFFBOARD if self.px4 else APM_GUIDED):
            self._lost_control(f"autopilot left {'OFFBOARD' if self.px4 else 'GUIDED'} for {self.mode_name}")

    def _lost_control(self, why: str) -> None:
        self.in_control = False
        self._bridge_stream.clear()
        recent = [t for s, _, t in self.statustexts if time.monotonic() - s < 3.0]
        gap = None if self.last_setpoint_s is None else time.monotonic() - self.last_setpoint_s
        # the autopilot's state says failsafe: system_status CRITICAL/EMERGENCY (PX4 mavlink_messages
        # HEARTBEAT: vehicle_status.failsafe; ArduCopter: any_failsafe_triggered()), or our own stream
        # was silent past the loss timeout (the autopilot had to act); never STATUSTEXT wording
        loss_s = self.params.get("COM_OF_LOSS_T" if self.px4 else "GUID_TIMEOUT", 1.0)
        critical = self.system_status in (MAV_STATE_CRITICAL, MAV_STATE_EMERGENCY)
        kind = "failsafe" if critical or (gap is not None and gap > loss_s) else "control_lost"
        said = f"; autopilot: {recent[-1]!r}" if recent else ""
        self.control_lost = f"{why}{said}"
        # stop commanding: whoever took the vehicle has it; the runtime ends the run
        self.faults.emit(kind, self.control_lost, "land")

    def _rx_loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.conn.recv_match(blocking=True, timeout=0.2)
            except Exception:
                if self._stop.is_set():
                    break
                log.debug("mavlink receive failed", exc_info=True)
                time.sleep(0.1)
                continue
            if msg is None:
                continue
            kind = msg.get_type()
            if kind == "HEARTBEAT":
                self._on_heartbeat(msg)
            elif kind == "PARAM_VALUE":
                self._on_param(msg)
            elif kind == "BATTERY_STATUS":
                if msg.battery_remaining >= 0:
                    self._battery_status_seen = True
                    self._battery = msg.battery_remaining / 100.0
            elif kind == "GLOBAL_POSITION_INT":
                self.global_position = (msg.lat / 1e7, msg.lon / 1e7, msg.alt / 1000.0)
            elif kind == "HOME_POSITION":
                self.home_position = (msg.latitude / 1e7, msg.longitude / 1e7, msg.altitude / 1000.0)
            elif kind == "LOCAL_POSITION_NED":
                with self._state_lock:
                    self._position = (msg.x, msg.y, msg.z, msg.vx, msg.vy, msg.vz)
            elif kind == "ATTITUDE":
                self._yaw_deg = math.degrees(msg.yaw)
            elif kind == "SYS_STATUS" and not self._battery_status_seen:
                self._battery = None if msg.battery_remaining < 0 else msg.battery_remaining / 100.0
            elif kind == "EXTENDED_SYS_STATE":
                self._landed_state = msg.landed_state
                if msg.landed_state == 2:  # MAV_LANDED_STATE_IN_AIR
                    self.was_airborne = True
            elif kind == "STATUSTEXT":
                text = msg.text if isinstance(msg.text, str) else msg.text.decode(errors="replace")
                self.statustexts.append((time.monotonic(), msg.severity, text))
                log.log(
                    logging.WARNING if msg.severity <= 4 else logging.INFO,
                    "%s autopilot: %s",
                    self.name,
                    text,
                )
            elif kind == "COMMAND_ACK":
                q = self._acks.get(msg.command)
                if q is not None:
                    q.put(msg.result)

    def _on_param(self, msg: Any) -> None:
        name = msg.param_id if isinstance(msg.param_id, str) else msg.param_id.decode(errors="replace")
        value = float(msg.param_value)
        if msg.param_type != 9 and self.px4:  # PX4 sends integers bytewise in the float field
            value = float(struct.unpack("<i", struct.pack("<f", value))[0])
        self.params[name] = value
        event = self._param_events.get(name)
        if event is not None:
            event.set()

    def read_params(self, names: tuple[str, ...] | list[str]) -> dict[str, float]:
        """PARAM_REQUEST_READ for each name (re-asked once); returns those the autopilot answered."""
        events = {}
        for name in names:
            events[name] = self._param_events.setdefault(name, threading.Event())
            events[name].clear()
        for _attempt in range(2):
            for name, event in events.items():
                if not event.is_set():
                    self._send(
                        "param_request_read_send",
                        self.conn.target_system,
                        self.conn.target_component,
                        name.encode(),
                        -1,
                    )
            deadline = time.monotonic() + PARAM_TIMEOUT_S / 2
            while time.monotonic() < deadline and not all(e.is_set() for e in events.values()):
                time.sleep(0.02)
        return {n: self.params[n] for n, e in events.items() if e.is_set()}

    def set_ground_link(self, up: bool) -> None:
        """The ground-station link's state (from the runtime's link): with gcs_heartbeat=1, GCS
        heartbeats are sent on its behalf only while it is up."""
        self._ground_link_up = bool(up)

    def gcs_heard(self) -> bool:
        return self._gcs_heard_s is not None and time.monotonic() - self._gcs_heard_s < 3.0

    def _heartbeat(self) -> None:
        self._send(
            "heartbeat_send", MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID, 0, 0, MAV_STATE_ACTIVE
        )
        if self.target.gcs_heartbeat and self._ground_link_up and self._gcs_mav is not None:
            with self._send_lock:
                self._gcs_mav.heartbeat_send(MAV_TYPE_GCS, MAV_AUTOPILOT_INVALID, 0, 0, MAV_STATE_ACTIVE)
            self.gcs_heartbeats_sent += 1

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._heartbeat()
            except Exception:
                log.debug("heartbeat send failed", exc_info=True)

    def preflight(self) -> None:
        """Read the parameters the runtime relies on and refuse (VehicleError + "refused" fault) with
        the parameter, its value and the accepted range when one is outside it."""
        names = PX4_READ if self.px4 else APM_READ
        values = self.read_params(names)
        problems = check_params(self.px4, values)
        if self.px4 and "NAV_DLL_ACT" in values:
            dll = nav_dll_refusal(
                values["NAV_DLL_ACT"], self.gcs_heard(), self.target.gcs_heartbeat, self._ground_link_up
            )
            if dll:
                problems.append(dll)
        if problems:
            why = "not arming: " + "; ".join(problems)
            self.faults.emit("refused", why)
            raise VehicleError(f"{self.name}: {why}")
        if self.px4 and values.get("NAV_DLL_ACT", 0) and not self.gcs_heard():
            time.sleep(1.1)  # our GCS heartbeat (1 Hz) must have reached PX4 before it arms

    def _watch_loop(self) -> None:
        while not self._stop.wait(0.1):
            age = time.monotonic() - self._last_heartbeat_s
            if self._link_ok and age > self.target.link_timeout_s:
                self._link_ok = False
                self.faults.emit("link_lost", f"no HEARTBEAT for {age:.1f} s", "land")
            elif not self._link_ok and age < self.target.link_timeout_s:
                self._link_ok = True
                self.faults.emit("link_ok", "heartbeats are back")

    # ---- setpoints
    def _setpoint(self, forward_m_s: float, right_m_s: float, down_m_s: float, yaw_rate_deg_s: float) -> None:
        self._send(
            "set_position_target_local_ned_send",
            int((time.monotonic() * 1000) % 2**32),
            self.conn.target_system,
            self.conn.target_component,
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
        self.last_setpoint_s = time.monotonic()
        self.setpoints_sent += 1

    def _stream_loop(self) -> None:
        """Our own setpoint stream, only while `_bridge_stream` is set (before and during take-off)."""
        period = 1.0 / STREAM_HZ
        while not self._stop.wait(period):
            if self._bridge_stream.is_set():
                try:
                    self._setpoint(*self._bridge_setpoint)
                except Exception:
                    log.debug("bridge setpoint failed", exc_info=True)

    # ---- Vehicle
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

    def arm(self) -> None:
        self.preflight()
        if self.gcs_heartbeats_sent == 0 and self.target.gcs_heartbeat and self._ground_link_up:
            self._heartbeat()
        if self.px4:
            # PX4 only enters OFFBOARD with setpoints already flowing (COM_OF_LOSS_T / proof of life)
            self._bridge_setpoint = (0.0, 0.0, 0.0, 0.0)
            self._bridge_stream.set()
            time.sleep(self.target.prestream_s)
            self._set_mode(PX4_OFFBOARD)
        else:
            self._set_mode(APM_GUIDED)
        self._command_long(self.mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1)
        self.in_control = True
        self.control_lost = None

    def takeoff(self, altitude_m: float) -> None:
        if not self.in_control:
            raise VehicleError(f"{self.name}: take-off needs arm() first (mode {self.mode_name})")
        if not self.px4:
            self._command_long(self.mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, 0, 0, 0, altitude_m)
        else:
            self._bridge_setpoint = (0.0, 0.0, -self.target.climb_m_s, 0.0)
        deadline = time.monotonic() + altitude_m / self.target.climb_m_s * 3 + 10
        while time.monotonic() < deadline:
            pos = self._position
            if pos is not None and -pos[2] >= altitude_m - 0.1:
                break
            if not self.in_control:
                raise VehicleError(f"{self.name}: take-off interrupted: {self.control_lost}")
            time.sleep(0.05)
        else:
            raise VehicleError(f"{self.name}: did not reach {altitude_m} m (mode {self.mode_name})")
        # hold here until the actuation loop's first setpoint takes the stream over
        self._bridge_setpoint = (0.0, 0.0, 0.0, 0.0)

    def land(self) -> None:
        self._bridge_stream.clear()
        if self.control_lost is not None:
            log.warning("%s: not commanding a landing: %s", self.name, self.control_lost)
            return
        self.in_control = False  # the mode change below is ours
        if self.px4:
            self._set_mode(PX4_AUTO, PX4_AUTO_LAND)
        else:
            self._set_mode(APM_LAND)
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and not self._is_landed():
            time.sleep(0.1)

    def _is_landed(self) -> bool:
        # EXTENDED_SYS_STATE when the autopilot sends it; otherwise disarmed after flying (both
        # autopilots disarm on landing) stands for it
        if self._landed_state is not None:
            return self._landed_state == 1
        return not self.armed

    def hold(self) -> None:
        self.send_velocity_body(0.0, 0.0, 0.0, 0.0)

    def emergency_stop(self) -> None:
        """Motors off in the air: a forced disarm (COMPONENT_ARM_DISARM 0 with the 21196 magic, which
        both autopilots honour even when not landed). Our setpoints stop first: nothing re-arms it."""
        self._bridge_stream.clear()
        self.in_control = False  # the disarm below is ours; no more setpoints
        self._command_long(self.mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0, FORCE_DISARM_MAGIC)

    def send_velocity_body(
        self, forward_m_s: float, right_m_s: float, up_m_s: float, yaw_rate_deg_s: float
    ) -> None:
        if not self.in_control:
            return  # never command a vehicle that someone else (RC pilot, failsafe) has
        self._bridge_stream.clear()  # the actuation loop has the stream from now on
        self._setpoint(forward_m_s, right_m_s, -up_m_s, yaw_rate_deg_s)

    def telemetry(self) -> Telemetry:
        with self._state_lock:
            pos = self._position
        if pos is None:
            raise LinkError(f"{self.name}: no LOCAL_POSITION_NED yet")
        s = self.target.spawn
        pose = Pose(s.x_m + pos[0], s.y_m + pos[1], s.z_m + pos[2], wrap_deg(self._yaw_deg))
        now = time.monotonic()
        self.poses.append((now, pose))
        return Telemetry(
            time_s=now,
            pose=pose,
            velocity_ned_m_s=(float(pos[3]), float(pos[4]), float(pos[5])),
            battery_fraction=self._battery,
            link_ok=self._link_ok,
            armed=self.armed,
            landed=self._is_landed(),
            collided=False,
        )

    def pose_at(self, t_s: float) -> Pose:
        if not self.poses:
            return self.telemetry().pose
        return min(self.poses, key=lambda tp: abs(tp[0] - t_s))[1]

    def camera(self) -> FreshFrameCamera:
        def usable() -> str | None:
            if not self._link_ok:
                return "the link is lost"
            return self.control_lost

        return FreshFrameCamera(
            self.name, lambda: self.video, self.pose_at, self.target.max_frame_age_s, usable
        )

    def close(self) -> None:
        self._connected = False
        self._stop.set()
        self._bridge_stream.clear()
        for t in self._threads:
            t.join(2.0)
        if self.video is not None:
            self.video.close()
        if self.conn is not None:
            self.conn.close()


def open_mavlink_vehicle(url: str) -> MavlinkVehicle:
    """Registered in common.interfaces for the mavlink:// scheme."""
    return MavlinkVehicle(parse_mavlink_url(url))
