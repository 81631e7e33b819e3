"""`dronecats parse` through a real subprocess (docs/controller.md#checking-it-by-hand)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.processes import dronecats_cmd, subprocess_env


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        dronecats_cmd("parse", *args),
        input=stdin,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=60,
    )


def test_go_in_yx_order_prints_image_order() -> None:
    result = _run(
        "--point-order", "yx", '```json\n{"action": "go", "point": [430, 612.5], "depth_m": 9}\n```'
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "action": "go",
        "point": [613, 430],
        "depth_m": 9.0,
        "angle_deg": None,
    }
    assert result.stderr == ""


def test_rotate_is_clamped_and_stdin_works() -> None:
    result = _run("-", stdin='Turning right. {"action": "rotate", "angle_deg": 135}')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "action": "rotate",
        "point": None,
        "depth_m": None,
        "angle_deg": 90.0,
    }


def test_plan_reply() -> None:
    reply = {
        "target_in_view": "no",
        "target_match": "uncertain",
        "closing_in": "unknown",
        "current_frame": "a wall",
        "action_planning": "turn around",
        "action": "rotate",
        "point": None,
        "depth_m": None,
        "angle_deg": 90,
    }
    result = _run("--plan", json.dumps(reply))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["angle_deg"] == 90.0 and out["plan"]["action_planning"] == "turn around"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"action": "go", "point": [500, 400], "depth_m": NaN}', "non-finite"),
        ('{"action": "go", "point": [500, 400', "truncated"),
        ('{"action": "go", "point": [1500, 400], "depth_m": 3}', "outside 0-1000"),
        ("", "empty"),
        ('{"action": "think"}\n{"action": "finished"}', "2 JSON values"),
    ],
)
def test_malformed_exits_2_with_one_line(text: str, reason: str) -> None:
    result = _run(text)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and reason in lines[0] and "Traceback" not in result.stderr


def test_think_off() -> None:
    assert _run("--think-off", '{"action": "think"}').returncode == 2
    assert _run('{"action": "think"}').returncode == 0
