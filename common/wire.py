"""Envelope and codec: how a typed body becomes ZeroMQ message parts, and back.

A message is these parts (after any ZeroMQ routing id / topic, which the link strips):

    [header, body]            header = msgpack array (Envelope), body = msgpack of the typed body
    [header, body, jpeg]      FrameMeta only: the raw JPEG bytes as their own part, never base64

The header is decoded first and on its own, so a receiver can reject a wrong version, an unknown
type or a message for another drone without touching the body. Every decode failure raises
ProtocolError with a `kind` that the links count (stats) — nothing malformed ever crashes a link.

Size caps: each part has a cap (the header, each message type's body, a frame's JPEG), checked
before anything is decoded, so a huge message costs the receiver nothing but the count. The
receiving sockets also set ZeroMQ's MAXMSGSIZE (`MAX_PART_BYTES`): a peer that sends a frame over
it is disconnected by ZeroMQ before the frame is buffered. The body's own field limits (ranges,
finite floats, text lengths) are in common.messages and checked while decoding; `encode` checks
them too, so a sender never emits what its peer would reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from common.errors import ProtocolError
from common.messages import BODY_TYPES, Body, FrameMeta, Seq, Stamp

# 2: commands carry the drone's run session (Envelope.drone_session_id) and a send time on the drone's
# clock. The drone and its ground stations are upgraded together; a version-1 peer is refused by name.
PROTOCOL_VERSION = 2
MAX_STRING_CHARS = 64  # drone ids, session ids and type names are short identifiers
MAX_HEADER_BYTES = 256
MAX_JPEG_BYTES = 16 * 1024 * 1024
# Per message type: the largest body a valid message of that type can have (its text and list
# limits in common.messages, msgpack-encoded), rounded up.
MAX_BODY_BYTES: dict[str, int] = {
    "telemetry": 16 * 1024,  # Jetson health with its sensor table
    "frame": 1024,
    "step": 64 * 1024,  # the raw model reply (16,000 characters of UTF-8) and a plan
    "declaration": 2048,
    "heartbeat": 256,
    "instruction": 20 * 1024,  # 4,000 characters of UTF-8
    "order": 20 * 1024,
    "remote_action": 64 * 1024,
    "judgement": 4096,
    "estop": 4096,
    "hold": 4096,
    "land": 4096,
    "return_home": 4096,
    "goto": 512,  # a 64-character id and three numbers
    "heartbeat_request": 256,
    "traffic": 16 * 1024,  # 64 entries
    "heartbeat_reply": 256,
    "ack": 4096,
}
MAX_PART_BYTES = MAX_JPEG_BYTES + 1024  # ZeroMQ MAXMSGSIZE on receiving sockets

# Topics of the drone's PUB sockets (first part; subscribers filter on them by prefix).
TOPIC_TELEMETRY = b"tel"
TOPIC_FRAME = b"frm"
TOPIC_STEP = b"stp"
TOPIC_DECLARATION = b"dcl"
TOPIC_HEARTBEAT = b"hbt"
TOPIC_BY_TYPE = {
    "telemetry": TOPIC_TELEMETRY,
    "frame": TOPIC_FRAME,
    "step": TOPIC_STEP,
    "declaration": TOPIC_DECLARATION,
    "heartbeat": TOPIC_HEARTBEAT,
}


class Envelope(msgspec.Struct, frozen=True, array_like=True, forbid_unknown_fields=True):
    version: int
    type: str
    drone_id: str  # the sender for publications and replies, the addressee for commands
    session_id: str  # one per link instance (a restart starts a new session)
    seq: Seq  # per (session, direction); a drone runs a command seq once, and none at or below it
    # The sender's clock, except on commands: the drone's clock, as the ground station estimates it
    # (common.link.clock_sync), so the drone can judge a command's age against its own clock.
    send_time_s: Stamp
    # Commands only: the session_id of the drone run they are for, learned from that drone's own
    # messages. A drone refuses a command bound to another run (a capture from an earlier process).
    drone_session_id: str = ""


class ProtocolErrorKind:
    """The `kind` values of ProtocolError (stats counter names are `rejected_<kind>`)."""

    PARTS = "parts"  # wrong number of parts
    HEADER = "header"  # header is not a valid envelope
    VERSION = "version"
    UNKNOWN_TYPE = "unknown_type"
    BODY = "body"  # body does not decode as the envelope's type, or a value is out of range
    SIZE = "size"  # a part is over its cap
    UNEXPECTED = "unexpected"  # valid message that does not belong on this socket / to this drone


class WireError(ProtocolError):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Message(msgspec.Struct, frozen=True):
    envelope: Envelope
    body: Body
    blob: bytes | None = None  # the JPEG of a FrameMeta


_encoder = msgspec.msgpack.Encoder()
_header_decoder = msgspec.msgpack.Decoder(Envelope)
_body_decoders: dict[str, msgspec.msgpack.Decoder[Any]] = {
    name: msgspec.msgpack.Decoder(cls) for name, cls in BODY_TYPES.items()
}


def encode(
    body: Body,
    *,
    drone_id: str,
    session_id: str,
    seq: int,
    send_time_s: float,
    blob: bytes | None = None,
    drone_session_id: str = "",
) -> list[bytes]:
    """The parts [header, body] (+ [jpeg] for a frame)."""
    if isinstance(body, FrameMeta) != (blob is not None):
        raise ValueError("a FrameMeta needs its JPEG bytes as `blob`, and only a FrameMeta carries one")
    envelope = Envelope(PROTOCOL_VERSION, body.TYPE, drone_id, session_id, seq, send_time_s, drone_session_id)
    parts = [_encoder.encode(envelope), _encoder.encode(body)]
    if blob is not None:
        parts.append(bytes(blob))
    # The receiver's own checks, here: a message its peer would reject is never sent (a range that
    # only the decoder checks, a text over its limit, a part over its cap).
    decode(parts)
    return parts


def encode_envelope(envelope: Envelope) -> bytes:
    return _encoder.encode(envelope)


def decode_header(part: bytes) -> Envelope:
    if len(part) > MAX_HEADER_BYTES:
        raise WireError(ProtocolErrorKind.SIZE, f"header of {len(part)} bytes, over {MAX_HEADER_BYTES}")
    try:
        envelope = _header_decoder.decode(part)
    except (msgspec.DecodeError, ValueError) as exc:
        raise WireError(ProtocolErrorKind.HEADER, f"invalid envelope: {exc}") from None
    if envelope.version != PROTOCOL_VERSION:
        raise WireError(
            ProtocolErrorKind.VERSION,
            f"protocol version {envelope.version} is not the supported version {PROTOCOL_VERSION} "
            "(a drone and its ground stations run the same release)",
        )
    if envelope.type not in _body_decoders:
        raise WireError(ProtocolErrorKind.UNKNOWN_TYPE, f"unknown message type {envelope.type[:40]!r}")
    for name in ("drone_id", "session_id", "drone_session_id"):
        value = getattr(envelope, name)
        if len(value) > MAX_STRING_CHARS:
            raise WireError(
                ProtocolErrorKind.HEADER, f"{name} is {len(value)} characters, over {MAX_STRING_CHARS}"
            )
    if envelope.seq < 0:
        raise WireError(ProtocolErrorKind.HEADER, f"seq {envelope.seq} is negative")
    return envelope


def decode(parts: Sequence[bytes]) -> Message:
    """Decode [header, body] or [header, body, jpeg]; raises WireError (a ProtocolError) on anything else."""
    if len(parts) not in (2, 3):
        raise WireError(ProtocolErrorKind.PARTS, f"expected 2 or 3 message parts, got {len(parts)}")
    envelope = decode_header(parts[0])
    cap = MAX_BODY_BYTES[envelope.type]
    if len(parts[1]) > cap:
        raise WireError(ProtocolErrorKind.SIZE, f"{envelope.type} body of {len(parts[1])} bytes, over {cap}")
    if len(parts) == 3 and len(parts[2]) > MAX_JPEG_BYTES:
        raise WireError(ProtocolErrorKind.SIZE, f"frame JPEG of {len(parts[2])} bytes, over {MAX_JPEG_BYTES}")
    try:
        body = _body_decoders[envelope.type].decode(parts[1])
    except (msgspec.DecodeError, ValueError) as exc:
        raise WireError(ProtocolErrorKind.BODY, f"invalid {envelope.type} body: {exc}") from None
    is_frame = isinstance(body, FrameMeta)
    if is_frame != (len(parts) == 3):
        raise WireError(
            ProtocolErrorKind.PARTS,
            f"a {envelope.type} message has {'3' if is_frame else '2'} parts, got {len(parts)}",
        )
    return Message(envelope, body, bytes(parts[2]) if is_frame else None)
