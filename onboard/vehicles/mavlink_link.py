"""The companion's MAVLink link to the autopilot (unmodified pymavlink): the connection, commands
checked with COMMAND_ACK, our heartbeats, stream requests and parameter reads.

- Every command is checked with COMMAND_ACK; a refusal raises VehicleError carrying the result and
  the autopilot's last STATUSTEXT, and is reported as a "refused" fault. STATUSTEXT is kept for the
  log and for refusals' wording, never to decide anything.
- Telemetry streams are requested with MAV_CMD_SET_MESSAGE_INTERVAL: ArduPilot sends what its SRn_*
  stream rates say, and EXTENDED_SYS_STATE is in none of its stream groups, so without the request
  "landed" never arrives.
- Companion identity: HEARTBEAT at 1 Hz as MAV_TYPE_ONBOARD_CONTROLLER (system 1, component 191,
  MAV_COMP_ID_ONBOARD_COMPUTER). PX4 clears its data-link arming check only on MAV_TYPE_GCS
  heartbeats (commander/HealthAndArmingChecks/checks/rcAndDataLinkCheck.cpp), so with NAV_DLL_ACT > 0
  a GCS must be heard on the link, or `gcs_heartbeat=1` sends GCS heartbeats (system 255, component
  190) on the ground station's behalf while `set_ground_link(True)` says its link is up; when that link
  drops they stop, and the autopilot's own data-link failsafe (NAV_DLL_ACT / FS_GCS_ENABLE) follows it.
"""

from __future__ import annotations

import logging
import queue
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from common.errors import LinkError, VehicleError
from common.pose import Pose
from common.spawn import ORIGIN
from onboard.vehicles.fault_kinds import FaultKind
from onboard.vehicles.faults import FaultReporter

if TYPE_CHECKING:
    # the classes of mavutil's dialect module (`mavutil.mavlink`: all messages, v1 or v2 framing)
    from pymavlink.dialects.v20.all import (
        MAVLink,
        MAVLink_command_ack_message,
        MAVLink_heartbeat_message,
        MAVLink_param_value_message,
        MAVLink_statustext_message,
    )

# the adapter's one logger name: its log lines read as before the split
log = logging.getLogger("onboard.vehicles.px4")

ACK_TIMEOUT_S = 3.0
PARAM_TIMEOUT_S = 2.0
AUTOPILOT_PX4, AUTOPILOT_ARDUPILOT = 12, 3
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
_RESULTS = {
    0: "ACCEPTED",
    1: "TEMPORARILY_REJECTED",
    2: "DENIED",
    3: "UNSUPPORTED",
    4: "FAILED",
    5: "IN_PROGRESS",
}


# what a mavlink:// URL names (px4.parse_mavlink_url): the link to open and the adapter's settings
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
    gimbal: str = "level"  # the camera's mount (onboard.vehicles.camera_mount)
    # the autopilot's own timeout on our setpoints (PX4 COM_OF_LOSS_T, ArduPilot GUID_TIMEOUT), set
    # before arming: what acts when onboard itself dies
    command_loss_s: float = 1.0
    loss_action: str = "land"  # PX4 COM_OBL_RC_ACT by name (onboard.vehicles.mavlink_checks)


