"""Ground side of the link: watches N drones, commands them with ack, retry and backoff.

Per drone: a SUB to its telemetry PUB, a SUB to its frame XPUB (optional) and a DEALER to its
command ROUTER, each a CURVE client with that drone's server key when secured.

Threading: one I/O thread owns every socket. `send_command` is thread-safe and blocks the caller
(`send_command_async` returns a concurrent.futures.Future); never call the blocking form from a
callback. Callbacks (`on_telemetry`, `on_frame`, `on_step`, `on_declaration`, `on_link`) run on
the I/O thread and must return quickly (hand the data to a queue or a Qt signal).

Commands: each gets the next seq of this link's session. An attempt that is not acked within its
timeout is re-sent with the same (session, seq), the timeout growing by `backoff` each time; the
drone executes a seq once and answers duplicates from its cache, so a retry across a reconnect (even
from a new socket, see `reconnect`) is never executed twice. The attempts, acks and retries are
common.link.acked's.

Each command is bound to one run of its drone: the first attempt that leaves carries the drone's
session (its run nonce, learned from whatever that drone sent last: a heartbeat reply, telemetry, a
heartbeat) and every attempt is stamped with the send time on the drone's clock (this link's
heartbeat estimate of it). Until both are known, which takes one heartbeat round trip after
`add_drone`, attempts wait; the heartbeat reply sends them at once. A drone restarted in between
refuses a retry bound to its previous run (Ack result "unbound"): the caller decides to re-send.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import zmq

from common import wire
from common.clock import Clock, WallClock
from common.errors import LinkError
from common.link.acked import AckedCommands, PendingCommand, stamped_header
from common.link.clock_sync import ClockOffsetEstimator
from common.link.io_thread import IoThread
from common.link.liveness import LinkEvent, Liveness, check_timing
from common.link.security import CurveClient, Insecure, apply_client
from common.link.stats import LinkStats
from common.messages import (
    COMMAND_TYPES,
    Ack,
    Body,
    Declaration,
    FrameMeta,
    Heartbeat,
    HeartbeatReply,
    HeartbeatRequest,
    Step,
    TelemetryMessage,
    Traffic,
)

log = logging.getLogger(__name__)

WAITING_HEARTBEAT_S = 0.05  # heartbeat period while a command waits for its drone's run and clock


@dataclass(frozen=True)
class DroneEndpoint:
    drone_id: str
    telemetry_endpoint: str
    frame_endpoint: str
    command_endpoint: str
    server_public_key: bytes | None = None  # the drone's Z85 CURVE public key (required when secured)


@dataclass(frozen=True)
class GroundLinkConfig:
    heartbeat_interval_s: float = 0.5
    link_timeout_s: float = 2.0  # a drone is "lost" after this long without any message from it
    subscribe_frames: bool = True
    frame_ack_min_interval_s: float = 0.02  # frames are acknowledged through an early heartbeat
    command_timeout_s: float = 0.5  # first attempt; later ones grow by `backoff`
    command_retries: int = 4
    backoff: float = 1.5
    telemetry_rcvhwm: int = 100
    frame_rcvhwm: int = 2

    def __post_init__(self) -> None:
        check_timing(self.heartbeat_interval_s, self.link_timeout_s)
        timeout_ok = 0 < self.command_timeout_s < math.inf
        if not (timeout_ok and self.command_retries >= 0 and 1.0 <= self.backoff < math.inf):
            raise ValueError(
                f"need command_timeout_s > 0 ({self.command_timeout_s}), command_retries >= 0 "
                f"({self.command_retries}) and backoff >= 1 ({self.backoff})"
            )


@dataclass
class _Drone:
    endpoint: DroneEndpoint
    liveness: Liveness
    clock: ClockOffsetEstimator
    sub: Any = None
    frames: Any = None
    dealer: Any = None
    hb_seq: int = 0
    next_heartbeat_s: float = 0.0
    last_heartbeat_s: float = 0.0
    last_frame_seq: int = -1
    run_session_id: str = ""  # the drone's session (its run nonce) as last heard; "" until then


TelemetryCallback = Callable[[str, wire.Envelope, TelemetryMessage], None]
FrameCallback = Callable[[str, wire.Envelope, FrameMeta, bytes], None]
StepCallback = Callable[[str, wire.Envelope, Step], None]
DeclarationCallback = Callable[[str, wire.Envelope, Declaration], None]


class GroundLink(IoThread):
    tick_s = 0.01  # retry deadlines and heartbeats are checked this often

    def __init__(
        self,
        config: GroundLinkConfig,
        security: CurveClient | Insecure,
        *,
        clock: Clock | None = None,
        on_telemetry: TelemetryCallback | None = None,
        on_frame: FrameCallback | None = None,
        on_step: StepCallback | None = None,
        on_declaration: DeclarationCallback | None = None,
        on_link: Callable[[LinkEvent], None] | None = None,
    ) -> None:
        if not isinstance(security, (CurveClient, Insecure)):
            raise TypeError("security must be CurveClient(...) or Insecure() (chosen explicitly)")
        super().__init__("ground-link", LinkStats("ground link"))
        self.config = config
        self.security = security
        self.session_id = uuid.uuid4().hex[:16]
        self.clock: Clock = clock or WallClock()
        self.on_telemetry = on_telemetry
        self.on_frame = on_frame
        self.on_step = on_step
        self.on_declaration = on_declaration
        self.on_link = on_link
        self._drones: dict[str, _Drone] = {}
        self._commands = AckedCommands(self._drones, self.stats, self.clock, config.backoff)
        self._seq = 0
        self._seq_lock = threading.Lock()

    # -- public, thread-safe ----------------------------------------------------------------------

    def add_drone(self, endpoint: DroneEndpoint) -> None:
        self.call_and_wait(lambda: self._add_drone(endpoint))

    def remove_drone(self, drone_id: str) -> None:
        self.call_and_wait(lambda: self._remove_drone(drone_id))

    def reconnect(self, drone_id: str) -> None:
        """Drop and recreate the sockets to one drone (e.g. after its address changed, or to clear a
        wedged connection). Commands in flight keep retrying on the new DEALER."""

        def task() -> None:
            drone = self._drone(drone_id)
            self._close_sockets(drone)
            self._open_sockets(drone)
            self.stats.add("reconnects")

        self.call_and_wait(task)

    def drone_ids(self) -> list[str]:
        return list(self._drones)

    def link_state(self, drone_id: str) -> str:
        return self._drone(drone_id).liveness.state

    def run_session_id(self, drone_id: str) -> str:
        """The session of the drone's current run (its nonce, which every command echoes); "" until
        heard."""
        return self._drone(drone_id).run_session_id

    def clock_offset(self, drone_id: str) -> ClockOffsetEstimator:
        """The estimator for one drone: offset_s (drone minus ground clock), rtt_s, to_ground_time()."""
        return self._drone(drone_id).clock

    def send_command_async(
        self, drone_id: str, command: Body, timeout_s: float | None = None, retries: int | None = None
    ) -> Future[Ack]:
        """Send a command; the future resolves to the drone's Ack or fails with LinkError."""
        if command.TYPE not in {cls.TYPE for cls in COMMAND_TYPES}:
            raise ValueError(f"{type(command).__name__} is not a command")
        timeout_s = self.config.command_timeout_s if timeout_s is None else timeout_s
        retries = self.config.command_retries if retries is None else retries
        if timeout_s <= 0 or retries < 0:
            raise ValueError(f"timeout_s {timeout_s} must be positive and retries {retries} not negative")
        with self._seq_lock:
            seq = self._seq
            self._seq += 1
        future: Future[Ack] = Future()
        try:
            session = self.session_id
            parts = wire.encode(command, drone_id=drone_id, session_id=session, seq=seq, send_time_s=0.0)
        except wire.WireError as exc:  # e.g. an instruction over its length limit: failed, never sent
            self.stats.add("commands_invalid")
            future.set_exception(LinkError(f"{command.TYPE} not sent: {exc}"))
            return future
        pending = PendingCommand(drone_id, seq, command.TYPE, parts, future, timeout_s, retries)
        self.call_soon(lambda: self._commands.start(pending, time.monotonic()))
        return future

    def send_traffic(self, drone_id: str, traffic: Traffic) -> None:
        """Relay fleet mates' positions to one drone: not acknowledged, not retried (the next relay
        replaces it); dropped when the drone's queue is full or the drone is unknown."""
        with self._seq_lock:
            seq = self._seq
            self._seq += 1
        try:
            session = self.session_id
            parts = wire.encode(traffic, drone_id=drone_id, session_id=session, seq=seq, send_time_s=0.0)
        except wire.WireError as exc:
            self.stats.add("traffic_invalid")
            self.stats.log_limited("traffic_invalid", f"traffic for {drone_id} not sent: {exc}")
            return
        self.call_soon(lambda: self._send_unacked(drone_id, parts))

    def _send_unacked(self, drone_id: str, parts: list[bytes]) -> None:
        drone = self._drones.get(drone_id)
        if drone is None:
            return
        if not (drone.run_session_id and drone.clock.ready):
            self.stats.add("dropped_traffic_unbound")  # the next relay, once the drone is heard, goes
            return
        # Bound and stamped like a command: the drone refuses stale or replayed traffic too.
        header = stamped_header(parts[0], drone.clock.to_drone_time(self.clock.now()), drone.run_session_id)
        try:
            drone.dealer.send_multipart([header, parts[1]], zmq.NOBLOCK)
            self.stats.add("sent_traffic")
        except zmq.Again:
            self.stats.add("dropped_traffic")
            self.stats.log_limited(
                "dropped_traffic", f"traffic for {drone_id} dropped at the high-water mark"
            )

    def send_command(
        self, drone_id: str, command: Body, timeout_s: float | None = None, retries: int | None = None
    ) -> Ack:
        """Blocking form of send_command_async: the Ack, or LinkError after the last retry timed out.
        `timeout_s` is the first attempt's wait; attempt k waits timeout_s * backoff**k."""
        if threading.current_thread() is self._thread:
            raise LinkError("send_command would deadlock on the link's own thread; use send_command_async")
        future = self.send_command_async(drone_id, command, timeout_s, retries)
        first_s = self.config.command_timeout_s if timeout_s is None else timeout_s
        n = (self.config.command_retries if retries is None else retries) + 1
        total_s = sum(first_s * self.config.backoff**k for k in range(n))
        return future.result(timeout=total_s + 5.0)

    # -- I/O thread: drones and sockets -----------------------------------------------------------

    def _open(self) -> None:
        pass

    def _close(self) -> None:
        self._commands.fail_all()
        for drone in self._drones.values():
            self._close_sockets(drone)

    def _drone(self, drone_id: str) -> _Drone:
        try:
            return self._drones[drone_id]
        except KeyError:
            raise LinkError(f"unknown drone {drone_id!r} (known: {sorted(self._drones)})") from None

    def _add_drone(self, endpoint: DroneEndpoint) -> None:
        if endpoint.drone_id in self._drones:
            raise LinkError(f"drone {endpoint.drone_id!r} is already connected")
        drone = _Drone(
            endpoint, Liveness(endpoint.drone_id, self.config.link_timeout_s), ClockOffsetEstimator()
        )
        self._open_sockets(drone)
        self._drones[endpoint.drone_id] = drone

    def _remove_drone(self, drone_id: str) -> None:
        drone = self._drones.pop(drone_id, None)
        if drone is not None:
            self._close_sockets(drone)
        self._commands.fail_drone(drone_id)

    def _socket(self, kind: int, endpoint: DroneEndpoint, address: str, label: str) -> Any:
        assert self.context is not None
        sock = self.context.socket(kind)
        sock.linger = 0
        sock.setsockopt(zmq.RECONNECT_IVL, 100)
        sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        sock.setsockopt(zmq.HEARTBEAT_IVL, 1000)
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3000)
        # A frame over its cap is refused by ZeroMQ itself (the sender is disconnected), never buffered.
        if kind == zmq.SUB:
            sock.rcvhwm = self.config.frame_rcvhwm if label == "frame" else self.config.telemetry_rcvhwm
            sock.setsockopt(zmq.SUBSCRIBE, b"")
            sock.setsockopt(
                zmq.MAXMSGSIZE,
                wire.MAX_PART_BYTES if label == "frame" else 2 * max(wire.MAX_BODY_BYTES.values()),
            )
        else:
            sock.setsockopt(zmq.IMMEDIATE, 1)  # no queueing into a connection that is not up
            sock.sndhwm = 100
            sock.setsockopt(zmq.MAXMSGSIZE, 2 * max(wire.MAX_BODY_BYTES.values()))
        apply_client(sock, self.security, endpoint.server_public_key)
        sock.connect(address)
        return sock

    def _open_sockets(self, drone: _Drone) -> None:
        ep = drone.endpoint
        drone.sub = self._socket(zmq.SUB, ep, ep.telemetry_endpoint, "telemetry")
        self._register(drone.sub, functools.partial(self._on_sub, drone, drone.sub), "telemetry")
        if self.config.subscribe_frames:
            drone.frames = self._socket(zmq.SUB, ep, ep.frame_endpoint, "frame")
            self._register(drone.frames, functools.partial(self._on_sub, drone, drone.frames), "frame")
        drone.dealer = self._socket(zmq.DEALER, ep, ep.command_endpoint, "command")
        self._register(drone.dealer, functools.partial(self._on_dealer, drone, drone.dealer), "command")

    def _close_sockets(self, drone: _Drone) -> None:
        for name in ("sub", "frames", "dealer"):
            sock = getattr(drone, name)
            if sock is not None:
                self._unregister(sock)
                sock.close(linger=0)
                setattr(drone, name, None)

    # -- I/O thread: receiving --------------------------------------------------------------------

    def _decode(self, drone: _Drone, parts: list[bytes]) -> wire.Message | None:
        self.stats.add("received")
        try:
            message = wire.decode(parts)
        except wire.WireError as exc:
            self.stats.reject(exc.kind, f"from {drone.endpoint.drone_id}: {exc}")
            return None
        if message.envelope.drone_id != drone.endpoint.drone_id:
            self.stats.reject(
                "wrong_drone",
                f"a {message.envelope.type} from {message.envelope.drone_id!r} "
                f"on {drone.endpoint.drone_id!r}'s socket",
            )
            return None
        self._learn_run(drone, message.envelope.session_id)
        return message

    def _learn_run(self, drone: _Drone, session_id: str) -> None:
        if session_id == drone.run_session_id:
            return
        if drone.run_session_id:
            log.info(
                "drone %s is a new run (session %s, was %s): its clock is estimated afresh",
                drone.endpoint.drone_id,
                session_id,
                drone.run_session_id,
            )
            self.stats.add("drone_runs_changed")
            # Another process, perhaps on another computer: the old clock samples do not apply.
            drone.clock = ClockOffsetEstimator()
        drone.run_session_id = session_id

    def _received(self, drone: _Drone, sock: Any, topic: bool) -> Iterator[tuple[bytes, wire.Message]]:
        """(topic, message) for each valid message waiting on `sock` (its first part is the topic when
        `topic`); at most 256 a call, so that a flood on one socket cannot starve the others."""
        for _ in range(256):
            try:
                raw = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if not topic:
                head, parts = b"", raw
            else:
                head, parts = (raw[0], raw[1:]) if raw else (b"", [])
            message = self._decode(drone, parts)
            if message is not None:
                yield head, message

    def _on_sub(self, drone: _Drone, sock: Any) -> None:
        for topic, message in self._received(drone, sock, topic=True):
            if wire.TOPIC_BY_TYPE.get(message.envelope.type) != topic:
                self.stats.reject(
                    wire.ProtocolErrorKind.UNEXPECTED, f"a {message.envelope.type} under topic {topic[:16]!r}"
                )
                continue
            self.stats.add("accepted")
            self._heard(drone)
            self._dispatch(drone, message)

    def _dispatch(self, drone: _Drone, message: wire.Message) -> None:
        drone_id, envelope, body = drone.endpoint.drone_id, message.envelope, message.body
        self.stats.add(f"received_{envelope.type}")
        if isinstance(body, TelemetryMessage):
            if self.on_telemetry:
                self.on_telemetry(drone_id, envelope, body)
        elif isinstance(body, FrameMeta):
            drone.last_frame_seq = max(drone.last_frame_seq, body.frame_seq)
            now_s = time.monotonic()
            if now_s - drone.last_heartbeat_s >= self.config.frame_ack_min_interval_s:
                self._send_heartbeat(drone, now_s)
            if self.on_frame:
                self.on_frame(drone_id, envelope, body, message.blob or b"")
        elif isinstance(body, Step):
            if self.on_step:
                self.on_step(drone_id, envelope, body)
        elif isinstance(body, Declaration):
            if self.on_declaration:
                self.on_declaration(drone_id, envelope, body)
        elif isinstance(body, Heartbeat):
            pass  # liveness already updated

    def _on_dealer(self, drone: _Drone, sock: Any) -> None:
        for _, message in self._received(drone, sock, topic=False):
            body = message.body
            if isinstance(body, (HeartbeatReply, Ack)):
                self.stats.add("accepted")
            if isinstance(body, HeartbeatReply):
                self._heard(drone)
                was_ready = drone.clock.ready
                drone.clock.add(body.t1_s, body.t2_s, body.t3_s, self.clock.now())
                if drone.clock.ready and not was_ready:
                    self._commands.send_waiting(drone.endpoint.drone_id, time.monotonic())
            elif isinstance(body, Ack):
                self._heard(drone)
                self._commands.on_ack(drone.endpoint.drone_id, body)
            else:
                self.stats.reject(
                    wire.ProtocolErrorKind.UNEXPECTED, f"a {message.envelope.type} on the command socket"
                )

    def _heard(self, drone: _Drone) -> None:
        event = drone.liveness.heard(time.monotonic())
        if event is not None:
            self._raise(event)

    def _raise(self, event: LinkEvent) -> None:
        log.info("drone %s link %s (silent %.2f s)", event.peer, event.state, event.silence_s)
        if self.on_link is not None:
            self.on_link(event)

    # -- I/O thread: sending ----------------------------------------------------------------------

    def _send_heartbeat(self, drone: _Drone, now_s: float) -> None:
        drone.last_heartbeat_s = now_s
        request = HeartbeatRequest(drone.hb_seq, self.clock.now(), drone.last_frame_seq)
        drone.hb_seq += 1
        with self._seq_lock:
            seq = self._seq
            self._seq += 1
        parts = wire.encode(
            request,
            drone_id=drone.endpoint.drone_id,
            session_id=self.session_id,
            seq=seq,
            send_time_s=request.t1_s,
            drone_session_id=drone.run_session_id,
        )
        with contextlib.suppress(zmq.Again):
            drone.dealer.send_multipart(parts, zmq.NOBLOCK)

    def _tick(self, now_s: float) -> None:
        self._commands.tick(now_s)
        waiting = self._commands.waiting_drones()
        for drone in self._drones.values():
            event = drone.liveness.check(now_s)
            if event is not None:
                self._raise(event)
            # A command waiting for the drone's run and clock asks for them now, not at the next
            # heartbeat: a fresh station's e-stop leaves one round trip after the connection is up.
            asking = (
                drone.endpoint.drone_id in waiting and now_s - drone.last_heartbeat_s >= WAITING_HEARTBEAT_S
            )
            if now_s >= drone.next_heartbeat_s or asking:
                drone.next_heartbeat_s = now_s + self.config.heartbeat_interval_s
                self._send_heartbeat(drone, now_s)
