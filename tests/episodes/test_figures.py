"""Report figures a paper can print: trace panels at a readable size, in metres, with the target, its
distractors and look-alikes, the δ ring and the declarations; PNG and PDF; `--vs` bars with every
run side by side, short pilot labels and the reference run's noise band."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import msgspec
import pytest

from episodes.records import SceneObject
from episodes.report import groups, load_rows, short_pilot
from episodes.run_options import LatencySpec, RunOptions
from episodes.runner import run_suite
from episodes.suites import Suite, SuiteEntry
from tests.support.episodes import tiny_suite
from tests.support.processes import run_dronecats

pytest.importorskip("pybullet")
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("figures")
    entry = tiny_suite(1).episodes[0]
    # behind the start, out of the way: drawn, not flown to
    look_alike = SceneObject("ep_look_alike", "car", (-14.0, 1.5, 0.0, 0.0), colour="purple")
    record = msgspec.structs.replace(entry.record, distractors=[*entry.record.distractors, look_alike])
    suite = Suite("tiny", [SuiteEntry(record, entry.expect)])
    a, b = root / "measured", root / "slow"
    run_suite(suite, a, RunOptions(latency=LatencySpec.parse("fixed:0.5"), t_max_s=30.0))
    run_suite(suite, b, RunOptions(latency=LatencySpec.parse("fixed:1.5"), t_max_s=30.0))
    return a, b


def test_a_trace_panel_draws_target_distractors_look_alikes_ring_and_declarations(two_runs) -> None:
    from episodes.plots import _pyplot, draw_trace

    plt = _pyplot()
    fig, ax = plt.subplots()
    try:
        draw_trace(ax, load_rows(two_runs[0])[0])
        labels = [line.get_label() for line in ax.lines] + [patch.get_label() for patch in ax.patches]
        assert labels.count("distractor") == 2 and labels.count("look-alike") == 1, labels
        assert {"target", "δ ring", "drone", "start", "declaration, qualifying"} <= set(labels), labels
        target = next(line for line in ax.lines if line.get_label() == "target")
        assert target.get_color() == "purple"  # drawn in its own colour
        assert ax.get_xlabel() == "east (m)" and ax.get_ylabel() == "north (m)"
        assert "(δ 5 m)" in ax.get_title() and "purple car" in ax.get_title()
    finally:
        plt.close(fig)


def test_a_fleet_trace_draws_one_path_a_drone(two_runs, tmp_path) -> None:
    """A fleet's trace.jsonl interleaves its drones' samples; each drone gets its own line."""
    import shutil

    from common.logformat import TraceLine
    from episodes.plots import _pyplot, draw_trace

    episode = tmp_path / "fleet"
    shutil.copytree(Path(load_rows(two_runs[0])[0].directory), episode)
    trace = episode / "trace.jsonl"
    lines = [msgspec.json.decode(raw, type=TraceLine) for raw in trace.read_bytes().splitlines()]
    fleet = []
    for line in lines:  # Drone2 flies Drone1's path 6 m east, sampled at the same instants
        assert line.pose is not None
        moved = [line.pose[0], line.pose[1] + 6.0, *line.pose[2:]]
        fleet += [line, msgspec.structs.replace(line, drone="Drone2", pose=moved)]
    trace.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in fleet))
    row = load_rows(episode)[0]
    plt = _pyplot()
    fig, ax = plt.subplots()
    try:
        draw_trace(ax, row)
        paths = {line.get_label(): line for line in ax.lines if line.get_label().startswith("Drone")}
        assert set(paths) == {"Drone1", "Drone2"}, [line.get_label() for line in ax.lines]
        east = {name: set(line.get_xdata()) for name, line in paths.items()}
        assert len(east["Drone1"]) > 1 and not east["Drone1"] & east["Drone2"]  # no segment joins them
        assert paths["Drone1"].get_color() != paths["Drone2"].get_color()
    finally:
        plt.close(fig)


def test_report_writes_png_and_pdf_at_a_readable_size_and_vs_bars_side_by_side(two_runs, tmp_path) -> None:
    from episodes.plots import bar_series

    a, b = two_runs
    out = tmp_path / "report"
    done = run_dronecats(
        "episodes", "report", str(a), "--vs", str(b), "--vs", str(a), "--out", str(out), timeout_s=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("bars", "traces-approach"):
        assert (out / f"{name}.pdf").read_bytes().startswith(b"%PDF"), name
        image = cv2.imread(str(out / f"{name}.png"))
        assert image is not None and image.shape[0] >= 340, (name, image.shape)  # one panel >= 340 px tall
    md = (out / "report.md").read_text()
    assert md.count("## Comparison with") == 2 and "[bars.pdf](bars.pdf)" in md
    assert "distractors ▲ and look-alikes ✖" in md
    series = bar_series(groups(load_rows(a)), [(b.name, groups(load_rows(b)))], a.name)
    assert [label for label, _ in series] == ["measured: baseline (fixed:0.5)", "slow: baseline (fixed:1.5)"]


def test_report_vs_a_run_of_other_episodes_says_it_is_not_like_for_like(two_runs, tmp_path) -> None:
    a, b = two_runs
    other = tmp_path / "other"
    shutil.copytree(b, other)
    (episode,) = [d for d in other.iterdir() if d.is_dir()]
    episode.rename(other / "some-other-episode")
    out = tmp_path / "report"
    done = run_dronecats(
        "episodes", "report", str(a), "--vs", str(other), "--vs", str(b), "--out", str(out), timeout_s=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    warned = [line for line in done.stderr.splitlines() if "different episodes" in line]
    assert len(warned) == 1 and str(other) in warned[0] and "some-other-episode" in warned[0], done.stderr
    md = (out / "report.md").read_text()
    assert md.count("**Not like for like:**") == 1  # the same episodes (b) get no warning


@pytest.mark.parametrize(
    ("spec", "short"),
    [
        ("baseline", "baseline"),
        ("openai://127.0.0.1:8000/v1?model=Qwen/Qwen3.5-2B&profile=qwen3.5-2b", "qwen3.5-2b"),
        ("openai://127.0.0.1:8000/v1?model=Qwen/Qwen3.5-2B", "Qwen3.5-2B"),
        ("openai://127.0.0.1:8000/v1", "openai://127.0.0.1:8000/v1"),
        ("scripted:/tmp/replies/approach.jsonl", "scripted approach"),
    ],
)
def test_short_pilot_labels(spec: str, short: str) -> None:
    assert short_pilot(spec) == short
