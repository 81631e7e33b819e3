"""A HIL run records what it flew against (client api, lock-step or real time, asset map, the
server's version and map), so a resume into the same --out with any of them changed is refused
with the difference named, and the same simulator on another port is kept. Real `dronecats sim`
servers, one episode flown over stock RPC in lock-step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.errors import ConfigError
from episodes.episode import RESULT_FILE
from episodes.run_options import LatencySpec, RunOptions
from episodes.runner import run_suite
from episodes.suites import Suite, load_suite
from tests.support.processes import sim_server

pytest.importorskip("airsim")
pytest.importorskip("pybullet")
pytestmark = pytest.mark.slow

SUITE = Path(__file__).resolve().parents[2] / "episodes" / "suites" / "single.json"
SERVER = ("--scene", "residential", "--clock-speed", "1000", "--camera-gimbal", "level")


def one_episode() -> Suite:
    suite = load_suite(SUITE)
    return Suite(
        "hil-one", [e for e in suite.episodes if e.record.id == "residential-approach-04"], suite.seed
    )


def options(url: str) -> RunOptions:
    return RunOptions(latency=LatencySpec.parse("fixed:0.05"), save_frames=False, sim_url=url)


def test_a_resume_against_another_simulator_configuration_is_refused_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with (
        sim_server(*SERVER) as port,
        sim_server(*SERVER) as same_again,
        sim_server(*SERVER, "--scene", "blocks") as other_map,
    ):
        base = f"airsim://127.0.0.1:{port}"
        url = f"{base}?api=airsim&lockstep=1"
        first = run_suite(one_episode(), out, options(url))
        assert len(first) == 1 and first[0]["verdict"]["ne_m"] is not None, first
        stored = json.loads((out / "residential-approach-04" / RESULT_FILE).read_text())["config"]["sim"]
        assert stored["kind"] == "hil" and stored["api"] == "airsim" and stored["lockstep"] is True
        assert stored["server_version"] >= 1 and stored["map"]["objects"] > 0
        refusals = {
            f"{base}?api=cosys&lockstep=1": "sim.api: 'airsim' -> 'cosys'",
            f"{base}?api=airsim": "sim.lockstep: True -> False",
            f"{base}?api=airsim&lockstep=1&assets=builtin-strict": "sim.assets.name: 'builtin'",
            f"airsim://127.0.0.1:{other_map}?api=airsim&lockstep=1": "sim.map.sha256",
        }
        for changed, named in refusals.items():
            with pytest.raises(ConfigError) as refused:
                run_suite(one_episode(), out, options(changed))
            assert named in str(refused.value) and "--force" in str(refused.value), (changed, refused.value)
        # The same simulator again, on another port, its URL's options in another order: kept.
        lines: list[str] = []
        again = run_suite(
            one_episode(),
            out,
            options(f"airsim://127.0.0.1:{same_again}?lockstep=1&api=airsim"),
            say=lines.append,
        )
        assert again[0]["wall_time_s"] == first[0]["wall_time_s"]
        assert any("resuming: 1 of 1" in line for line in lines), lines
    # No server there: one line naming the URL, nothing flown.
    with pytest.raises(ConfigError, match="no AirSim server answers there"):
        run_suite(one_episode(), out, options("airsim://127.0.0.1:9?lockstep=1"))
