"""Fault row: `kill -9` of `dronecats onboard` in flight. Nothing of onboard survives it (its landing,
its keep-alives, its setpoints all die with it), so what lands the vehicle is the vehicle's own last
resort, armed by onboard before it flew: the built-in simulator's command-silence landing (airsim://),
PX4's offboard-loss action (mavlink://, the emulator), the Tello's auto-land on command silence
(tello://, the emulator). Judged on the vehicle's pose in the simulator through the airsim client, and
on the vehicle's own log line (the simulator's output) saying why it landed.

One `dronecats sim --tello --mavlink` serves all three, with short silence bounds set here so the row
stays quick: the Tello's auto-land at 3 s (the firmware's is a fixed 15 s), PX4's COM_FAIL_ACT_T at 1 s
(default 5 s), onboard's own COM_OF_LOSS_T default (1 s) and the simulator's silence_land_s at 1 s
(default 5 s)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.djitellopy_ports import free_for_a_child_process
from tests.support.failsafe import PoseRecorder, airsim_client, reset_world, wait_until
from tests.support.processes import (
    baseline_onboard_args,
    dronecats_cmd,
    kill_if_running,
    stop_process,
    subprocess_env,
)

pytestmark = pytest.mark.timeout(240)

SIM_LAND_SPEED_M_S = 0.5  # the built-in multirotor's landing speed (the Tello emulator lands with it too)
PX4_LAND_SPEED_M_S = 0.7  # MPC_LAND_SPEED default
GROUND_M = 0.15  # the pose's height above the spawn point that counts as on the ground
LOAD_MARGIN_S = 4.0  # a loaded 2-core machine: the bound is twice the documented time plus this


@dataclass
class Rehearsal:
    port: int
    urls: dict[str, str]  # "tello" / "mavlink" -> the URL `dronecats sim` printed for Drone1
    output: Path  # the simulator's stdout and stderr: the vehicles' own log lines

    def log_text(self) -> str:
        return self.output.read_text(errors="replace")


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rehearsal]:
    output = tmp_path_factory.mktemp("sim") / "sim.out"
    with open(output, "w") as out:
        proc = subprocess.Popen(
            dronecats_cmd(
                "sim",
                "--port",
                "0",
                "--scene",
                "residential",
                "--tello",
                "--tello-port",
                "0",  # free ports: another rehearsal on this host may hold 9001
                "--tello-auto-land-s",
                "3",
                "--mavlink",
                "--mavlink-port",
                "0",
                "--mavlink-param",
                "COM_FAIL_ACT_T=1",
            ),
            env=subprocess_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:

        def started() -> list[str] | None:
            lines = output.read_text(errors="replace").splitlines()
            wanted = ("listening on", "tello Drone1:", "mavlink Drone1:")
            ready = all(any(x.startswith(w) for x in lines) for w in wanted)
            return lines if ready or proc.poll() is not None else None  # up, or given up

        lines = wait_until(started, 90.0)
        assert lines and proc.poll() is None, f"dronecats sim did not start: {output.read_text()[-2000:]}"
        port = int(next(x for x in lines if x.startswith("listening on")).rsplit(":", 1)[1])
        urls = {
            k: next(x for x in lines if x.startswith(f"{k} Drone1:")).split(": ", 1)[1]
            for k in ("tello", "mavlink")
        }
        yield Rehearsal(port, urls, output)
    finally:
        stop_process(proc)


def fly_then_kill(
    rehearsal: Rehearsal, vehicle_url: str, log_dir: Path, recorder: PoseRecorder
) -> tuple[float, float]:
    """`dronecats onboard` flies Drone1 towards a red car; once it is up and its pilot has decided,
    SIGKILL. Returns (wall time of the kill, height at the kill)."""
    client = airsim_client(rehearsal.port)
    reset_world(client)
    out = open(log_dir.parent / f"{log_dir.name}.out", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        dronecats_cmd(
            "--log-level",
            "INFO",  # the adapter says at INFO what it armed
            *baseline_onboard_args(
                vehicle_url,
                log_dir,
                "--set",
                "min_decision_period_s=0.5",
                "--set",
                "stop_on_declaration=false",
                "--set",
                "t_max_s=120",
                "--set",
                "takeoff_altitude_m=1.5",  # a short climb and descent: the row stays quick
            ),
        ),
        env=subprocess_env(),
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # up, and the actuation loop streaming the pilot's commands (a step is logged after the climb)
        def flying() -> bool:
            steps = log_dir / "steps.jsonl"
            return (
                bool(recorder.samples)
                and -recorder.latest()[2] > 0.8
                and steps.exists()
                and steps.stat().st_size > 0
            )

        assert wait_until(flying, 90.0), (log_dir.parent / f"{log_dir.name}.out").read_text()[-3000:]
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
        killed_s = time.time()
        proc.wait(10)
        return killed_s, -recorder.latest()[2]
    finally:
        kill_if_running(proc)
        out.close()


def landed_within(recorder: PoseRecorder, killed_s: float, bound_s: float) -> float:
    """Seconds from the kill until the simulator's pose shows Drone1 on the ground (and still there
    a second later); fails past bound_s."""

    def down() -> float | None:
        after = recorder.between(killed_s, time.time())
        for i, (t, _x, _y, z) in enumerate(after):
            rest = [s for s in after[i:] if s[0] <= t + 1.0]
            settled = after[-1][0] >= t + 1.0  # a second of samples after it
            if -z < GROUND_M and settled and all(-s[3] < GROUND_M for s in rest):
                return t - killed_s
        return None

    elapsed = wait_until(down, bound_s + 1.0)
    assert elapsed is not None, (
        f"Drone1 not on the ground {bound_s:.1f} s after kill -9: height now {-recorder.latest()[2]:.2f} m"
    )
    assert elapsed <= bound_s, (elapsed, bound_s)
    return float(elapsed)


def report(vehicle: str, height_m: float, elapsed_s: float, documented_s: float) -> None:
    """The measured figure, for the fault matrix (pytest -s shows it)."""
    landed = f"on the ground {elapsed_s:.1f} s later (documented {documented_s:.1f} s)"
    print(f"{vehicle}: killed at {height_m:.2f} m, {landed}")


def test_airsim_vehicle_lands_by_itself_after_onboard_is_killed(rehearsal: Rehearsal, tmp_path: Path) -> None:
    url = f"airsim://127.0.0.1:{rehearsal.port}/Drone1?silence_land_s=1"
    with PoseRecorder(rehearsal.port) as recorder:
        killed_s, height_m = fly_then_kill(rehearsal, url, tmp_path / "airsim", recorder)
        bound_s = 1.0 + 0.25 + height_m / SIM_LAND_SPEED_M_S  # silence after the last 0.25 s command
        elapsed = landed_within(recorder, killed_s, 2 * bound_s + LOAD_MARGIN_S)
    report("airsim", height_m, elapsed, bound_s)
    assert (
        "Drone1: no command for" in rehearsal.log_text()
        and "command-silence landing after 1 s" in rehearsal.log_text()
    )
    out = (tmp_path / "airsim.out").read_text()
    assert "the simulator lands the vehicle after 1 s without a command" in out, out[-2000:]


def test_px4_lands_by_itself_after_onboard_is_killed(rehearsal: Rehearsal, tmp_path: Path) -> None:
    with PoseRecorder(rehearsal.port) as recorder:
        killed_s, height_m = fly_then_kill(rehearsal, rehearsal.urls["mavlink"], tmp_path / "px4", recorder)
        # COM_OF_LOSS_T (onboard's 1 s) + COM_FAIL_ACT_T (1 s here) in Hold, then AUTO.LAND's descent
        bound_s = 1.0 + 1.0 + height_m / PX4_LAND_SPEED_M_S
        elapsed = landed_within(recorder, killed_s, 2 * bound_s + LOAD_MARGIN_S)
    report("px4", height_m, elapsed, bound_s)
    text = rehearsal.log_text()
    assert (
        "failsafe: offboard signal lost" in text and "failsafe action Land (offboard signal lost" in text
    ), text[-3000:]
    assert "COM_OF_LOSS_T=1, COM_OBL_RC_ACT=4" in (tmp_path / "px4.out").read_text()
    assert_pymavlink_sees_landed(rehearsal.urls["mavlink"])


def assert_pymavlink_sees_landed(url: str) -> None:
    """The autopilot's own account over MAVLink, on the port onboard listened on: AUTO.LAND or
    disarmed (PX4 disarms COM_DISARM_LAND after touchdown)."""
    from pymavlink import mavutil

    connection = url[len("mavlink://") :].split("?", 1)[0]
    conn = mavutil.mavlink_connection(connection, source_system=1, source_component=191)
    try:
        deadline = time.monotonic() + 10.0
        seen: list[Any] = []
        while time.monotonic() < deadline:
            hb = conn.recv_match(type="HEARTBEAT", blocking=True, timeout=1.0)
            if hb is None or hb.get_srcComponent() != 1:
                continue
            seen.append(hb)
            armed = bool(hb.base_mode & mavutil.mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
            main, sub = (hb.custom_mode >> 16) & 0xFF, (hb.custom_mode >> 24) & 0xFF
            if not armed or (main, sub) == (4, 6):  # AUTO.LAND
                return
        raise AssertionError(f"PX4 neither in AUTO.LAND nor disarmed: {seen[-1:]}")
    finally:
        conn.close()


def test_tello_lands_by_itself_after_onboard_is_killed(rehearsal: Rehearsal, tmp_path: Path) -> None:
    free_for_a_child_process()  # the onboard process's djitellopy binds them
    url = rehearsal.urls["tello"] + "&mode=rc&keepalive_s=1"  # keep-alives well inside the 3 s here
    with PoseRecorder(rehearsal.port) as recorder:
        killed_s, height_m = fly_then_kill(rehearsal, url, tmp_path / "tello", recorder)
        # the last rc sticks hold until the auto-land (firmware), then it descends
        bound_s = 3.0 + height_m / SIM_LAND_SPEED_M_S
        elapsed = landed_within(recorder, killed_s, 2 * bound_s + LOAD_MARGIN_S)
    report("tello", height_m, elapsed, bound_s)
    # the emulated firmware's own watchdog landed it (onboard was dead: nothing else could)
    assert re.search(r"Drone1: no command for [0-9.]+ s: auto-landing", rehearsal.log_text())
