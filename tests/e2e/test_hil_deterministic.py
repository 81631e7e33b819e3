"""HIL lock-step over RPC is deterministic (issue 48): the same `dronecats episodes run` command, run
twice against one `dronecats sim --strict-airsim` process left running in between, flies the same
steps (actions, poses, truth, frames, verdict), though the server's clock reads another time at each
start. Only what the logs say of the wall clock (pilot and stage timings, wall time stamps) may differ.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import run_dronecats, sim_server

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

SUITE = Path(__file__).resolve().parents[2] / "episodes" / "suites" / "single.json"
# With AirSim's body-fixed camera (the server's default) the baseline pilot declares after ~17 s of
# simulated flight (33 steps): a few seconds of wall time per run at this clock speed.
EPISODE = "residential-approach-01"
# The server free-runs between the runs at this clock speed, so the second starts hundreds of
# simulated seconds later than the first.
SERVER = ("--scene", "residential", "--strict-airsim", "--clock-speed", "1000")
URL_OPTIONS = "api=auto&assets=builtin-strict&lockstep=1"
# Wall-clock measurements in the logs: the pilot's own time and the stage timings (the injected
# latency is fixed), and the events' wall time stamps. Every other field is simulation.
WALL_KEYS = {"latency_s", "wall_time"}
WALL_STAGES = {"capture_s", "preprocess_s", "model_s", "parse_s", "plan_s", "total_s"}
RUN_TIMEOUT_S = 180.0


def _simulated(line: dict[str, Any]) -> dict[str, Any]:
    """A log line without its wall-clock fields."""
    kept = {k: v for k, v in line.items() if k not in WALL_KEYS}
    if isinstance(kept.get("stages"), dict):
        kept["stages"] = {k: v for k, v in kept["stages"].items() if k not in WALL_STAGES}
    return kept


def _lines(path: Path) -> list[dict[str, Any]]:
    return [_simulated(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def _flown(episode_dir: Path) -> dict[str, Any]:
    """What a run flew: every log's simulated content, the frames' bytes, the verdict."""
    result = json.loads((episode_dir / "result.json").read_text())
    verdict = {k: v for k, v in result["verdict"].items() if k != "directory"}
    frames = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (episode_dir / "frames").iterdir()}
    return {
        "steps.jsonl": _lines(episode_dir / "steps.jsonl"),
        "trace.jsonl": _lines(episode_dir / "trace.jsonl"),
        "declarations.jsonl": _lines(episode_dir / "declarations.jsonl"),
        "events.jsonl": _lines(episode_dir / "events.jsonl"),
        "frames": sorted(frames.items()),
        "result": [
            {k: result[k] for k in ("end_reason", "steps", "sim_time_s", "injected_latencies_s")},
            verdict,
        ],
    }


def _first_difference(first: dict[str, Any], second: dict[str, Any]) -> str:
    """Where two runs part: the file, the line and both versions of it."""
    for name, lines in first.items():
        other = second[name]
        for i, (a, b) in enumerate(zip(lines, other, strict=False)):
            if a != b:
                return f"{name} line {i + 1}:\n  first:  {a}\n  second: {b}"
        if len(lines) != len(other):
            return f"{name}: {len(lines)} lines, then {len(other)}"
    return "none"


def _server_clock_s(port: int) -> float:
    client = airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=60)
    try:
        return float(client.getMultirotorState("Drone1").timestamp) / 1e9
    finally:
        client.client.close()


@pytest.mark.slow
def test_the_same_lockstep_command_flies_the_same_steps_on_one_server(tmp_path: Path) -> None:
    runs = ("first", "second")
    clocks_s: list[float] = []
    with sim_server(*SERVER) as port:
        url = f"airsim://127.0.0.1:{port}?{URL_OPTIONS}"
        for run in runs:
            clocks_s.append(_server_clock_s(port))
            done = run_dronecats(
                "episodes",
                "run",
                str(SUITE),
                "--only",
                EPISODE,
                "--latency",
                "fixed:0.05",
                "--sim",
                url,
                "--out",
                str(tmp_path / run),
                timeout_s=RUN_TIMEOUT_S,
            )
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    # The second episode starts on another reading of the server's clock (it ran in between).
    assert clocks_s[1] > clocks_s[0] + 1.0, clocks_s
    first, second = (_flown(tmp_path / run / EPISODE) for run in runs)
    assert first["steps.jsonl"] and first["frames"], first["result"]
    assert first["result"][1]["ne_m"] is not None  # judged
    assert first == second, _first_difference(first, second)
