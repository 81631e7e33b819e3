"""The link across processes on loopback, with real ZeroMQ sockets and CURVE: exactly-once commands
across forced reconnects, key-based refusal, link-lost / restored within the timeout, clock offset,
and telemetry that frames cannot starve. The drone runs in a spawned process driven over a Pipe."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import zmq

from common.clock import WallClock
from common.errors import LinkError
from common.keys import KeyPair
from common.link import (
    CommandOutcome,
    CurveClient,
    CurveServer,
    DroneEndpoint,
    DroneLink,
    DroneLinkConfig,
    GroundLink,
    GroundLinkConfig,
    Insecure,
)
from common.link.budget import FrameBudgetConfig
from common.messages import Instruction, TelemetryMessage
from common.pose import Pose
from tests.support.processes import wait_for

CTX = mp.get_context("spawn")
LATE_S = 1.5  # how late a link-lost may be seen on a loaded 2-core machine (never early)


def keypair() -> KeyPair:
    public_key, secret_key = zmq.curve_keypair()
    return KeyPair(public_key, secret_key)


class OffsetClock:
    """The drone's clock in the clock-offset test: wall time plus a known offset."""

    def __init__(self, offset_s: float) -> None:
        self.offset_s = offset_s
        self._wall = WallClock()

    def now(self) -> float:
        return self._wall.now() + self.offset_s

    def sleep_until(self, t_s: float) -> None:
        self._wall.sleep_until(t_s - self.offset_s)

    def sleep(self, duration_s: float) -> None:
        self._wall.sleep(duration_s)


@dataclass
class DroneOptions:
    drone_id: str = "d1"
    security: Any = field(default_factory=Insecure)
    endpoints: dict[str, str] = field(default_factory=dict)
    heartbeat_interval_s: float = 0.1
    link_timeout_s: float = 0.5
    clock_offset_s: float = 0.0
    slow_first_command_s: float = 0.0


def drone_main(conn: Any, options: DroneOptions) -> None:
    """The drone process: a DroneLink whose handler records every execution."""
    executions: list[tuple[str, int, str]] = []
    client_keys: set[str | None] = set()
    events: list[tuple[str, float]] = []
    link_box: dict[str, DroneLink] = {}

    def handler(command):
        executions.append((command.envelope.session_id, command.envelope.seq, command.body.text))
        client_keys.add(command.client_key)
        if len(executions) == 1 and options.slow_first_command_s:
            time.sleep(options.slow_first_command_s)  # the ack of attempt 1 comes late
        if command.body.text.startswith("restart"):
            # Re-bind the command socket before acking: the ack goes nowhere and the ground station's
            # retry must reach the new socket and get the cached ack.
            link_box["link"].restart_command_socket()
        return CommandOutcome(True, f"done {command.body.text}")

    config = DroneLinkConfig(
        options.drone_id,
        heartbeat_interval_s=options.heartbeat_interval_s,
        link_timeout_s=options.link_timeout_s,
        budget=FrameBudgetConfig(max_fps=1000.0, max_in_flight=1000),
        **{f"{k}_endpoint": v for k, v in options.endpoints.items()},
    )
    clock = OffsetClock(options.clock_offset_s) if options.clock_offset_s else None
    link = DroneLink(
        config,
        options.security,
        handler=handler,
        clock=clock,
        on_link=lambda e: events.append((e.state, e.silence_s)),
    )
    link_box["link"] = link
    link.start()
    conn.send(dict(link.endpoints))
    try:
        while True:
            request, arg = conn.recv()
            if request == "stop":
                break
            if request == "report":
                conn.send(
                    {
                        "stats": link.stats.snapshot(),
                        "executions": list(executions),
                        "events": list(events),
                        "client_keys": client_keys,
                    }
                )
            elif request == "flood":
                conn.send(flood(link, arg))
    finally:
        link.close()
    conn.send("stopped")


