"""`dronecats gs --headless --launch 1 --record-mcap PATH`: the built-in simulator, one drone, the
headless ground station recording its session; the MCAP file read back with the `mcap` reader holds,
per channel, what the session log (`--export`, the same session's JSON lines) holds, plus the drone's
telemetry, poses and frames, in the Foxglove schemas, with time stamps in order per channel."""

from __future__ import annotations

import base64
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import jsonschema
import pytest

from tests.support.processes import run_dronecats

pytest.importorskip("mcap", reason='needs the review extra (pip install "dronecats[review]")')


def test_a_headless_session_is_recorded_to_mcap(tmp_path: Path) -> None:
    from mcap.reader import make_reader

    bag, export = tmp_path / "session.mcap", tmp_path / "session.jsonl"
    argv = ["gs", "--headless", "--launch", "1", "--instruction", "go to the red car"]
    argv += ["--target-distance-m", "9", "--duration-s", "60", "--until", "declaration"]
    argv += ["--log-dir", str(tmp_path / "run"), "--record-mcap", str(bag), "--export", str(export)]
    result = run_dronecats(*argv, timeout_s=180)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    entries = [json.loads(line) for line in export.read_text().splitlines()]
    per_channel: Counter[str] = Counter()
    stamps: dict[str, list[int]] = defaultdict(list)
    schemas: dict[str, str] = {}
    images = []
    with bag.open("rb") as stream:
        reader = make_reader(stream)
        for schema, channel, message in reader.iter_messages():
            assert schema is not None
            per_channel[channel.topic] += 1
            stamps[channel.topic].append(message.log_time)
            schemas[channel.topic] = schema.name
            payload = json.loads(message.data)
            jsonschema.validate(payload, json.loads(schema.data))
            if schema.name == "foxglove.CompressedImage" and len(images) < 1:
                images.append(base64.b64decode(payload["data"]))
    # every session-log entry on its kind's channel, and one log line each
    expected = Counter(f"/session/{e['kind']}/{e['drone'] or 'fleet'}" for e in entries)
    assert {t: n for t, n in per_channel.items() if t.startswith("/session/")} == dict(expected)
    assert per_channel["/log"] == len(entries)
    assert expected["/session/step/Drone1"] >= 1 and expected["/session/declaration/Drone1"] >= 1
    assert expected["/session/instruction/fleet"] == 1
    # what the session log leaves to the drones: telemetry, a pose per telemetry message, frames
    assert per_channel["/telemetry/Drone1"] >= 5
    assert per_channel["/tf"] == per_channel["/telemetry/Drone1"] + 1  # + world -> ned
    assert per_channel["/camera/Drone1/image"] >= expected["/session/step/Drone1"] // 2
    assert images and images[0][:2] == b"\xff\xd8"  # a JPEG, unchanged
    assert schemas["/camera/Drone1/image"] == "foxglove.CompressedImage"
    assert schemas["/tf"] == "foxglove.FrameTransform" and schemas["/log"] == "foxglove.Log"
    for topic, times in stamps.items():
        assert times == sorted(times), topic


def test_without_the_review_extra_record_mcap_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dronecats.cli import main as dronecats_main

    monkeypatch.delitem(sys.modules, "ground_station.fleet.session_mcap", raising=False)
    monkeypatch.setitem(sys.modules, "mcap.writer", None)  # import mcap.writer now raises ImportError
    argv = [
        "gs",
        "--headless",
        "--drones",
        "Drone1=tcp://127.0.0.1:1",
        "--record-mcap",
        str(tmp_path / "s.mcap"),
    ]
    assert dronecats_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install "dronecats[review]"' in err[0], err
