"""Episode records (docs/logs.md#the-episode-record): what one benchmark episode is, typed, with a
loader whose errors name the bad field.

`episode.json` in a run directory is this record as flown plus a `run` section of run metadata.
Unknown keys are ignored at every level so that tools may add fields; known fields are checked.
The JSON schema committed at episodes/schema/episode.schema.json is generated from these structs
(`python -m episodes.records --write-schema`); a test checks it is current.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Literal

import msgspec

from common.config import file_errors
from common.errors import RecordError

TaskType = Literal["approach", "search", "track", "search+track", "plate", "sign", "sign_sum"]
Environment = Literal["outdoor", "indoor", "real"]
Structure = Literal["single", "multi", "commander"]

MOVING_TASKS = frozenset({"track", "search+track"})
COMMANDING_TASKS = frozenset({"plate", "sign", "sign_sum"})
# δ and T_max per environment (docs/verifier.md#the-verdict, #time), used by tools that create records.
DEFAULT_DELTA_M: dict[str, float] = {"outdoor": 5.0, "indoor": 2.5, "real": 1.5}
DEFAULT_T_MAX_S: dict[str, float] = {"outdoor": 300.0, "indoor": 300.0, "real": 150.0}

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "episode.schema.json"

PoseList = tuple[float, float, float, float]  # world NED x, y, z in metres, yaw in degrees
Point3 = tuple[float, float, float]  # world NED x, y, z in metres


class DroneStart(msgspec.Struct, frozen=True):
    name: str
    start_pose: PoseList


class SceneObject(msgspec.Struct, frozen=True):
    """A target or a distractor. A moving one has `path` waypoints and `speed_m_s`."""

    id: str
    class_: str = msgspec.field(name="class")  # object class, e.g. "car", "person", "bottle"
    pose: PoseList = (0.0, 0.0, 0.0, 0.0)
    colour: str | None = None
    shape: str | None = None
    size_m: Point3 | None = None  # bounding-box extents (length, width, height)
    path: list[Point3] | None = None  # one-way route; z interpolated in 3-D between waypoints
    speed_m_s: float | None = None
    inscription: str | None = None  # text on a plate or sign (commanding tasks)

    @property
    def moving(self) -> bool:
        return bool(self.path) and (self.speed_m_s or 0.0) > 0


class RunMetadata(msgspec.Struct, frozen=True):
    """What a runner adds to the record in episode.json; every field optional."""

    pilot: str | None = None
    model_profile: str | None = None
    prompt_hashes: dict[str, str] = {}
    served_control_rate_hz: float | None = None
    served_control_jitter_ms: float | None = None
    started_at: str | None = None
    lockstep: bool | None = None


class EpisodeRecord(msgspec.Struct, frozen=True):
    id: str
    scene: str
    task_type: TaskType
    instruction: str
    environment: Environment
    delta_m: float
    t_max_s: float
    drones: list[DroneStart]
    targets: list[SceneObject]
    distractors: list[SceneObject] = []
    structure: Structure = "single"
    camera: str = "outdoor"  # camera profile name or file
    flight_profile: str = "outdoor"
    seed: int = 0
    run: RunMetadata | None = None

    @property
    def moving_target(self) -> bool:
        return self.task_type in MOVING_TASKS or any(t.moving for t in self.targets)


def _check(record: EpisodeRecord) -> None:
    """The rules msgspec's types cannot say; each error names the field."""
    for name in ("id", "scene", "instruction"):
        if not getattr(record, name).strip():
            raise RecordError(f"episode record: `{name}` is empty")
    if not (math.isfinite(record.delta_m) and record.delta_m > 0):
        raise RecordError(f"episode {record.id}: `delta_m`={record.delta_m} must be > 0")
    if not (math.isfinite(record.t_max_s) and record.t_max_s > 0):
        raise RecordError(f"episode {record.id}: `t_max_s`={record.t_max_s} must be > 0")
    if not record.drones:
        raise RecordError(f"episode {record.id}: `drones` is empty; at least one drone is needed")
    names = [d.name for d in record.drones]
    if len(set(names)) != len(names):
        raise RecordError(f"episode {record.id}: `drones` has duplicate names {names}")
    if record.structure == "single" and len(names) != 1:
        raise RecordError(f"episode {record.id}: `structure`=single but `drones` has {len(names)} entries")
    if record.structure != "single" and len(names) < 2:
        raise RecordError(f"episode {record.id}: `structure`={record.structure} needs at least 2 drones")
    if not record.targets:
        raise RecordError(f"episode {record.id}: `targets` is empty")
    ids = [o.id for o in (*record.targets, *record.distractors)]
    if len(set(ids)) != len(ids):
        raise RecordError(f"episode {record.id}: object ids repeat in `targets`/`distractors`: {ids}")
    for group in ("targets", "distractors"):
        for i, obj in enumerate(getattr(record, group)):
            where = f"episode {record.id}: `{group}[{i}]"
            values = [*obj.pose, *(obj.size_m or ()), *(c for p in obj.path or () for c in p)]
            if not all(math.isfinite(v) for v in values):
                raise RecordError(f"{where}`: pose, size_m and path must be finite numbers")
            if obj.size_m is not None and min(obj.size_m) <= 0:
                raise RecordError(f"{where}.size_m`={list(obj.size_m)} must be > 0 in every axis")
            if obj.speed_m_s is not None and obj.speed_m_s < 0:
                raise RecordError(f"{where}.speed_m_s`={obj.speed_m_s} must be >= 0")
            if obj.path is not None and len(obj.path) < 2:
                raise RecordError(f"{where}.path` needs at least 2 waypoints, got {len(obj.path)}")
    if record.task_type in MOVING_TASKS and not any(t.moving for t in record.targets):
        raise RecordError(
            f"episode {record.id}: `task_type`={record.task_type} needs a target with `path` "
            "and `speed_m_s` > 0"
        )
    if record.task_type in COMMANDING_TASKS and not any(t.inscription for t in record.targets):
        raise RecordError(
            f"episode {record.id}: `task_type`={record.task_type} needs a target with an `inscription`"
        )
    for i, drone in enumerate(record.drones):
        if not all(math.isfinite(v) for v in drone.start_pose):
            raise RecordError(f"episode {record.id}: `drones[{i}].start_pose` must be finite numbers")


def record_from_dict(data: object, source: str = "<record>") -> EpisodeRecord:
    try:
        record = msgspec.convert(data, EpisodeRecord)
    except msgspec.ValidationError as exc:
        # msgspec says e.g. "Expected `float`, got `str` - at `$.targets[0].pose[2]`"
        raise RecordError(f"episode record {source}: {exc}") from None
    _check(record)
    return record


def load_record(path: str | Path) -> EpisodeRecord:
    """Read and validate an episode record (a spec file or a run's episode.json)."""
    path = Path(path)
    with file_errors("episode record", path, "JSON", msgspec.DecodeError, RecordError):
        data = msgspec.json.decode(path.read_bytes())
    return record_from_dict(data, str(path))


def record_to_json(record: EpisodeRecord) -> bytes:
    return msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n"


def save_record(record: EpisodeRecord, path: str | Path) -> None:
    Path(path).write_bytes(record_to_json(record))


def episode_schema() -> dict:
    """The JSON schema of an episode record (generated from the structs)."""
    return msgspec.json.schema(EpisodeRecord)


def schema_text() -> str:
    return json.dumps(episode_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-schema"]:
        SCHEMA_PATH.parent.mkdir(exist_ok=True)
        SCHEMA_PATH.write_text(schema_text())
    else:
        sys.stdout.write(schema_text())
