"""Fault row: the ground station validates what drones send. A real `dronecats gs --headless`
process, connected with `--keys` (CURVE) to a fake drone whose sockets are real ZeroMQ CURVE
servers, gets 10,000 fuzzed frames on its telemetry SUB, its frame SUB and its command DEALER:
it stays alive, every frame is accounted for (accepted + rejected + frames the fake drone's
sockets dropped at their high-water mark = sent, from the station's own counters; a burst of large
frames into a frame socket with a real drone's high-water mark makes sure some are), and what it
stores and prints is standard JSON with only finite numbers (before this, a fake drone's NaN,
±Infinity and -1e308 distances were stored and printed as `NaN` / `Infinity`)."""

from __future__ import annotations

import math
import subprocess
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import zmq

from common import wire
from common.keys import generate_keypair, load_keypair
from common.messages import (
    Ack,
    Declaration,
    FrameMeta,
    HeartbeatReply,
    HeartbeatRequest,
    Instruction,
    TelemetryMessage,
)
from common.pose import Pose
from ground_station.fleet.launch import free_port_block
from tests.support.fuzz_frames import ACCEPT, Fuzzed, Generator
from tests.support.processes import dronecats_cmd, stop_process, subprocess_env
from tests.support.validation import finite_everywhere, forge, strict_json

pytestmark = pytest.mark.slow

N_FRAMES = 10_000
BURST_FRAMES = 400
BURST_JPEG = b"\xff\xd8" + bytes(150_000)  # a large frame (the station keeps the bytes, never decodes)
GS_DURATION_S = 10.0  # after the link is up; sending takes ~1 s and the station keeps up: a wide margin


