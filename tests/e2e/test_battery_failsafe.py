"""The low-battery failsafe end to end on real processes: `dronecats sim --mavlink` with a nearly empty
simulated pack, `dronecats onboard --vehicle mavlink://...` flying it with the baseline pilot and a
ground-station link. The battery travels as the emulated PX4 reports it (BATTERY_STATUS), the onboard
safety governor lands at safety.battery_land_fraction (15 %), the ground station receives the
falling charge in its telemetry (what its plots draw), and the vehicle is judged where it is in the
simulator (over the AirSim RPC of the same world): on the ground."""

from __future__ import annotations

import json
import os
import subprocess
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from tests.support.ports import free_base_port
from tests.support.processes import (
    baseline_onboard_args,
    dronecats_cmd,
    mavlink_sim,
    subprocess_env,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_low_battery_lands_the_mavlink_drone(tmp_path) -> None:
    import airsim

    from ground_station.app.plots import sample
    from ground_station.fleet.client import DroneAddress, FleetClient

    # 10 Wh at 20 %: ~0.45 Wh above the 15 % reserve, ~8 s of hover at the default 200 W
    with mavlink_sim("--battery-capacity-wh", "10", "--battery-start-pct", "20") as (port, url):
        client = airsim.MultirotorClient(port=port)
        client.confirmConnection()
        floor_z_m = client.getMultirotorState("Drone1").kinematics_estimated.position.z_val
        gs = f"tcp://127.0.0.1:{free_base_port()}"
        out = tmp_path / "flight"
        onboard = subprocess.Popen(
            dronecats_cmd(
                *baseline_onboard_args(url, out),
                "--gs",
                gs,
                "--insecure",
                "--set",
                "t_max_s=60",  # far longer than the pack lasts: the battery must end the flight
            ),
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        fleet = FleetClient([DroneAddress("Drone1", gs)]).start()
        batteries: list[float] = []
        top_m = 0.0
        try:
            deadline = time.monotonic() + 90
            while onboard.poll() is None and time.monotonic() < deadline:
                z = client.getMultirotorState("Drone1").kinematics_estimated.position.z_val
                top_m = max(top_m, floor_z_m - z)
                battery = sample(fleet.state.snapshot("Drone1"))["battery"]
                if battery is not None and (not batteries or battery != batteries[-1]):
                    batteries.append(battery)
                time.sleep(0.1)
            stdout, stderr = onboard.communicate(timeout=30)
        finally:
            if onboard.poll() is None:
                onboard.kill()
                onboard.wait(10)
            fleet.close()
        print(f"battery at the ground station {batteries}, top {top_m:.2f} m")
        assert onboard.returncode == 0, stderr[-2000:]
        summary = json.loads(stdout.strip().splitlines()[-1])
        assert summary["reason"] == "landing: battery 15% <= 15%", summary
        events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
        safety = [e for e in events if e.get("event") == "safety"]
        assert safety and safety[0]["mode"] == "landing" and safety[0]["reason"].startswith("battery 15%")
        # the ground station saw the pack run down, as PX4 reports it (whole percent)
        assert batteries and batteries[0] in (20.0, 19.0, 18.0, 17.0, 16.0) and batteries[-1] <= 15.0
        assert batteries == sorted(batteries, reverse=True), batteries
        # it flew, then the autopilot's landing put it on the ground (the simulator's truth)
        assert top_m > 1.0, top_m
        deadline = time.monotonic() + 20
        state = client.getMultirotorState("Drone1")
        while int(state.landed_state) != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            state = client.getMultirotorState("Drone1")
        assert int(state.landed_state) == 0
        assert state.kinematics_estimated.position.z_val == pytest.approx(floor_z_m, abs=0.05)
