"""Fault row: `dronecats onboard` flying a Tello is stopped (SIGSTOP) for 3 s in flight, then continued.
The drone does not stop with it: the Tello flies its last rc sticks until it hears a command (or lands
after 15 s without one), so it goes on blind for the whole stall. The onboard's dead reckoning must
count that flight, or every position after it, geofence included, is short of where the drone is.

Judged on the simulator's pose (the airsim client) against the onboard's own dead-reckoned poses
(its trace.jsonl) once the flight has ended and the drone is on the ground. Real processes: `dronecats
sim --tello` (the SDK 2.0 emulator), `dronecats onboard --vehicle tello://…` over djitellopy."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.djitellopy_ports import free_for_a_child_process
from tests.support.failsafe import PoseRecorder, airsim_client, reset_world, wait_until
from tests.support.processes import (
    baseline_onboard_args,
    dronecats_cmd,
    emulator_url,
    kill_if_running,
    sim_server,
    subprocess_env,
)

pytestmark = pytest.mark.timeout(180)

STOPPED_S = 3.0
FLEW_BLIND_M = 1.5  # the drone must have gone at least this far while onboard was stopped
# Dead reckoning on a straight approach stays within this of the truth (tests/onboard/
# test_vehicles_tello.py's row without a stall); a stall counted as 0.5 s would miss it by ~2 m here.
RECKONING_M = 1.0


def _last_reckoned(log_dir: Path) -> tuple[float, float]:
    lines = [json.loads(x) for x in (log_dir / "trace.jsonl").read_text().splitlines() if x.strip()]
    pose = lines[-1]["pose"]
    return float(pose[0]), float(pose[1])


def test_a_stopped_onboard_reckons_the_flight_the_tello_made_meanwhile(tmp_path: Path) -> None:
    free_for_a_child_process()  # the onboard process's djitellopy binds them
    startup: list[str] = []
    with sim_server(
        "--scene", "residential", "--tello", "--tello-port", "0", wait_for=("tello Drone1:",), startup=startup
    ) as port:
        reset_world(airsim_client(port), target_x_m=30.0)
        log_dir = tmp_path / "tello"
        out = open(tmp_path / "onboard.out", "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            dronecats_cmd(
                *baseline_onboard_args(
                    emulator_url(startup, "tello Drone1") + "&mode=rc",
                    log_dir,
                    "--set",
                    "stop_on_declaration=false",
                    "--set",
                    "t_max_s=24",  # room to be cruising on a loaded machine, well short of the car
                    "--set",
                    "takeoff_altitude_m=1.5",
                )
            ),
            env=subprocess_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            with PoseRecorder(port) as recorder:

                def cruising() -> bool:
                    """Up and going forward at speed (the pilot has decided; the sticks are out)."""
                    recent = recorder.between(time.time() - 0.5, time.time())
                    return (
                        len(recent) >= 5
                        and -recent[-1][3] > 0.8
                        and (recent[-1][1] - recent[0][1]) / (recent[-1][0] - recent[0][0]) > 0.5
                    )

                assert wait_until(cruising, 90.0), (tmp_path / "onboard.out").read_text()[-3000:]
                os.kill(proc.pid, signal.SIGSTOP)
                stopped_s = time.time()
                time.sleep(STOPPED_S)
                os.kill(proc.pid, signal.SIGCONT)
                continued_s = time.time()
                proc.wait(120)
                blind = recorder.between(stopped_s, continued_s)
            flew_blind_m = math.dist(blind[0][1:3], blind[-1][1:3])
            truth = airsim_client(port).simGetVehiclePose("Drone1").position
        finally:
            kill_if_running(proc)
            out.close()
    assert proc.returncode == 0, (tmp_path / "onboard.out").read_text()[-3000:]
    assert flew_blind_m > FLEW_BLIND_M, flew_blind_m  # the fault happened as meant: the drone flew on
    reckoned = _last_reckoned(log_dir)
    miss_m = math.dist(reckoned, (truth.x_val, truth.y_val))
    print(f"tello: flew {flew_blind_m:.2f} m while onboard was stopped; reckoning off by {miss_m:.2f} m")
    assert miss_m < RECKONING_M, (reckoned, (truth.x_val, truth.y_val), flew_blind_m)
