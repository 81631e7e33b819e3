"""`MavlinkEmulator`: puts the parts together (link, parameters, commands, setpoints, failsafes,
manoeuvres, telemetry) and runs them on two threads, one receiving and one sending telemetry and
checking the rules, serialised by one lock."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from common.pose import Pose
from sim_bridge.emulators.h264_out import H264Streamer
from sim_bridge.emulators.mavlink_emulator.airframe import Airframe
from sim_bridge.emulators.mavlink_emulator.commands import Commands
from sim_bridge.emulators.mavlink_emulator.config import MavlinkEmulatorConfig
from sim_bridge.emulators.mavlink_emulator.core import Autopilot, Flight
from sim_bridge.emulators.mavlink_emulator.failsafes import ArduPilotFailsafes, FailsafeRules, Px4Failsafes
from sim_bridge.emulators.mavlink_emulator.flavour import flavour_for
from sim_bridge.emulators.mavlink_emulator.link import MavLink
from sim_bridge.emulators.mavlink_emulator.manoeuvres import Manoeuvres
from sim_bridge.emulators.mavlink_emulator.offboard import Offboard
from sim_bridge.emulators.mavlink_emulator.parameters import ParamProtocol
from sim_bridge.emulators.mavlink_emulator.telemetry import Telemetry
from sim_bridge.emulators.mavlink_params import ParamStore
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)


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
        self.params = ParamStore(self.px4, self.config.params)  # unknown overrides: ValueError first
        self.link = MavLink(mavutil, self.config.companion)
        self.conn = self.link.conn
        self.airframe = Airframe(world, vehicle)
        self.home = self.airframe.home
        flavour = flavour_for(self.config.dialect, self.params)
        self.autopilot = Autopilot(self.config, self.link, self.airframe, self.params, flavour, self.m)
        self.manoeuvres = Manoeuvres(self.autopilot)
        self.telemetry = Telemetry(self.autopilot)
        self.failsafe_rules: FailsafeRules = (
            Px4Failsafes(self.autopilot, self.manoeuvres)
            if self.px4
            else ArduPilotFailsafes(self.autopilot, self.manoeuvres)
        )
        self.offboard = Offboard(self.autopilot)
        self.commands = Commands(self.autopilot, self.manoeuvres, self.telemetry)
        self.param_protocol = ParamProtocol(self.params, self.link, self.m)
        self.received: list[tuple[float, str]] = []  # (wall, message type or command)
        self._lock = threading.RLock()  # mode, arming and failsafe state (rx thread vs tx thread)
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
        self.link.close()

    # ---- fault injection
    @property
    def link_down(self) -> threading.Event:
        """Set: silence both ways (the radio link is cut)."""
        return self.link.link_down

    def refuse(self, command: int, result: int, text: str) -> None:
        self.config.refused[command] = (result, text)

    def rc_takeover(self) -> None:
        """The safety pilot flips the RC mode switch: POSCTL (PX4) / LOITER (ArduPilot), vehicle holds."""
        ap = self.autopilot
        with self._lock:
            ap.statustext(self.m.MAV_SEVERITY_WARNING, "RC override: manual control")
            ap.pending_failsafe = None
            ap.flight = None
            ap.set_mode(ap.flavour.takeover_mode, 0)
            ap.hover()

    # ---- what tests and benchmarks read
    @property
    def armed(self) -> bool:
        return self.autopilot.armed

    @property
    def mode_name(self) -> str:
        return self.autopilot.mode_name

    @property
    def main_mode(self) -> int:
        return self.autopilot.main_mode

    @property
    def sub_mode(self) -> int:
        return self.autopilot.sub_mode

    @property
    def flight(self) -> Flight | None:
        return self.autopilot.flight

    @property
    def failsafes(self) -> list[str]:
        return self.autopilot.failsafes

    @property
    def gcs_lost(self) -> bool:
        return self.autopilot.gcs_lost

    @property
    def setpoints(self) -> int:
        return self.autopilot.setpoints

    @property
    def setpoint_intervals_s(self) -> list[float]:
        return self.autopilot.setpoint_intervals_s

    @property
    def statustexts(self) -> list[str]:
        return self.link.statustexts

    @property
    def intervals_s(self) -> dict[int, float]:
        return self.telemetry.intervals_s

    @property
    def battery_pct(self) -> float:
        """The simulated pack's state of charge (sim_bridge.sim.battery), in percent."""
        return self.airframe.battery_pct()

    @property
    def heading_deg(self) -> float:
        return self.airframe.heading_deg()

    def in_offboard(self) -> bool:
        return self.autopilot.in_offboard()

    def prearm_failure(self) -> str | None:
        """Why arming would be refused now (PX4 health and arming checks), or None."""
        return self.autopilot.prearm_failure()

    def statustext(self, severity: int, text: str) -> None:
        self.link.statustext(severity, text)

    def send_message(self, msg_id: int) -> bool:
        """Send one message of the streamable kinds; False for an id this emulator does not produce."""
        return self.telemetry.send_message(msg_id)

    def pose(self) -> Pose:
        return self.airframe.pose()

    def distance_from_home_m(self) -> float:
        return self.airframe.distance_from_home_m()

    def altitude_m(self) -> float:
        return self.airframe.altitude_m()

    # ---- the threads
    def _tx_loop(self) -> None:
        tick_s = 1.0 / max(self.config.telemetry_hz, 1.0)
        while not self._stop.wait(tick_s):
            now = time.monotonic()
            self.telemetry.tick(now, tick_s)
            try:
                with self._lock:
                    self._rules(now)
            except Exception:
                log.exception("emulator rules failed")

    def _rules(self, now: float) -> None:
        """The firmware's automatic behaviour, checked at the telemetry rate."""
        self.failsafe_rules.check(now)
        self.manoeuvres.advance(now)
        self.manoeuvres.disarm_rules(now)

    def _rx_loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.link.receive(0.2)
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
                with self._lock:
                    self._dispatch(kind, msg)
            except Exception:
                log.exception("emulator: handling %s failed", kind)

    def _dispatch(self, kind: str, msg: Any) -> None:
        """Route one message by its MAVLink type name to the part that owns it."""
        if kind == "SET_POSITION_TARGET_LOCAL_NED":
            self.offboard.on_setpoint(msg)
            return
        if kind in ("COMMAND_LONG", "COMMAND_INT"):
            self.received.append((time.monotonic(), f"{kind} {msg.command}"))
            self.commands.on_command(msg, kind == "COMMAND_INT")
            return
        self.received.append((time.monotonic(), kind))
        if kind == "HEARTBEAT":
            self.failsafe_rules.on_heartbeat(msg, time.monotonic())
        elif kind == "PARAM_REQUEST_LIST":
            self.param_protocol.on_request_list(msg)
        elif kind == "PARAM_REQUEST_READ":
            self.param_protocol.on_request_read(msg)
        elif kind == "PARAM_SET":
            self.param_protocol.on_set(msg)
        elif kind == "REQUEST_DATA_STREAM" and not self.px4:
            self.telemetry.request_data_stream(msg)
        elif kind == "SET_MODE":
            self.commands.on_set_mode(msg)