class MavlinkLink:
    def __init__(self, name: str, target: MavlinkTarget, faults: FaultReporter) -> None:
        """`target` (the parsed mavlink:// URL) gives the connection, the dialect and gcs_heartbeat."""
        self.name = name
        self.target = target
        self.px4 = target.dialect == "px4"
        self.faults = faults
        self.conn: Any = None
        self.mavlink: Any = None
        self.statustexts: deque[tuple[float, int, str]] = deque(maxlen=100)
        self.params: dict[str, float] = {}
        self.gcs_heartbeats_sent = 0
        self._acks: dict[int, queue.Queue[int]] = {}
        self._send_lock = threading.Lock()
        self._param_events: dict[str, threading.Event] = {}
        self._gcs_heard_s: float | None = None  # a real ground station's heartbeat on this link
        self._ground_link_up = False
        self._gcs_mav: Any = None

    def open(self) -> MAVLink_heartbeat_message:
        """Connect and wait for the autopilot's first HEARTBEAT (returned)."""
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
            dialect = "px4" if self.px4 else "ardupilot"
            log.warning("%s: autopilot type %d but dialect=%s", self.name, hb.autopilot, dialect)
        return hb

    def start_gcs_identity(self) -> None:
        """GCS heartbeats on the ground station's behalf: their own system id, the same link."""
        self._gcs_mav = self.mavlink.MAVLink(self.conn, srcSystem=GCS_SYSID, srcComponent=GCS_COMPID)

    def send(self, write: Callable[[MAVLink], None]) -> None:
        """One message through pymavlink's MAVLink object (`write(conn.mav)`), one sender at a time."""
        with self._send_lock:
            write(self.conn.mav)

    def recent_statustext(self, within_s: float) -> str | None:
        recent = [t for s, _, t in self.statustexts if time.monotonic() - s < within_s]
        return recent[-1] if recent else None

    def command_long(self, command: int, *params: float, quiet: bool = False) -> None:
        """COMMAND_LONG, then the COMMAND_ACK for it; raises VehicleError unless ACCEPTED (a "refused"
        fault too, unless quiet: a stream request the autopilot declines is not a refusal to fly)."""
        p = [float(x) for x in params] + [0.0] * (7 - len(params))
        q: queue.Queue[int] = queue.Queue()
        self._acks[command] = q
        try:
            conn = self.conn
            self.send(
                lambda mav: mav.command_long_send(conn.target_system, conn.target_component, command, 0, *p)
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
            text = self.recent_statustext(2.0)
            said = f"; autopilot: {text!r}" if text is not None else ""
            why = f"command {command} params {p[:3]} -> {_RESULTS.get(result, result)}{said}"
            if not quiet:
                self.faults.emit(FaultKind.REFUSED, why)
            raise VehicleError(f"{self.name}: {why}")

    def request_streams(self) -> None:
        for msg_id, hz in STREAMS_HZ.items():
            try:
                self.command_long(self.mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, 1e6 / hz, quiet=True)
            except VehicleError as exc:
                log.warning("%s: %s (continuing with the autopilot's own rate)", self.name, exc)

    # ---- what the receiver hands over
    def on_ack(self, msg: MAVLink_command_ack_message) -> None:
        q = self._acks.get(msg.command)
        if q is not None:
            q.put(msg.result)

    def on_statustext(self, msg: MAVLink_statustext_message) -> None:
        text = msg.text if isinstance(msg.text, str) else msg.text.decode(errors="replace")
        self.statustexts.append((time.monotonic(), msg.severity, text))
        log.log(logging.WARNING if msg.severity <= 4 else logging.INFO, "%s autopilot: %s", self.name, text)

    def on_any_heartbeat(self, hb: MAVLink_heartbeat_message) -> None:
        if hb.type == MAV_TYPE_GCS and hb.get_srcSystem() != GCS_SYSID:
            self._gcs_heard_s = time.monotonic()  # another ground station, forwarded onto this link

    def on_param(self, msg: MAVLink_param_value_message) -> None:
        name = msg.param_id if isinstance(msg.param_id, str) else msg.param_id.decode(errors="replace")
        value = float(msg.param_value)
        if msg.param_type != 9 and self.px4:  # PX4 sends integers bytewise in the float field
            value = float(struct.unpack("<i", struct.pack("<f", value))[0])
        self.params[name] = value
        event = self._param_events.get(name)
        if event is not None:
            event.set()

    # ---- parameters
    def read_params(self, names: tuple[str, ...] | list[str]) -> dict[str, float]:
        """PARAM_REQUEST_READ for each name (re-asked once); returns those the autopilot answered."""
        events = {}
        for name in names:
            events[name] = self._param_events.setdefault(name, threading.Event())
            events[name].clear()
        for _attempt in range(2):
            for name, event in events.items():
                if not event.is_set():
                    self._request_param(name)
            deadline = time.monotonic() + PARAM_TIMEOUT_S / 2
            while time.monotonic() < deadline and not all(e.is_set() for e in events.values()):
                time.sleep(0.02)
        return {n: self.params[n] for n, e in events.items() if e.is_set()}

    def _request_param(self, name: str) -> None:
        conn = self.conn
        self.send(
            lambda mav: mav.param_request_read_send(
                conn.target_system, conn.target_component, name.encode(), -1
            )
        )

    def set_param(self, name: str, value: float, integer: bool) -> float:
        """PARAM_SET, then the autopilot's PARAM_VALUE for it (the parameter protocol's answer; sent
        again once if none came): returns the value the autopilot now holds, which the caller compares.
        PX4 takes integers bytewise in the float field (as it sends them), ArduPilot as plain floats."""
        kind = 6 if integer else 9  # MAV_PARAM_TYPE_INT32, MAV_PARAM_TYPE_REAL32
        wire = float(value)
        if integer and self.px4:
            wire = struct.unpack("<f", struct.pack("<i", int(value)))[0]
        event = self._param_events.setdefault(name, threading.Event())
        conn = self.conn
        for _attempt in range(2):
            event.clear()
            self.send(
                lambda mav: mav.param_set_send(
                    conn.target_system, conn.target_component, name.encode(), wire, kind
                )
            )
            if event.wait(PARAM_TIMEOUT_S / 2):
                return self.params[name]
        raise VehicleError(f"{self.name}: no PARAM_VALUE for {name} within {PARAM_TIMEOUT_S} s of PARAM_SET")

    # ---- heartbeats
    @property
    def ground_link_up(self) -> bool:
        return self._ground_link_up

    def set_ground_link(self, up: bool) -> None:
        """The ground-station link's state (from the runtime's link): with gcs_heartbeat=1, GCS
        heartbeats are sent on its behalf only while it is up. Taken under the send lock, with which
        heartbeat() checks and sends: once this returns with the link down, no GCS heartbeat goes out,
        not even one whose check ran just before."""
        with self._send_lock:
            self._ground_link_up = bool(up)

    def gcs_heard(self) -> bool:
        return self._gcs_heard_s is not None and time.monotonic() - self._gcs_heard_s < 3.0

    def heartbeat(self) -> None:
        self.send(
            lambda mav: mav.heartbeat_send(
                MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID, 0, 0, MAV_STATE_ACTIVE
            )
        )
        with self._send_lock:
            if self.target.gcs_heartbeat and self._ground_link_up and self._gcs_mav is not None:
                self._gcs_mav.heartbeat_send(MAV_TYPE_GCS, MAV_AUTOPILOT_INVALID, 0, 0, MAV_STATE_ACTIVE)
                self.gcs_heartbeats_sent += 1

    def heartbeat_loop(self, stop: threading.Event) -> None:
        while not stop.wait(1.0):
            try:
                self.heartbeat()
            except Exception:
                log.debug("heartbeat send failed", exc_info=True)
