"""The Tello SDK's vocabulary for the emulator: which SDK version has which command, the argument
ranges it accepts, and the drone's mutable state that the command, state and motion parts share.

From the SDK 2.0 / 3.0 user guides:
- Ranges: moves 20-500 cm, `cw`/`ccw` 1-360 degrees, `speed` 10-100, `go` -500..500 with speed
  10-100 (not all of x y z inside -20..20), `curve` speed 10-60 with an arc radius 0.5-10 m;
  outside: "error".
- `flip l|r|f|b` needs battery >= 50 %.
- `mon`/`moff`/`mdirection` are EDU/TT commands; `motoron`/`motoroff`, `setfps`, `setbitrate`,
  `setresolution`, `port`, `downvision`, `EXT ...` are 3.0 only; a command the SDK does not have is
  answered "unknown command: WORD".
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

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
SETFPS = {"low": 5.0, "middle": 15.0, "high": 30.0}
MANOEUVRES = ("up", "down", "left", "right", "forward", "back", "cw", "ccw", "go", "curve", "flip")
SDK_ANSWER = {"1.3": "13", "2.0": "20", "3.0": "30"}  # "sdk?" reply
VIDEO_SIZE = (960, 720)


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


@dataclass
class TelloStatus:
    """What the drone is doing, shared by the command dispatcher, the state stream, the watchdog and
    the airframe (each thread reads it; a field has one writer at a time, as on the single-threaded
    original, so no lock beyond the world's)."""

    client_ip: str | None = None
    sdk_mode: bool = False  # "command" was received (a real Tello ignores everything before it)
    flying: bool = False
    streaming: bool = False
    mission_pads: bool = False
    motors_idle: bool = False  # SDK 3.0 motoron on the ground
    motor_on_s: float | None = None
    speed_cm_s: int = 100
    rc: tuple[int, ...] = (0, 0, 0, 0)
    busy: str | None = None  # the manoeuvre in progress
    auto_landed: bool = False
    last_command_s: float = field(default_factory=time.monotonic)
    link_down: threading.Event = field(default_factory=threading.Event)
    log: list[tuple[float, str, str]] = field(default_factory=list)  # (monotonic, command, reply or "")

    def power_on(self, speed_cm_s: int) -> None:
        """Back to how a Tello wakes up (a new flight after a battery swap): no stream, no mission pads,
        motors off, the default speed, sticks centred. The client, the SDK mode, the link fault and
        the log are the session's and stay."""
        self.flying = self.streaming = self.mission_pads = self.motors_idle = self.auto_landed = False
        self.motor_on_s = None
        self.speed_cm_s = speed_cm_s
        self.rc = (0, 0, 0, 0)

    def record(self, command: str, reply: str) -> None:
        self.log.append((time.monotonic(), command, reply))

    def flight_time_s(self) -> int:
        return 0 if self.motor_on_s is None else int(time.monotonic() - self.motor_on_s)


def unknown_reply(sdk: str, word: str) -> str | None:
    """The SDK version's answer to a command it does not have; None when it has it."""
    if (word in SDK3_ONLY and sdk != "3.0") or (word in EDU_ONLY and sdk == "1.3"):
        return f"unknown command: {word}"
    return None


def ext_reply(args: list[str]) -> str:
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


def validate_manoeuvre(word: str, args: list[str], battery_pct: float) -> str | None:
    """The SDK's error reply for a manoeuvre's arguments, or None when they are in range."""
    values = ints(args, {"go": 4, "curve": 7}.get(word, 1)) if word != "flip" else []
    if values is None:
        return "error"
    if word in ("cw", "ccw"):
        return None if 1 <= values[0] <= 360 else "error out of range"
    if word == "flip":
        if args not in (["l"], ["r"], ["f"], ["b"]):
            return "error"
        return None if battery_pct >= 50 else "error battery low"
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
        radius_cm = arc_radius_cm(np.zeros(3), p1, p2)
        return None if 50 <= radius_cm <= 1000 else "error radius is out of range"
    return None if 20 <= values[0] <= 500 else "error out of range"


def ints(args: list[str], n: int) -> list[int] | None:
    """Exactly n integer arguments, or None (the SDK answers "error")."""
    if len(args) != n:
        return None
    try:
        return [int(a) for a in args]
    except ValueError:
        return None


def arc_radius_cm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> float:
    """Radius of the circle through three points (inf when they are on a line)."""
    ab, bc, ca = (float(np.linalg.norm(v)) for v in (b - a, c - b, a - c))
    area2 = float(np.linalg.norm(np.cross(b - a, c - a)))  # twice the triangle's area
    return math.inf if area2 < 1e-9 else ab * bc * ca / (2.0 * area2)
