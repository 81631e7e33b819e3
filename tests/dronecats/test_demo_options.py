"""`dronecats demo` options mean what they say: --scene builds that scene with its environment
(indoor: δ 2.5 m, indoor flight profile), --instruction spawns the target it names and the verdict is
scored against it; what cannot hold is refused with the choices (exit 2, one line). And the fleet
demo's GUI ends by itself at the first qualifying declaration."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from common.errors import ConfigError
from dronecats.demo_scene import demo_record
from episodes.logs import read_episode
from tests.support.processes import run_dronecats, subprocess_env

pytest.importorskip("pybullet")


def _demo(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "demo"
    done = run_dronecats("demo", "--quiet", "--out", str(out), *argv, timeout_s=120)
    return done, out


def test_indoor_scene_is_the_living_room_with_indoor_rules(tmp_path: Path) -> None:
    done, out = _demo(tmp_path, "--scene", "indoor")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["success"] and summary["ne_m"] <= 2.5, summary
    logs = read_episode(out)
    assert logs.record is not None
    record = logs.record
    assert (record.scene, record.environment, record.delta_m) == ("indoor", "indoor", 2.5)
    assert record.flight_profile == "indoor" and record.instruction == "go to the blue person"
    target = record.targets[0]
    assert (target.class_, target.colour) == ("person", "blue")
    assert summary["ne_m"] == pytest.approx(_declared_distance_m(logs), abs=0.3)
    assert max(-line.pose[2] for line in logs.trace if line.pose) < 2.8  # below the living room's ceiling


def test_the_instruction_names_the_target_that_is_spawned_and_scored(tmp_path: Path) -> None:
    done, out = _demo(tmp_path, "--instruction", "go to the blue van", "--distance-m", "22")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    logs = read_episode(out)
    assert logs.record is not None
    target = logs.record.targets[0]
    assert (target.class_, target.colour, target.pose[0]) == ("van", "blue", 22.0)
    # NE is the distance to that van: the verifier scored the target the instruction names.
    assert summary["success"] and summary["ne_m"] == pytest.approx(_declared_distance_m(logs), abs=0.3)


def _declared_distance_m(logs) -> float:
    """Horizontal distance from the first declaration's pose to the record's target."""
    assert logs.record is not None and logs.declarations and logs.declarations[0].pose
    x, y = logs.declarations[0].pose[:2]
    target = logs.record.targets[0].pose
    return math.hypot(x - target[0], y - target[1])


@pytest.mark.parametrize(
    ("scene", "instruction", "distance_m", "says"),
    [
        ("residential", "go to the person", 25.0, "ambiguous in the residential scene (a blue person 30 m"),
        ("indoor", "go to the person", None, "name a colour no person there wears: blue"),
        ("indoor", "go to the red car", None, "no car in the indoor demo; indoor targets: person, cyclist"),
        ("residential", "go to the tree", None, "names no target the demo can place"),
        ("blocks", "follow the red car", None, "moving targets are episodes"),
        ("residential", None, 80.0, "--distance-m 80: the residential scene has room for 5-40 m"),
        ("indoor", None, 12.0, "the indoor scene has room for 2.5-6.5 m"),
    ],
)
def test_options_that_cannot_hold_are_refused_with_the_choices(
    scene: str, instruction: str | None, distance_m: float | None, says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        demo_record("demo", scene, instruction, distance_m, 120.0, 0)
    assert says in str(refused.value), refused.value


def test_small_targets_start_closer_and_every_scene_has_a_default() -> None:
    person = demo_record("demo", "blocks", "go to the yellow person", None, 120.0, 0).record.targets[0]
    assert (person.class_, person.colour, person.pose[0]) == ("person", "yellow", 6.0)
    # "the person" in the street: a red one 6 m ahead, the scene's own (blue, 30 m) far behind it
    person = demo_record("demo", "residential", "go to the person", None, 120.0, 0).record.targets[0]
    assert (person.class_, person.colour, person.pose[0]) == ("person", "red", 6.0)
    for scene, noun in (("residential", "car"), ("blocks", "car"), ("indoor", "person")):
        assert demo_record("demo", scene, None, None, 120.0, 0).record.targets[0].class_ == noun


def test_a_refusal_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done, out = _demo(tmp_path, "--scene", "indoor", "--instruction", "go to the red car")
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.strip().startswith("dronecats demo: --instruction 'go to the red car': no car")
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_fleet_demo_gui_ends_at_the_first_qualifying_declaration(tmp_path: Path) -> None:
    pytest.importorskip("PyQt6")
    env = {**subprocess_env(), "QT_QPA_PLATFORM": "offscreen", "DISPLAY": os.environ.get("DISPLAY", ":0")}
    done = run_dronecats(
        "demo-fleet",
        "--drones",
        "2",
        "--duration-s",
        "150",
        "--log-dir",
        str(tmp_path),
        timeout_s=240,
        env=env,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["reason"] == "qualifying"
    assert any(d["visible"] and d["distance_m"] <= 5.0 for d in summary["declarations"]), summary
