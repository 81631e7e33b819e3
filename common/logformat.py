"""The episode log lines (docs/logs.md) and their writer, shared by the flight recorder (onboard)
and the verifier (episodes). Field names are those of docs/logs.md; tools may add fields, never rename.

Two fields are this project's additions, both optional:
- `collided` (steps and trace lines): true while the drone is in contact with something.
- `judged` (declarations): the operator's "accept"/"reject" in real flight.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import IO, Literal

import msgspec

from common.actions import Action
from common.pose import Pose

EPISODE_FILE = "episode.json"
STEPS_FILE = "steps.jsonl"
DECLARATIONS_FILE = "declarations.jsonl"
TRACE_FILE = "trace.jsonl"

PoseList = tuple[float, float, float, float]  # world NED x, y, z in metres, yaw in degrees


def pose_list(values: Pose | list[float] | tuple[float, ...]) -> PoseList:
    """A pose (or its [x, y, z, yaw_deg] form) as the logs' 4-tuple."""
    if isinstance(values, Pose):
        return (values.x_m, values.y_m, values.z_m, values.yaw_deg)
    x, y, z, yaw = (float(v) for v in values)
    return (x, y, z, yaw)


class StepLine(msgspec.Struct):
    """One decision of one drone."""

    t: float
    drone: str
    call_id: str | int | None = None  # shared by the N actions of one multi-drone call
    action: Action | None = None  # None: the reply was malformed (or discarded)
    raw: str | None = None  # the model's text
    latency_s: float | None = None
    distance_m: float | None = None
    visible: bool | None = None
    point_on_target: bool | None = None  # a `go` point on the target's pixels; None if not a go / unknown
    frame: str | None = None  # file name of the saved frame
    collided: bool | None = None


class DeclarationLine(msgspec.Struct):
    """One executed `finished`, measured when it was executed."""

    t: float
    drone: str
    distance_m: float | None = None
    bbox_distance_m: float | None = None
    visible: bool | None = None
    pose: PoseList | None = None
    judged: Literal["accept", "reject"] | None = None  # real flight: the operator's judgement


class TraceLine(msgspec.Struct):
    """A 2 Hz sample of one drone and the target (target fields None when unknown)."""

    t: float
    drone: str
    pose: PoseList | None = None
    target_pose: PoseList | None = None
    distance_m: float | None = None
    bbox_distance_m: float | None = None
    visible: bool | None = None
    collided: bool | None = None


LogLine = StepLine | DeclarationLine | TraceLine


class JsonlWriter:
    """Append one JSON object per line and flush it, so a crash loses at most the line in flight.

    With fsync=True every line is also forced to disk (declarations: rare, and each one decides
    an episode). Thread-safe.
    """

    def __init__(self, path: str | Path, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._encoder = msgspec.json.Encoder()
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None

    def open(self) -> JsonlWriter:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab")  # noqa: SIM115 - held open across appends, closed in close()
        return self

    def append(self, line: LogLine) -> None:
        data = self._encoder.encode(line) + b"\n"
        with self._lock:
            if self._file is None:
                self.open()
            assert self._file is not None
            self._file.write(data)
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> JsonlWriter:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
