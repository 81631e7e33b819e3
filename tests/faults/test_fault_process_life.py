"""Fault rows: nothing the pilot does can hold the process's life. Real processes (`dronecats sim`,
`dronecats onboard` with `--pilot openai://` at a stand-in model server that hangs), the real
stops (SIGTERM, SIGINT, T_max, a ground-station land over the link) and the real vehicle fault (the
simulator killed with SIGKILL). Judged by the vehicle's pose read from the simulator, the process's
exit and its logs: the run ends within 2 s whatever the model is doing, the vehicle lands, the
end-of-run record and the touchdown are in the logs, the exit status is the documented one."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.errors import VEHICLE_LOST_EXIT
from tests.support.failsafe import (
    PoseRecorder,
    describe,
    end_record,
    events,
    first,
    flying,
    output_file,
    reset_world,
    wait_steps,
)
from tests.support.model_servers import ModelServer, model_server
from tests.support.ports import free_base_port

RUN_ENDS_S = 2.0  # the bound the runtime keeps: a stop to the end-of-run record, whatever the model does
LOADED_MARGIN_S = 4.0  # this shared 2-core machine's scheduling, on top of the bound
HANG_S = 120.0  # the stand-in holds each reply this long: longer than any test waits


@contextlib.contextmanager
def fly_until_hang(
    sim, tmp_path: Path, server: ModelServer, *extra: str
) -> Iterator[tuple[subprocess.Popen, Path, float]]:
    """onboard flying the stand-in's rotates until two steps are logged, then every reply hangs; yields
    the process (stopped when the block ends), its log dir and the wall time the hang began."""
    port, client = sim
    reset_world(client)
    log_dir = tmp_path / "flight"
    with flying(port, log_dir, "--pilot", server.openai_url(retries=0), *extra) as drone:
        wait_steps(log_dir, 2)
        server.set_mode("hang", hang_s=HANG_S)
        hang_wall = time.time()
        # a request is in flight under the hang once the last reply was applied and the next one asked
        time.sleep(1.5)
        yield drone, log_dir, hang_wall


def assert_ended_and_landed(log_dir: Path, poses: PoseRecorder, stop_wall: float, reason: str) -> dict:
    finished = first(events(log_dir, "finished_run"))
    assert finished is not None, describe(log_dir)
    assert finished["reason"].startswith(reason), finished
    ended_after_s = finished["wall_time"] - stop_wall
    assert ended_after_s <= RUN_ENDS_S + LOADED_MARGIN_S, (ended_after_s, describe(log_dir))
    record = end_record(log_dir)
    assert record["end_reason"].startswith(reason), record
    touchdown = first(events(log_dir, "touchdown"))
    assert touchdown is not None and touchdown["landed"] is True, (touchdown, describe(log_dir))
    assert record["touchdown"]["landed"] is True
    assert -poses.latest()[2] < 0.3, poses.latest()  # on the ground, as the simulator has it
    return {"run_ended_after_s": round(ended_after_s, 2), "touchdown_waited_s": touchdown["waited_s"]}


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_the_run_while_the_model_hangs(sim, tmp_path, signum) -> None:
    port, _ = sim
    with (
        model_server() as server,
        PoseRecorder(port) as poses,
        fly_until_hang(sim, tmp_path, server, "--set", "t_max_s=120") as (drone, log_dir, _),
    ):
        assert -poses.latest()[2] > 1.0  # flying (NED z: down)
        stop_wall = time.time()
        drone.send_signal(signum)
        rc = drone.wait(timeout=RUN_ENDS_S + LOADED_MARGIN_S + 20.0)  # + the touchdown
        exit_s = time.time() - stop_wall
    assert rc == 0, describe(log_dir)
    row = assert_ended_and_landed(log_dir, poses, stop_wall, "stopped")
    print("ROW stop-signal-model-hangs", {"signal": signum.name, **row, "exit_s": round(exit_s, 2)})


@pytest.mark.slow
def test_t_max_ends_the_run_while_the_model_hangs(sim, tmp_path) -> None:
    port, _ = sim
    t_max_s = 12.0
    with (
        model_server() as server,
        PoseRecorder(port) as poses,
        fly_until_hang(sim, tmp_path, server, "--set", f"t_max_s={t_max_s}") as (drone, log_dir, _),
    ):
        rc = drone.wait(timeout=t_max_s + 60.0)
    assert rc == 0, describe(log_dir)
    started = first(events(log_dir, "started"))
    finished = first(events(log_dir, "finished_run"))
    assert started is not None and finished is not None, describe(log_dir)
    assert finished["reason"] == "t_max"
    late_s = finished["t"] - t_max_s
    assert late_s <= RUN_ENDS_S + LOADED_MARGIN_S, (late_s, describe(log_dir))
    touchdown = first(events(log_dir, "touchdown"))
    assert touchdown is not None and touchdown["landed"] is True, describe(log_dir)
    assert -poses.latest()[2] < 0.3, poses.latest()
    print("ROW t-max-model-hangs", {"t_max_s": t_max_s, "ended_late_s": round(late_s, 2)})


@pytest.mark.slow
def test_a_ground_station_land_ends_the_run_while_the_model_hangs(sim, tmp_path) -> None:
    from common.link import DroneEndpoint, GroundLink, GroundLinkConfig, Insecure
    from common.messages import Land
    from onboard.link import endpoints

    port, _ = sim
    base = free_base_port()
    address = f"tcp://127.0.0.1:{base}"
    gs = ("--gs", address, "--set", "t_max_s=120")
    with (
        model_server() as server,
        PoseRecorder(port) as poses,
        fly_until_hang(sim, tmp_path, server, *gs) as (drone, log_dir, _),
    ):
        link = GroundLink(GroundLinkConfig(), Insecure())
        link.start()
        try:
            link.add_drone(DroneEndpoint("Drone1", *endpoints(address)))
            stop_wall = time.time()
            ack = link.send_command("Drone1", Land(reason="operator"), timeout_s=2.0)
            assert ack.result == "ok", ack
            rc = drone.wait(timeout=RUN_ENDS_S + LOADED_MARGIN_S + 20.0)
        finally:
            link.close()
    assert rc == 0, describe(log_dir)
    row = assert_ended_and_landed(log_dir, poses, stop_wall, "landing")
    print("ROW gs-land-model-hangs", row)


@pytest.mark.slow
def test_the_simulator_killed_mid_flight_ends_the_run_naming_the_connection(tmp_path) -> None:
    """A simulator of its own (the module's is shared by the other rows), killed with SIGKILL."""
    from tests.support.failsafe import airsim_client
    from tests.support.processes import sim_server

    log_dir = tmp_path / "flight"
    server: list[subprocess.Popen] = []
    with sim_server("--scene", "residential", process=server) as port:
        reset_world(airsim_client(port))
        with flying(port, log_dir, "--set", "t_max_s=120") as drone:
            wait_steps(log_dir, 3)
            kill_wall = time.time()
            server[0].kill()
            rc = drone.wait(timeout=RUN_ENDS_S + LOADED_MARGIN_S + 20.0)
            exit_s = time.time() - kill_wall
    out = output_file(log_dir).read_text()
    assert rc == VEHICLE_LOST_EXIT, out
    assert "dronecats onboard: vehicle connection lost: " in out, out
    assert "Traceback" not in out, out
    assert end_record(log_dir)["end_reason"].startswith("vehicle connection lost"), end_record(log_dir)
    print("ROW simulator-killed", {"exit_s": round(exit_s, 2), "output_lines": len(out.splitlines())})