def flood(link: DroneLink, seconds: float) -> dict[str, int]:
    """Frames as fast as the budget takes them (noisy 640×360 images make big JPEGs) while telemetry
    goes out at 50 Hz from another thread."""
    import numpy as np

    stop = threading.Event()
    sent = {"telemetry": 0, "frames": 0}

    def telemetry_loop() -> None:
        while not stop.is_set():
            link.publish_telemetry(
                TelemetryMessage(time.monotonic(), Pose(0, 0, -5), (0, 0, 0), 80.0, "hover", True, "up", 50.0)
            )
            sent["telemetry"] += 1
            time.sleep(0.02)

    thread = threading.Thread(target=telemetry_loop)
    thread.start()
    rng = np.random.default_rng(1)
    images = [rng.integers(0, 255, (360, 640, 3), dtype=np.uint8) for _ in range(4)]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        decision = link.publish_frame(images[sent["frames"] % 4], time.monotonic(), Pose(0, 0, -5))
        sent["frames"] += int(decision.send)
    stop.set()
    thread.join()
    return sent


class Drone:
    def __init__(self, options: DroneOptions) -> None:
        self.options = options
        self.conn, child = CTX.Pipe()
        self.process = CTX.Process(target=drone_main, args=(child, options), daemon=True)
        self.process.start()
        if not self.conn.poll(30):
            self.kill()
            raise RuntimeError("drone process did not start")
        self.endpoints: dict[str, str] = self.conn.recv()

    def endpoint(self, server_key: bytes | None = None) -> DroneEndpoint:
        e = self.endpoints
        return DroneEndpoint(self.options.drone_id, e["telemetry"], e["frame"], e["command"], server_key)

    def ask(self, request: str, arg: Any = None, timeout_s: float = 30.0) -> Any:
        self.conn.send((request, arg))
        if not self.conn.poll(timeout_s):
            raise RuntimeError(f"drone process did not answer {request}")
        return self.conn.recv()

    def stop(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(RuntimeError, OSError, EOFError):
                self.ask("stop", timeout_s=10)
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)


@pytest.fixture
def drones():
    started: list[Drone] = []

    def start(options: DroneOptions) -> Drone:
        drone = Drone(options)
        started.append(drone)
        return drone

    yield start
    for drone in started:
        drone.stop()


@pytest.fixture
def grounds():
    started: list[GroundLink] = []

    def start(security, **config: Any) -> GroundLink:
        link = GroundLink(GroundLinkConfig(**config), security, on_link=None)
        started.append(link)
        link.start()
        return link

    yield start
    for link in started:
        link.close()


