"""Drone side of the link: publishes what the drone does, obeys acked commands exactly once.

Sockets (all bound by the drone, all CURVE servers when secured):
- telemetry PUB (small SNDHWM): telemetry, steps, declarations, heartbeats. A plain PUB on
  purpose: it drops only what a slow subscriber cannot take, so one stuck ground station never
  starves another; those drops happen inside ZeroMQ and cannot be counted here (the frame socket's
  can, below);
- frame XPUB (SNDHWM 2, XPUB_NODROP): frames only, each [topic, header, meta, jpeg]. A separate
  socket and TCP connection, so a frame backlog never delays telemetry; when a subscriber's queue
  is full the send fails at once, is counted (`frames_skipped_backlog`, in TelemetryMessage.link_dropped)
  and the frame budget learns of the backlog;
- command ROUTER: commands in, acks out; heartbeat requests in, replies out.

Threading: one I/O thread owns the sockets (common.link.io_thread). `publish_*` are thread-safe and
never block on the network. `publish_frame` encodes the JPEG on the caller's thread. The command
handler runs on the I/O thread and must return quickly (push the command to the flight loop's queue
and return an outcome); without a handler, commands land in `commands` for `receive_command()`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq

from common import wire
from common.clock import Clock, WallClock
from common.link.admission import AdmissionConfig, CommandAdmission
from common.link.budget import FrameBudget, FrameBudgetConfig, FrameDecision
from common.link.io_thread import IoThread
from common.link.liveness import LinkEvent, Liveness, check_timing
from common.link.security import CurveServer, Insecure, ZapHandler, apply_server
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
from common.pose import Pose

log = logging.getLogger(__name__)

_COMMAND_TYPE_NAMES = frozenset(cls.TYPE for cls in COMMAND_TYPES)
# What the command socket takes: commands, heartbeat requests and traffic.
_ACCEPTED_TYPE_NAMES = _COMMAND_TYPE_NAMES | {HeartbeatRequest.TYPE, Traffic.TYPE}


@dataclass(frozen=True)
class DroneLinkConfig:
    drone_id: str
    # "tcp://host:*" picks a free port; the bound addresses are in DroneLink.endpoints after start().
    telemetry_endpoint: str = "tcp://127.0.0.1:*"
    frame_endpoint: str = "tcp://127.0.0.1:*"
    command_endpoint: str = "tcp://127.0.0.1:*"
    heartbeat_interval_s: float = 0.5
    link_timeout_s: float = 2.0  # ground link is "lost" after this long without a ground heartbeat
    telemetry_hwm: int = 10
    frame_hwm: int = 2
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)  # command freshness and replay
    command_queue_size: int = 256
    budget: FrameBudgetConfig = field(default_factory=FrameBudgetConfig)

    def __post_init__(self) -> None:
        check_timing(self.heartbeat_interval_s, self.link_timeout_s)
        if not 0 < len(self.drone_id) <= wire.MAX_STRING_CHARS:
            raise ValueError(f"drone_id {self.drone_id!r} must have 1 to {wire.MAX_STRING_CHARS} characters")


@dataclass(frozen=True)
class ReceivedCommand:
    envelope: wire.Envelope
    body: Body
    client_key: str | None  # the ground station's Z85 public key (CURVE), None when insecure


@dataclass(frozen=True)
class CommandOutcome:
    ok: bool
    reason: str = ""


CommandHandler = Callable[[ReceivedCommand], CommandOutcome]


class DroneLink(IoThread):
    def __init__(
        self,
        config: DroneLinkConfig,
        security: CurveServer | Insecure,
        *,
        handler: CommandHandler | None = None,
        on_link: Callable[[LinkEvent], None] | None = None,
        clock: Clock | None = None,
        on_traffic: Callable[[Traffic], None] | None = None,
        on_refused: Callable[[wire.Envelope, str, str], None] | None = None,
    ) -> None:
        if not isinstance(security, (CurveServer, Insecure)):
            raise TypeError("security must be CurveServer(...) or Insecure() (chosen explicitly)")
        super().__init__(f"drone-link-{config.drone_id}", LinkStats(f"drone link {config.drone_id}"))
        self.config = config
        self.drone_id = config.drone_id
        self.security = security
        # This run's nonce: on everything the drone sends, and echoed by every command it will run,
        # so a command captured from an earlier onboard process is refused here (common.link.admission).
        self.session_id = uuid.uuid4().hex[:16]
        self.clock: Clock = clock or WallClock()
        self.handler = handler
        self.on_link = on_link
        self.on_traffic = on_traffic
        self.on_refused = on_refused  # (envelope, "stale" | "replayed" | "unbound", reason), I/O thread
        self.commands: queue.Queue[ReceivedCommand] = queue.Queue(config.command_queue_size)
        self.endpoints: dict[str, str] = {}
        self.budget = FrameBudget(config.budget)
        self._budget_lock = threading.Lock()
        self._frame_seq = 0
        self._pending_frame: tuple[FrameMeta, bytes] | None = None
        self._frame_lock = threading.Lock()
        self._seq = 0
        self._admission: CommandAdmission[Ack] = CommandAdmission(self.session_id, config.admission)
        self._ground = Liveness("ground", config.link_timeout_s)
        self._next_heartbeat_s = 0.0
        self._pub: Any = None
        self._frames: Any = None
        self._router: Any = None
        self._zap: ZapHandler | None = None

    # -- public, thread-safe ----------------------------------------------------------------------

    @property
    def ground_link_state(self) -> str:
        return self._ground.state

    @property
    def ground_last_heard_s(self) -> float | None:
        """time.monotonic() when the ground station was last heard (None: never)."""
        return self._ground.last_heard_s

    def publish_telemetry(self, telemetry: TelemetryMessage) -> None:
        self.call_soon(lambda: self._publish(wire.TOPIC_TELEMETRY, telemetry))

    def publish_step(self, step: Step) -> None:
        self.call_soon(lambda: self._publish(wire.TOPIC_STEP, step))

    def publish_declaration(self, declaration: Declaration) -> None:
        self.call_soon(lambda: self._publish(wire.TOPIC_DECLARATION, declaration))

    def publish_frame(
        self, image_bgr: Any, capture_time_s: float, pose_ned: Pose, camera: str = "front"
    ) -> FrameDecision:
        """Ask the frame budget; when it says send, JPEG-encode here (caller's thread) and queue it.
        Only the newest queued frame is kept: an older one not yet sent is dropped (counted)."""
        now_s = time.monotonic()
        with self._budget_lock:
            decision = self.budget.decide(now_s, capture_time_s)
        if not decision.send:
            self.stats.add(f"frames_skipped_{decision.reason}")
            return decision
        import cv2

        ok, encoded = cv2.imencode(".jpg", image_bgr, [int(cv2.IMWRITE_JPEG_QUALITY), decision.quality])
        if not ok:
            self.stats.add("frames_encode_failed")
            return FrameDecision(False, decision.quality, "encode_failed")
        height_px, width_px = image_bgr.shape[:2]
        self.publish_jpeg(
            encoded.tobytes(), capture_time_s, pose_ned, width_px, height_px, decision.quality, camera
        )
        return decision

    def publish_jpeg(
        self,
        jpeg: bytes,
        capture_time_s: float,
        pose_ned: Pose,
        width_px: int,
        height_px: int,
        quality: int,
        camera: str = "front",
    ) -> int:
        """Queue an already-encoded frame (bypasses the budget's decision but is recorded in it);
        returns its frame_seq."""
        with self._frame_lock:
            frame_seq = self._frame_seq
            self._frame_seq += 1
        meta = FrameMeta(frame_seq, capture_time_s, pose_ned, width_px, height_px, quality, camera)
        with self._budget_lock:
            self.budget.record_sent(frame_seq, len(jpeg), quality, time.monotonic(), capture_time_s)
        with self._frame_lock:
            if self._pending_frame is not None:
                self.stats.add("frames_superseded")
            self._pending_frame = (meta, jpeg)
        self.call_soon(self._flush_frame)
        return frame_seq

    def receive_command(self, timeout_s: float | None = None) -> ReceivedCommand | None:
        """The next command accepted by the default handler (none when a handler was given)."""
        try:
            return self.commands.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def restart_command_socket(self) -> None:
        """Close and re-bind the command ROUTER on the same address (recovery, and tests of it).
        What the drone remembers of each session survives, so retried commands are still executed once."""
        if threading.current_thread() is self._thread:
            self._restart_router()
        else:
            self.call_and_wait(self._restart_router)

    # -- I/O thread -------------------------------------------------------------------------------

    def _open(self) -> None:
        assert self.context is not None
        if isinstance(self.security, CurveServer):
            self._zap = ZapHandler(self.context, self.security, self.stats)
            self._register(self._zap.socket, self._zap.handle)
        self._pub = self._bind(
            zmq.PUB, self.config.telemetry_endpoint, "telemetry", self.config.telemetry_hwm
        )
        self._frames = self._bind(zmq.XPUB, self.config.frame_endpoint, "frame", self.config.frame_hwm)
        self._register(self._frames, lambda: self._drain_subscriptions(self._frames), "frame")
        self._register(self._pub, None, "telemetry")
        self._open_router(self.config.command_endpoint)

    def _bind(self, kind: int, endpoint: str, label: str, hwm: int) -> Any:
        assert self.context is not None
        sock = self.context.socket(kind)
        sock.linger = 0
        sock.sndhwm = hwm
        sock.setsockopt(zmq.HEARTBEAT_IVL, 1000)
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3000)
        if kind == zmq.XPUB:
            sock.setsockopt(zmq.XPUB_NODROP, 1)
            sock.setsockopt(zmq.MAXMSGSIZE, 1024)  # what it receives are subscriptions: a few bytes
        apply_server(sock, self.security)
        sock.bind(endpoint)
        self.endpoints[label] = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        return sock

    def _open_router(self, endpoint: str) -> None:
        assert self.context is not None
        sock = self.context.socket(zmq.ROUTER)
        sock.linger = 0
        sock.rcvhwm = 1000
        sock.sndhwm = 1000
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        # A frame over the largest command's cap is refused by ZeroMQ itself (the peer is dropped).
        sock.setsockopt(zmq.MAXMSGSIZE, 2 * max(wire.MAX_BODY_BYTES.values()))
        sock.setsockopt(zmq.HEARTBEAT_IVL, 1000)
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3000)
        apply_server(sock, self.security)
        sock.bind(endpoint)
        self.endpoints["command"] = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._router = sock
        self._register(sock, self._on_router, "command")

    def _restart_router(self) -> None:
        endpoint = self.endpoints["command"]
        self._unregister(self._router)
        self._router.close(linger=0)
        self.stats.add("command_socket_restarts")
        for attempt in range(50):
            try:
                self._open_router(endpoint)
                return
            except zmq.ZMQError:
                if attempt == 49:
                    raise
                time.sleep(0.02)  # the port is released asynchronously by the old socket

    def _close(self) -> None:
        if self._zap is not None:
            self._unregister(self._zap.socket)
            self._zap.close()

    def _next_seq(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def _encode(self, body: Body, blob: bytes | None = None) -> list[bytes]:
        return wire.encode(
            body,
            drone_id=self.drone_id,
            session_id=self.session_id,
            seq=self._next_seq(),
            send_time_s=self.clock.now(),
            blob=blob,
        )

    def _publish(self, topic: bytes, body: Body) -> None:
        try:
            parts = self._encode(body)
        except wire.WireError as exc:  # our own message out of range: not sent, never a crash
            self.stats.add("publish_invalid")
            self.stats.log_limited("publish_invalid", f"{body.TYPE} not sent: {exc}")
            return
        try:
            self._pub.send_multipart([topic, *parts], zmq.NOBLOCK)
            self.stats.add(f"sent_{body.TYPE}")
        except zmq.Again:
            self.stats.add("publish_dropped")
            self.stats.log_limited("publish_dropped", f"{body.TYPE} dropped at the high-water mark")

    def _flush_frame(self) -> None:
        with self._frame_lock:
            pending, self._pending_frame = self._pending_frame, None
        if pending is None:
            return
        meta, jpeg = pending
        try:
            parts = self._encode(meta, jpeg)
        except wire.WireError as exc:
            self.stats.add("publish_invalid")
            self.stats.log_limited("publish_invalid", f"frame not sent: {exc}")
            return
        try:
            self._frames.send_multipart([wire.TOPIC_FRAME, *parts], zmq.NOBLOCK)
            self.stats.add("frames_sent")
        except zmq.Again:
            self.stats.add("frames_skipped_backlog")
            self.stats.log_limited("frames_skipped_backlog", "frame dropped at the high-water mark (backlog)")
            with self._budget_lock:
                self.budget.record_backlog(time.monotonic())

    def _drain_subscriptions(self, sock: Any) -> None:
        for _ in range(100):
            try:
                sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return

    def _on_router(self) -> None:
        for _ in range(256):  # bounded, so a flood cannot starve the telemetry sends
            try:
                frames = self._router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            self._handle_request(frames)

    def _handle_request(self, frames: list[Any]) -> None:
        self.stats.add("received")
        identity = frames[0].bytes
        parts = [f.bytes for f in frames[1:]]
        try:
            message = wire.decode(parts)
        except wire.WireError as exc:
            self.stats.reject(exc.kind, f"command socket: {exc}")
            return
        envelope, body = message.envelope, message.body
        if envelope.drone_id != self.drone_id:
            self.stats.reject(
                "wrong_drone",
                f"a {envelope.type} addressed to drone {envelope.drone_id!r} (this is {self.drone_id!r})",
            )
            return
        if envelope.type not in _ACCEPTED_TYPE_NAMES:
            self.stats.reject(wire.ProtocolErrorKind.UNEXPECTED, f"a {envelope.type} on the command socket")
            return
        now_s = time.monotonic()
        if isinstance(body, HeartbeatRequest):
            self.stats.add("accepted")
            t2_s = self.clock.now()
            self._heard(now_s)
            if body.last_frame_seq >= 0:
                with self._budget_lock:
                    self.budget.record_acked(body.last_frame_seq)
            self._reply(identity, HeartbeatReply(body.hb_seq, body.t1_s, t2_s, self.clock.now()))
            return
        if isinstance(body, Traffic):  # its numbers were range-checked while decoding (common.messages)
            verdict = self._admission.fresh(envelope.send_time_s, envelope.drone_session_id, self.clock.now())
            if verdict.status != "run":  # a replayed relay would place fleet mates where they were
                self.stats.reject(
                    verdict.status, f"traffic from session {envelope.session_id!r}: {verdict.reason}"
                )
                return
            self.stats.add("accepted")
            self._heard(now_s)
            self.stats.add("received_traffic")
            if self.on_traffic is not None:
                self.on_traffic(body)
            return
        client_key = None
        if isinstance(self.security, CurveServer):
            try:
                client_key = frames[-1].get("User-Id")
            except (zmq.ZMQError, KeyError):
                client_key = None
        # Keyed by the authenticated key too, so one ground station cannot collide with another's session.
        session_key = f"{client_key}/{envelope.session_id}"
        drone_now_s = self.clock.now()
        verdict = self._admission.admit(
            session_key, envelope.seq, envelope.send_time_s, envelope.drone_session_id, drone_now_s
        )
        if verdict.status in ("unbound", "stale", "replayed"):
            # Never run, and never a sign of a live ground station (a replay must not keep the link up).
            self.stats.reject(
                verdict.status,
                f"{envelope.type} seq {envelope.seq} of session {envelope.session_id!r}: {verdict.reason}",
            )
            self._reply(identity, Ack(envelope.seq, envelope.type, verdict.status, verdict.reason))
            if self.on_refused is not None:
                self.on_refused(envelope, verdict.status, verdict.reason)
            return
        self.stats.add("accepted")
        self._heard(now_s)
        if verdict.status == "duplicate" and verdict.cached is not None:
            cached = verdict.cached
            self.stats.add("duplicates")
            self._reply(
                identity, Ack(cached.command_seq, cached.command_type, cached.result, cached.reason, True)
            )
            return
        ack = self._execute(ReceivedCommand(envelope, body, client_key))
        self._admission.remember(session_key, envelope.seq, envelope.send_time_s, ack, drone_now_s)
        self._reply(identity, ack)

    def _execute(self, command: ReceivedCommand) -> Ack:
        seq, name = command.envelope.seq, command.envelope.type
        self.stats.add(f"commands_{name}")
        if self.handler is None:
            try:
                self.commands.put_nowait(command)
            except queue.Full:
                return Ack(seq, name, "rejected", f"command queue full ({self.config.command_queue_size})")
            return Ack(seq, name, "ok")
        try:
            outcome = self.handler(command)
        except Exception as exc:
            self.stats.add("handler_errors")
            log.exception("command handler failed on %s seq %d", name, seq)
            return Ack(seq, name, "error", f"{type(exc).__name__}: {exc}"[:200])
        if not outcome.ok:
            self.stats.add("refused")
            self.stats.log_limited("refused", f"{name} seq {seq}: {outcome.reason}")
        return Ack(seq, name, "ok" if outcome.ok else "rejected", outcome.reason)

    def _reply(self, identity: bytes, body: Body) -> None:
        try:
            self._router.send_multipart([identity, *self._encode(body)], zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            # EHOSTUNREACH: that connection is gone (reconnected); the ground station will retry and
            # get the cached ack on its new connection.
            self.stats.add("replies_unroutable")
            log.debug("could not send %s: %s", body.TYPE, exc)

    def _heard(self, now_s: float) -> None:
        event = self._ground.heard(now_s)
        if event is not None:
            self._raise(event)

    def _raise(self, event: LinkEvent) -> None:
        log.info("ground link %s (silent %.2f s)", event.state, event.silence_s)
        if self.on_link is not None:
            self.on_link(event)

    def _tick(self, now_s: float) -> None:
        event = self._ground.check(now_s)
        if event is not None:
            self._raise(event)
        if now_s >= self._next_heartbeat_s:
            self._next_heartbeat_s = now_s + self.config.heartbeat_interval_s
            with self._frame_lock:
                last_frame_seq = self._frame_seq - 1
            self._publish(
                wire.TOPIC_HEARTBEAT, Heartbeat(self.clock.now(), self._ground.state, last_frame_seq)
            )
