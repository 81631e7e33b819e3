"""Fuzz: 10,000 random and mutated messages into each side of the link over real sockets. Nothing
crashes, every bad message is counted (the counter equals the number sent), and the link still works
afterwards."""

from __future__ import annotations

import logging
import random
import time

import msgspec
import pytest
import zmq

from common import wire
from common.link import (
    CommandOutcome,
    DroneEndpoint,
    DroneLink,
    DroneLinkConfig,
    GroundLink,
    GroundLinkConfig,
    Insecure,
)
from common.messages import Ack, FrameMeta, Heartbeat, Instruction, Step, TelemetryMessage
from common.pose import Pose
from tests.support.processes import wait_for

N_MESSAGES = 10_000
POSE = Pose(1.0, 2.0, -3.0, 90.0)


def valid(body, drone_id: str = "d1", blob: bytes | None = None) -> list[bytes]:
    return wire.encode(body, drone_id=drone_id, session_id="fuzz", seq=5, send_time_s=1.0, blob=blob)


def samples(direction: str) -> list[list[bytes]]:
    """Valid messages of the kind that side expects, as material for mutations."""
    if direction == "to_drone":
        return [valid(Instruction("go to the tree")), valid(Instruction("x" * 50))]
    return [
        valid(TelemetryMessage(1.0, POSE, (0, 0, 0), 50.0, "hover", True, "up", 20.0)),
        valid(Step(1.0, "c", 1, None, "raw")),
        valid(Ack(3, "instruction", "ok")),
        valid(FrameMeta(1, 1.0, POSE, 640, 360, 85), blob=b"\xff\xd8jpeg"),
    ]


def bad_messages(direction: str, count: int, seed: int) -> list[list[bytes]]:
    """`count` messages that are each invalid for the receiving side, by construction."""
    rng = random.Random(seed)
    base = samples(direction)

    def rand_bytes(n_max: int = 120) -> bytes:
        return rng.randbytes(rng.randint(0, n_max))

    def random_parts() -> list[bytes]:
        parts = [rand_bytes() for _ in range(rng.randint(1, 4))]
        if parts[0][:1] in (b"\x96", b"\xdc", b"\xdd"):  # keep even a lucky header from being an array
            parts[0] = b"\xc1" + parts[0][1:]
        return parts

    def truncated() -> list[bytes]:
        parts = list(rng.choice(base))
        i = rng.randint(0, 1)
        parts[i] = parts[i][: rng.randint(0, len(parts[i]) - 1)]
        return parts

    def wrong_version() -> list[bytes]:
        parts = list(rng.choice(base))
        env = msgspec.msgpack.decode(parts[0])
        env[0] = rng.choice(
            [0, 1, wire.PROTOCOL_VERSION + 1, 99, -1, "1", None, 1.0]
        )  # 1: the release before
        parts[0] = msgspec.msgpack.encode(env)
        return parts

    def unknown_type() -> list[bytes]:
        parts = list(rng.choice(base))
        env = msgspec.msgpack.decode(parts[0])
        env[1] = rng.choice(["teleport", "", "TELEMETRY", "ack ", 7, None])
        parts[0] = msgspec.msgpack.encode(env)
        return parts

    def wrong_body() -> list[bytes]:
        parts = list(rng.choice(base))
        parts[1] = msgspec.msgpack.encode(
            rng.choice([7, "text", [1, 2], None, {"text": 5}, {"time_s": "now"}, {}])
        )
        return parts

    def header_fields_wrong() -> list[bytes]:
        parts = list(rng.choice(base))
        env = msgspec.msgpack.decode(parts[0])
        field_index = rng.choice([2, 3, 4, 5])
        env[field_index] = rng.choice([None, [1], {"a": 1}, b"bytes", -5 if field_index == 4 else "x" * 100])
        if field_index == 5:
            env[5] = "late"
        parts[0] = msgspec.msgpack.encode(env + ([] if rng.random() < 0.5 else ["", "extra"]))
        return parts

    def extra_parts() -> list[bytes]:
        parts = list(rng.choice(base))
        if len(parts) == 3:
            return parts[:2]  # a frame without its JPEG
        return parts + [rand_bytes() for _ in range(rng.randint(1, 2))]

    def flipped_header() -> list[bytes]:
        parts = list(rng.choice(base))
        header = bytearray(parts[0])
        i = rng.randint(0, 2)  # the array marker, the version, or the type's length marker
        header[i] ^= 1 << rng.randint(0, 7) if i else 0x0F
        parts[0] = bytes(header)
        return parts

    def other_drone() -> list[bytes]:
        body = (
            Instruction("hi")
            if direction == "to_drone"
            else TelemetryMessage(1.0, POSE, (0, 0, 0), None, "m", True, "up", 1.0)
        )
        return valid(body, drone_id="someone-else")

    def wrong_direction() -> list[bytes]:
        if direction == "to_drone":
            telemetry = TelemetryMessage(1.0, POSE, (0, 0, 0), None, "m", True, "up", 1.0)
            return valid(rng.choice([telemetry, Ack(1, "x", "ok")]))
        return valid(Instruction("not for a ground station"))

    makers = [
        random_parts,
        truncated,
        wrong_version,
        unknown_type,
        wrong_body,
        header_fields_wrong,
        extra_parts,
        flipped_header,
        other_drone,
        wrong_direction,
    ]
    return [rng.choice(makers)() for _ in range(count)]


