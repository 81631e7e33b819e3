"""The first real-tensor flight: `dronecats demo --pilot hf://...` flies the built-in simulator
with the tiny Qwen3.5 architecture (RANDOM WEIGHTS) in this process's CPU torch, every reply
constrained to the schema: all of them parse, the stages are logged, and the demo labels the
pilot as random weights everywhere it names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xgrammar")
pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("pybullet")

from models.parser import parse_action

PILOT = "hf://qwen3.5-tiny?random_init=1&device=cpu&dtype=float32&profile=qwen3.5-2b"
ROOT = Path(__file__).resolve().parents[2]


def test_a_random_weights_vlm_flies_the_demo_with_every_reply_valid(tmp_path: Path) -> None:
    out = tmp_path / "episode"
    env = {**os.environ, "DRONECATS_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "dronecats", "demo", "--pilot", PILOT, "--t-max-s", "6", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: the verdict is a failure, as expected
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["random_weights"] is True
    assert "RANDOM WEIGHTS" in summary["pilot"]
    assert "RANDOM WEIGHTS" in proc.stdout  # said while flying, not only in the summary
    assert summary["decisions"] >= 1
    assert summary["replies_valid"] == summary["decisions"] and summary["replies_valid_pct"] == 100.0
    assert summary["model_ms_p50"] > 0 and summary["total_ms_p50"] >= summary["model_ms_p50"]
    assert summary["decision_rate_hz"] > 0

    # the flight log, read independently: every step's raw reply parses, and its stages are there
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert len(steps) == summary["decisions"]
    for step in steps:
        assert step["error"] is None and step["discarded"] in (None, "stale")
        parse_action(step["raw"], "xy", think=True, plan="target_in_view" in step["raw"])
        assert step["stages"]["model_s"] > 0
    metadata = json.loads((out / "episode.json").read_text())
    assert "RANDOM WEIGHTS" in metadata["run"]["pilot"]
