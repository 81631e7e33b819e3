"""A DJI Tello on loopback, flying a built-in simulator vehicle: a real UDP peer for djitellopy, behaving
as the SDK it is told to be: "2.0" (Tello EDU), "3.0" (RoboMaster TT) or "1.3" (the stock Tello).

Per drone: a command socket on an alias IP (127.0.0.N) and a free port (djitellopy holds 0.0.0.0:8889,
so the emulator can never use 8889 itself; the client sets `tello.address = (ip, port)`), state
datagrams to the client's 8890 at `state_hz` after "command", and the camera as raw H.264 to the
client's 11111 after "streamon", 960x720 at the SDK's nominal 30 fps (3.0: `setfps low|middle|high`
= 5/15/30); the simulator renders as fast as it can and frames repeat in between (the real render
rate is logged).

From the SDK 2.0 / 3.0 user guides:
- "command" first; replies to manoeuvres only when they finish, as long as the manoeuvre takes at the
  commanded speed (no cut-off: `speed 10` + `forward 100` answers after ~10 s); a `land` or
  `emergency` pre-empting a manoeuvre ends it without its own reply (one reply per command, in order).
- Ranges: moves 20-500 cm, `cw`/`ccw` 1-360 degrees turned the commanded way (`cw 270` turns 270
  degrees clockwise, `ccw 360` a full turn), `speed` 10-100, `go` -500..500 with speed 10-100 (not all
  of x y z inside -20..20), `curve` speed 10-60 with an arc radius 0.5-10 m; outside: "error".
- `flip l|r|f|b` (battery >= 50 %), `curve`, `stop`, `emergency` (motors off, reply "ok"),
  `mon`/`moff`/`mdirection` (EDU/TT), `motoron`/`motoroff`, `setfps`, `setbitrate`, `setresolution`,
  `port`, `downvision`, `EXT ...` (3.0 only); a command the SDK does not have is answered
  "unknown command: WORD". No reply to `rc`.
- Read commands answer bare values (djitellopy parses them with int()).
- State string: SDK 1.3 `pitch:..;...;agz:..;`; EDU/TT prepend the mission-pad fields
  `mid:..;x:..;y:..;z:..;mpry:..,..,..;` (mid -2 and x/y/z -200 while pad detection is off, -1/-100
  when on and no pad is seen: the simulator has no pads).
- Auto-land after `auto_land_s` (15 s) without a command, by its own watchdog; the state stream
  keeps flowing while it lands.

Coordinates: the state's yaw is relative to the heading at power-on (the spawn yaw), as on the real
drone. Tello body axes for moves, `go` and `curve`: x forward, y LEFT, z up (cm).

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
from sim_bridge.sim.world import World, YawMode

log = logging.getLogger(__name__)

TAKEOFF_TIMEOUT_S = 15.0
SDKS = ("1.3", "2.0", "3.0")
SDK3_ONLY: tuple[str, ...] = (
    "motoron",
    "motoroff",
    "setfps",
    "setbitrate",
    "setresolution",
    "port",
    "downvision",
    "EXT",
)
SDK3_ONLY += ("throwfly", "keepalive", "reboot")
EDU_ONLY = ("mon", "moff", "mdirection", "ap", "jump")
VIDEO_SIZE = (960, 720)
SETFPS = {"low": 5.0, "middle": 15.0, "high": 30.0}
# Commands that only switch a flag on or off: word -> (attribute, value).
_SWITCHES = {
    "streamon": ("streaming", True),
    "streamoff": ("streaming", False),
    "mon": ("mission_pads", True),
    "moff": ("mission_pads", False),
}
ROTATE_STEP_DEG = 90.0  # a turn is flown in steps shorter than 180 degrees: always the commanded way
FLIP_S = 1.2


@dataclass
class TelloEmulatorConfig:
    ip: str = "127.0.0.2"
    command_port: int = 0  # 0: a free port (read .command_port after start)
    client_state_port: int = 8890
    client_video_port: int = 11111
    sdk: str = "2.0"  # "2.0" Tello EDU, "3.0" RoboMaster TT, "1.3" stock Tello
    state_hz: float = 10.0
    video_fps: float = 30.0  # the SDK's nominal rate (frames repeat when the renderer is slower)
    video_size: tuple[int, int] | None = VIDEO_SIZE  # None: the simulator camera's own size
    rc_full_scale_m_s: float = 1.0
    rc_full_scale_yaw_deg_s: float = 100.0
    takeoff_height_m: float = 1.0
    auto_land_s: float = 15.0
    default_speed_cm_s: int = 100
    refused: dict[str, str] = field(default_factory=dict)  # command word -> error reply


class TelloEmulator:
    def __init__(self, world: World, vehicle: str, config: TelloEmulatorConfig | None = None) -> None:
        self.world = world
        self.vehicle = vehicle
        self.config = config or TelloEmulatorConfig()
        if self.config.sdk not in SDKS:
            raise ValueError(f"Tello SDK {self.config.sdk!r} not one of {', '.join(SDKS)}")
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
        self.rc = (0, 0, 0, 0)
        self.last_command_s = time.monotonic()
        self.motor_on_s: float | None = None
        self.busy: str | None = None  # the manoeuvre in progress
        self._preempted = threading.Event()  # land/emergency ended the manoeuvre: it sends no reply
        self.mission_pads = False
        self.motors_idle = False  # SDK 3.0 motoron on the ground
        self.log: list[tuple[float, str, str]] = []  # (wall, command, reply or "")
        self.auto_landed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._command_loop, name=f"tello-cmd-{vehicle}", daemon=True),
            threading.Thread(target=self._state_loop, name=f"tello-state-{vehicle}", daemon=True),
            threading.Thread(target=self._watchdog_loop, name=f"tello-watchdog-{vehicle}", daemon=True),
        ]
        self.video = H264Streamer(
            self._render,
            self._video_dest,
            fps=self.config.video_fps,
            bind_ip=self.config.ip,
            name="tello-video",
            size=self.config.video_size,
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

    @property
    def battery_pct(self) -> float:
        """The simulated pack's state of charge (sim_bridge.sim.battery), in percent."""
        with self.world.lock:
            return 100.0 * self._model().battery.fraction

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
        pads = ""
        if self.config.sdk != "1.3":  # EDU / TT: mission-pad fields first
            mid, xyz = (-1, -100) if self.mission_pads else (-2, -200)
            pads = f"mid:{mid};x:{xyz};y:{xyz};z:{xyz};mpry:0,0,0;"
        return (
            f"{pads}pitch:0;roll:0;yaw:{round(yaw)};vgx:{round(vgx * 10)};vgy:{round(vgy * 10)};"
            f"vgz:{round(v[2] * 10)};templ:60;temph:63;tof:{h_cm + 10};h:{h_cm};"
            f"bat:{round(self.battery_pct)};baro:{100.0 + h_m:.2f};time:{flight_s};"
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
            if self.flying and self.busy is None and any(self.rc):
                self._apply_rc()  # sticks persist: re-issue so body axes follow the turning heading
            self._send_state()

    def _watchdog_loop(self) -> None:
        """The SDK's safety: no command for auto_land_s while flying -> land (state keeps flowing)."""
        while not self._stop.wait(0.1):
            idle_s = time.monotonic() - self.last_command_s
            if self.flying and self.busy is None and idle_s > self.config.auto_land_s:
                log.warning("%s: no command for %.1f s: auto-landing", self.vehicle, idle_s)
                self.auto_landed = True
                self.busy = "land (auto)"
                try:
                    self._do_land()
                finally:
                    self.busy = None

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
        """Run a manoeuvre in its own thread and reply when it finishes (SDK: replies come at the end).
        A manoeuvre pre-empted by land/emergency sends no reply of its own."""
        self.busy = text
        self._preempted.clear()
        preempted = self._preempted

        def run() -> None:
            try:
                ok = getattr(self, work)(text)
                reply = "ok" if ok else "error"
            except Exception as exc:
                log.exception("manoeuvre %r failed", text)
                reply = f"error {exc}"
            finally:
                if self.busy == text:
                    self.busy = None
                self.last_command_s = time.monotonic()  # the idle timer runs from the manoeuvre's end
            if preempted.is_set():
                self.log.append((time.monotonic(), text, ""))
                return
            self._reply(reply, addr, text)

        threading.Thread(target=run, name=f"tello-{work}", daemon=True).start()

    def _preempt(self) -> None:
        """land / emergency: the manoeuvre in progress stops here and will not answer."""
        if self.busy is not None:
            self._preempted.set()
            self._preempted = threading.Event()
            with self.world.lock:
                self._model().hover()

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
        if word == "rc":
            self._rc(args)
            self.log.append((time.monotonic(), text, ""))
            return None  # the SDK sends no reply to rc
        unknown = self._unknown(word)
        if unknown:
            return unknown
        if word == "emergency":
            self._preempt()
            self._emergency()
            return "ok"
        if word == "reboot":
            self.log.append((time.monotonic(), text, ""))
            self._preempt()
            self._emergency()
            self.sdk_mode = False  # it comes back out of SDK mode
            return None  # SDK 3.0: no reply, the drone restarts
        if word in self.config.refused:
            return self.config.refused[word]
        if word.endswith("?"):
            return self._read(word)
        simple = self._settings(word, args)
        if simple is not None:
            return simple
        if word == "stop":
            self.rc = (0, 0, 0, 0)
            self._preempt()
            with self.world.lock:
                self._model().hover()
            return "ok"
        if word == "land":  # pre-empts a manoeuvre in progress, which then sends no reply
            if not self.flying and self.busy is None:
                return "error Motor stop" if not self.motors_idle else self._motors_off_reply()
            self._preempt()
            self._in_background(text, addr, "_do_land")
            return None
        if self.busy is not None:
            return "error Not joystick"
        if word == "takeoff":
            if self.flying:
                return "error"
            self._in_background(text, addr, "_do_takeoff")
            return None
        if word == "throwfly":
            return "error" if self.flying else "ok"  # the drone waits to be thrown: not emulated
        if not self.flying:
            return "error Motor stop"
        if word in ("up", "down", "left", "right", "forward", "back", "cw", "ccw", "go", "curve", "flip"):
            err = self._validate(word, args)
            if err:
                return err
            self._in_background(text, addr, "_do_flip" if word == "flip" else "_do_move")
            return None
        return "error"

    def _unknown(self, word: str) -> str | None:
        """The SDK version's answer to a command it does not have."""
        sdk = self.config.sdk
        if (word in SDK3_ONLY and sdk != "3.0") or (word in EDU_ONLY and sdk == "1.3"):
            return f"unknown command: {word}"
        return None

    def _motors_off_reply(self) -> str:
        self.motors_idle = False
        return "ok"

    def _settings(self, word: str, args: list[str]) -> str | None:
        """Commands answered at once (no manoeuvre); None for the others."""
        if word == "keepalive":
            return "ok"
        if word in _SWITCHES:
            setattr(self, *_SWITCHES[word])
            return "ok"
        if word == "speed":
            v = _ints(args, 1)
            if v is None or not 10 <= v[0] <= 100:
                return "error out of range"
            self.speed_cm_s = v[0]
            return "ok"
        if word == "mdirection":
            v = _ints(args, 1)
            return "ok" if v is not None and v[0] in (0, 1, 2) and self.mission_pads else "error"
        if word in ("motoron", "motoroff"):
            if self.flying:
                return "error"
            self.motors_idle = word == "motoron"
            if self.motors_idle and self.motor_on_s is None:
                self.motor_on_s = time.monotonic()
            elif not self.motors_idle:
                self.motor_on_s = None
            return "ok"
        if word == "setfps":
            if len(args) != 1 or args[0] not in SETFPS:
                return "error"
            self.video.set_fps(SETFPS[args[0]])
            return "ok"
        if word == "setbitrate":
            v = _ints(args, 1)
            return "ok" if v is not None and 0 <= v[0] <= 5 else "error"
        if word == "setresolution":
            return "ok" if args in (["low"], ["high"]) else "error"
        if word == "downvision":
            return "ok" if args in (["0"], ["1"]) else "error"
        if word == "port":
            v = _ints(args, 2)
            if v is None or not all(1025 <= p <= 65535 for p in v):
                return "error"
            self.config.client_state_port, self.config.client_video_port = v
            return "ok"
        if word in ("wifi", "ap"):
            return "ok" if len(args) == 2 else "error"
        if word == "EXT":
            return self._ext(args)
        return None

    @staticmethod
    def _ext(args: list[str]) -> str:
        """The RoboMaster TT's open-source controller (ESP32): LED, matrix and the forward ToF."""
        if not args:
            return "error"
        if args[0] == "led":
            return "led ok" if len(args) >= 4 else "error"
        if args[0] == "mled":
            return "matrix ok" if len(args) >= 3 else "error"
        if args[0] == "tof?":
            return "tof 8190"  # the forward ToF sees nothing within range (the sim has no such sensor)
        return f"unknown command: EXT {args[0]}"

    def _read(self, word: str) -> str:
        if word == "battery?":
            return str(round(self.battery_pct))
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
            return {"1.3": "13", "2.0": "20", "3.0": "30"}[self.config.sdk]
        if word == "sn?":
            return f"0TQDEMU{self.command_port:05d}"
        if word == "hardware?" and self.config.sdk == "3.0":
            return "RMTT"
        return f"unknown command: {word}"

    def _validate(self, word: str, args: list[str]) -> str | None:
        values = _ints(args, {"go": 4, "curve": 7}.get(word, 1)) if word != "flip" else []
        if values is None:
            return "error"
        if word in ("cw", "ccw"):
            return None if 1 <= values[0] <= 360 else "error out of range"
        if word == "flip":
            if args not in (["l"], ["r"], ["f"], ["b"]):
                return "error"
            return None if self.battery_pct >= 50 else "error battery low"
        if word == "go":
            if not all(-500 <= v <= 500 for v in values[:3]) or not 10 <= values[3] <= 100:
                return "error out of range"
            return "error out of range" if all(-20 <= v <= 20 for v in values[:3]) else None
        if word == "curve":
            p1, p2 = np.array(values[:3], float), np.array(values[3:6], float)
            if not all(-500 <= v <= 500 for v in values[:6]) or not 10 <= values[6] <= 60:
                return "error out of range"
            if all(-20 <= v <= 20 for v in values[:3]) and all(-20 <= v <= 20 for v in values[3:6]):
                return "error out of range"
            radius_cm = _arc_radius_cm(np.zeros(3), p1, p2)
            return None if 50 <= radius_cm <= 1000 else "error radius is out of range"
        return None if 20 <= values[0] <= 500 else "error out of range"

    # ---- manoeuvres (run in their own thread; True when completed)
    def _do_takeoff(self, _text: str) -> bool:
        if self.battery_pct < 10:
            return False
        self.motor_on_s = time.monotonic()
        self.motors_idle = False
        task = self.world.takeoff(self.vehicle, self.config.takeoff_height_m, timeout_s=TAKEOFF_TIMEOUT_S)
        ok = task.wait(TAKEOFF_TIMEOUT_S + 2.0)
        self.flying = ok or self.height_m() > 0.2
        return ok

    def _do_land(self, _text: str = "land") -> bool:
        self.rc = (0, 0, 0, 0)
        task = self.world.land(self.vehicle, timeout_s=30.0)
        ok = task.wait(32.0)
        self.flying = False
        self.motor_on_s = None
        return ok

    def _do_flip(self, _text: str) -> bool:
        """A flip ends where it started; the simulator flies no attitude, so the drone holds for it."""
        with self.world.lock:
            self._model().hover()
        return not self._stop.wait(FLIP_S)

    def _to_world(self, fwd_m: float, left_m: float, up_m: float, yaw_deg: float) -> np.ndarray:
        c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
        right = -left_m
        return np.array([c * fwd_m - s * right, s * fwd_m + c * right, -up_m])

    def _move_to(self, target: np.ndarray, distance_m: float, speed_m_s: float, yaw_deg: float) -> bool:
        timeout_s = distance_m / speed_m_s * 1.5 + 3.0  # as long as the move takes at that speed
        task = self.world.move_to(
            self.vehicle, target, speed_m_s, timeout_s=timeout_s, yaw=YawMode(False, yaw_deg)
        )
        return task.wait(timeout_s + 1.0)

    def _rotate(self, degrees_cw: float) -> bool:
        """Turn by exactly this much, the commanded way: through headings at most ROTATE_STEP_DEG
        apart (rotate_to takes the short way to each), without stopping at the intermediate ones."""
        with self.world.lock:
            start = self._model().yaw_deg
        preempted = self._preempted
        steps = max(1, math.ceil(abs(degrees_cw) / ROTATE_STEP_DEG))
        for k in range(1, steps + 1):
            last = k == steps
            heading = wrap_deg(start + degrees_cw * k / steps)
            task = self.world.rotate_to(
                self.vehicle, heading, timeout_s=10.0, margin_deg=1.0 if last else 30.0
            )
            if not task.wait(11.0) or preempted.is_set():
                return False
        return True

    def _do_move(self, text: str) -> bool:
        word, *args = text.split()
        values = [int(a) for a in args]
        with self.world.lock:
            m = self._model()
            pos = m.position_ned.copy()
            yaw = m.yaw_deg
        speed = self.speed_cm_s / 100.0
        if word in ("cw", "ccw"):
            return self._rotate(values[0] if word == "cw" else -values[0])
        if word == "curve":
            # through (x1 y1 z1) to (x2 y2 z2) at the curve's speed: the arc flown as its two chords
            p1 = self._to_world(values[0] / 100, values[1] / 100, values[2] / 100, yaw)
            p2 = self._to_world(values[3] / 100, values[4] / 100, values[5] / 100, yaw)
            speed = values[6] / 100.0
            preempted = self._preempted
            if not self._move_to(pos + p1, float(np.linalg.norm(p1)), speed, yaw) or preempted.is_set():
                return False
            return self._move_to(pos + p2, float(np.linalg.norm(p2 - p1)), speed, yaw)
        if word == "go":
            fwd, left, up = (v / 100.0 for v in values[:3])
            speed = values[3] / 100.0
        else:
            d = values[0] / 100.0
            fwd = {"forward": d, "back": -d}.get(word, 0.0)
            left = {"left": d, "right": -d}.get(word, 0.0)
            up = {"up": d, "down": -d}.get(word, 0.0)
        offset = self._to_world(fwd, left, up, yaw)
        return self._move_to(pos + offset, float(np.linalg.norm(offset)), speed, yaw)

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
        self.world.move_velocity_body(
            self.vehicle,
            (b * k, a * k, -c * k),
            1e6,  # sticks hold until the next rc
            yaw=YawMode(True, d * self.config.rc_full_scale_yaw_deg_s / 100.0),
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


def _ints(args: list[str], n: int) -> list[int] | None:
    """Exactly n integer arguments, or None (the SDK answers "error")."""
    if len(args) != n:
        return None
    try:
        return [int(a) for a in args]
    except ValueError:
        return None


def _arc_radius_cm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    """Radius of the circle through three points (inf when they are on a line)."""
    ab, bc, ca = (float(np.linalg.norm(v)) for v in (b - a, c - b, a - c))
    area2 = float(np.linalg.norm(np.cross(b - a, c - a)))  # twice the triangle's area
    return math.inf if area2 < 1e-9 else ab * bc * ca / (2.0 * area2)
