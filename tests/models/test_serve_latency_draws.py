"""`dronecats serve-pilot --latency-draws FILE` (issue 25's real-time benchmark): each reply leaves the
drawn latency after its request arrived, in order, the pilot's own time inside it; against the real
server process with the real openai:// backend."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from common.actions import Go
from common.errors import ConfigError
from models.cli_serve import read_latency_draws
from models.pilot import Observation, model_pilot_from_url
from tests.support.pilots import draw_box, scene, serve_pilot_process
from tests.support.processes import run_dronecats


def car_frame():
    image = scene()
    draw_box(image, 400, 200, 144, 48)  # a red car about 8 m ahead, right of centre
    return image


def test_replies_leave_after_their_drawn_latency_in_order(tmp_path: Path) -> None:
    draws = tmp_path / "draws.json"
    draws.write_text(json.dumps([0.8, 0.0, 0.4]))  # then --latency-s (0) again
    with serve_pilot_process("--pilot", "baseline", "--latency-draws", str(draws)) as hostport:
        pilot = model_pilot_from_url(f"openai://{hostport}/v1?profile=qwen3.5-2b&retries=0")
        try:
            took_s, actions = [], []
            for _ in range(4):
                started = time.monotonic()
                decision = pilot.decide(Observation(car_frame(), "go to the red car"))
                took_s.append(time.monotonic() - started)
                actions.append(decision.action)
        finally:
            pilot.close()
    assert all(isinstance(a, Go) for a in actions), actions
    assert took_s[0] >= 0.8 and took_s[2] >= 0.4, took_s
    # The undrawn replies take only the pilot's and HTTP's time (loaded CI hosts: well under 0.4 s).
    assert took_s[1] < took_s[2] and took_s[3] < took_s[0] - 0.3, took_s


def test_bad_draws_are_refused(tmp_path: Path) -> None:
    cases = {"missing.json": None, "text.json": "not json", "empty.json": "[]", "neg.json": "[0.5, -1]"}
    cases |= {"inf.json": "[1e999]", "str.json": '[0.5, "x"]', "bool.json": "[true]", "obj.json": '{"a": 1}'}
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(ConfigError, match="--latency-draws"):
            read_latency_draws(str(path))
    assert read_latency_draws(str(_write(tmp_path / "ok.json", "[0, 1.5, 2]"))) == [0.0, 1.5, 2.0]


def test_the_command_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    path = _write(tmp_path / "neg.json", "[0.5, -1]")
    run = run_dronecats("serve-pilot", "--port", "0", "--latency-draws", str(path), timeout_s=30)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "--latency-draws" in lines[0] and "Traceback" not in run.stderr, run.stderr


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
