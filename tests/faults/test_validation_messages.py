"""The validation layer itself, in process (fast): every float of every message refuses NaN while
decoding, constructors refuse non-finite values, the encoder refuses what a peer would reject,
size caps, every entry of the config range table, and the fuzz generator's labels (so that the
socket rows' exact counts mean what they say)."""

from __future__ import annotations

import math
import time

import msgspec
import pytest

from common import wire
from common.actions import Go, Rotate
from common.config import load_config
from common.errors import ConfigError
from common.messages import Declaration, Instruction, TelemetryMessage, TrafficEntry
from common.pose import Pose
from onboard.config_limits import LIMITS
from onboard.runtime_config import RuntimeConfig
from tests.support.fuzz_frames import ACCEPT, Generator, leaves, with_leaf


def numbers_in(data: object) -> list[tuple[tuple, object]]:
    return [(path, v) for path, v in leaves(data) if isinstance(v, (int, float)) and not isinstance(v, bool)]


SAMPLES = [
    body
    for body in (
        *Generator(1, "d1", time.monotonic).command_samples(),
        *Generator(1, "d1", time.monotonic).ground_samples(),
    )
    if numbers_in(msgspec.to_builtins(body))  # an instruction or a hold has no number
]


@pytest.mark.parametrize("body", SAMPLES, ids=lambda b: b.TYPE)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e300])
def test_every_number_of_every_message_refuses_non_finite_and_huge_values(body, bad) -> None:
    data = msgspec.to_builtins(body)
    blob = b"\xff\xd8" if body.TYPE == "frame" else None
    for path, _ in numbers_in(data):
        header = msgspec.msgpack.encode([wire.PROTOCOL_VERSION, body.TYPE, "d1", "s", 1, 0.0])
        parts = [header, msgspec.msgpack.encode(with_leaf(data, path, bad))] + ([blob] if blob else [])
        with pytest.raises(wire.WireError) as caught:
            wire.decode(parts)
        assert caught.value.kind == wire.ProtocolErrorKind.BODY, (path, caught.value)


def test_constructors_refuse_non_finite_and_out_of_range_actions() -> None:
    with pytest.raises(ValueError, match="must be finite"):
        TelemetryMessage(1.0, Pose(math.nan, 0, 0), (0, 0, 0), None, "m", True, "up", 1.0)
    with pytest.raises(ValueError, match="not finite"):
        TrafficEntry("d2", (0.0, 0.0, 0.0), (math.inf, 0.0, 0.0), 0.1)
    for bad in [dict(point=(-100000, 99999), depth_m=5.0), dict(point=(5, 5), depth_m=-50.0),
                dict(point=(5, 5), depth_m=math.nan), dict(point=(5, 5), depth_m=0.0)]:  # fmt: skip
        with pytest.raises(ValueError):
            Go(**bad)  # type: ignore[arg-type]
    for angle in (math.nan, 361.0, -1e9):
        with pytest.raises(ValueError):
            Rotate(angle)


def test_the_encoder_refuses_what_a_peer_would_reject() -> None:
    declaration = Declaration("d", 1.0, Pose(0, 0, -3), 1, distance_m=-1e308)  # a range only decoding checks
    with pytest.raises(wire.WireError):
        wire.encode(declaration, drone_id="d1", session_id="s", seq=1, send_time_s=0.0)
    with pytest.raises(wire.WireError):
        wire.encode(Instruction("x" * 5000), drone_id="d1", session_id="s", seq=1, send_time_s=0.0)


def test_each_message_type_has_a_size_cap() -> None:
    assert set(wire.MAX_BODY_BYTES) == {cls.TYPE for cls in wire.BODY_TYPES.values()}
    header = msgspec.msgpack.encode([wire.PROTOCOL_VERSION, "heartbeat", "d1", "s", 1, 0.0])
    with pytest.raises(wire.WireError) as caught:
        wire.decode([header, b"\x80" + b" " * 300])
    assert caught.value.kind == wire.ProtocolErrorKind.SIZE
    with pytest.raises(wire.WireError) as caught:
        wire.decode([b"\x96" + b"\x00" * 300, b""])
    assert caught.value.kind == wire.ProtocolErrorKind.SIZE


@pytest.mark.parametrize(
    ("section", "field"),
    [(section, field) for section, fields in LIMITS.items() for field in fields],
)
def test_every_config_range_is_enforced_with_the_field_named(section: str, field: str) -> None:
    prefix = {"SafetyConfig": "safety.", "RecorderConfig": "recorder.", "RuntimeConfig": ""}[section]
    valid = LIMITS[section][field]
    for bad in (math.nan, math.inf, valid.high * 2 + 1, valid.low - 1):
        if (
            isinstance(bad, float)
            and math.isfinite(bad)
            and field
            in ("max_steps", "nice", "actuation_rt_priority", "max_consecutive_failures", "frames_max_bytes")
        ):
            bad = int(bad)  # fmt: skip
        if not math.isfinite(bad) and field in (
            "max_steps",
            "nice",
            "actuation_rt_priority",
            "max_consecutive_failures",
            "frames_max_bytes",
        ):
            continue  # an integer field: NaN is not an integer (refused by its type)  # fmt: skip
        with pytest.raises(ConfigError) as caught:
            load_config(
                RuntimeConfig,
                None,
                [f"{prefix}{field}={bad!r}".replace("nan", ".nan").replace("inf", ".inf")],
            )
        assert f"{prefix}{field}=" in str(caught.value) and str(valid) in str(caught.value), caught.value


@pytest.mark.parametrize("seed", [17, 23, 5])
def test_the_fuzz_generator_labels_agree_with_the_receivers(seed: int) -> None:
    g = Generator(seed, "Drone1", time.monotonic)
    for frame in g.command_frames(2000):
        try:
            message = wire.decode(frame.parts)
            accepted = message.envelope.drone_id == "Drone1" and message.envelope.type in (
                "heartbeat_request", "traffic", "judgement", "remote_action", "instruction", "order",
                "estop", "hold", "land", "return_home", "goto",
            )  # fmt: skip
        except wire.WireError:
            accepted = False
        assert accepted == (frame.expect == ACCEPT), (frame.kind, frame.parts[:2])
    for frame in g.ground_frames(2000, b"\xff\xd8"):
        try:
            message = wire.decode(frame.parts)
            accepted = message.envelope.drone_id == "Drone1" and (
                wire.TOPIC_BY_TYPE.get(message.envelope.type) == frame.topic
                if frame.route != "command"
                else message.envelope.type in ("ack", "heartbeat_reply")
            )
        except wire.WireError:
            accepted = False
        assert accepted == (frame.expect == ACCEPT), (frame.kind, frame.route, frame.parts[:2])


def test_a_command_over_its_limits_fails_its_future_and_is_never_sent() -> None:
    """The ground station never crashes on an operator's too-long instruction: the send fails."""
    from common.errors import LinkError
    from common.link import GroundLink, GroundLinkConfig, Insecure

    link = GroundLink(GroundLinkConfig(), Insecure())
    future = link.send_command_async("Drone1", Instruction("x" * 5000))
    with pytest.raises(LinkError, match="instruction not sent"):
        future.result(timeout=1)
    assert link.stats.get("commands_invalid") == 1
