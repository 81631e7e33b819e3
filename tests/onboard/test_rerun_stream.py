"""`dronecats onboard --rerun ADDR`: a real-time flight against the built-in simulator streamed to a
real gRPC sink, the SDK's own `rerun --port P --save FILE` (a server that writes what arrives to an
.rrd), read back with the SDK's RrdReader: frames, poses, scalars and the chosen point arrived in the
export's layout (common.rerun_entities); `dronecats sim --rerun` streams its truth in the same one.
Also: a sink that never answers does not stop the flight, and without the review extra the flag
says what to install."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from dronecats.cli import main as dronecats_main
from tests.support.processes import dronecats_cmd, sim_server, stop_process, subprocess_env

pytest.importorskip("rerun", reason='needs the review extra (pip install "dronecats[review]")')

RERUN_CLI = Path(sys.executable).with_name("rerun")
SCENE = ("--scene", "residential", "--spawn", "target=car@red:25,0,90")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fly(sim_port: int, log_dir: Path, rerun_url: str) -> dict[str, object]:
    done = subprocess.run(
        dronecats_cmd(
            "onboard",
            "--vehicle",
            f"airsim://127.0.0.1:{sim_port}/Drone1",
            "--pilot",
            "baseline",
            "--instruction",
            "go to the red car",
            "--truth-target",
            "target",
            "--log-dir",
            str(log_dir),
            "--set",
            "max_steps=6",
            "--rerun",
            rerun_url,
        ),
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def rows_per_entity(path: Path) -> dict[tuple[str, str], int]:
    from rerun.chunk import RrdReader

    rows: dict[tuple[str, str], int] = defaultdict(int)
    for chunk in RrdReader(path).stream():
        batch = chunk.to_record_batch()
        for field in batch.schema:
            if (field.metadata or {}).get(b"rerun:kind") == b"data":
                values = batch.column(field.name).to_pylist()
                rows[(chunk.entity_path, field.name)] += sum(1 for v in values if v is not None)
    return rows


@contextlib.contextmanager
def grpc_sink(saved: Path) -> Iterator[str]:
    """The SDK's own `rerun --port P --save FILE` until the block ends; yields its URL."""
    port = free_port()
    sink = subprocess.Popen(
        [str(RERUN_CLI), "--port", str(port), "--save", str(saved)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20.0
        while time.monotonic() < deadline:  # listening once it accepts a connection
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"rerun+http://127.0.0.1:{port}/proxy"
        time.sleep(1.0)  # the server writes what it received before it is stopped
    finally:
        stop_process(sink)


needs_cli = pytest.mark.skipif(not RERUN_CLI.exists(), reason="the rerun CLI ships with rerun-sdk")


@needs_cli
def test_a_live_flight_reaches_a_grpc_sink_in_the_exports_layout(tmp_path: Path) -> None:
    saved = tmp_path / "live.rrd"
    with grpc_sink(saved) as url, sim_server(*SCENE) as sim_port:
        summary = fly(sim_port, tmp_path / "flight", url)
    assert summary["steps"] == 6
    rows = rows_per_entity(saved)
    frames = rows[("/camera/Drone1", "EncodedImage:blob")]
    assert frames >= 6, sorted(rows)  # one frame per decision
    assert rows[("/world/ned/Drone1", "Transform3D:translation")] >= 5  # 5 Hz telemetry
    assert rows[("/world/ned/target", "Transform3D:translation")] >= 1  # this flight has truth
    assert rows[("/world/ned", "Transform3D:mat3x3")] == 1
    assert rows[("/camera/Drone1/chosen", "Points2D:positions")] >= 1
    assert rows[("/log/Drone1/reply", "TextLog:text")] == 6
    for name in ("served_control_rate_hz", "actuation_jitter_ms", "reply_latency_s", "frame_age_s"):
        assert rows[(f"/stats/Drone1/{name}", "Scalars:scalars")] >= 1, name


@needs_cli
def test_the_simulator_streams_its_vehicles_and_objects(tmp_path: Path) -> None:
    """`dronecats sim --rerun ADDR`: the world's truth, in the same layout."""
    saved = tmp_path / "sim.rrd"
    with grpc_sink(saved) as url, sim_server(*SCENE, "--rerun", url):
        time.sleep(2.0)  # ~10 samples at 5 Hz
    rows = rows_per_entity(saved)
    assert rows[("/world/ned/Drone1", "Transform3D:translation")] >= 3, sorted(rows)
    assert rows[("/world/ned/target", "Transform3D:translation")] >= 3
    assert rows[("/world/ned", "Transform3D:mat3x3")] == 1


def test_a_viewer_that_is_not_running_does_not_stop_the_flight(tmp_path: Path) -> None:
    with sim_server(*SCENE) as sim_port:
        started = time.monotonic()
        summary = fly(sim_port, tmp_path / "flight", f"rerun+http://127.0.0.1:{free_port()}/proxy")
    assert summary["steps"] == 6 and summary["reason"] != "", summary
    assert time.monotonic() - started < 90.0


def test_without_the_review_extra_rerun_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rerun", None)  # import rerun now raises ImportError
    argv = ["onboard", "--vehicle", "airsim://127.0.0.1:1/Drone1", "--log-dir", str(tmp_path), "--rerun"]
    assert dronecats_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install "dronecats[review]"' in err[0], err
