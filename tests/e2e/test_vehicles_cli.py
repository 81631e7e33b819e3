"""Rehearsal through the command line: `dronecats sim --mavlink` serves the simulator as a PX4
autopilot and `dronecats onboard --vehicle mavlink://...` flies it with the baseline pilot (two
processes, MAVLink and H.264 over loopback). The Tello path is exercised in-process
(tests/onboard/test_vehicles_tello.py): djitellopy's fixed ports allow one djitellopy process per host."""

from __future__ import annotations

import json

import pytest

from tests.support.airsim_clients import spawn_red_car
from tests.support.processes import baseline_onboard_args, mavlink_sim, run_dronecats


@pytest.mark.slow
def test_onboard_flies_dronecats_sim_mavlink(tmp_path) -> None:
    import airsim

    with mavlink_sim() as (port, url):
        assert url.startswith("mavlink://udpin:127.0.0.1:") and "camera=h264udp://" in url
        client = airsim.MultirotorClient(port=port)
        client.confirmConnection()
        spawn_red_car(client, 14.0)
        out = tmp_path / "flight"
        result = run_dronecats(
            *baseline_onboard_args(
                url,
                out,
                "--set",
                "t_max_s=60",
                "--set",
                "min_decision_period_s=0.5",
                "--set",
                "judgement_wait_s=3",
            ),
            timeout_s=120,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        # No ground truth on a PX4 and no operator here: the first declaration holds for a verdict, and
        # the run ends when none comes (before: a declaration every step until T_max).
        assert summary["steps"] >= 5 and summary["declarations"] == 1, summary
        assert summary["reason"] == "declared: no judgement after 3 s", summary
        # it flew toward the car (truth over the AirSim RPC of the same world) and landed
        state = client.getMultirotorState("Drone1")
        assert state.kinematics_estimated.position.x_val > 5.0
        events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
        assert not [e for e in events if e.get("event") == "vehicle_fault"], events
