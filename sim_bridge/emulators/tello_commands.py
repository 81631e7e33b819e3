"""The emulated Tello's SDK command dispatcher: one datagram in, the SDK's reply (or none) out, and
the manoeuvres it starts.

From the SDK 2.0 / 3.0 user guides:
- "command" first; replies to manoeuvres only when they finish, as long as the manoeuvre takes at the
  commanded speed (no cut-off: `speed 10` + `forward 100` answers after ~10 s); a `land` or
  `emergency` pre-empting a manoeuvre ends it without its own reply (one reply per command, in order).
- `stop` hovers, `emergency` stops the motors (reply "ok"), `reboot` (3.0) restarts without a reply
  and out of SDK mode; `throwfly` (3.0) waits to be thrown. No reply to `rc`.
- Read commands answer bare values (djitellopy parses them with int()).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sim_bridge.emulators.h264_out import H264Streamer
from sim_bridge.emulators.tello_airframe import TelloAirframe
from sim_bridge.emulators.tello_sdk import (
    MANOEUVRES,
    SDK_ANSWER,
    SETFPS,
    TelloEmulatorConfig,
    TelloStatus,
    ext_reply,
    ints,
    unknown_reply,
    validate_manoeuvre,
)

# the emulator's one logger name: its log lines read as before the split
log = logging.getLogger("sim_bridge.emulators.tello_emulator")

Addr = tuple[str, int]
Reply = Callable[[str, Addr, str], None]  # (reply, client address, the command it answers)
Manoeuvre = Callable[[threading.Event], bool]  # flies it (the event: pre-empted); True when completed


class ManoeuvreRunner:
    """One manoeuvre at a time in its own thread, answered when it finishes (the SDK replies at the
    end); a manoeuvre pre-empted by land/emergency sends no reply of its own."""

    def __init__(self, status: TelloStatus, airframe: TelloAirframe, reply: Reply) -> None:
        self.status = status
        self.airframe = airframe
        self._reply = reply
        self._preempted = threading.Event()

    def start(self, text: str, addr: Addr, fly: Manoeuvre, name: str) -> None:
        st = self.status
        st.busy = text
        self._preempted.clear()
        preempted = self._preempted

        def run() -> None:
            try:
                ok = fly(preempted)
                reply = "ok" if ok else "error"
            except Exception as exc:
                log.exception("manoeuvre %r failed", text)
                reply = f"error {exc}"
            finally:
                if st.busy == text:
                    st.busy = None
                st.last_command_s = time.monotonic()  # the idle timer runs from the manoeuvre's end
            if preempted.is_set():
                st.record(text, "")
                return
            self._reply(reply, addr, text)

        threading.Thread(target=run, name=f"tello-{name}", daemon=True).start()

    def preempt(self) -> None:
        """land / emergency: the manoeuvre in progress stops here and will not answer."""
        if self.status.busy is not None:
            self._preempted.set()
            self._preempted = threading.Event()
            self.airframe.hover()


@dataclass(eq=False)  # one dispatcher per drone: compared by identity, as before
class TelloCommands:
    """The dispatcher over the drone's parts: it reads and sets `status`, flies with `airframe` and
    `runner`, retunes `video` (setfps) and answers "sn?" with `serial`."""

    config: TelloEmulatorConfig
    status: TelloStatus
    airframe: TelloAirframe
    runner: ManoeuvreRunner
    video: H264Streamer
    serial: str

    def __post_init__(self) -> None:
        # the client ports as configured: SDK 3.0 `port` changes them until the drone powers off
        self._power_on_ports = (self.config.client_state_port, self.config.client_video_port)

    def emergency(self) -> None:
        self.status.record("emergency", "")
        self.airframe.emergency()

    def _new_session(self) -> None:
        """A "command" on the ground after a flight is a new flight: the drone back at its spawn with a
        fresh pack (tello_airframe's FlightReset, where and why), and so powered on afresh. A real
        Tello keeps its place and state across sessions; on one long-lived `dronecats sim` a re-run
        script expects the start the server printed. Within one session a second take-off starts
        where the drone landed, as on the real drone."""
        st = self.status
        if st.flying or st.busy is not None or not self.airframe.flights.new_flight():
            return
        st.power_on(self.config.default_speed_cm_s)
        self.config.client_state_port, self.config.client_video_port = self._power_on_ports
        if self.video.fps != self.config.video_fps:  # SDK 3.0 setfps, undone by the power-off
            self.video.set_fps(self.config.video_fps)

    def handle(self, text: str, addr: Addr) -> str | None:
        """The reply to send now; None when there is none now (rc, a manoeuvre answering later,
        anything before "command")."""
        st = self.status
        parts = text.split()
        if not parts:
            return "error"
        word, args = parts[0], parts[1:]
        if word == "command":
            self._new_session()
            st.client_ip = addr[0]
            st.sdk_mode = True
            return "ok"
        if not st.sdk_mode:
            return None  # a real Tello ignores everything before "command"
        if word == "rc":
            self.airframe.set_rc(args)
            st.record(text, "")
            return None  # the SDK sends no reply to rc
        unknown = unknown_reply(self.config.sdk, word)
        if unknown:
            return unknown
        if word == "emergency":
            self.runner.preempt()
            self.emergency()
            return "ok"
        if word == "reboot":
            st.record(text, "")
            self.runner.preempt()
            self.emergency()
            st.sdk_mode = False  # it comes back out of SDK mode
            return None  # SDK 3.0: no reply, the drone restarts
        if word in self.config.refused:
            return self.config.refused[word]
        if word.endswith("?"):
            return self._read(word)
        simple = self._settings(word, args)
        if simple is not None:
            return simple
        if word == "stop":
            st.rc = (0, 0, 0, 0)
            self.runner.preempt()
            self.airframe.hover()
            return "ok"
        if word == "land":  # pre-empts a manoeuvre in progress, which then sends no reply
            if not st.flying and st.busy is None:
                return "error Motor stop" if not st.motors_idle else self._motors_off_reply()
            self.runner.preempt()
            self.runner.start(text, addr, lambda _p: self.airframe.land(), "land")
            return None
        if st.busy is not None:
            return "error Not joystick"
        if word == "takeoff":
            if st.flying:
                return "error"
            self.runner.start(text, addr, lambda _p: self.airframe.takeoff(), "takeoff")
            return None
        if word == "throwfly":
            return "error" if st.flying else "ok"  # the drone waits to be thrown: not emulated
        if not st.flying:
            return "error Motor stop"
        if word in MANOEUVRES:
            err = validate_manoeuvre(word, args, self.airframe.battery_pct)
            if err:
                return err
            if word == "flip":
                self.runner.start(text, addr, lambda _p: self.airframe.flip(), "flip")
            else:
                self.runner.start(text, addr, lambda p: self.airframe.move(text, p), "move")
            return None
        return "error"

    def _motors_off_reply(self) -> str:
        self.status.motors_idle = False
        return "ok"

    def _settings(self, word: str, args: list[str]) -> str | None:
        """Commands answered at once (no manoeuvre); None for the others."""
        st = self.status
        if word == "keepalive":
            return "ok"
        if word in ("streamon", "streamoff"):
            st.streaming = word == "streamon"
            return "ok"
        if word in ("mon", "moff"):
            st.mission_pads = word == "mon"
            return "ok"
        if word == "speed":
            v = ints(args, 1)
            if v is None or not 10 <= v[0] <= 100:
                return "error out of range"
            st.speed_cm_s = v[0]
            return "ok"
        if word == "mdirection":
            v = ints(args, 1)
            return "ok" if v is not None and v[0] in (0, 1, 2) and st.mission_pads else "error"
        if word in ("motoron", "motoroff"):
            if st.flying:
                return "error"
            st.motors_idle = word == "motoron"
            if st.motors_idle and st.motor_on_s is None:
                st.motor_on_s = time.monotonic()
            elif not st.motors_idle:
                st.motor_on_s = None
            return "ok"
        if word == "setfps":
            if len(args) != 1 or args[0] not in SETFPS:
                return "error"
            self.video.set_fps(SETFPS[args[0]])
            return "ok"
        if word == "setbitrate":
            v = ints(args, 1)
            return "ok" if v is not None and 0 <= v[0] <= 5 else "error"
        if word == "setresolution":
            return "ok" if args in (["low"], ["high"]) else "error"
        if word == "downvision":
            return "ok" if args in (["0"], ["1"]) else "error"
        if word == "port":
            v = ints(args, 2)
            if v is None or not all(1025 <= p <= 65535 for p in v):
                return "error"
            self.config.client_state_port, self.config.client_video_port = v
            return "ok"
        if word in ("wifi", "ap"):
            return "ok" if len(args) == 2 else "error"
        if word == "EXT":
            return ext_reply(args)
        return None

    def _read(self, word: str) -> str:
        if word == "battery?":
            return str(round(self.airframe.battery_pct))
        if word == "speed?":
            return str(self.status.speed_cm_s)
        if word == "time?":
            return str(self.status.flight_time_s())
        if word == "height?":
            return str(round(self.airframe.height_m() * 10))  # dm on the real drone
        if word == "temp?":
            return "61"
        if word == "baro?":
            return str(round(100 + self.airframe.height_m()))
        if word == "tof?":
            return f"{round(self.airframe.height_m() * 1000) + 100}mm"
        if word == "attitude?":
            return f"pitch:0;roll:0;yaw:{round(self.airframe.yaw_deg())};"
        if word == "wifi?":
            return "90"
        if word == "sdk?":
            return SDK_ANSWER[self.config.sdk]
        if word == "sn?":
            return self.serial
        if word == "hardware?" and self.config.sdk == "3.0":
            return "RMTT"
        return f"unknown command: {word}"
