"""`MavlinkEmulator`: puts the parts together (link, parameters, commands, setpoints, failsafes,
manoeuvres, telemetry) and runs them on two threads, one receiving and one sending telemetry and
checking the rules, serialised by one lock."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from sim_bridge.emulators.h264_out import H264Streamer
from sim_bridge.emulators.mavlink_emulator.airframe import Airframe
from sim_bridge.emulators.mavlink_emulator.commands import Commands
from sim_bridge.emulators.mavlink_emulator.config import MavlinkEmulatorConfig
from sim_bridge.emulators.mavlink_emulator.core import Autopilot
from sim_bridge.emulators.mavlink_emulator.failsafes import ArduPilotFailsafes, FailsafeRules, Px4Failsafes
from sim_bridge.emulators.mavlink_emulator.link import MavLink
from sim_bridge.emulators.mavlink_emulator.manoeuvres import Manoeuvres
from sim_bridge.emulators.mavlink_emulator.offboard import Offboard
from sim_bridge.emulators.mavlink_emulator.parameters import ParamProtocol
from sim_bridge.emulators.mavlink_emulator.telemetry import TelemetrySender
from sim_bridge.emulators.mavlink_params import ParamStore

if TYPE_CHECKING:
    from pymavlink.dialects.v20.all import MAVLink_message
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)


T = TypeVar("T")


class ReadThrough(Generic[T]):
    """A read-only attribute of the emulator that reads a part's current value (the parts own the
    state; the emulator keeps the names its callers read)."""

    def __init__(self, read: Callable[[MavlinkEmulator], T]) -> None:
        self.read = read

    def __get__(self, emulator: MavlinkEmulator, owner: type | None = None) -> T:
        return self.read(emulator)


class MavlinkEmulator:
    """One autopilot for `vehicle` of `world`; `start()` opens the link, `close()` ends it."""

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
        self.autopilot = Autopilot(self.config, self.link, self.airframe, self.params)
        self.manoeuvres = Manoeuvres(self.autopilot)
        self.telemetry = TelemetrySender(self.autopilot)
        self.failsafe_rules: FailsafeRules = (
            Px4Failsafes(self.autopilot, self.manoeuvres)
            if self.px4
            else ArduPilotFailsafes(self.autopilot, self.manoeuvres)
        )
        self.offboard = Offboard(self.autopilot)
        self.commands = Commands(self.autopilot, self.manoeuvres, self.telemetry)
        self.param_protocol = ParamProtocol(self.params, self.link, self.m)
        self.received: list[tuple[float, str]] = []  # (wall, message type or command)
        # The containers and queries callers read, shared with the part that owns them (never rebound)
        self.statustexts = self.link.statustexts
        self.failsafes = self.autopilot.failsafes
        self.setpoint_intervals_s = self.autopilot.setpoint_intervals_s
        self.intervals_s = self.telemetry.intervals_s
        self.in_offboard = self.autopilot.in_offboard
        self.prearm_failure = self.autopilot.prearm_failure  # why arming would be refused now, or None
        self.statustext = self.link.statustext
        self.send_message = self.telemetry.send_message  # one message of the streamable kinds
        self.pose = self.airframe.pose
        self.distance_from_home_m = self.airframe.distance_from_home_m
        self.altitude_m = self.airframe.altitude_m
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

    # ---- what tests and benchmarks read: live values owned by the parts
    armed = ReadThrough(lambda e: e.autopilot.armed)
    mode_name = ReadThrough(lambda e: e.autopilot.mode_name)
    gcs_lost = ReadThrough(lambda e: e.autopilot.gcs_lost)
    setpoints = ReadThrough(lambda e: e.autopilot.setpoints)  # SET_POSITION_TARGET_LOCAL_NED taken
    battery_pct = ReadThrough(lambda e: e.airframe.battery_pct())  # the simulated pack's charge, %
    heading_deg = ReadThrough(lambda e: e.airframe.heading_deg())

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

    def _dispatch(self, kind: str, msg: MAVLink_message) -> None:
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