class FakeDrone:
    """Drone1's three sockets, CURVE servers with Drone1's key, sending whatever the test says."""

    def __init__(self, keys: Path, base_port: int) -> None:
        self.pair = load_keypair(keys / "Drone1.key_secret")
        self.base_port = base_port
        self.context = zmq.Context()
        self.sockets: dict[str, Any] = {}
        for offset, (route, kind) in enumerate(
            (("telemetry", zmq.XPUB), ("frame", zmq.XPUB), ("command", zmq.ROUTER))
        ):
            # The frame socket with a real drone's high-water mark (2), the others roomy.
            self.sockets[route] = self.bind(kind, offset, 2 if route == "frame" else 1000)
        self.identity: bytes | None = None
        self.seq = 0
        self.sent = {"accept": 0, "reject": 0}
        self.dropped = {"accept": 0, "reject": 0}
        self.instructions_acked = 0
        self.replies_sent = 0  # heartbeat replies
        self.unreachable = 0  # replies to a station that had already closed its DEALER

    def bind(self, kind: int, offset: int, sndhwm: int = 1000) -> Any:
        sock = self.context.socket(kind)
        sock.linger = 0
        sock.curve_server = True
        sock.curve_secretkey, sock.curve_publickey = self.pair.secret_key, self.pair.public_key
        sock.sndhwm = sndhwm
        if kind == zmq.XPUB:
            sock.setsockopt(zmq.XPUB_NODROP, 1)  # a full subscriber queue fails the send: countable
        else:
            sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.bind(f"tcp://127.0.0.1:{self.base_port + offset}")
        return sock

    def wait_connected(self, timeout_s: float = 60.0) -> None:
        """Until the station subscribed to both PUB sockets and its DEALER said hello (a heartbeat)."""
        subscribed: set[str] = set()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (len(subscribed) < 2 or self.identity is None):
            for route in ("telemetry", "frame"):
                sock = self.sockets[route]
                if sock.poll(20) and sock.recv()[:1] == b"\x01":
                    subscribed.add(route)
            self.serve_commands()
        assert len(subscribed) == 2 and self.identity is not None, (subscribed, self.identity)

    def serve_commands(self) -> None:
        """Read the station's DEALER traffic: heartbeats (answered, as a drone does), instructions (acked,
        counted)."""
        router = self.sockets["command"]
        while True:
            try:
                identity, *parts = router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            self.identity = identity
            message = wire.decode(parts)
            if isinstance(message.body, HeartbeatRequest):  # the station's clock estimate needs these
                now_s = time.monotonic()
                reply = HeartbeatReply(message.body.hb_seq, message.body.t1_s, now_s, now_s)
                if self.reply(Fuzzed(self.encode(reply), ACCEPT, "heartbeat_reply", "command")):
                    self.replies_sent += 1
            if isinstance(message.body, Instruction):
                ack = Ack(message.envelope.seq, "instruction", "ok")
                if self.reply(Fuzzed(self.encode(ack), ACCEPT, "ack", "command")):
                    self.instructions_acked += 1

    def reply(self, frame: Fuzzed) -> bool:
        """Answer the station's DEALER; False when it has gone. The station closes its DEALER as it
        ends, and ROUTER_MANDATORY then fails the send with EHOSTUNREACH (the real drone's link treats
        it the same way): that reply never left, so it is not counted as sent."""
        try:
            self.send(frame)
        except zmq.ZMQError as error:
            if error.errno != zmq.EHOSTUNREACH:
                raise
            self.unreachable += 1
            return False
        return True

    def encode(self, body: Any) -> list[bytes]:
        self.seq += 1
        return wire.encode(
            body, drone_id="Drone1", session_id="fake", seq=self.seq, send_time_s=time.monotonic()
        )

    def encode_frame(self, meta: FrameMeta, jpeg: bytes) -> list[bytes]:
        self.seq += 1
        return wire.encode(
            meta, drone_id="Drone1", session_id="fake", seq=self.seq, send_time_s=1.0, blob=jpeg
        )

    def send(self, frame: Fuzzed, patient: bool = True) -> None:
        """Send one frame. Patient: wait (up to 5 s) for room at a full high-water mark, so the
        frame does reach the station; impatient: a full queue drops it, counted here."""
        sock = self.sockets[frame.route]
        prefix = [self.identity] if frame.route == "command" else [frame.topic]
        deadline = time.monotonic() + (5.0 if patient else 0.0)
        while True:
            try:
                sock.send_multipart([*prefix, *frame.parts], zmq.NOBLOCK)
                self.sent[frame.expect] += 1
                return
            except zmq.Again:
                if time.monotonic() >= deadline:
                    self.dropped[frame.expect] += 1  # the high-water mark: never reached the station
                    return
                time.sleep(0.0005)

    def close(self) -> None:
        self.context.destroy(linger=0)


def tiny_jpeg() -> bytes:
    ok, data = cv2.imencode(".jpg", np.full((48, 64, 3), 120, np.uint8))
    assert ok
    return data.tobytes()