def test_commands_execute_exactly_once_across_reconnects(drones, grounds):
    drone_keys, ground_keys = keypair(), keypair()
    drone = drones(
        DroneOptions(
            security=CurveServer(drone_keys, frozenset({ground_keys.public_key})), slow_first_command_s=0.4
        )
    )
    ground = grounds(CurveClient(ground_keys), heartbeat_interval_s=0.1)
    ground.add_drone(drone.endpoint(drone_keys.public_key))
    assert wait_for(lambda: ground.link_state("d1") == "up")

    # 1. Ground side: the DEALER is dropped and recreated while attempt 1 waits for a slow ack.
    future = ground.send_command_async("d1", Instruction("first"), timeout_s=0.1, retries=10)
    time.sleep(0.15)
    ground.reconnect("d1")
    first = future.result(timeout=10)
    assert first.result == "ok" and first.reason == "done first"
    assert first.duplicate  # the answer came from the drone's cache, not from a second execution

    # 2. Drone side: the ROUTER is re-bound before the ack of some commands is sent, while other
    # commands are sent concurrently from several threads.
    acks: dict[str, Any] = {}

    def send(text: str) -> None:
        acks[text] = ground.send_command("d1", Instruction(text), timeout_s=0.15, retries=10)

    texts = [f"restart-{i}" if i % 3 == 0 else f"plain-{i}" for i in range(12)]
    threads = [threading.Thread(target=send, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(acks) == sorted(texts)
    assert all(a.result == "ok" and a.reason == f"done {t}" for t, a in acks.items())

    report = drone.ask("report")
    executed = [(session, seq) for session, seq, _ in report["executions"]]
    assert len(executed) == len(set(executed)) == len(texts) + 1  # each command exactly once
    assert sorted(text for _, _, text in report["executions"]) == sorted([*texts, "first"])
    assert report["stats"]["duplicates"] >= 1 + 4  # the reconnect and at least one per restart
    assert report["stats"]["command_socket_restarts"] == 4
    assert ground.stats.get("reconnects") == 1
    assert report["client_keys"] == {ground_keys.public_key.decode()}  # the CURVE identity of the sender


def test_unknown_keys_cannot_command_and_are_counted(drones, grounds):
    drone_keys, allowed, stranger = keypair(), keypair(), keypair()
    drone = drones(DroneOptions(security=CurveServer(drone_keys, frozenset({allowed.public_key}))))

    intruder = grounds(CurveClient(stranger))
    intruder.add_drone(drone.endpoint(drone_keys.public_key))
    with pytest.raises(LinkError, match="no ack"):
        intruder.send_command("d1", Instruction("take off"), timeout_s=0.2, retries=1)
    assert intruder.link_state("d1") != "up"
    assert intruder.stats.get("auth_failed_command") >= 1  # the drone refused our key

    plain = grounds(Insecure())  # no CURVE at all
    plain.add_drone(drone.endpoint())
    with pytest.raises(LinkError):
        plain.send_command("d1", Instruction("take off"), timeout_s=0.2, retries=0)

    impostor_view = grounds(CurveClient(allowed))  # right client key, wrong drone key (an impostor drone)
    impostor_view.add_drone(drone.endpoint(keypair().public_key))
    with pytest.raises(LinkError):
        impostor_view.send_command("d1", Instruction("take off"), timeout_s=0.2, retries=0)
    assert wait_for(lambda: impostor_view.stats.get("rejected_handshake") >= 1)

    report = drone.ask("report")
    assert report["executions"] == []
    assert report["stats"]["rejected_unauthenticated"] >= 1
    assert report["stats"]["rejected_handshake"] >= 2  # the NULL client and the wrong-server-key client

    friend = grounds(CurveClient(allowed))
    friend.add_drone(drone.endpoint(drone_keys.public_key))
    assert friend.send_command("d1", Instruction("take off"), timeout_s=0.5, retries=4).result == "ok"
    assert [text for _, _, text in drone.ask("report")["executions"]] == ["take off"]


def test_connections_that_never_speak_zeromq_are_counted_as_unauthenticated():
    """A port scan or an HTTP request to a CURVE drone never reaches a handshake: counted all the same."""
    drone_keys, allowed = keypair(), keypair()
    link = DroneLink(DroneLinkConfig("d1"), CurveServer(drone_keys, frozenset({allowed.public_key})))
    link.start()
    try:
        port = int(link.endpoints["command"].rsplit(":", 1)[1])
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                time.sleep(0.1)
        assert wait_for(lambda: link.stats.get("rejected_handshake") >= 3, timeout_s=10)
        time.sleep(0.3)
        assert link.stats.get("rejected_handshake") == 3, link.stats
        assert link.stats.telemetry_counts()["link_unauthenticated"] == 3
    finally:
        link.close()


def test_link_lost_within_timeout_and_restored(drones):
    timeout_s, interval_s = 0.5, 0.1
    drone = drones(DroneOptions(heartbeat_interval_s=interval_s, link_timeout_s=timeout_s))
    events: list[tuple[str, float, float]] = []
    ground = GroundLink(
        GroundLinkConfig(heartbeat_interval_s=interval_s, link_timeout_s=timeout_s),
        Insecure(),
        on_link=lambda e: events.append((e.state, e.silence_s, time.monotonic())),
    )
    with ground:
        ground.add_drone(drone.endpoint())
        assert wait_for(lambda: [e[0] for e in events] == ["up"])
        ports = dict(drone.endpoints)

        killed_s = time.monotonic()
        drone.kill()  # SIGKILL: no goodbye on the wire
        assert wait_for(lambda: len(events) >= 2, timeout_s=5)
        state, silence_s, at_s = events[1]
        assert state == "lost"
        # never before the timeout; how much after it depends on the load on this machine
        assert timeout_s <= silence_s <= timeout_s + LATE_S
        assert at_s - killed_s <= timeout_s + LATE_S

        restarted = drones(
            DroneOptions(heartbeat_interval_s=interval_s, link_timeout_s=timeout_s, endpoints=ports)
        )
        assert wait_for(lambda: len(events) >= 3, timeout_s=10)
        assert events[2][0] == "up"
        assert ground.send_command("d1", Instruction("again"), timeout_s=0.3, retries=5).result == "ok"

    # The ground station is gone: the drone raises its own link-lost within its timeout.
    # (A drone that has heard no ground station within the timeout since it started is "lost" too,
    # so the events may begin with one.)
    def after_up() -> list[tuple[str, float]]:
        events = restarted.ask("report")["events"]
        states = [e[0] for e in events]
        return events[states.index("up") :] if "up" in states else []

    assert wait_for(lambda: len(after_up()) >= 2, timeout_s=5, interval_s=0.1)
    drone_events = after_up()
    assert [e[0] for e in drone_events[:2]] == ["up", "lost"]
    assert timeout_s <= drone_events[1][1] <= timeout_s + LATE_S


def test_clock_offset_from_heartbeats(drones, grounds):
    drone = drones(DroneOptions(clock_offset_s=1234.5))
    ground = grounds(Insecure(), heartbeat_interval_s=0.05)
    ground.add_drone(drone.endpoint())
    estimator = ground.clock_offset("d1")
    assert wait_for(lambda: estimator.ready, timeout_s=5)
    time.sleep(0.5)  # ~10 samples: the min-RTT one wins
    # Both processes read the same system monotonic clock, so the true offset is exactly 1234.5 s.
    assert estimator.offset_s == pytest.approx(1234.5, abs=0.005)
    assert estimator.rtt_s is not None and estimator.rtt_s < 0.05
    # Commands are stamped on the drone's clock through that estimate: fresh there, so they run.
    assert ground.send_command("d1", Instruction("across the offset"), timeout_s=1.0).result == "ok"


def test_frames_never_starve_telemetry(drones):
    drone = drones(DroneOptions())
    counts = {"telemetry": 0, "frames": 0}

    def on_telemetry(drone_id, envelope, body):
        counts["telemetry"] += 1

    def on_frame(drone_id, envelope, meta, jpeg):
        counts["frames"] += 1
        assert jpeg[:2] == b"\xff\xd8" and len(jpeg) > 10_000

    ground = GroundLink(GroundLinkConfig(), Insecure(), on_telemetry=on_telemetry, on_frame=on_frame)
    with ground:
        ground.add_drone(drone.endpoint())
        assert wait_for(lambda: ground.link_state("d1") == "up")
        time.sleep(0.3)  # let the subscriptions settle
        sent = drone.ask("flood", 2.0)
        wait_for(lambda: counts["telemetry"] >= sent["telemetry"], timeout_s=30)  # a loaded machine is slow
    assert counts["frames"] > 0
    assert counts["telemetry"] == sent["telemetry"]  # every telemetry message, however many frames
    stats = drone.ask("report")["stats"]
    assert stats.get("frames_sent", 0) >= counts["frames"]


def test_unreachable_drone_times_out_and_removal_fails_pending(grounds):
    ground = grounds(Insecure())
    with zmq.Context() as ctx, ctx.socket(zmq.ROUTER) as silent:
        # A port that accepts connections but never answers.
        port = silent.bind_to_random_port("tcp://127.0.0.1")
        address = f"tcp://127.0.0.1:{port}"
        ground.add_drone(DroneEndpoint("d9", address, address, address))
        started = time.monotonic()
        with pytest.raises(
            LinkError, match=r"no ack from drone 'd9' for instruction seq \d+ after 3 attempts"
        ):
            ground.send_command("d9", Instruction("hello"), timeout_s=0.1, retries=2)
        assert 0.1 + 0.15 + 0.225 - 0.05 <= time.monotonic() - started < 2.0  # backoff 1.5
        pending = ground.send_command_async("d9", Instruction("bye"), timeout_s=5.0, retries=0)
        ground.remove_drone("d9")
        with pytest.raises(LinkError, match="removed"):
            pending.result(timeout=2)
        silent.close(linger=0)
