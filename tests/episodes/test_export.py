"""`dronecats episodes export`: the demo episode, flown here in lock-step, exported to MCAP and to
Rerun and read back with the same SDKs: message counts against the logs, time stamps in order per
channel, schemas and archetypes as the viewers expect them (docs/review.md)."""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from common.viewer_frames import NED_IN_WORLD, NED_TO_ENU
from dronecats.cli import main as dronecats_main
from episodes.export.timeline import TOPICS, build_timeline, project_to_image
from episodes.logs import read_episode

MISSING = 'needs the review extra: pip install -e ".[review]" (scripts/setup_env.sh --dev installs it)'
FOXGLOVE_TOPICS = {
    "/tf": "foxglove.FrameTransform",
    "/scene": "foxglove.SceneUpdate",
    "/log": "foxglove.Log",
    "/camera/Drone1/image": "foxglove.CompressedImage",
    "/camera/Drone1/annotations": "foxglove.ImageAnnotations",
}


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "demo"
    assert dronecats_main(["demo", "--quiet", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def expected(demo: Path) -> dict[str, int]:
    logs = read_episode(demo)
    return {
        "frames": sum(1 for s in logs.steps if s.frame and (demo / s.frame).exists()),
        "poses": sum(1 for t in logs.trace if t.pose is not None),
        "target_poses": len({round(t.t, 3) for t in logs.trace if t.target_pose is not None}),
        "steps": len(logs.steps),
        "declarations": len(logs.declarations),
        "events": len(_lines(demo / "events.jsonl")),
    }


def _export(demo: Path, to: str, out: Path) -> Path:
    assert dronecats_main(["episodes", "export", str(demo), "--to", to, "--out", str(out)]) == 0
    return out


def test_the_timeline_holds_what_the_logs_hold(demo: Path, expected: dict[str, int]) -> None:
    timeline = build_timeline(demo)
    assert expected["frames"] > 10 and expected["declarations"] >= 1  # the demo flies and declares
    assert len(timeline.frames) == expected["frames"]
    assert len(timeline.poses) == expected["poses"]
    assert len(timeline.declarations()) == expected["declarations"]
    by_topic = Counter(e.topic for e in timeline.logs)
    assert by_topic["reply"] == expected["steps"]
    assert sum(by_topic.values()) == expected["steps"] + expected["declarations"] + expected["events"]
    assert set(by_topic) <= set(TOPICS)
    # The demo's first frames point at the car: its projected truth lies near the chosen point.
    first = timeline.frames[0]
    assert first.chosen_px is not None and first.truth_px is not None
    assert math.dist(first.chosen_px, first.truth_px) < 0.1 * first.width_px


def test_projection_and_the_ned_to_enu_transform() -> None:
    from common.camera import CameraProfile

    camera = CameraProfile("c", 1000, 500, 500.0, 500.0, 500.0, 250.0)
    # 10 m north of a drone facing east: 90 degrees left, behind the image plane
    assert project_to_image((10.0, 0.0, 0.0), (0.0, 0.0, 0.0, 90.0), camera, (1000, 500)) is None
    # 10 m east, 1 m right (south) and 1 m below a drone facing east: right of and below the centre
    seen = project_to_image((-1.0, 10.0, 1.0), (0.0, 0.0, 0.0, 90.0), camera, (500, 250))
    assert seen == pytest.approx((275.0, 150.0))
    # north -> ENU y, east -> ENU x, down -> ENU -z; the quaternion is the same rotation
    assert NED_TO_ENU @ np.array([1.0, 2.0, 3.0]) == pytest.approx([2.0, 1.0, -3.0])
    w, x, y, z = NED_IN_WORLD
    q = np.array([x, y, z])
    p = np.array([1.0, 2.0, 3.0])
    rotated = p + 2 * w * np.cross(q, p) + 2 * np.cross(q, np.cross(q, p))
    assert rotated == pytest.approx([2.0, 1.0, -3.0])


def test_mcap_reads_back_with_the_counts_of_the_logs(
    demo: Path, expected: dict[str, int], tmp_path: Path
) -> None:
    pytest.importorskip("mcap", reason=MISSING)
    from mcap.decoder import DecoderFactory
    from mcap.reader import make_reader
    from mcap.records import Schema

    class JsonDecoders(DecoderFactory):
        def decoder_for(self, message_encoding: str, schema: Schema | None) -> Callable[[bytes], Any] | None:
            return json.loads if message_encoding == "json" else None

    path = _export(demo, "mcap", tmp_path / "demo.mcap")
    counts: Counter[str] = Counter()
    children: Counter[str] = Counter()
    last_ns: dict[str, int] = {}
    validators: dict[str, jsonschema.Draft202012Validator] = {}
    images: list[bytes] = []
    with path.open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[JsonDecoders()])
        summary = reader.get_summary()
        assert summary is not None
        for record in summary.schemas.values():
            assert record.encoding == "jsonschema"
            validators[record.name] = jsonschema.Draft202012Validator(json.loads(record.data))
        for schema, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
            assert schema is not None and channel.message_encoding == "json"
            validators[schema.name].validate(decoded)
            assert message.log_time >= last_ns.get(channel.topic, 0), channel.topic  # written in order
            last_ns[channel.topic] = message.log_time
            counts[channel.topic] += 1
            if channel.topic in FOXGLOVE_TOPICS:
                assert schema.name == FOXGLOVE_TOPICS[channel.topic]
            if channel.topic == "/tf":
                children[decoded["child_frame_id"]] += 1
            if channel.topic == "/camera/Drone1/image":
                images.append(base64.b64decode(decoded["data"]))
    assert counts["/camera/Drone1/image"] == counts["/camera/Drone1/annotations"] == expected["frames"]
    assert children["Drone1"] == expected["poses"]
    assert children["ned"] == 1
    assert counts["/declaration/Drone1"] == expected["declarations"]
    assert counts["/reply/Drone1"] == expected["steps"]
    assert counts["/log"] == expected["steps"] + expected["declarations"] + expected["events"]
    event_topics = [t for t in counts if t.split("/")[1] in set(TOPICS) - {"reply", "declaration"}]
    assert sum(counts[t] for t in event_topics) == expected["events"]
    assert counts["/scene"] == 1
    first_frame = sorted((demo / "frames").iterdir())[0].read_bytes()
    assert images[0] == first_frame  # the saved JPEG, unchanged


def test_rrd_reads_back_with_the_counts_of_the_logs(
    demo: Path, expected: dict[str, int], tmp_path: Path
) -> None:
    pytest.importorskip("rerun", reason=MISSING)
    from rerun.chunk import RrdReader

    path = _export(demo, "rrd", tmp_path / "demo.rrd")
    # the SDK's own check: every chunk loads and is interpreted (its CLI ships in the same wheel)
    cli = Path(sys.executable).with_name("rerun")
    if cli.exists():
        verify = subprocess.run(
            [str(cli), "rrd", "verify", str(path)], capture_output=True, text=True, timeout=60
        )
        assert verify.returncode == 0, verify.stderr
    reader = RrdReader(path)
    assert len(reader.recordings()) == 1 and len(reader.blueprints()) == 1  # opens laid out
    rows: dict[tuple[str, str], int] = defaultdict(int)
    archetypes: dict[str, set[str]] = defaultdict(set)
    times: dict[tuple[str, tuple[str, ...]], list[int]] = defaultdict(list)  # per entity and component set
    for chunk in reader.stream():
        batch = chunk.to_record_batch()
        entity = chunk.entity_path
        for field in batch.schema:
            meta = field.metadata or {}
            if meta.get(b"rerun:kind") == b"data":
                archetypes[entity].add(meta[b"rerun:archetype"].decode())
                rows[(entity, field.name)] += sum(
                    1 for v in batch.column(field.name).to_pylist() if v is not None
                )
        if not chunk.is_static and "episode_time" in batch.schema.names:
            components = tuple(sorted(n for n in batch.schema.names if ":" in n))
            times[(entity, components)].extend(batch.column("episode_time").cast("int64").to_pylist())
    assert rows[("/camera/Drone1", "EncodedImage:blob")] == expected["frames"]
    assert rows[("/world/ned/Drone1", "Transform3D:translation")] == expected["poses"]
    assert rows[("/world/ned/demo_target", "Transform3D:translation")] == expected["target_poses"]
    assert rows[("/log/Drone1/declaration", "TextLog:text")] == expected["declarations"]
    assert rows[("/log/Drone1/reply", "TextLog:text")] == expected["steps"]
    event_rows = sum(
        n
        for (entity, column), n in rows.items()
        if column == "TextLog:text" and entity.split("/")[-1] not in ("reply", "declaration")
    )
    assert event_rows == expected["events"]
    assert archetypes["/camera/Drone1"] == {"rerun.archetypes.EncodedImage"}
    assert archetypes["/world/ned"] == {"rerun.archetypes.Transform3D"}
    assert archetypes["/world"] == {"rerun.archetypes.ViewCoordinates"}
    assert "rerun.archetypes.Points2D" in archetypes["/camera/Drone1/chosen"]
    assert archetypes["/stats/Drone1/reply_latency_s"] == {"rerun.archetypes.Scalars"}
    assert archetypes["/world/ned/demo_target/delta"] == {"rerun.archetypes.LineStrips3D"}
    for key, stamps in times.items():
        assert stamps == sorted(stamps), key


def test_a_run_directory_exports_each_failure_to_its_own_file(demo: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcap", reason=MISSING)
    run = tmp_path / "run"
    for name, success in (("ep-ok", True), ("ep-bad", False)):
        episode = run / name
        episode.mkdir(parents=True)
        for item in demo.iterdir():
            if item.is_file() and item.suffix in (".json", ".jsonl"):
                (episode / item.name).write_bytes(item.read_bytes())
        (episode / "result.json").write_text(json.dumps({"verdict": {"success": success}}))
    (run / ".partial" / "ep-old").mkdir(parents=True)
    (run / ".partial" / "ep-old" / "steps.jsonl").write_text("")
    out = tmp_path / "review"
    assert (
        dronecats_main(["episodes", "export", str(run), "--to", "mcap", "--failures", "--out", str(out)]) == 0
    )
    # named by episode id (episode.json's, the demo's directory name), one file per failed episode
    assert [p.name for p in out.iterdir()] == ["demo.mcap"]


def test_without_the_review_extra_the_command_says_what_to_install(
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "episodes.export.rerun_writer", raising=False)
    monkeypatch.setitem(sys.modules, "rerun", None)  # import rerun now raises ImportError
    assert dronecats_main(["episodes", "export", str(demo), "--to", "rrd", "--out", str(tmp_path)]) == 2
    assert 'pip install "dronecats[review]"' in capsys.readouterr().err
