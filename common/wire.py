"""Envelope and codec: how a typed body becomes ZeroMQ message parts, and back.

A message is these parts (after any ZeroMQ routing id / topic, which the link strips):

    [header, body]            header = msgpack array (Envelope), body = msgpack of the typed body
    [header, body, jpeg]      FrameMeta only: the raw JPEG bytes as their own part, never base64

The header is decoded first and on its own, so a receiver can reject a wrong version, an unknown
type or a message for another drone without touching the body. Every decode failure raises
ProtocolError with a `kind` that the links count (stats) — nothing malformed ever crashes a link.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from common.errors import ProtocolError
from common.messages import BODY_TYPES, Body, FrameMeta

PROTOCOL_VERSION = 1
MAX_STRING_CHARS = 64  # drone ids, session ids and type names are short identifiers

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
    seq: int  # per (session, direction); commands are de-duplicated by (session_id, seq)
    send_time_s: float  # sender's clock


class ProtocolErrorKind:
    """The `kind` values of ProtocolError (stats counter names are `rejected_<kind>`)."""

    PARTS = "parts"  # wrong number of parts
    HEADER = "header"  # header is not a valid envelope
    VERSION = "version"
    UNKNOWN_TYPE = "unknown_type"
    BODY = "body"  # body does not decode as the envelope's type
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
) -> list[bytes]:
    """The parts [header, body] (+ [jpeg] for a frame)."""
    if isinstance(body, FrameMeta) != (blob is not None):
        raise ValueError("a FrameMeta needs its JPEG bytes as `blob`, and only a FrameMeta carries one")
    envelope = Envelope(PROTOCOL_VERSION, body.TYPE, drone_id, session_id, seq, send_time_s)
    parts = [_encoder.encode(envelope), _encoder.encode(body)]
    if blob is not None:
        parts.append(bytes(blob))
    return parts


def encode_envelope(envelope: Envelope) -> bytes:
    return _encoder.encode(envelope)


def decode_header(part: bytes) -> Envelope:
    try:
        envelope = _header_decoder.decode(part)
    except (msgspec.DecodeError, ValueError) as exc:
        raise WireError(ProtocolErrorKind.HEADER, f"invalid envelope: {exc}") from None
    if envelope.version != PROTOCOL_VERSION:
        raise WireError(
            ProtocolErrorKind.VERSION,
            f"protocol version {envelope.version} is not the supported version {PROTOCOL_VERSION}",
        )
    if envelope.type not in _body_decoders:
        raise WireError(ProtocolErrorKind.UNKNOWN_TYPE, f"unknown message type {envelope.type[:40]!r}")
    for name in ("drone_id", "session_id"):
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
