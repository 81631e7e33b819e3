"""A DJI Tello on loopback, flying a built-in simulator vehicle: a real UDP peer for djitellopy, behaving
as the SDK it is told to be: "2.0" (Tello EDU), "3.0" (RoboMaster TT) or "1.3" (the stock Tello).

Per drone: a command socket on an alias IP (127.0.0.N) and a free port (djitellopy holds 0.0.0.0:8889,
so the emulator can never use 8889 itself; the client sets `tello.address = (ip, port)`), state
datagrams to the client's 8890 at `state_hz` after "command", and the camera as raw H.264 to the
client's 11111 after "streamon", 960x720 at the SDK's nominal 30 fps (3.0: `setfps low|middle|high`
= 5/15/30); the simulator renders as fast as it can and frames repeat in between (the real render
rate is logged).

The parts: tello_commands (the SDK dispatcher and its manoeuvre runner), tello_state (the state
datagrams), tello_airframe (the motion model on the simulator), tello_sdk (the SDK's vocabulary and
the shared state); this module owns the sockets, the threads and the video stream.

From the SDK 2.0 / 3.0 user guides (the rest is cited where it is emulated):
- Auto-land after `auto_land_s` (15 s) without a command, by its own watchdog; the state stream
  keeps flowing while it lands. (SDK 2.0 guide: "Tello will automatically land if it does not receive
  any command for 15 seconds"; any datagram counts, `rc` included, and the last `rc` sticks keep
  flying it until then. `dronecats sim --tello-auto-land-s` shortens it for rehearsals only.)

Fault injection for tests: `refuse(command_word, reply)`, `video_paused`, `link_down` (no replies, no
state, no video).
"""

from __future__ import annotations

import logging
import socket
import threading
import time

import numpy as np

from sim_bridge.emulators.h264_out import H264Streamer
from sim_bridge.emulators.tello_airframe import TAKEOFF_TIMEOUT_S, TelloAirframe
from sim_bridge.emulators.tello_commands import Addr, ManoeuvreRunner, TelloCommands
from sim_bridge.emulators.tello_sdk import (
    EDU_ONLY,
    SDK3_ONLY,
    SDKS,
    SETFPS,
    VIDEO_SIZE,
    TelloEmulatorConfig,
    TelloStatus,
)
from sim_bridge.emulators.tello_state import TelloStateStream
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)

__all__ = [
    "EDU_ONLY",
    "SDK3_ONLY",
    "SDKS",
    "SETFPS",
    "TAKEOFF_TIMEOUT_S",
    "VIDEO_SIZE",
    "TelloEmulator",
    "TelloEmulatorConfig",
]


class TelloEmulator:
    def __init__(self, world: World, vehicle: str, config: TelloEmulatorConfig | None = None) -> None:
        self.world = world
        self.vehicle = vehicle
        self.config = config or TelloEmulatorConfig()
        if self.config.sdk not in SDKS:
            raise ValueError(f"Tello SDK {self.config.sdk!r} not one of {', '.join(SDKS)}")
        self.status = TelloStatus(speed_cm_s=self.config.default_speed_cm_s)
        self._stop = threading.Event()
        self.airframe = TelloAirframe(
            world,
            vehicle,
            self.status,
            self.config,
            self._stop,
        )
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((self.config.ip, self.config.command_port))
        self.sock.settimeout(0.2)
        self.command_port = int(self.sock.getsockname()[1])
        self.state = TelloStateStream(self.airframe, self.status, self.config)
        self.video = H264Streamer(
            self._render,
            self._video_dest,
            fps=self.config.video_fps,
            bind_ip=self.config.ip,
            name="tello-video",
            size=self.config.video_size,
        )
        self.commands = TelloCommands(
            self.config,
            self.status,
            self.airframe,
            ManoeuvreRunner(self.status, self.airframe, self._reply),
            self.video,
            f"0TQDEMU{self.command_port:05d}",
        )
        self._threads = [
            threading.Thread(target=self._command_loop, name=f"tello-cmd-{vehicle}", daemon=True),
            threading.Thread(
                target=self.state.run, args=(self._stop,), name=f"tello-state-{vehicle}", daemon=True
            ),
            threading.Thread(target=self._watchdog_loop, name=f"tello-watchdog-{vehicle}", daemon=True),
        ]

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
        self.state.close()

    def refuse(self, word: str, reply: str = "error") -> None:
        self.config.refused[word] = reply

    # ---- fault injection (what the drone does is read from .status and .airframe)
    @property
    def video_paused(self) -> threading.Event:
        return self.video.paused

    @property
    def link_down(self) -> threading.Event:
        """Set: no replies, no state, no video (the Wi-Fi link is gone)."""
        return self.status.link_down

    # ---- video
    def _video_dest(self) -> tuple[str, int] | None:
        st = self.status
        if not st.streaming or st.client_ip is None or st.link_down.is_set():
            return None
        return (st.client_ip, self.config.client_video_port)

    def _render(self) -> np.ndarray:
        return self.world.render(self.vehicle, segmentation=False).image_bgr

    # ---- watchdog
    def _watchdog_loop(self) -> None:
        """The SDK's safety: no command for auto_land_s while flying -> land (state keeps flowing)."""
        st = self.status
        while not self._stop.wait(0.1):
            idle_s = time.monotonic() - st.last_command_s
            if st.flying and st.busy is None and idle_s > self.config.auto_land_s:
                log.warning("%s: no command for %.1f s: auto-landing", self.vehicle, idle_s)
                st.auto_landed = True
                st.busy = "land (auto)"
                try:
                    self.airframe.land()
                finally:
                    st.busy = None

    # ---- commands
    def _command_loop(self) -> None:
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(1024)
            except TimeoutError:
                continue
            except OSError:
                break
            if self.status.link_down.is_set():
                continue
            text = data.decode("utf-8", "replace").strip()
            self.status.last_command_s = time.monotonic()
            try:
                reply = self.commands.handle(text, addr)
            except Exception as exc:
                log.exception("tello emulator: %r failed", text)
                reply = f"error {type(exc).__name__}"
            if reply is not None:
                self._reply(reply, addr, text)

    def _reply(self, reply: str, addr: Addr, text: str) -> None:
        self.status.record(text, reply)
        if self.status.link_down.is_set():
            return
        try:
            self.sock.sendto(reply.encode(), addr)
        except OSError:
            log.debug("reply send failed", exc_info=True)
        self.state.send()
