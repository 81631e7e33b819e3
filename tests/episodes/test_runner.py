"""The episode runner on tiny suites: lock-step runs scored and reported, injected latency, SIGINT
halfway then resume (nothing lost, nothing flown twice), and one episode through `--sim airsim://`
against `dronecats sim` in a separate process (the HIL path)."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from episodes.episode import RESULT_FILE
from episodes.logs import read_episode
from episodes.preflight import expectation_for
from episodes.run_options import LatencySpec, RunOptions
from episodes.runner import run_suite
from episodes.suites import Suite, SuiteEntry, save_suite
from tests.support.episodes import short_record, tiny_suite
from tests.support.processes import dronecats_cmd, kill_if_running, run_dronecats, sim_server, subprocess_env

pytest.importorskip("pybullet")


def test_suite_run_scores_reports_and_replays(tmp_path: Path) -> None:
    out = tmp_path / "run"
    lines: list[str] = []
    options = RunOptions(latency=LatencySpec.parse("fixed:0.44"))
    results = run_suite(tiny_suite(2), out, options, say=lines.append)
    assert len(results) == 2
    assert any("SR 100% (2/2)" in line for line in lines), lines
    assert any("real-time factor" in line for line in lines), lines
    for r in results:
        assert r["verdict"]["success"], r
        assert r["end_reason"] == "declared"
        assert r["injected_latency_p50_s"] == 0.44
        logs = read_episode(out / r["run_name"])
        assert logs.record is not None and logs.record.id == r["episode"]
        assert not logs.problems
        # Lock-step: the injected 0.44 s is what a step costs at least, in simulation time.
        ts = [s.t for s in logs.steps]
        assert min(b - a for a, b in itertools.pairwise(ts)) >= 0.44 - 1e-6

    report = run_dronecats("episodes", "report", str(out), "--vs", str(out), "--all-traces", timeout_s=120)
    assert report.returncode == 0, report.stderr[-2000:]
    md = (out / "report" / "report.md").read_text()
    assert "| approach | baseline (fixed:0.44) | 2 | 100% (2/2) [34%, 100%]" in md, md
    assert "| all | baseline (fixed:0.44) | 2 |" in md and "Comparison with" in md
    summary = (out / "report" / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("task_type,pilot,n,successes,sr,sr_low95,sr_high95")
    assert summary[1].startswith("approach,baseline (fixed:0.44),2,2,1.0000,0.3424,1.0000")
    assert ",0.4400," in summary[1]  # latency p50 is the injected latency
    for png in ("bars.png", "traces-approach.png", "traces/tiny-1.png"):
        assert (out / "report" / png).stat().st_size > 2000

    replay = run_dronecats("episodes", "replay", str(out / "tiny-1"), "--max", "6")
    assert replay.returncode == 0, replay.stderr[-2000:]
    sheet = json.loads(replay.stdout.strip().splitlines()[-1])
    assert sheet["on_sheet"] == min(6, sheet["frames"]) and Path(sheet["sheet"]).stat().st_size > 5000


def test_sigint_halfway_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    suite_file = tmp_path / "tiny.json"
    save_suite(tiny_suite(3), suite_file)
    out = tmp_path / "run"
    argv = dronecats_cmd("episodes", "run", str(suite_file), "--out", str(out), "--no-frames")
    proc = subprocess.Popen(
        argv,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl+C's default disposition in the child: a test run started as a shell's background job
        # inherits SIGINT ignored, and the interrupt under test would never arrive.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (out / "tiny-1" / RESULT_FILE).exists():
            time.sleep(0.05)
        assert (out / "tiny-1" / RESULT_FILE).exists(), "the first episode never completed"
        # Halfway: the second episode is being flown (its directory exists, no result yet).
        while time.monotonic() < deadline and not (out / "tiny-2").exists():
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        kill_if_running(proc)
    assert proc.returncode == 130, err[-2000:]
    assert "resume" in err
    complete = {p.name for p in out.iterdir() if (p / RESULT_FILE).exists()}
    assert "tiny-1" in complete and len(complete) < 3
    first = {name: (out / name / RESULT_FILE).stat().st_mtime_ns for name in complete}

    resumed = subprocess.run(argv, env=subprocess_env(), capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming: {len(complete)} of 3" in resumed.stdout
    final = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert final["episodes"] == 3
    dirs = sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert dirs == ["tiny-1", "tiny-2", "tiny-3"]  # one directory per episode, none duplicated
    assert all((out / d / RESULT_FILE).exists() for d in dirs)
    # Complete episodes were kept, not flown again; each episode's logs hold exactly one run.
    assert {n: (out / n / RESULT_FILE).stat().st_mtime_ns for n in complete} == first
    for d in dirs:
        starts = [json.loads(x) for x in (out / d / "events.jsonl").read_text().splitlines()]
        assert sum(e.get("event") == "started" for e in starts) == 1, d
    # The interrupted episode's partial logs were set aside, not scored.
    if len(complete) < 2:
        assert any((out / ".partial").iterdir())


@pytest.mark.slow
def test_hil_episode_through_airsim_against_dronecats_sim(tmp_path: Path) -> None:
    """The same record, the same runner and runtime: only the adapters differ (airsim:// vehicle,
    camera and RemoteTruth over RPC to a `dronecats sim` in another process, real time)."""
    suite_file = tmp_path / "one.json"
    record = short_record("hil-1")
    save_suite(Suite("one", [SuiteEntry(record, expectation_for(record))]), suite_file)
    with sim_server("--scene", "residential") as port:
        out = tmp_path / "hil"
        result = run_dronecats(
            "episodes",
            "run",
            str(suite_file),
            "--out",
            str(out),
            "--sim",
            f"airsim://127.0.0.1:{port}",
            timeout_s=240,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        outcome = json.loads((out / "hil-1" / RESULT_FILE).read_text())
        assert outcome["sim"] == f"airsim://127.0.0.1:{port}"
        assert outcome["verdict"]["success"], outcome
        assert outcome["verdict"]["ne_m"] <= 5.0
        meta = json.loads((out / "hil-1" / "episode.json").read_text())
        assert meta["run"]["lockstep"] is False and meta["run"]["pilot"] == "baseline"
        logs = read_episode(out / "hil-1")
        assert logs.steps and all(s.distance_m is not None for s in logs.steps)  # truth over RPC
        # The episode's objects were removed again: the server can fly the next episode.
        import airsim

        client = airsim.MultirotorClient(port=port)
        assert client.simListSceneObjects("ep_.*") == []


def test_an_episode_that_cannot_fly_is_reported_and_the_suite_goes_on(tmp_path: Path) -> None:
    bad = short_record("tiny-bad", target_x_m=95.0)  # ~100 m away: fails the 0.40% occupancy check
    good = short_record("tiny-good")
    suite = Suite("mixed", [SuiteEntry(r, expectation_for(r)) for r in (bad, good)])
    errors: list[tuple[str, str]] = []
    lines: list[str] = []
    results = run_suite(
        suite, tmp_path / "run", RunOptions(save_frames=False), say=lines.append, errors=errors
    )
    assert [r["run_name"] for r in results] == ["tiny-good"]
    assert len(errors) == 1 and errors[0][0] == "tiny-bad" and "pre-flight" in errors[0][1]
    assert any("tiny-bad: could not run" in line for line in lines)
    assert not (tmp_path / "run" / "tiny-bad" / RESULT_FILE).exists()  # a resume tries it again