def test_fuzz_drone_side(caplog):
    caplog.set_level(logging.WARNING, logger="common.link.stats")
    executed = []
    drone = DroneLink(
        DroneLinkConfig("d1"), Insecure(), handler=lambda c: executed.append(c) or CommandOutcome(True)
    )
    with drone:
        ctx = zmq.Context()
        rogue = ctx.socket(zmq.DEALER)
        rogue.linger = 0
        rogue.connect(drone.endpoints["command"])
        try:
            for parts in bad_messages("to_drone", N_MESSAGES, seed=1):
                rogue.send_multipart(parts)  # blocking: DEALER → ROUTER never drops
            assert wait_for(lambda: drone.stats.rejected_total() >= N_MESSAGES, timeout_s=15)
            time.sleep(0.05)
            stats = drone.stats.snapshot()
            assert drone.stats.rejected_total() == N_MESSAGES, stats
            assert stats["received"] == N_MESSAGES
            assert "internal_errors" not in stats
            assert executed == []
            # Every rejection counted, but logged at a bounded rate: the first few of each kind.
            kinds = [k for k in stats if k.startswith("rejected_")]
            logged = [r for r in caplog.records if r.name == "common.link.stats"]
            assert 0 < len(logged) <= 6 * len(kinds), (len(logged), kinds)
            # Still alive: a real command is executed and acked.
            with GroundLink(GroundLinkConfig(), Insecure()) as ground:
                ground.add_drone(
                    DroneEndpoint(
                        "d1",
                        drone.endpoints["telemetry"],
                        drone.endpoints["frame"],
                        drone.endpoints["command"],
                    )
                )
                assert ground.send_command("d1", Instruction("still here"), timeout_s=0.5).result == "ok"
            assert [c.body.text for c in executed] == ["still here"]
        finally:
            ctx.destroy(linger=0)


def test_fuzz_ground_side():
    """A rogue 'drone' feeds the ground station's SUB and DEALER sockets."""
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    frames = ctx.socket(zmq.PUB)
    router = ctx.socket(zmq.ROUTER)
    for sock in (pub, frames, router):
        sock.linger = 0
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    ports = {
        name: sock.bind_to_random_port("tcp://127.0.0.1")
        for name, sock in (("telemetry", pub), ("frame", frames), ("command", router))
    }
    endpoint = DroneEndpoint(
        "d1", *(f"tcp://127.0.0.1:{ports[k]}" for k in ("telemetry", "frame", "command"))
    )
    seen = []
    ground = GroundLink(
        GroundLinkConfig(heartbeat_interval_s=0.05), Insecure(), on_telemetry=lambda *a: seen.append(a)
    )
    try:
        ground.start()
        ground.add_drone(endpoint)
        assert router.poll(5000), "the ground station sent no heartbeat"
        identity = router.recv_multipart()[0]
        # The SUB must be connected before publishing, or the first messages are dropped on the floor.
        heartbeat = valid(Heartbeat(0.0, "up"))
        assert wait_for(
            lambda: (
                pub.send_multipart([wire.TOPIC_HEARTBEAT, *heartbeat])
                or ground.stats.get("received_heartbeat") > 0
            ),
            timeout_s=5,
        )
        before = ground.stats.rejected_total()
        assert before == 0
        messages = bad_messages("to_ground", N_MESSAGES, seed=2)
        rng = random.Random(3)
        sent = 0
        for i in range(0, N_MESSAGES, 100):
            for parts in messages[i : i + 100]:
                if rng.random() < 0.5:
                    router.send_multipart([identity, *parts])
                else:
                    topic = rng.choice([wire.TOPIC_TELEMETRY, wire.TOPIC_STEP, b"", b"zzz"])
                    pub.send_multipart([topic, *parts])
                sent += 1
            # PUB drops at its high-water mark, so pace the sender to what the receiver has counted.
            assert wait_for(lambda s=sent: ground.stats.rejected_total() >= s, timeout_s=10), (
                sent,
                ground.stats,
            )
        time.sleep(0.05)
        stats = ground.stats.snapshot()
        assert ground.stats.rejected_total() == N_MESSAGES, stats
        assert "internal_errors" not in stats
        assert seen == []
        # Still alive: a valid telemetry message is delivered.
        pub.send_multipart(
            [wire.TOPIC_TELEMETRY, *valid(TelemetryMessage(2.0, POSE, (0, 0, 0), 1.0, "m", True, "up", 1.0))]
        )
        assert wait_for(lambda: len(seen) == 1, timeout_s=5)
    finally:
        ground.close()
        ctx.destroy(linger=0)


@pytest.mark.parametrize("direction", ["to_drone", "to_ground"])
def test_fuzz_messages_are_all_invalid_for_the_codec(direction):
    """The generator's messages are rejected by the codec or by the side's own checks (sanity of the
    fuzz itself, so that the socket tests' exact counts mean what they say)."""
    for parts in bad_messages(direction, 2000, seed=4):
        try:
            message = wire.decode(parts)
        except wire.WireError:
            continue
        if direction == "to_drone":
            assert message.envelope.drone_id != "d1" or message.envelope.type in {"telemetry", "ack"}
        else:
            assert message.envelope.drone_id != "d1" or message.envelope.type == "instruction"
