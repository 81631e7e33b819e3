"""Resume guard rails: a run directory knows the configuration that flew each episode, so a re-run
with another pilot, latency or structure is refused with the difference named (nothing flown),
--force flies it again, another code version is only a warning, and an unknown --only id is an
error with the close matches."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from common.errors import ConfigError
from episodes.episode import RESULT_FILE
from episodes.run_options import LatencySpec, RunOptions
from episodes.runner import PARTIAL_DIR, run_suite
from episodes.suites import Suite, SuiteEntry, save_suite
from tests.support.episodes import tiny_suite
from tests.support.processes import run_dronecats

pytest.importorskip("pybullet")

FAST = RunOptions(latency=LatencySpec.parse("fixed:0.5"), t_max_s=30.0)


@pytest.fixture(scope="module")
def flown(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny episode flown once with FAST (a few seconds of lock-step)."""
    out = tmp_path_factory.mktemp("resume") / "run"
    results = run_suite(tiny_suite(1), out, FAST)
    assert len(results) == 1 and results[0]["verdict"]["success"], results
    return out


def test_the_run_records_its_configuration_and_code_version(flown: Path) -> None:
    result = json.loads((flown / "tiny-1" / RESULT_FILE).read_text())
    config = result["config"]
    assert config["pilot"]["url"] == "baseline"
    assert config["latency"] == "fixed:0.5"
    assert config["structure"] == "single" and config["sim"] == {"kind": "local lock-step"}
    assert len(config["record_sha256"]) == 16
    assert config["runtime"]["t_max_s"] == 30.0 and config["runtime"]["instruction"] == "go to the purple car"
    assert result["code_version"]["package"] == "0.1.0"
    run = json.loads((flown / "run.json").read_text())
    assert run["pilot"] == "baseline" and run["code_version"] == result["code_version"]
    # The same configuration again: kept, nothing flown.
    lines: list[str] = []
    again = run_suite(tiny_suite(1), flown, FAST, say=lines.append)
    assert again[0]["wall_time_s"] == result["wall_time_s"]
    assert any("resuming: 1 of 1" in line for line in lines), lines


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"pilot": "openai://127.0.0.1:9/v1?model=baseline"}, "pilot.url: 'baseline' -> 'openai://"),
        ({"latency": LatencySpec.parse("fixed:1.0")}, "latency: 'fixed:0.5' -> 'fixed:1'"),
        ({"structure": "multi"}, "structure: 'single' -> 'multi'"),
        ({"t_max_s": 45.0}, "runtime.t_max_s: 30.0 -> 45.0"),
    ],
)
def test_another_configuration_is_refused_with_the_difference_named(
    flown: Path, change: dict, named: str
) -> None:
    before = (flown / "tiny-1" / RESULT_FILE).read_bytes()
    options = RunOptions(**{**FAST.__dict__, **change})
    with pytest.raises(ConfigError) as refused:
        run_suite(tiny_suite(1), flown, options)
    assert named in str(refused.value) and "tiny-1" in str(refused.value), refused.value
    assert "--force" in str(refused.value)
    assert (flown / "tiny-1" / RESULT_FILE).read_bytes() == before  # nothing flown, nothing moved


def test_a_changed_record_is_refused(flown: Path) -> None:
    entry = tiny_suite(1).episodes[0]
    moved = msgspec.structs.replace(entry.record, distractors=entry.record.distractors[:1])
    suite = Suite("tiny", [SuiteEntry(moved, entry.expect)])
    with pytest.raises(ConfigError, match="record_sha256"):
        run_suite(suite, flown, FAST)


def test_another_code_version_is_a_warning_not_a_refusal(flown: Path) -> None:
    path = flown / "tiny-1" / RESULT_FILE
    result = json.loads(path.read_text())
    result["code_version"] = {"package": "0.0.9", "git": "abc1234", "dirty": False}
    path.write_text(json.dumps(result))
    lines: list[str] = []
    kept = run_suite(tiny_suite(1), flown, FAST, say=lines.append)
    assert kept[0]["wall_time_s"] == result["wall_time_s"]
    assert any(line.startswith("warning:") and "abc1234" in line for line in lines), lines


def test_force_flies_the_changed_configuration_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_suite(tiny_suite(1), out, FAST)
    changed = RunOptions(**{**FAST.__dict__, "latency": LatencySpec.parse("fixed:0.8")})
    lines: list[str] = []
    results = run_suite(tiny_suite(1), out, changed, say=lines.append, force=True)
    assert results[0]["latency"] == "fixed:0.8" and results[0]["injected_latency_p50_s"] == 0.8
    assert json.loads((out / "tiny-1" / RESULT_FILE).read_text())["config"]["latency"] == "fixed:0.8"
    aside = list((out / PARTIAL_DIR).iterdir())
    assert len(aside) == 1 and json.loads((aside[0] / RESULT_FILE).read_text())["latency"] == "fixed:0.5"
    assert any("--force: flying 1 run(s) again" in line for line in lines), lines


def test_cli_refuses_a_changed_pilot_and_an_unknown_only_id(flown: Path, tmp_path: Path) -> None:
    suite_file = tmp_path / "tiny.json"
    save_suite(tiny_suite(2), suite_file)
    unknown = run_dronecats("episodes", "run", str(suite_file), "--only", "tiny-1,tiny_2,nothing-like-it")
    assert unknown.returncode == 2, unknown.stdout
    assert "unknown episode id 'tiny_2' (did you mean tiny-2" in unknown.stderr, unknown.stderr
    assert "unknown episode id 'nothing-like-it'" in unknown.stderr
    assert "Traceback" not in unknown.stderr

    argv = [str(suite_file), "--only", "tiny-1", "--out", str(flown), "--latency", "fixed:0.5"]
    argv += ["--t-max", "30", "--pilot", "openai://127.0.0.1:9/v1?model=baseline"]
    changed = run_dronecats("episodes", "run", *argv)
    assert changed.returncode == 2, changed.stdout
    assert "another configuration" in changed.stderr and "pilot.url: 'baseline' -> " in changed.stderr
    assert "Traceback" not in changed.stderr
