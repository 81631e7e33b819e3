"""PX4 offboard (and ArduPilot GUIDED) over MAVLink with unmodified pymavlink: the Vehicle and Camera.

URL: ``mavlink://CONNECTION[?dialect=px4|ardupilot][&spawn=x,y,z,yaw_deg][&camera=SPEC]
[&gimbal=level|body-fixed][&max_frame_age_s=0.5][&link_timeout_s=1.5][&gcs_heartbeat=0|1]
[&command_loss_s=1][&loss_action=land|hold|return|position|altitude]``
where CONNECTION is a pymavlink connection string (``udpin:0.0.0.0:14540`` for PX4's offboard
link, ``tcp:127.0.0.1:5760``, ``/dev/ttyTHS1,921600``) and SPEC is ``h264udp://0.0.0.0:5600``
(raw H.264 datagrams), a V4L2 device number, an RTSP URL or a GStreamer pipeline
(onboard.vehicles.video).

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
  in the episode's world frame), ATTITUDE (yaw; with `gimbal=body-fixed`, a camera fixed to the
  airframe, its roll and pitch go with each frame as the camera's attitude), BATTERY_STATUS /
  SYS_STATUS (battery),
  EXTENDED_SYS_STATE (landed), GLOBAL_POSITION_INT and HOME_POSITION (kept for the log). Every one is
  requested with MAV_CMD_SET_MESSAGE_INTERVAL: ArduPilot sends what its SRn_* stream rates say, and
  EXTENDED_SYS_STATE is in none of its stream groups, so without the request "landed" never arrives.
  STATUSTEXT is kept for the log and for refusals' wording, never to decide anything.
- Failsafes are read from the autopilot's state, not its words: a mode we did not ask for, with the
  HEARTBEAT's system_status CRITICAL/EMERGENCY (both PX4 and ArduCopter report an active failsafe so)
  or with our own setpoint stream silent for longer than the loss timeout, is a "failsafe"; any other
  unasked mode change is "control_lost".
- Companion identity: HEARTBEAT at 1 Hz as an onboard controller; `gcs_heartbeat=1` adds GCS
  heartbeats on the ground station's behalf while `set_ground_link(True)` says its link is up (PX4
  arms with NAV_DLL_ACT > 0 only when a GCS is heard): the details are in mavlink_link.
- E-stop: `emergency_stop()` is a forced disarm (motors off wherever the vehicle is).
- The parts: mavlink_link (connection, COMMAND_ACK, heartbeats, stream requests, parameters),
  mavlink_telemetry (the receiver and the link watch), mavlink_setpoints (the setpoint writer and
  our take-off stream); this module parses the URL and flies: modes, arming, take-off, landing.
- Before arming, the parameters the runtime relies on are read and checked (onboard.vehicles.
  mavlink_checks): a value outside its range refuses the arming with the parameter, value and range.
- The vehicle's own last resort, for when onboard itself dies (kill -9, a crash, a power cut of the
  companion): before arming, PARAM_SET (each read back from its PARAM_VALUE) makes the autopilot act on
  our silence by itself. PX4: COM_OF_LOSS_T = `command_loss_s` (default 1 s, PX4's own default) and
  COM_OBL_RC_ACT = `loss_action` (default land: 4); PX4 then holds COM_OF_LOSS_T + COM_FAIL_ACT_T (its
  default 5 s) and lands. ArduPilot: GUID_TIMEOUT = `command_loss_s`; ArduCopter then stops and holds
  in GUIDED (it has no landing on a silent companion). A value the autopilot does not take refuses
  the arming.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from urllib.parse import parse_qs

from common.checks import query_float
from common.errors import ConfigError, LinkError, VehicleError
from common.interfaces import Telemetry, Vehicle
from common.pose import Pose, wrap_deg
from common.spawn import parse_spawn
from onboard.vehicles.camera_mount import parse_gimbal
from onboard.vehicles.fault_kinds import FaultAction, FaultKind
from onboard.vehicles.faults import FaultReporter
from onboard.vehicles.mavlink_checks import (
    APM_READ,
    LOSS_ACTIONS,
    PX4_READ,
    check_params,
    last_resort_params,
    nav_dll_refusal,
)
from onboard.vehicles.mavlink_link import (
    ACK_TIMEOUT_S,
    AUTOPILOT_ARDUPILOT,
    AUTOPILOT_PX4,
    COMPANION_COMPID,
    COMPANION_SYSID,
    GCS_COMPID,
    GCS_SYSID,
    MAV_AUTOPILOT_INVALID,
    MAV_STATE_ACTIVE,
    MAV_STATE_CRITICAL,
    MAV_STATE_EMERGENCY,
    MAV_TYPE_GCS,
    MAV_TYPE_ONBOARD_CONTROLLER,
    PARAM_TIMEOUT_S,
    STREAMS_HZ,
    MavlinkLink,
    MavlinkTarget,
)
from onboard.vehicles.mavlink_setpoints import (
    FRAME_BODY_NED,
    MASK_VELOCITY_YAW_RATE,
    STREAM_HZ,
    SetpointWriter,
)
from onboard.vehicles.mavlink_telemetry import (
    APM_GUIDED,
    APM_LAND,
    PX4_AUTO,
    PX4_AUTO_LAND,
    PX4_OFFBOARD,
    PX4_POSCTL,
    MavlinkTelemetry,
)
from onboard.vehicles.video import FrameSource, FreshFrameCamera, open_frame_source

log = logging.getLogger(__name__)

__all__ = [  # the names callers import from here, wherever they live now
    "ACK_TIMEOUT_S",
    "APM_GUIDED",
    "APM_LAND",
    "AUTOPILOT_ARDUPILOT",
    "AUTOPILOT_PX4",
    "COMPANION_COMPID",
    "COMPANION_SYSID",
    "FORCE_DISARM_MAGIC",
    "FRAME_BODY_NED",
    "GCS_COMPID",
    "GCS_SYSID",
    "MASK_VELOCITY_YAW_RATE",
    "MAV_AUTOPILOT_INVALID",
    "MAV_STATE_ACTIVE",
    "MAV_STATE_CRITICAL",
    "MAV_STATE_EMERGENCY",
    "MAV_TYPE_GCS",
    "MAV_TYPE_ONBOARD_CONTROLLER",
    "PARAM_TIMEOUT_S",
    "PX4_AUTO",
    "PX4_AUTO_LAND",
    "PX4_OFFBOARD",
    "PX4_POSCTL",
    "STREAMS_HZ",
    "STREAM_HZ",
    "MavlinkTarget",
    "MavlinkVehicle",
    "open_mavlink_vehicle",
    "parse_mavlink_url",
]

FORCE_DISARM_MAGIC = 21196  # COMPONENT_ARM_DISARM param2: disarm even in the air (MAVLink common.xml)


_FLOAT_PARAMS = {
    "max_frame_age_s": (0.01, 10.0),
    "link_timeout_s": (0.1, 60.0),
    "prestream_s": (0.0, 10.0),
    "climb_m_s": (0.1, 5.0),
    "command_loss_s": (0.1, 1.0),  # mavlink_checks: the vehicle stops within 1 s of our last setpoint
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
    gimbal = parse_gimbal(url, q)
    gcs = q.pop("gcs_heartbeat", "0")
    if gcs not in ("0", "1"):
        raise ConfigError(f"{url!r}: gcs_heartbeat={gcs!r} must be 0 or 1")
    action = q.pop("loss_action", "land")
    if action not in LOSS_ACTIONS:
        raise ConfigError(f"{url!r}: loss_action={action!r} must be one of {', '.join(LOSS_ACTIONS)}")
    target = MavlinkTarget(
        connection,
        dialect,
        spawn,
        q.pop("camera", None),
        **floats,
        gcs_heartbeat=gcs == "1",
        gimbal=gimbal,
        loss_action=action,
    )
    if q:
        known = sorted(
            {"camera", "dialect", "gcs_heartbeat", "gimbal", "loss_action", "spawn", *_FLOAT_PARAMS}
        )
        raise ConfigError(f"{url!r}: unknown parameters {sorted(q)} (known: {', '.join(known)})")
    return target


class MavlinkVehicle(Vehicle):
    """The Vehicle on one autopilot: the link, the receiver and the setpoint writer composed, and the
    control state machine (in control, control lost) over them."""

    def __init__(self, target: MavlinkTarget, name: str = "MAV") -> None:
        self.target = target
        self.name = name
        self.px4 = target.dialect == "px4"
        self.faults = FaultReporter(name)
        self.link = MavlinkLink(name, target, self.faults)
        self.state = MavlinkTelemetry(self.link, self._on_mode_change)
        self.setpoints = SetpointWriter(self.link)
        self.video: FrameSource | None = None
        self.poses: deque[tuple[float, Pose]] = deque(maxlen=200)
        self.in_control = False  # we put the vehicle in OFFBOARD/GUIDED and nobody took it from us
        self.control_lost: str | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._connected = False

    @property
    def is_connected(self) -> bool:
        return self._connected

    def set_ground_link(self, up: bool) -> None:
        """The runtime's ground-station link state (onboard.link looks this hook up on the vehicle)."""
        self.link.set_ground_link(up)

    # ---- plumbing
    def connect(self) -> None:
        hb = self.link.open()
        self.state.on_heartbeat(hb)
        self.link.start_gcs_identity()
        loops = (
            ("rx", self.state.rx_loop),
            ("stream", self.setpoints.stream_loop),
            ("watch", self.state.watch_loop),
            ("heartbeat", self.link.heartbeat_loop),
        )
        for name, fn in loops:
            t = threading.Thread(target=fn, args=(self._stop,), name=f"{self.name}-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self.link.heartbeat()
        self.link.request_streams()
        deadline = time.monotonic() + 3.0
        while self.state.position is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.state.position is None:
            raise LinkError(f"{self.name}: no LOCAL_POSITION_NED within 3 s (no position estimate?)")
        if self.target.camera:
            self.video = open_frame_source(self.target.camera)
        self._connected = True
        log.info("%s: connected (%s, mode %s)", self.name, self.target.dialect, self.state.mode_name)

    def _set_mode(self, main: int, sub: int = 0, confirm_s: float = 2.5) -> None:
        """DO_SET_MODE, checked twice: its COMMAND_ACK, then a HEARTBEAT showing the mode."""
        self.link.command_long(self.link.mavlink.MAV_CMD_DO_SET_MODE, 1, main, sub)
        deadline = time.monotonic() + confirm_s
        while (self.state.main_mode, self.state.sub_mode if self.px4 else 0) != (main, sub):
            if time.monotonic() > deadline:
                said = f"mode ({main}, {sub}) acknowledged, heartbeat still says {self.state.mode_name}"
                raise VehicleError(f"{self.name}: {said}")
            time.sleep(0.02)

    # ---- control
    def _on_mode_change(self) -> None:
        """A HEARTBEAT with a new mode: leaving OFFBOARD/GUIDED while we are in control was not ours."""
        if self.in_control and self.state.main_mode != (PX4_OFFBOARD if self.px4 else APM_GUIDED):
            ours = "OFFBOARD" if self.px4 else "GUIDED"
            self._lost_control(f"autopilot left {ours} for {self.state.mode_name}")

    def _lost_control(self, why: str) -> None:
        self.in_control = False
        self.setpoints.stop_bridge()
        text = self.link.recent_statustext(3.0)
        last = self.setpoints.last_setpoint_s
        gap = None if last is None else time.monotonic() - last
        # the autopilot's state says failsafe: system_status CRITICAL/EMERGENCY (PX4 mavlink_messages
        # HEARTBEAT: vehicle_status.failsafe; ArduCopter: any_failsafe_triggered()), or our own stream
        # was silent past the loss timeout (the autopilot had to act); never STATUSTEXT wording
        loss_s = self.link.params.get("COM_OF_LOSS_T" if self.px4 else "GUID_TIMEOUT", 1.0)
        critical = self.state.system_status in (MAV_STATE_CRITICAL, MAV_STATE_EMERGENCY)
        kind = (
            FaultKind.FAILSAFE if critical or (gap is not None and gap > loss_s) else FaultKind.CONTROL_LOST
        )
        said = f"; autopilot: {text!r}" if text is not None else ""
        self.control_lost = f"{why}{said}"
        # stop commanding: whoever took the vehicle has it; the runtime ends the run
        self.faults.emit(kind, self.control_lost, FaultAction.LAND)

    def preflight(self) -> None:
        """Read the parameters the runtime relies on and refuse (VehicleError + "refused" fault) with
        the parameter, its value and the accepted range when one is outside it."""
        problems = self._arm_last_resort()
        names = PX4_READ if self.px4 else APM_READ
        values = self.link.read_params(names)
        problems += check_params(self.px4, values)
        if self.px4 and "NAV_DLL_ACT" in values:
            link = self.link
            dll = nav_dll_refusal(
                values["NAV_DLL_ACT"], link.gcs_heard(), self.target.gcs_heartbeat, link.ground_link_up
            )
            if dll:
                problems.append(dll)
        if not self.px4 and not (
            self.target.gcs_heartbeat and int(values.get("FS_GCS_ENABLE", 0)) in (1, 3, 4, 5)
        ):
            log.warning(
                "%s: if onboard dies, ArduCopter holds in GUIDED after GUID_TIMEOUT and does not land "
                "(a landing needs FS_GCS_ENABLE 1, 3, 4 or 5 with gcs_heartbeat=1: our GCS heartbeats "
                "stop with us)",
                self.name,
            )
        if problems:
            why = "not arming: " + "; ".join(problems)
            self.faults.emit(FaultKind.REFUSED, why)
            raise VehicleError(f"{self.name}: {why}")
        if self.px4 and values.get("NAV_DLL_ACT", 0) and not self.link.gcs_heard():
            time.sleep(1.1)  # our GCS heartbeat (1 Hz) must have reached PX4 before it arms

    def _arm_last_resort(self) -> list[str]:
        """Set the autopilot's own reaction to our silence (mavlink_checks.last_resort_params); one
        problem line for each value it does not hold afterwards (or never answered for)."""
        t = self.target
        wanted = last_resort_params(self.px4, t.command_loss_s, t.loss_action)
        problems = []
        for p in wanted:
            try:
                held = self.link.set_param(p.name, p.value, p.integer)
            except VehicleError as exc:  # no PARAM_VALUE: the autopilot does not serve it
                problems.append(str(exc).removeprefix(f"{self.name}: "))
                continue
            if abs(held - p.value) > 1e-3:
                problems.append(f"{p.name}: set to {p.value:g}, the autopilot holds {held:g}")
        if not problems:
            said = ", ".join(f"{p.name}={p.value:g}" for p in wanted)
            log.info("%s: if onboard dies the autopilot acts by itself: %s", self.name, said)
        return problems

    # ---- Vehicle
    def arm(self) -> None:
        self.preflight()
        if self.link.gcs_heartbeats_sent == 0 and self.target.gcs_heartbeat and self.link.ground_link_up:
            self.link.heartbeat()
        if self.px4:
            # PX4 only enters OFFBOARD with setpoints already flowing (COM_OF_LOSS_T / proof of life)
            self.setpoints.bridge((0.0, 0.0, 0.0, 0.0))
            time.sleep(self.target.prestream_s)
            self._set_mode(PX4_OFFBOARD)
        else:
            self._set_mode(APM_GUIDED)
        self.link.command_long(self.link.mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 1)
        self.in_control = True
        self.control_lost = None

    def takeoff(self, altitude_m: float) -> None:
        if not self.in_control:
            raise VehicleError(f"{self.name}: take-off needs arm() first (mode {self.state.mode_name})")
        if not self.px4:
            self.link.command_long(self.link.mavlink.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, 0, 0, 0, altitude_m)
        else:
            self.setpoints.retarget_bridge((0.0, 0.0, -self.target.climb_m_s, 0.0))
        deadline = time.monotonic() + altitude_m / self.target.climb_m_s * 3 + 10
        while time.monotonic() < deadline:
            pos = self.state.position
            if pos is not None and -pos[2] >= altitude_m - 0.1:
                break
            if not self.in_control:
                raise VehicleError(f"{self.name}: take-off interrupted: {self.control_lost}")
            time.sleep(0.05)
        else:
            raise VehicleError(f"{self.name}: did not reach {altitude_m} m (mode {self.state.mode_name})")
        # hold here until the actuation loop's first setpoint takes the stream over
        self.setpoints.retarget_bridge((0.0, 0.0, 0.0, 0.0))

    def land(self) -> None:
        self.setpoints.stop_bridge()
        if self.control_lost is not None:
            log.warning("%s: not commanding a landing: %s", self.name, self.control_lost)
            return
        self.in_control = False  # the mode change below is ours
        if self.px4:
            self._set_mode(PX4_AUTO, PX4_AUTO_LAND)
        else:
            self._set_mode(APM_LAND)
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and not self.state.is_landed():
            time.sleep(0.1)

    def hold(self) -> None:
        self.send_velocity_body(0.0, 0.0, 0.0, 0.0)

    def emergency_stop(self) -> None:
        """Motors off in the air: a forced disarm (COMPONENT_ARM_DISARM 0 with the 21196 magic, which
        both autopilots honour even when not landed). Our setpoints stop first: nothing re-arms it."""
        self.setpoints.stop_bridge()
        self.in_control = False  # the disarm below is ours; no more setpoints
        self.link.command_long(self.link.mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0, FORCE_DISARM_MAGIC)

    def send_velocity_body(
        self, forward_m_s: float, right_m_s: float, up_m_s: float, yaw_rate_deg_s: float
    ) -> None:
        if not self.in_control:
            return  # never command a vehicle that someone else (RC pilot, failsafe) has
        self.setpoints.stop_bridge()  # the actuation loop has the stream from now on
        self.setpoints.send(forward_m_s, right_m_s, -up_m_s, yaw_rate_deg_s)

    def telemetry(self) -> Telemetry:
        pos = self.state.position
        if pos is None:
            raise LinkError(f"{self.name}: no LOCAL_POSITION_NED yet")
        s = self.target.spawn
        pose = Pose(s.x_m + pos[0], s.y_m + pos[1], s.z_m + pos[2], wrap_deg(self.state.yaw_deg))
        now = time.monotonic()
        self.poses.append((now, pose))
        return Telemetry(
            time_s=now,
            pose=pose,
            velocity_ned_m_s=(float(pos[3]), float(pos[4]), float(pos[5])),
            battery_fraction=self.state.battery,
            link_ok=self.state.link_ok,
            armed=self.state.armed,
            landed=self.state.is_landed(),
            collided=False,
        )

    def pose_at(self, t_s: float) -> Pose:
        if not self.poses:
            return self.telemetry().pose
        return min(self.poses, key=lambda tp: abs(tp[0] - t_s))[1]

    def camera(self) -> FreshFrameCamera:
        def usable() -> str | None:
            if not self.state.link_ok:
                return "the link is lost"
            return self.control_lost

        return FreshFrameCamera(
            self.name,
            lambda: self.video,
            self.pose_at,
            self.target.max_frame_age_s,
            usable,
            attitude_at=self.state.attitudes.at,
        )

    def close(self) -> None:
        self._connected = False
        self._stop.set()
        self.setpoints.stop_bridge()
        for t in self._threads:
            t.join(2.0)
        if self.video is not None:
            self.video.close()
        if self.link.conn is not None:
            self.link.conn.close()


def open_mavlink_vehicle(url: str) -> MavlinkVehicle:
    """Registered in common.interfaces for the mavlink:// scheme."""
    return MavlinkVehicle(parse_mavlink_url(url))
