"""The onboard process end to end: `dronecats sim` (AirSim-compatible server) in one process,
`dronecats onboard` flying it through the real airsim client in another, the verifier on its logs."""

from __future__ import annotations

import json

import pytest

from episodes.logs import read_episode
from episodes.verifier import VerifierSettings, verify
from tests.support.processes import baseline_onboard_args, run_dronecats, sim_server


@pytest.mark.slow
def test_onboard_process_flies_the_sim_server_to_a_qualifying_declaration(tmp_path) -> None:
    import airsim

    # README.md's sim + onboard example: the target spawned from the command line, the real-time
    # defaults (a decision at most every 0.5 s, at most 2 saved frames a second) left as they are.
    with sim_server("--scene", "residential", "--spawn", "target=car@red:25,0,90") as port:
        client = airsim.MultirotorClient(port=port)
        client.confirmConnection()
        assert client.simGetObjectPose("target").position.x_val == 25.0
        out = tmp_path / "flight"
        result = run_dronecats(
            *baseline_onboard_args(
                f"airsim://127.0.0.1:{port}/Drone1", out, "--truth-target", "target", "--set", "t_max_s=90"
            ),
            timeout_s=180,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        assert summary["reason"] == "declared"
        assert summary["decisions_per_s"] <= 2.05, summary  # min_decision_period_s 0.5 by default
        frames = sorted((out / "frames").iterdir())
        steps = read_episode(out).steps
        flown_s = steps[-1].t - steps[0].t
        assert 1 < len(frames) <= 2 * flown_s + 1, (len(frames), flown_s)
        verdict = verify(read_episode(out), VerifierSettings(delta_m=5.0, t_max_s=90.0))
        assert verdict.success and verdict.ne_m is not None and verdict.ne_m <= 5.0
        # The actuation thread asked for real-time scheduling by default and recorded what it got.
        run = json.loads((out / "episode.json").read_text())["run"]
        assert run["actuation_scheduling"] == "SCHED_FIFO 10" or run["actuation_scheduling"].startswith(
            "normal (SCHED_FIFO 10 refused"
        )
        assert run["nice"] == "nice -5" or "(nice -5 refused" in run["nice"]
