"""DJI Tello through unmodified djitellopy (2.5.0): the Vehicle and its H.264 Camera.

URL: ``tello://HOST[:CMD_PORT][?mode=rc|go][&video_port=11111][&spawn=x,y,z,yaw_deg]
[&rc_full_scale_m_s=1.0][&rc_full_scale_yaw_deg_s=100][&max_frame_age_s=0.5][&video=1]
[&gimbal=level|body-fixed]``

- Motion: `mode=rc` (default) streams `rc a b c d` from the actuation loop every tick, so the safety
  governor and the e-stop act within one tick; ±100 stick = ±`rc_full_scale_m_s` (undocumented on the
  real drone: calibrate it). `mode=go` (paper parity) turns the streamed setpoints into discrete
  `go x y z speed` / `cw` / `ccw` commands, one segment at a time, each acknowledged when flown.
- Keep-alive: the drone lands by itself after 15 s without a command; the actuation loop's `rc`
  stream is the keep-alive, and a watchdog thread sends `rc 0 0 0 0` (no reply, so djitellopy's reply
  queue stays in step) whenever nothing was sent for `keepalive_s`, e.g. during a long model call.
  That thread is a daemon of this process, never a helper that could outlive it: if onboard dies,
  the keep-alives stop with it and the drone's own auto-land is its last resort (after flying on
  with the last `rc` sticks for those 15 s).
- Telemetry: battery, height, attitude and temperatures from the state datagrams; x/y are DEAD
  RECKONED from the commanded velocity and the measured yaw (`Telemetry.position_source`).
  The state's yaw is relative to power-on; `spawn=` places power-on in the episode's world frame.
- Camera attitude: a Tello's camera is fixed to the airframe; with `gimbal=body-fixed` each frame
  carries the state's roll and pitch nearest its capture as the camera's attitude (read with the
  aerospace signs, pitch positive nose up and roll positive right side down: the SDK documents no
  signs and they are not checked on a real drone here). The default, `level`, projects as before.
- Video: our own PyAV decoder on the video port (not djitellopy's BackgroundFrameRead, which neither
  stamps frames nor says how old they are); frames older than `max_frame_age_s` are refused.
- E-stop: `emergency_stop()` sends `emergency` (motors off).

Several Tellos: djitellopy binds 0.0.0.0:8889/8890 once per process and routes replies by source IP,
so fly all of them from ONE process with one Tello object each (distinct IPs: EDU/TT drones joined to
a router with `ap ssid pass`, or one Wi-Fi adapter per stock Tello with per-interface routes to
192.168.10.1 - see onboard/vehicles/README.md). The emulator uses alias IPs 127.0.0.N.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from common.checks import query_float, query_port, url_host_port
from common.errors import ConfigError, LinkError, VehicleError
from common.interfaces import Telemetry, Vehicle
from common.pose import Pose, wrap_deg
from common.spawn import ORIGIN, parse_spawn
from onboard.vehicles.camera_mount import AttitudeHistory, parse_gimbal
from onboard.vehicles.deadreckon import DeadReckoner
from onboard.vehicles.fault_kinds import FaultAction, FaultKind
from onboard.vehicles.faults import FaultReporter
from onboard.vehicles.video import FreshFrameCamera, H264UdpReceiver

log = logging.getLogger(__name__)

DEFAULT_HOST = "192.168.10.1"
CONTROL_PORT = 8889


@dataclass(frozen=True)
class TelloTarget:
    host: str
    port: int
    mode: str = "rc"
    video: bool = True
    video_port: int = 11111
    spawn: Pose = ORIGIN
    rc_full_scale_m_s: float = 1.0
    rc_full_scale_yaw_deg_s: float = 100.0
    max_frame_age_s: float = 0.5
    keepalive_s: float = 5.0
    link_timeout_s: float = 1.5
    go_segment_s: float = 1.0  # go mode: one go command covers about this much of the plan
    gimbal: str = "level"  # the camera's mount (onboard.vehicles.camera_mount)


# URL parameter -> its valid range (each one a TelloTarget field of the same name)
_FLOAT_PARAMS = {
    "rc_full_scale_m_s": (0.1, 10.0),
    "rc_full_scale_yaw_deg_s": (1.0, 1000.0),
    "max_frame_age_s": (0.01, 10.0),
    "keepalive_s": (0.1, 14.0),
    "link_timeout_s": (0.1, 60.0),
    "go_segment_s": (0.1, 10.0),
}


def parse_tello_url(url: str) -> TelloTarget:
    parts = urlsplit(url)
    if parts.scheme != "tello":
        raise ConfigError(f"not a tello:// URL: {url!r}")
    q = {k: v[0] for k, v in parse_qs(parts.query).items()}
    spawn = parse_spawn(url, q)
    mode = q.pop("mode", "rc")
    if mode not in ("rc", "go"):
        raise ConfigError(f"{url!r}: mode={mode!r} must be 'rc' or 'go'")
    floats = {
        key: query_float(url, q, key, getattr(TelloTarget, key), low, high)
        for key, (low, high) in _FLOAT_PARAMS.items()
        if key in q
    }
    if floats.get("keepalive_s", 5.0) >= 14.0:
        raise ConfigError(
            f"{url!r}: keepalive_s={floats['keepalive_s']} must be < 14 (the drone lands at 15 s)"
        )
    host, port = url_host_port(url, parts, DEFAULT_HOST, CONTROL_PORT)
    target = TelloTarget(
        host=host,
        port=port,
        mode=mode,
        video=q.pop("video", "1") not in ("0", "false", "no"),
        video_port=query_port(url, q, "video_port", 11111),
        spawn=spawn,
        gimbal=parse_gimbal(url, q),
        **floats,
    )
    if q:
        known = sorted({"gimbal", "mode", "spawn", "video", "video_port", *_FLOAT_PARAMS})
        raise ConfigError(f"{url!r}: unknown parameters {sorted(q)} (known: {', '.join(known)})")
    return target


def _stick(value: float, full_scale: float) -> int:
    return max(-100, min(100, round(100.0 * value / full_scale)))


class TelloVehicle(Vehicle):
    def __init__(self, target: TelloTarget, name: str = "Tello") -> None:
        self.target = target
        self.name = name
        self.faults = FaultReporter(name)
        self.tello: Any = None
        self.video: H264UdpReceiver | None = None
        self.reckoner = DeadReckoner(target.spawn.x_m, target.spawn.y_m)
        self.poses: deque[tuple[float, Pose]] = deque(maxlen=200)  # (monotonic, pose) for frame stamps
        self.attitudes = AttitudeHistory(target.gimbal)  # the state's roll and pitch, for the same
        self.flying = False
        self.landing = False
        self._send_lock = threading.Lock()  # djitellopy is not thread-safe for commands with replies
        self._last_sent_s = time.monotonic()
        self._last_state: dict[str, Any] | None = None  # djitellopy's state, compared by identity
        self._last_state_s = time.monotonic()
        self._link_ok = True
        self._video_ok = True
        self._connected = False
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None
        self._go_lock = threading.Lock()
        self._go_pending = [0.0, 0.0, 0.0, 0.0]  # fwd_m, right_m, up_m, yaw_deg accumulated (go mode)
        self._go_worker: threading.Thread | None = None
        self._go_last_s: float | None = None
        self.sent_rc = 0
        self.keepalives = 0
        self.go_commands: list[str] = []

    # ---- plumbing
    def _command(self, text: str, timeout_s: int = 7) -> None:
        """A command that must be acknowledged with ok; raises VehicleError with the drone's reply."""
        with self._send_lock:
            reply = self.tello.send_command_with_return(text, timeout=timeout_s)
            self._last_sent_s = time.monotonic()
        if "ok" not in reply.lower():
            self.faults.emit(FaultKind.REFUSED, f"{text!r} -> {reply!r}")
            raise VehicleError(f"{self.name}: Tello refused {text!r}: {reply!r}")

    def _send_rc(self, a: int, b: int, c: int, d: int) -> None:
        """Every rc that goes out (setpoints, hold, the keep-alive's zero sticks) is what the drone
        flies from now on, so it is what the reckoning integrates: the stick values it was actually
        told (quantised), not what was asked."""
        self.tello.send_command_without_return(f"rc {a} {b} {c} {d}")
        self._last_sent_s = time.monotonic()
        k = self.target.rc_full_scale_m_s
        self.reckoner.command(b * k / 100.0, a * k / 100.0, self._last_sent_s)

    # ---- Vehicle
    def connect(self) -> None:
        try:
            from djitellopy import Tello, TelloException
        except ImportError as exc:  # pragma: no cover - part of the vehicles extra
            raise ConfigError("tello:// needs djitellopy (pip install djitellopy)") from exc
        # djitellopy logs every command at INFO on its own stderr handler: 20 rc lines a second
        if Tello.LOGGER.level < logging.WARNING:
            Tello.LOGGER.setLevel(logging.WARNING)
        try:
            tello = Tello(host=self.target.host, vs_udp=self.target.video_port)
        except OSError as exc:
            raise LinkError(
                f"djitellopy cannot bind UDP 8889/8890 ({exc}): only one djitellopy process per host"
            ) from exc
        tello.address = (self.target.host, self.target.port)
        self.tello = tello
        try:
            tello.connect()
        except (TelloException, OSError) as exc:  # OSError: a host name that does not resolve
            raise LinkError(f"{self.name}: no Tello at {self.target.host}:{self.target.port}: {exc}") from exc
        self._last_state_s = time.monotonic()
        if self.target.video:
            self.video = H264UdpReceiver("0.0.0.0", self.target.video_port)
            self._command("streamon")
        self._monitor = threading.Thread(target=self._watch, name=f"{self.name}-watch", daemon=True)
        self._monitor.start()
        self._connected = True
        log.info(
            "%s: connected to %s:%d, battery %s%%",
            self.name,
            self.target.host,
            self.target.port,
            tello.get_current_state().get("bat"),
        )

    @property
    def is_connected(self) -> bool:
        return self._connected

    def arm(self) -> None:
        """A Tello arms as it takes off; nothing to do."""

    def takeoff(self, altitude_m: float) -> None:
        self._command("takeoff", timeout_s=20)
        self.flying = True
        height_m = self._height_m()
        climb_cm = round((altitude_m - height_m) * 100)
        if climb_cm >= 20:
            self._command(f"up {min(climb_cm, 500)}")
        elif climb_cm <= -20:
            self._command(f"down {min(-climb_cm, 500)}")
        self.reckoner.reset_velocity()

    def land(self) -> None:
        self.landing = True
        try:
            self._command("land", timeout_s=20)
        finally:
            self.flying = False

    def hold(self) -> None:
        with self._go_lock:
            self._go_pending = [0.0, 0.0, 0.0, 0.0]
        self._send_rc(0, 0, 0, 0)

    def emergency_stop(self) -> None:
        self.landing = True
        # The SDK answers "ok" to emergency. djitellopy's emergency() does not wait for it, so the
        # "ok" would be taken as the reply to our next command: when no command is outstanding, send
        # it as a command with a reply (consumed here); otherwise never wait behind a manoeuvre.
        if self._send_lock.acquire(blocking=False):
            try:
                self.tello.send_command_with_return("emergency", timeout=1)
            finally:
                self._send_lock.release()
        else:
            self.tello.send_command_without_return("emergency")
        self.flying = False
        self.reckoner.reset_velocity()

    def send_velocity_body(
        self, forward_m_s: float, right_m_s: float, up_m_s: float, yaw_rate_deg_s: float
    ) -> None:
        if self.landing or not self._link_ok:
            return
        if self.target.mode == "go":
            self._accumulate_go(forward_m_s, right_m_s, up_m_s, yaw_rate_deg_s)
            return
        k = self.target.rc_full_scale_m_s
        a, b, c = _stick(right_m_s, k), _stick(forward_m_s, k), _stick(up_m_s, k)
        d = _stick(yaw_rate_deg_s, self.target.rc_full_scale_yaw_deg_s)
        self._send_rc(a, b, c, d)
        self.sent_rc += 1

    def _height_m(self) -> float:
        state = self.tello.get_current_state()
        return float(state.get("h", 0)) / 100.0

    def telemetry(self) -> Telemetry:
        if self.tello is None:
            raise LinkError(f"{self.name}: not connected")
        state = self.tello.get_current_state()
        if not state:
            raise LinkError(f"{self.name}: no state datagram yet")
        now = time.monotonic()
        yaw = wrap_deg(self.target.spawn.yaw_deg + float(state.get("yaw", 0)))
        x, y = self.reckoner.update(now, yaw)
        height_m = float(state.get("h", 0)) / 100.0
        pose = Pose(x, y, self.target.spawn.z_m - height_m, yaw)
        self.poses.append((now, pose))
        self.attitudes.add(now, float(state.get("roll", 0)), float(state.get("pitch", 0)))
        return Telemetry(
            time_s=now,
            pose=pose,
            velocity_ned_m_s=(
                self.reckoner.v_north_m_s,
                self.reckoner.v_east_m_s,
                float(state.get("vgz", 0)) / 10,
            ),
            battery_fraction=float(state.get("bat", 0)) / 100.0 if "bat" in state else None,
            link_ok=self._link_ok,
            armed=self.flying,
            landed=not self.flying and height_m < 0.1,
            collided=False,  # a Tello reports no contact
            position_source="dead_reckoned",
        )

    @property
    def link_ok(self) -> bool:
        return self._link_ok

    def state_fields(self) -> dict[str, Any]:
        """The last state datagram as djitellopy parsed it (templ/temph, baro, tof, agx..)."""
        return dict(self.tello.get_current_state()) if self.tello is not None else {}

    def pose_at(self, t_s: float) -> Pose:
        """The (dead-reckoned) pose nearest in time to t_s (monotonic)."""
        if not self.poses:
            return self.telemetry().pose
        return min(self.poses, key=lambda tp: abs(tp[0] - t_s))[1]

    def camera(self) -> TelloCamera:
        return TelloCamera(self)

    def close(self) -> None:
        self._connected = False
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(2.0)
        if self.video is not None:
            self.video.close()
        if self.tello is not None:
            try:
                if self.target.video and self._link_ok:
                    self._command("streamoff", timeout_s=2)
            except Exception:
                log.debug("streamoff failed", exc_info=True)
            # djitellopy keeps its global sockets for the process; forget this drone's reply queue
            self.tello = None

    # ---- the watchdog: keep-alive, link and video health
    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            if self.tello is None:
                continue
            state = self.tello.get_current_state()
            if state is not self._last_state:
                self._last_state, self._last_state_s = state, now
            state_age = now - self._last_state_s
            if state:
                # keep the reckoning and the pose history going between actuation ticks
                try:
                    self.telemetry()
                except Exception:
                    log.debug("telemetry in the watchdog failed", exc_info=True)
            if self._link_ok and state_age > self.target.link_timeout_s:
                self._link_ok = False
                self.faults.emit(
                    FaultKind.LINK_LOST, f"no state datagram for {state_age:.1f} s", FaultAction.LAND
                )
            elif not self._link_ok and state_age < self.target.link_timeout_s:
                self._link_ok = True
                self.faults.emit(FaultKind.LINK_OK, "state datagrams are back")
            if self.flying and not self.landing and now - self._last_sent_s > self.target.keepalive_s:
                self._send_rc(0, 0, 0, 0)
                self.keepalives += 1
            if self.video is not None and self.flying:
                age = self.video.age_s()
                stale = age is None or age > self.target.max_frame_age_s * 2
                if self._video_ok and stale and (age is not None or now - self._last_state_s < 1):
                    self._video_ok = False
                    self.faults.emit(
                        FaultKind.VIDEO_STALE,
                        f"newest frame {age if age is None else round(age, 2)} s old",
                        FaultAction.HOLD,
                    )
                elif not self._video_ok and not stale:
                    self._video_ok = True
                    self.faults.emit(
                        FaultKind.VIDEO_OK, f"frames are back ({age:.2f} s old)", FaultAction.CLEAR
                    )

    # ---- go mode (paper parity)
    def _accumulate_go(self, fwd: float, right: float, up: float, yaw_rate: float) -> None:
        now = time.monotonic()
        # integrate over the real time between setpoints (the actuation rate is the runtime's)
        dt = 0.05 if self._go_last_s is None else min(max(now - self._go_last_s, 0.0), 0.2)
        self._go_last_s = now
        with self._go_lock:
            p = self._go_pending
            p[0] += fwd * dt
            p[1] += right * dt
            p[2] += up * dt
            p[3] += yaw_rate * dt
        if self._go_worker is None or not self._go_worker.is_alive():
            self._go_worker = threading.Thread(target=self._go_flush, name=f"{self.name}-go", daemon=True)
            self._go_worker.start()

    def _go_flush(self) -> None:
        """Send the accumulated motion as one go (then one cw/ccw) once a segment's worth is queued."""
        time.sleep(self.target.go_segment_s)
        with self._go_lock:
            fwd, right, up, yaw = self._go_pending
            self._go_pending = [0.0, 0.0, 0.0, 0.0]
        try:
            if abs(yaw) >= 1.0:
                cmd = f"cw {min(360, round(yaw))}" if yaw > 0 else f"ccw {min(360, round(-yaw))}"
                self.go_commands.append(cmd)
                self._command(cmd)
            x, y, z = round(fwd * 100), round(-right * 100), round(up * 100)
            if max(abs(x), abs(y), abs(z)) > 20:
                dist_m = math.sqrt(fwd * fwd + right * right + up * up)
                speed = max(10, min(100, round(100 * dist_m / self.target.go_segment_s)))
                cmd = f"go {max(-500, min(500, x))} {max(-500, min(500, y))} {max(-500, min(500, z))} {speed}"
                self.go_commands.append(cmd)
                self._command(cmd)
                self.reckoner.displace(fwd, right, self.telemetry().pose.yaw_deg)
        except VehicleError:
            log.warning("%s: go segment refused", self.name)


class TelloCamera(FreshFrameCamera):
    """The Tello's H.264 stream; refuses stale frames (see FreshFrameCamera)."""

    # 1 s, as every camera: stale video must reach the failsafe (frame_stale_hold_s) in time. The
    # stream's start (the decoder waiting for its first keyframe) has its own, longer wait.
    def __init__(self, vehicle: TelloVehicle, stale_wait_s: float = 1.0) -> None:
        def usable() -> str | None:
            if not vehicle.link_ok:
                return "the link is lost"
            return "the drone is landing" if vehicle.landing else None

        super().__init__(
            vehicle.name,
            lambda: vehicle.video,
            vehicle.pose_at,
            vehicle.target.max_frame_age_s,
            usable,
            stale_wait_s,
            camera="tello",
            meta={"position_source": "dead_reckoned"},
            attitude_at=vehicle.attitudes.at,
        )


def open_tello_vehicle(url: str) -> TelloVehicle:
    """Registered in common.interfaces for the tello:// scheme."""
    return TelloVehicle(parse_tello_url(url))
