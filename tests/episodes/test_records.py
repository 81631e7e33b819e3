"""Episode records and the log format (docs/logs.md): typed, validated, read tolerantly."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import msgspec
import pytest

from common.actions import Go, Rotate
from common.errors import RecordError
from episodes.logs import (
    DeclarationLine,
    EpisodeLogWriter,
    JsonlWriter,
    StepLine,
    TraceLine,
    read_episode,
    read_jsonl,
    write_lines,
)
from episodes.records import (
    SCHEMA_PATH,
    EpisodeRecord,
    load_record,
    record_from_dict,
    save_record,
    schema_text,
)
from tests.support.records import RECORD


def test_record_round_trip(tmp_path):
    record = record_from_dict(RECORD)
    assert record.targets[0].class_ == "car" and record.targets[0].pose[0] == 16.0
    assert not record.moving_target
    path = tmp_path / "episode.json"
    save_record(record, path)
    assert json.loads(path.read_text())["targets"][0]["class"] == "car"
    assert load_record(path) == record


def test_record_accepts_added_fields_and_run_metadata():
    data = copy.deepcopy(RECORD)
    data["notes"] = "added by a tool"
    data["run"] = {"pilot": "vlm", "model_profile": "cosmos-2b", "prompt_hashes": {"system": "ab12"}, "x": 1}
    record = record_from_dict(data)
    assert record.run is not None and record.run.prompt_hashes == {"system": "ab12"}


def test_moving_and_commanding_records():
    data = copy.deepcopy(RECORD)
    data["task_type"] = "track"
    with pytest.raises(RecordError, match=r"task_type.*path"):
        record_from_dict(data)
    data["targets"][0]["path"] = [[16, 2, 0], [40, 2, 0], [40, 30, -1]]
    data["targets"][0]["speed_m_s"] = 0.3
    assert record_from_dict(data).moving_target
    data["task_type"] = "plate"
    with pytest.raises(RecordError, match="inscription"):
        record_from_dict(data)
    data["targets"][0]["inscription"] = "KA 1234"
    assert record_from_dict(data).targets[0].inscription == "KA 1234"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["targets"][0].__setitem__("pose", [1, 2, "x", 0]), r"targets\[0\].pose"),
        (lambda d: d["targets"][0].__setitem__("pose", [1, 2, 3]), r"targets\[0\].pose"),
        (lambda d: d.__setitem__("task_type", "wander"), r"task_type"),
        (lambda d: d.__setitem__("environment", "space"), r"environment"),
        (lambda d: d.__setitem__("delta_m", 0), r"delta_m"),
        (lambda d: d.__setitem__("t_max_s", -1), r"t_max_s"),
        (lambda d: d.pop("instruction"), r"instruction"),
        (lambda d: d.__setitem__("drones", []), r"drones"),
        (lambda d: d["drones"][0].pop("start_pose"), r"start_pose"),
        (lambda d: d["drones"].append({"name": "Drone1", "start_pose": [0, 0, 0, 0]}), r"drones"),
        (lambda d: d.__setitem__("structure", "multi"), r"structure"),
        (lambda d: d["targets"][0].__setitem__("size_m", [1, 0, 1]), r"targets\[0\].size_m"),
        (lambda d: d["distractors"][0].__setitem__("id", "car1"), r"ids repeat"),
        (lambda d: d["targets"][0].__setitem__("path", [[0, 0, 0]]), r"targets\[0\].path"),
        (lambda d: d.__setitem__("targets", []), r"targets"),
        (lambda d: d.__setitem__("seed", "seven"), r"seed"),
    ],
)
def test_record_errors_name_the_field(change, field):
    data = copy.deepcopy(RECORD)
    change(data)
    with pytest.raises(RecordError, match=field):
        record_from_dict(data)


def test_load_record_errors(tmp_path):
    with pytest.raises(RecordError, match="cannot read"):
        load_record(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": ')
    with pytest.raises(RecordError, match="not valid JSON"):
        load_record(bad)


def test_committed_schema_is_current_and_validates():
    assert SCHEMA_PATH.read_text() == schema_text(), "run: python -m episodes.records --write-schema"
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(RECORD, schema)
    broken = copy.deepcopy(RECORD)
    broken["drones"][0]["start_pose"] = [0, 0]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    assert msgspec.json.schema(EpisodeRecord)["$ref"].endswith("EpisodeRecord")


def test_log_lines_use_the_spec_field_names(tmp_path):
    step = StepLine(2.0, "Drone1", call_id=3, action=Go((612, 430), 9.0), raw="{...}", latency_s=0.4,
                    distance_m=12.5, visible=True, point_on_target=True, frame="000003.jpg")  # fmt: skip
    declaration = DeclarationLine(9.0, "Drone1", 3.2, 1.1, True, (1.0, 2.0, -3.0, 45.0))
    trace = TraceLine(0.5, "Drone1", (0.0, 0.0, -3.0, 0.0), (16.0, 2.0, 0.0, 90.0), 16.4, 14.0, True)
    write_lines(tmp_path / "steps.jsonl", [step, StepLine(3.0, "Drone1", action=None, raw="garbage")])
    write_lines(tmp_path / "declarations.jsonl", [declaration], fsync=True)
    write_lines(tmp_path / "trace.jsonl", [trace])
    first = json.loads((tmp_path / "steps.jsonl").read_text().splitlines()[0])
    assert {"t", "drone", "call_id", "action", "raw", "latency_s", "distance_m", "visible", "point_on_target",
            "frame"} <= set(first)  # fmt: skip
    assert first["action"] == {"action": "go", "point": [612, 430], "depth_m": 9.0, "plan": None}
    d = json.loads((tmp_path / "declarations.jsonl").read_text())
    assert {"t", "drone", "distance_m", "bbox_distance_m", "visible", "pose"} <= set(d)
    tr = json.loads((tmp_path / "trace.jsonl").read_text())
    assert {"t", "drone", "pose", "target_pose", "distance_m", "bbox_distance_m", "visible"} <= set(tr)
    steps, problems = read_jsonl(tmp_path / "steps.jsonl", StepLine)
    assert not problems and steps[0] == step and steps[1].action is None


def test_writer_appends_and_flushes(tmp_path):
    path = tmp_path / "trace.jsonl"
    writer = JsonlWriter(path).open()
    writer.append(TraceLine(0.0, "Drone1"))
    # visible to a reader before close: every line is flushed
    assert read_jsonl(path, TraceLine)[0] == [TraceLine(0.0, "Drone1")]
    writer.append(StepLine(0.5, "Drone1", action=Rotate(30.0)))
    writer.close()
    with JsonlWriter(path) as again:  # appends, never truncates
        again.append(TraceLine(1.0, "Drone1"))
    assert len(path.read_text().splitlines()) == 3


def test_episode_log_writer(tmp_path):
    save_record(record_from_dict(RECORD), tmp_path / "episode.json")
    with EpisodeLogWriter(tmp_path) as out:
        out.step(StepLine(1.0, "Drone1", action=Go((500, 500), 8.0), distance_m=15.0))
        out.sample(TraceLine(1.0, "Drone1", distance_m=15.0))
        out.declaration(DeclarationLine(2.0, "Drone1", 14.0, 13.0, True))
    logs = read_episode(tmp_path)
    assert not logs.problems
    assert (len(logs.steps), len(logs.trace), len(logs.declarations)) == (1, 1, 1)
    assert logs.drones == ["Drone1"]


def test_tolerant_reader_reports_bad_and_truncated_lines(tmp_path):
    path = tmp_path / "steps.jsonl"
    good = msgspec.json.encode(StepLine(1.0, "Drone1", distance_m=4.0)).decode()
    path.write_text(
        f"{good}\n"
        "not json at all\n"
        "\n"  # blank lines are not data
        '{"t": "soon", "drone": "Drone1"}\n'
        f"{good}\n"
        '{"t": 3.0, "drone": "Dro'  # the writer died mid-line
    )
    lines, problems = read_jsonl(path, StepLine)
    assert len(lines) == 2
    assert [(p.file, p.line) for p in problems] == [
        ("steps.jsonl", 2),
        ("steps.jsonl", 4),
        ("steps.jsonl", 6),
    ]
    assert "truncated last line" in problems[2].reason
    assert "truncated" not in problems[0].reason
    assert "$.t" in problems[1].reason


def test_read_episode_directory(tmp_path):
    save_record(record_from_dict(RECORD), tmp_path / "episode.json")
    write_lines(tmp_path / "steps.jsonl", [StepLine(1.0, "Drone1", distance_m=15.0)])
    logs = read_episode(tmp_path)
    assert logs.record is not None and logs.declarations == []
    # declarations.jsonl may be absent (nothing declared); a missing trace is reported
    assert [(p.file, p.line, p.reason) for p in logs.problems] == [("trace.jsonl", 0, "file is missing")]
    os.remove(tmp_path / "episode.json")
    logs = read_episode(tmp_path)
    assert logs.record is None and logs.record_error and "cannot read" in logs.record_error