def test_10000_fuzzed_frames_to_the_ground_station_and_nothing_non_finite_stored(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    generate_keypair(keys, "gs")
    generate_keypair(keys, "Drone1")
    base = free_port_block(3)
    drone = FakeDrone(keys, base)
    export = tmp_path / "session.jsonl"
    argv = [
        "gs",
        "--headless",
        "--drones",
        f"Drone1=tcp://127.0.0.1:{base}",
        "--keys",
        str(keys / "gs.key_secret"),
    ]
    argv += ["--instruction", "go to the red car", "--duration-s", str(GS_DURATION_S), "--until", "none"]
    argv += ["--export", str(export)]
    out_path = tmp_path / "gs.out"
    with out_path.open("w") as out:
        gs = subprocess.Popen(
            dronecats_cmd(*argv), env=subprocess_env(), stdout=out, stderr=subprocess.STDOUT, text=True
        )
    try:
        drone.wait_connected()
        pose = Pose(0.0, 0.0, -3.0, 0.0)
        telemetry = TelemetryMessage(1.0, pose, (0, 0, 0), 90.0, "flying", True, "up", 20.0)
        drone.send(Fuzzed(drone.encode(telemetry), ACCEPT, "setup", "telemetry", wire.TOPIC_TELEMETRY))
        # The declarations of the issue, each its own frame: rejected, never stored.
        for i, distance in enumerate((math.nan, math.inf, -math.inf, -1e308)):
            body = {"declaration_id": f"bad-{i}", "t_s": 2.0, "pose_ned": {"x_m": 0, "y_m": 0, "z_m": -3},
                    "frame_seq": 1, "distance_m": distance}  # fmt: skip
            forged = forge("declaration", body, "Drone1", 900 + i, session_id="fake")
            drone.send(Fuzzed(forged, "reject", "issue", "telemetry", wire.TOPIC_DECLARATION))
        valid_declaration = Declaration("good-1", 3.0, pose, 1, "c", 4.5, None, True)
        drone.send(
            Fuzzed(drone.encode(valid_declaration), ACCEPT, "setup", "telemetry", wire.TOPIC_DECLARATION)
        )
        frames = Generator(seed=23, drone_id="Drone1", now_s=time.monotonic, session_id="fake").ground_frames(
            N_FRAMES, tiny_jpeg()
        )
        started = time.monotonic()
        for i, frame in enumerate(frames):
            drone.send(frame)
            if i % 100 == 99:
                drone.serve_commands()
        # A burst of large valid frames, sent without waiting for room (as a drone sends its frames):
        # the queues fill, and what does not fit is dropped at the high-water mark and counted.
        for _ in range(BURST_FRAMES):
            meta = FrameMeta(drone.seq + 1, 1.0, pose, 640, 360, 85)
            burst = Fuzzed(drone.encode_frame(meta, BURST_JPEG), ACCEPT, "burst", "frame", wire.TOPIC_FRAME)
            drone.send(burst, patient=False)
        fuzz_s = time.monotonic() - started
        assert gs.poll() is None, f"the ground station died during the fuzz: {out_path.read_text()[-2000:]}"
        while gs.poll() is None and time.monotonic() - started < GS_DURATION_S + 60:
            drone.serve_commands()
            time.sleep(0.05)
        assert gs.returncode is not None, "the ground station did not end after --duration-s"
    finally:
        if gs.poll() is None:
            stop_process(gs)
        drone.close()
    output = out_path.read_text()
    lines = [line for line in output.splitlines() if line.startswith("{")]
    assert lines, output[-3000:]
    summary = strict_json(lines[-1])  # standard JSON: no NaN / Infinity
    stats = summary["link"]
    rejected = sum(v for k, v in stats.items() if k.startswith("rejected_"))
    sent_total = sum(drone.sent.values()) + sum(drone.dropped.values())
    assert sent_total == N_FRAMES + BURST_FRAMES + 6 + drone.instructions_acked + drone.replies_sent
    # Every frame accounted for: what reached the station was accepted or rejected as labelled, and the
    # rest was dropped (counted) at the fake drone's high-water mark.
    assert stats["received"] == stats["accepted"] + rejected, stats
    assert (stats["accepted"], rejected) == (drone.sent["accept"], drone.sent["reject"]), (stats, drone.sent)
    assert stats["accepted"] + rejected + sum(drone.dropped.values()) == sent_total
    assert drone.dropped["accept"] > 0, (
        "the burst never reached the high-water mark: the drop path is untested"
    )
    assert "internal_errors" not in stats, output[-3000:]
    # Stored: only finite numbers, and none of the bad declarations.
    ids = [d["declaration_id"] for d in summary["declarations"]]
    assert "good-1" in ids and not any(i.startswith("bad-") for i in ids), ids
    assert finite_everywhere(summary)
    for line in export.read_text().splitlines():
        assert finite_everywhere(strict_json(line))
    print(
        f"fuzz {fuzz_s:.1f} s; sent {drone.sent}, dropped at the HWM {drone.dropped}, "
        f"{drone.unreachable} replies after the station left; station {stats}"
    )
