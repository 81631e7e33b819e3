"""A DJI Tello (SDK 2.0) on loopback, flying a built-in simulator vehicle: a real UDP peer for djitellopy.

Per drone: a command socket on an alias IP (127.0.0.N) and a free port (djitellopy holds 0.0.0.0:8889,
so the emulator can never use 8889 itself; the client sets `tello.address = (ip, port)`), state
datagrams to the client's 8890 at `state_hz` after "command", and the camera as raw H.264 to the
client's 11111 after "streamon" (sim_bridge.emulators.h264_out).

Behaviour matched to the SDK 2.0 guide and to what djitellopy relies on (shared/reference/protocols.md
§3): "command" first; replies to manoeuvres only when they finish; no reply to `rc`, `emergency` or
`reboot`; bare integers for read commands; a state datagram right after a state-changing command;
the 15 s auto-land without commands. `rc` sticks persist until the next `rc`; ±100 maps to
`rc_full_scale_m_s` / `rc_full_scale_yaw_deg_s` (the real mapping is undocumented: a config knob).

Coordinates: the state's yaw is relative to the heading at power-on (the spawn yaw), as on the real
drone. Tello body axes for moves and `go x y z`: x forward, y LEFT, z up (cm).

Fault injection for tests: `refuse(command_word, reply)`, `video_paused`, `link_down` (no replies, no
state, no video).
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from common.pose import Pose, wrap_deg
from sim_bridge.emulators.h264_out import H264Streamer
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)

MANOEUVRE_TIMEOUT_S = 6.5  # keep below djitellopy's 7 s reply timeout (it re-sends after it)
TAKEOFF_TIMEOUT_S = 15.0


@dataclass
class TelloEmulatorConfig:
    ip: str = "127.0.0.2"
    command_port: int = 0  # 0: a free port (read .command_port after start)
    client_state_port: int = 8890
    client_video_port: int = 11111
    state_hz: float = 10.0
    video_fps: float = 10.0
    rc_full_scale_m_s: float = 1.0
    rc_full_scale_yaw_deg_s: float = 100.0
    takeoff_height_m: float = 1.0
    auto_land_s: float = 15.0
    default_speed_cm_s: int = 100
    battery_drain_pct_s: float = 0.02
    refused: dict[str, str] = field(default_factory=dict)  # command word -> error reply


class TelloEmulator:
    def __init__(self, world: World, vehicle: str, config: TelloEmulatorConfig | None = None) -> None:
        self.world = world
        self.vehicle = vehicle
        self.config = config or TelloEmulatorConfig()
        self.spawn_yaw_deg = world.vehicle(vehicle).model.spawn.yaw_deg
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((self.config.ip, self.config.command_port))
        self.sock.settimeout(0.2)
        self.command_port = int(self.sock.getsockname()[1])
        self.state_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.state_sock.bind((self.config.ip, 0))
        self.client_ip: str | None = None
        self.sdk_mode = False
        self.flying = False
        self.streaming = False
        self.link_down = threading.Event()
        self.speed_cm_s = self.config.default_speed_cm_s
        self.battery_pct = 100.0
        self.rc = (0, 0, 0, 0)
        self.last_command_s = time.monotonic()
        self.motor_on_s: float | None = None
        self.busy: str | None = None  # the manoeuvre in progress
        self.log: list[tuple[float, str, str]] = []  # (wall, command, reply or "")
        self.auto_landed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._command_loop, name=f"tello-cmd-{vehicle}", daemon=True),
            threading.Thread(target=self._state_loop, name=f"tello-state-{vehicle}", daemon=True),
        ]
        self.video = H264Streamer(
            self._render,
            self._video_dest,
            fps=self.config.video_fps,
            bind_ip=self.config.ip,
            name="tello-video",
        )

    # ---- lifecycle
    def start(self) -> TelloEmulator:
        for t in self._threads:
            t.start()
        self.video.start()
        log.info("tello emulator for %s on %s:%d", self.vehicle, self.config.ip, self.command_port)
        return self

    def close(self) -> None:
        self._stop.set()
        self.video.close()
        for t in self._threads:
            t.join(3.0)
        self.sock.close()
        self.state_sock.close()

    def refuse(self, word: str, reply: str = "error") -> None:
        self.config.refused[word] = reply

    @property
    def video_paused(self) -> threading.Event:
        return self.video.paused

    # ---- video
    def _video_dest(self) -> tuple[str, int] | None:
        if not self.streaming or self.client_ip is None or self.link_down.is_set():
            return None
        return (self.client_ip, self.config.client_video_port)

    def _render(self) -> np.ndarray:
        return self.world.render(self.vehicle, segmentation=False).image_bgr

    # ---- state
    def _model(self):
        return self.world.vehicle(self.vehicle).model

    def height_m(self) -> float:
        with self.world.lock:
            m = self._model()
            return float(m.floor_z_m - m.position_ned[2])

    def state_line(self) -> str:
        with self.world.lock:
            m = self._model()
            yaw = wrap_deg(m.yaw_deg - self.spawn_yaw_deg)
            v = m.velocity_ned.copy()
            h_m = float(m.floor_z_m - m.position_ned[2])
        c, s = math.cos(math.radians(-self.spawn_yaw_deg)), math.sin(math.radians(-self.spawn_yaw_deg))
        vgx, vgy = c * v[0] - s * v[1], s * v[0] + c * v[1]  # in the power-on heading frame, dm/s
        flight_s = 0 if self.motor_on_s is None else int(time.monotonic() - self.motor_on_s)
        h_cm = max(0, round(h_m * 100))
        return (
            f"pitch:0;roll:0;yaw:{round(yaw)};vgx:{round(vgx * 10)};vgy:{round(vgy * 10)};"
            f"vgz:{round(v[2] * 10)};templ:60;temph:63;tof:{h_cm + 10};h:{h_cm};"
            f"bat:{int(self.battery_pct)};baro:{100.0 + h_m:.2f};time:{flight_s};"
            "agx:0.00;agy:0.00;agz:-1000.00;\r\n"
        )

    def _send_state(self) -> None:
        if self.client_ip is None or not self.sdk_mode or self.link_down.is_set():
            return
        try:
            self.state_sock.sendto(
                self.state_line().encode(), (self.client_ip, self.config.client_state_port)
            )
        except OSError:
            log.debug("state send failed", exc_info=True)

    def _state_loop(self) -> None:
        period = 1.0 / self.config.state_hz
        while not self._stop.wait(period):
            if self.flying:
                self.battery_pct = max(0.0, self.battery_pct - self.config.battery_drain_pct_s * period)
                idle_s = time.monotonic() - self.last_command_s
                if idle_s > self.config.auto_land_s and self.busy is None:
                    log.warning("%s: no command for %.1f s: auto-landing", self.vehicle, idle_s)
                    self.auto_landed = True
                    self._do_land()
                elif self.busy is None and any(self.rc):
                    self._apply_rc()  # sticks persist: re-issue so body axes follow the turning heading
            self._send_state()

    # ---- commands
    def _command_loop(self) -> None:
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(1024)
            except TimeoutError:
                continue
            except OSError:
                break
            if self.link_down.is_set():
                continue
            text = data.decode("utf-8", "replace").strip()
            self.last_command_s = time.monotonic()
            try:
                reply = self._handle(text, addr)
            except Exception as exc:
                log.exception("tello emulator: %r failed", text)
                reply = f"error {type(exc).__name__}"
            if reply is not None:
                self._reply(reply, addr, text)

    def _reply(self, reply: str, addr: tuple[str, int], text: str) -> None:
        self.log.append((time.monotonic(), text, reply))
        if self.link_down.is_set():
            return
        try:
            self.sock.sendto(reply.encode(), addr)
        except OSError:
            log.debug("reply send failed", exc_info=True)
        self._send_state()

    def _in_background(self, text: str, addr: tuple[str, int], work: str) -> None:
        """Run a manoeuvre in its own thread and reply when it finishes (SDK: replies come at the end)."""
        self.busy = text

        def run() -> None:
            try:
                ok = getattr(self, work)(text)
                reply = "ok" if ok else "error"
            except Exception as exc:
                log.exception("manoeuvre %r failed", text)
                reply = f"error {exc}"
            finally:
                self.busy = None
                self.last_command_s = time.monotonic()  # the idle timer runs from the manoeuvre's end
            self._reply(reply, addr, text)

        threading.Thread(target=run, name=f"tello-{work}", daemon=True).start()

    def _handle(self, text: str, addr: tuple[str, int]) -> str | None:
        parts = text.split()
        if not parts:
            return "error"
        word, args = parts[0], parts[1:]
        if word == "command":
            self.client_ip = addr[0]
            self.sdk_mode = True
            return "ok"
        if not self.sdk_mode:
            return None  # a real Tello ignores everything before "command"
        if word == "emergency":
            self._emergency()
            return None
        if word in ("rc", "reboot"):
            if word == "rc":
                self._rc(args)
            self.log.append((time.monotonic(), text, ""))
            return None
        if word in self.config.refused:
            return self.config.refused[word]
        if word.endswith("?"):
            return self._read(word)
        if word == "keepalive":
            return "ok"
        if word == "streamon":
            self.streaming = True
            return "ok"
        if word == "streamoff":
            self.streaming = False
            return "ok"
        if word == "speed":
            v = int(args[0]) if args else -1
            if not 10 <= v <= 100:
                return "error out of range"
            self.speed_cm_s = v
            return "ok"
        if word == "stop":
            self.rc = (0, 0, 0, 0)
            with self.world.lock:
                self._model().hover()
            return "ok"
        if word == "land":  # preempts a manoeuvre in progress (which then answers "error")
            self._in_background(text, addr, "_do_land")
            return None
        if self.busy is not None:
            return "error Not joystick"
        if word == "takeoff":
            if self.flying:
                return "error"
            self._in_background(text, addr, "_do_takeoff")
            return None
        if not self.flying:
            return "error Motor stop"
        if word in ("up", "down", "left", "right", "forward", "back", "cw", "ccw", "go"):
            err = self._validate_move(word, args)
            if err:
                return err
            self._in_background(text, addr, "_do_move")
            return None
        return "error"

    def _read(self, word: str) -> str:
        if word == "battery?":
            return str(int(self.battery_pct))
        if word == "speed?":
            return str(self.speed_cm_s)
        if word == "time?":
            return "0" if self.motor_on_s is None else str(int(time.monotonic() - self.motor_on_s))
        if word == "height?":
            return str(round(self.height_m() * 10))  # dm on the real drone
        if word == "temp?":
            return "61"
        if word == "baro?":
            return str(round(100 + self.height_m()))
        if word == "tof?":
            return f"{round(self.height_m() * 1000) + 100}mm"
        if word == "attitude?":
            with self.world.lock:
                yaw = wrap_deg(self._model().yaw_deg - self.spawn_yaw_deg)
            return f"pitch:0;roll:0;yaw:{round(yaw)};"
        if word == "wifi?":
            return "90"
        if word == "sdk?":
            return "20"
        if word == "sn?":
            return f"0TQDEMU{self.command_port:05d}"
        return "error"

    @staticmethod
    def _validate_move(word: str, args: list[str]) -> str | None:
        try:
            values = [int(a) for a in args]
        except ValueError:
            return "error"
        if word in ("cw", "ccw"):
            return None if len(values) == 1 and 1 <= values[0] <= 3600 else "error out of range"
        if word == "go":
            if (
                len(values) != 4
                or not all(-500 <= v <= 500 for v in values[:3])
                or not 10 <= values[3] <= 100
            ):
                return "error out of range"
            if all(-20 <= v <= 20 for v in values[:3]):
                return "error out of range"
            return None
        return None if len(values) == 1 and 20 <= values[0] <= 500 else "error out of range"

    # ---- manoeuvres (run in their own thread; True when completed)
    def _do_takeoff(self, _text: str) -> bool:
        if self.battery_pct < 10:
            return False
        self.motor_on_s = time.monotonic()
        task = self.world.takeoff(self.vehicle, self.config.takeoff_height_m, timeout_s=TAKEOFF_TIMEOUT_S)
        ok = task.wait(TAKEOFF_TIMEOUT_S + 2.0)
        self.flying = ok or self.height_m() > 0.2
        return ok

    def _do_land(self, _text: str = "land") -> bool:
        self.rc = (0, 0, 0, 0)
        task = self.world.command(self.vehicle, "land", timeout_s=30.0)
        ok = task.wait(32.0)
        self.flying = False
        self.motor_on_s = None
        return ok

    def _do_move(self, text: str) -> bool:
        word, *args = text.split()
        values = [int(a) for a in args]
        with self.world.lock:
            m = self._model()
            pos = m.position_ned.copy()
            yaw = m.yaw_deg
        speed = self.speed_cm_s / 100.0
        if word in ("cw", "ccw"):
            target_yaw = wrap_deg(yaw + (values[0] if word == "cw" else -values[0]))
            task = self.world.command(
                self.vehicle, "rotate_to", target_yaw, timeout_s=MANOEUVRE_TIMEOUT_S, margin_deg=1.0
            )
            return task.wait(MANOEUVRE_TIMEOUT_S + 1.0)
        if word == "go":
            fwd, left, up = (v / 100.0 for v in values[:3])
            speed = values[3] / 100.0
        else:
            d = values[0] / 100.0
            fwd = {"forward": d, "back": -d}.get(word, 0.0)
            left = {"left": d, "right": -d}.get(word, 0.0)
            up = {"up": d, "down": -d}.get(word, 0.0)
        c, s = math.cos(math.radians(yaw)), math.sin(math.radians(yaw))
        right = -left
        target = pos + np.array([c * fwd - s * right, s * fwd + c * right, -up])
        task = self.world.command(
            self.vehicle,
            "move_to",
            target,
            speed,
            timeout_s=MANOEUVRE_TIMEOUT_S,
            yaw_is_rate=False,
            yaw_value=yaw,
        )
        return task.wait(MANOEUVRE_TIMEOUT_S + 1.0)

    def _rc(self, args: list[str]) -> None:
        try:
            values = tuple(max(-100, min(100, int(a))) for a in args)
        except ValueError:
            return
        if len(values) != 4:
            return
        self.rc = values
        if self.flying and self.busy is None:
            self._apply_rc()

    def _apply_rc(self) -> None:
        a, b, c, d = self.rc
        k = self.config.rc_full_scale_m_s / 100.0
        self.world.command(
            self.vehicle,
            "move_velocity_body",
            b * k,
            a * k,
            -c * k,
            1e6,  # sticks hold until the next rc
            yaw_is_rate=True,
            yaw_value=d * self.config.rc_full_scale_yaw_deg_s / 100.0,
        )

    def _emergency(self) -> None:
        """Motors off: the drone drops to the ground (teleported there: the sim has no free fall)."""
        self.log.append((time.monotonic(), "emergency", ""))
        self.rc = (0, 0, 0, 0)
        with self.world.lock:
            m = self._model()
            p = m.position_ned
            pose = Pose(float(p[0]), float(p[1]), float(m.floor_z_m), m.yaw_deg)
        self.world.set_vehicle_pose(self.vehicle, pose)
        self.flying = False
        self.motor_on_s = None
