"""What `onboard.rerun_stream` (in the flight's process) sends `onboard.rerun_sink` (the process that
talks to the viewer): typed, msgpack-encoded, each message prefixed by its length (4 bytes, big
endian). Viewer-neutral: the sink turns them into the layout of common.rerun_entities."""

from __future__ import annotations

import struct

import msgspec

HEADER = struct.Struct(">I")


class LiveFrame(msgspec.Struct, tag="frame"):
    t_s: float  # episode time
    jpeg: bytes
    width_px: int
    height_px: int


class LiveChosen(msgspec.Struct, tag="chosen"):
    """A step's `go` point in image pixels of the last frame, or none (the previous one is cleared)."""

    t_s: float
    point_px: tuple[float, float] | None
    width_px: int
    on_target: bool | None
    caption: str


class LivePose(msgspec.Struct, tag="pose"):
    t_s: float
    name: str  # a drone or the target
    pose: tuple[float, float, float, float]  # world NED x, y, z m, yaw deg


class LiveScalars(msgspec.Struct, tag="scalars"):
    t_s: float
    values: dict[str, float]  # name (its unit in it) -> value


class LiveLog(msgspec.Struct, tag="log"):
    t_s: float
    topic: str  # reply, declaration
    text: str
    warning: bool = False


LiveMessage = LiveFrame | LiveChosen | LivePose | LiveScalars | LiveLog
ENCODER = msgspec.msgpack.Encoder()
DECODER = msgspec.msgpack.Decoder(LiveMessage)


def framed(message: LiveMessage) -> bytes:
    payload = ENCODER.encode(message)
    return HEADER.pack(len(payload)) + payload
