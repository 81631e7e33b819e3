"""A PX4 (or ArduPilot Copter) autopilot on loopback, flying a built-in simulator vehicle: a real
MAVLink/UDP peer for pymavlink, built with pymavlink's own encoder (no hand-made CRCs).

It sends to the companion's UDP port like PX4 SITL's offboard link (127.0.0.1:14540 by default):
HEARTBEAT 1 Hz, ATTITUDE and LOCAL_POSITION_NED at `telemetry_hz`, SYS_STATUS, EXTENDED_SYS_STATE
2 Hz, STATUSTEXT for every refusal and failsafe, COMMAND_ACK for DO_SET_MODE (176), ARM_DISARM (400),
NAV_LAND (21), NAV_TAKEOFF (22), SET_MESSAGE_INTERVAL (511). Optionally the camera as raw H.264
datagrams to `video_dest` (what a companion would get from a GStreamer/RTSP pipeline).

PX4 rules (shared/reference/protocols.md §4): SET_POSITION_TARGET_LOCAL_NED only in LOCAL_NED (1) or
BODY_NED (8) (else STATUSTEXT, dropped); setpoints must stream (> 2 Hz) for 1 s before OFFBOARD is
accepted; a gap longer than `offboard_loss_s` (COM_OF_LOSS_T, 1 s) in OFFBOARD fires the failsafe
(`failsafe_action`: "position" hold, like COM_OBL_RC_ACT=0, or "land"); auto-disarm 10 s after arming
on the ground; landing disarms. ArduPilot GUIDED: mode 4, NAV_TAKEOFF to climb, velocity targets
time out after 3 s (the vehicle stops and holds).

Fault injection: `rc_takeover()` (the RC pilot switches to POSCTL), `link_down` (silence both ways),
`refuse(command_id, result, text)`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from common.pose import Pose
from sim_bridge.emulators.h264_out import H264Streamer
from sim_bridge.sim.multirotor import Multirotor
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)

# PX4 main modes (custom_mode = main << 16 | sub << 24) and the AUTO sub-modes used here
PX4_POSCTL, PX4_AUTO, PX4_OFFBOARD = 3, 4, 6
PX4_AUTO_LOITER, PX4_AUTO_LAND = 3, 6
# ArduCopter modes
APM_GUIDED, APM_LOITER, APM_LAND, APM_STABILIZE = 4, 5, 9, 0

FRAME_LOCAL_NED, FRAME_LOCAL_OFFSET_NED, FRAME_BODY_NED, FRAME_BODY_OFFSET_NED = 1, 7, 8, 9
MASK_VELOCITY_YAW_RATE = 1479
MASK_POSITION = 3576
AUTO_DISARM_S = 10.0
SETPOINT_HOLD_S = 0.5  # a velocity setpoint keeps the sim vehicle moving this long (re-sent at 20 Hz)


@dataclass
class MavlinkEmulatorConfig:
    dialect: str = "px4"  # or "ardupilot"
    companion: tuple[str, int] = ("127.0.0.1", 14540)
    telemetry_hz: float = 20.0
    offboard_loss_s: float = 1.0  # PX4 COM_OF_LOSS_T
    prestream_s: float = 1.0  # setpoints needed before OFFBOARD is accepted
    failsafe_action: str = "position"  # "position" (hold) or "land"
    guided_timeout_s: float = 3.0  # ArduPilot GUIDED_POSVEL_TIMEOUT
    video_dest: tuple[str, int] | None = None
    video_fps: float = 10.0
    battery_drain_pct_s: float = 0.02
    refused: dict[int, tuple[int, str]] = field(default_factory=dict)  # command -> (MAV_RESULT, text)


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
        host, port = self.config.companion
        self.conn = mavutil.mavlink_connection(f"udpout:{host}:{port}", source_system=1, source_component=1)
        self.home = world.vehicle(vehicle).model.spawn
        self.boot_s = time.monotonic()
        self.armed = False
        self.armed_s = 0.0
        self.main_mode = PX4_POSCTL if self.px4 else APM_LOITER
        self.sub_mode = 0
        self.battery_pct = 100.0
        self.link_down = threading.Event()
        self.statustexts: list[str] = []
        self.received: list[tuple[float, str]] = []  # (wall, message type or command)
        self.failsafes: list[str] = []
        self.last_setpoint_s: float | None = None
        self.stream_start_s: float | None = None
        self.setpoints = 0
        self.setpoint_intervals_s: list[float] = []
        self._send_lock = threading.Lock()
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
        self.statustext(self.m.MAV_SEVERITY_WARNING, "RC override: manual control")
        self._set_mode(PX4_POSCTL if self.px4 else APM_LOITER, 0)
        self._hover()

    # ---- state
    @property
    def mode_name(self) -> str:
        if self.px4:
            if self.main_mode == PX4_AUTO:
                return {PX4_AUTO_LAND: "AUTO.LAND", PX4_AUTO_LOITER: "AUTO.LOITER"}.get(self.sub_mode, "AUTO")
            return {PX4_POSCTL: "POSCTL", PX4_OFFBOARD: "OFFBOARD", 2: "ALTCTL", 1: "MANUAL"}.get(
                self.main_mode, str(self.main_mode)
            )
        return {APM_GUIDED: "GUIDED", APM_LOITER: "LOITER", APM_LAND: "LAND", APM_STABILIZE: "STABILIZE"}.get(
            self.main_mode, str(self.main_mode)
        )

    def _model(self) -> Multirotor:
        return self.world.vehicle(self.vehicle).model

    def _landed(self) -> bool:
        with self.world.lock:
            return bool(self._model().landed)

    def _set_mode(self, main: int, sub: int) -> None:
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
        self.world.command(self.vehicle, "land", timeout_s=60.0)

    def in_offboard(self) -> bool:
        return self.main_mode == (PX4_OFFBOARD if self.px4 else APM_GUIDED)

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
            name = {PX4_OFFBOARD: "OFFBOARD", PX4_POSCTL: "POSCTL"}.get(self.main_mode)
            if self.main_mode == PX4_AUTO:
                name = {PX4_AUTO_LAND: "LAND", PX4_AUTO_LOITER: "LOITER"}.get(self.sub_mode, "LOITER")
            base = self.mavutil.px4_map.get(name or "POSCTL", (81, 0, 0))[0]
            autopilot = m.MAV_AUTOPILOT_PX4
        else:
            custom = self.main_mode
            base = m.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | m.MAV_MODE_FLAG_STABILIZE_ENABLED
            autopilot = m.MAV_AUTOPILOT_ARDUPILOTMEGA
        if self.armed:
            base |= m.MAV_MODE_FLAG_SAFETY_ARMED
        status = m.MAV_STATE_ACTIVE if self.armed else m.MAV_STATE_STANDBY
        self._send("heartbeat_send", m.MAV_TYPE_QUADROTOR, autopilot, base, custom, status)

    def _telemetry(self) -> None:
        t_ms = int((time.monotonic() - self.boot_s) * 1000) & 0xFFFFFFFF
        with self.world.lock:
            mdl = self._model()
            p = mdl.position_ned - [self.home.x_m, self.home.y_m, self.home.z_m]
            v = mdl.velocity_ned.copy()
            yaw = math.radians(mdl.yaw_deg)
            yaw_rate = math.radians(mdl.yaw_rate_deg_s)
        self._send("local_position_ned_send", t_ms, *(float(a) for a in p), *(float(a) for a in v))
        self._send("attitude_send", t_ms, 0.0, 0.0, yaw, 0.0, 0.0, yaw_rate)

    def _slow_telemetry(self) -> None:
        m = self.m
        self._send(
            "sys_status_send",
            0,
            0,
            0,
            250,
            16000 - int((100 - self.battery_pct) * 20),
            1200,
            int(self.battery_pct),
            0,
            0,
            0,
            0,
            0,
            0,
        )
        landed = m.MAV_LANDED_STATE_ON_GROUND if self._landed() else m.MAV_LANDED_STATE_IN_AIR
        self._send("extended_sys_state_send", m.MAV_VTOL_STATE_UNDEFINED, landed)

    def _tx_loop(self) -> None:
        period = 1.0 / self.config.telemetry_hz
        next_s = time.monotonic()
        last_hb = last_slow = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now < next_s:
                self._stop.wait(next_s - now)
                continue
            next_s += period
            if now - last_hb >= 1.0:
                self._heartbeat()
                last_hb = now
            if now - last_slow >= 0.5:
                self._slow_telemetry()
                last_slow = now
                if self.armed:
                    self.battery_pct = max(0.0, self.battery_pct - self.config.battery_drain_pct_s * 0.5)
            self._telemetry()
            self._rules(now)

    def _rules(self, now: float) -> None:
        """Failsafes and automatic transitions, checked at the telemetry rate."""
        gap = None if self.last_setpoint_s is None else now - self.last_setpoint_s
        if gap is not None and gap > 0.5:
            self.stream_start_s = None  # the stream has to be re-established before OFFBOARD
        if (
            self.px4
            and self.in_offboard()
            and self.armed
            and (gap is None or gap > self.config.offboard_loss_s)
        ):
            why = f"offboard signal lost ({gap:.1f} s without setpoints)" if gap else "no offboard signal"
            self.failsafes.append(why)
            if self.config.failsafe_action == "land":
                self.statustext(self.m.MAV_SEVERITY_CRITICAL, "Failsafe: offboard lost, landing")
                self._set_mode(PX4_AUTO, PX4_AUTO_LAND)
                self._land()
            else:
                self.statustext(self.m.MAV_SEVERITY_CRITICAL, "Failsafe: offboard lost, Position mode")
                self._set_mode(PX4_POSCTL, 0)
                self._hover()
            log.warning("emulator %s: failsafe: %s", self.vehicle, why)
        guided_timeout = gap is not None and gap > self.config.guided_timeout_s
        if not self.px4 and self.in_offboard() and guided_timeout and not self._landed():
            self._hover()
            self.failsafes.append(f"guided velocity target timed out ({gap:.1f} s)")
            self.last_setpoint_s = None
        if self.armed and self._landed():
            landing = (self.px4 and self.main_mode == PX4_AUTO and self.sub_mode == PX4_AUTO_LAND) or (
                not self.px4 and self.main_mode == APM_LAND
            )
            if landing or now - self.armed_s > AUTO_DISARM_S:
                self.armed = False
                with self.world.lock:
                    self._model().armed = False
                self.statustext(
                    self.m.MAV_SEVERITY_INFO,
                    "Landing detected, disarmed" if landing else "Disarmed: no takeoff",
                )

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
                if kind == "SET_POSITION_TARGET_LOCAL_NED":
                    self._setpoint(msg)
                elif kind == "COMMAND_LONG":
                    self.received.append((time.monotonic(), f"COMMAND_LONG {msg.command}"))
                    self._command(msg)
                else:
                    self.received.append((time.monotonic(), kind))
            except Exception:
                log.exception("emulator: handling %s failed", kind)

    def _setpoint(self, msg: Any) -> None:
        now = time.monotonic()
        frame, mask = msg.coordinate_frame, msg.type_mask
        allowed = (
            (FRAME_LOCAL_NED, FRAME_BODY_NED)
            if self.px4
            else (FRAME_LOCAL_NED, FRAME_LOCAL_OFFSET_NED, FRAME_BODY_NED, FRAME_BODY_OFFSET_NED)
        )
        if frame not in allowed:
            self.statustext(
                self.m.MAV_SEVERITY_ERROR,
                f"setpoint coordinate frame {frame} unsupported",
            )
            return
        if mask not in (MASK_VELOCITY_YAW_RATE, MASK_POSITION):
            self.statustext(self.m.MAV_SEVERITY_ERROR, f"setpoint type_mask {mask} unsupported")
            return
        if self.last_setpoint_s is not None:
            self.setpoint_intervals_s.append(now - self.last_setpoint_s)
            del self.setpoint_intervals_s[:-2000]
        if self.stream_start_s is None:
            self.stream_start_s = now
        self.last_setpoint_s = now
        self.setpoints += 1
        if not (self.in_offboard() and self.armed):
            return  # proof of life only (PX4 forwards the trajectory only in OFFBOARD)
        if self._landed() and not (mask == MASK_VELOCITY_YAW_RATE and msg.vz < -0.05):
            return  # on the ground only a climb command starts flight
        if mask == MASK_VELOCITY_YAW_RATE:
            yaw_rate_deg_s = math.degrees(msg.yaw_rate)
            if frame in (FRAME_BODY_NED, FRAME_BODY_OFFSET_NED):
                self.world.command(
                    self.vehicle,
                    "move_velocity_body",
                    float(msg.vx),
                    float(msg.vy),
                    float(msg.vz),
                    SETPOINT_HOLD_S,
                    yaw_is_rate=True,
                    yaw_value=yaw_rate_deg_s,
                )
            else:
                self.world.command(
                    self.vehicle,
                    "move_velocity",
                    [float(msg.vx), float(msg.vy), float(msg.vz)],
                    SETPOINT_HOLD_S,
                    yaw_is_rate=True,
                    yaw_value=yaw_rate_deg_s,
                )
        else:
            target = [self.home.x_m + msg.x, self.home.y_m + msg.y, self.home.z_m + msg.z]
            self.world.command(
                self.vehicle, "move_to", target, 2.0, timeout_s=30.0, yaw_is_rate=True, yaw_value=0.0
            )

    def _command(self, msg: Any) -> None:
        m = self.m
        cmd = int(msg.command)
        p = [msg.param1, msg.param2, msg.param3, msg.param4, msg.param5, msg.param6, msg.param7]
        if cmd in self.config.refused:
            result, text = self.config.refused[cmd]
            self.statustext(m.MAV_SEVERITY_CRITICAL, text)
            self._ack(cmd, result)
            return
        if cmd == m.MAV_CMD_DO_SET_MODE:
            self._ack(cmd, self._do_set_mode(int(p[1]), int(p[2])))
        elif cmd == m.MAV_CMD_COMPONENT_ARM_DISARM:
            self._ack(cmd, self._arm(p[0] >= 0.5))
        elif cmd == m.MAV_CMD_NAV_LAND:
            self._set_mode(PX4_AUTO, PX4_AUTO_LAND) if self.px4 else self._set_mode(APM_LAND, 0)
            self._land()
            self._ack(cmd, m.MAV_RESULT_ACCEPTED)
        elif cmd == m.MAV_CMD_NAV_TAKEOFF:
            self._ack(cmd, self._takeoff(float(p[6])))
        elif cmd == m.MAV_CMD_SET_MESSAGE_INTERVAL:
            self._ack(cmd, m.MAV_RESULT_ACCEPTED)
        else:
            self._ack(cmd, m.MAV_RESULT_UNSUPPORTED)

    def _do_set_mode(self, main: int, sub: int) -> int:
        m = self.m
        if self.px4:
            if main == PX4_OFFBOARD:
                streamed = 0.0 if self.stream_start_s is None else time.monotonic() - self.stream_start_s
                if streamed < self.config.prestream_s:
                    self.statustext(
                        m.MAV_SEVERITY_CRITICAL, "Switching to Offboard rejected: no offboard signal"
                    )
                    return int(m.MAV_RESULT_DENIED)
            elif main not in (PX4_POSCTL, PX4_AUTO, 1, 2):
                return int(m.MAV_RESULT_UNSUPPORTED)
            self._set_mode(main, sub)
            if main == PX4_AUTO and sub == PX4_AUTO_LAND:
                self._land()
            elif main != PX4_OFFBOARD:
                self._hover()
            return int(m.MAV_RESULT_ACCEPTED)
        if main not in (APM_GUIDED, APM_LOITER, APM_LAND, APM_STABILIZE):
            return int(m.MAV_RESULT_UNSUPPORTED)
        self._set_mode(main, 0)
        if main == APM_LAND:
            self._land()
        elif main != APM_GUIDED:
            self._hover()
        return int(m.MAV_RESULT_ACCEPTED)

    def _arm(self, arm: bool) -> int:
        m = self.m
        if not arm:
            if not self._landed():
                self.statustext(m.MAV_SEVERITY_CRITICAL, "Disarming denied: not landed")
                return int(m.MAV_RESULT_DENIED)
            self.armed = False
            return int(m.MAV_RESULT_ACCEPTED)
        if self.battery_pct < 15:
            self.statustext(m.MAV_SEVERITY_CRITICAL, "Arming denied: battery low")
            return int(m.MAV_RESULT_DENIED)
        self.armed = True
        self.armed_s = time.monotonic()
        with self.world.lock:
            self._model().armed = True
        return int(m.MAV_RESULT_ACCEPTED)

    def _takeoff(self, altitude_m: float) -> int:
        m = self.m
        if self.px4 or not self.armed or self.main_mode != APM_GUIDED:
            self.statustext(m.MAV_SEVERITY_CRITICAL, "Takeoff denied: arm in GUIDED first")
            return int(m.MAV_RESULT_DENIED)
        self.world.takeoff(self.vehicle, max(0.5, altitude_m), timeout_s=30.0)
        return int(m.MAV_RESULT_ACCEPTED)

    def pose(self) -> Pose:
        return self.world.vehicle_pose(self.vehicle)
