"""Fault row: the log directory deleted mid-flight (`rm -rf`, as a cleanup script or an operator
would). Real processes (`dronecats sim`, `dronecats onboard`); judged by the vehicle's pose in the
simulator and by what the drone wrote afterwards: one alert, the directory re-created with the rest
of the flight in it, the end-of-run record naming the logs whose earlier lines were lost, and the
flight itself undisturbed."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from tests.support.failsafe import (
    PoseRecorder,
    describe,
    events,
    first,
    flying,
    jsonl,
    output_file,
    reset_world,
    safety_events,
    wait_steps,
)


@pytest.mark.slow
def test_the_log_dir_deleted_mid_flight_is_recreated_and_the_flight_goes_on(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=30.0)
    log_dir = tmp_path / "flight"
    with PoseRecorder(port) as poses, flying(port, log_dir, "--set", "t_max_s=20", out_dir=tmp_path) as drone:
        wait_steps(log_dir, 3, out_dir=tmp_path)
        shutil.rmtree(log_dir)
        deleted_wall = time.time()
        x_deleted = poses.latest()[0]
        assert drone.wait(timeout=90) == 0, describe(log_dir, tmp_path)
    out = output_file(log_dir, tmp_path).read_text()
    alerts = [line for line in out.splitlines() if "vanished or became unwritable mid-flight" in line]
    assert len(alerts) == 1, out
    assert log_dir.is_dir(), out  # re-created
    alert = first(events(log_dir), event="disk", what="log_dir")
    assert alert is not None and alert["action"] == "logs re-opened; flying on", describe(log_dir, tmp_path)
    steps = jsonl(log_dir / "steps.jsonl")
    assert steps and all(s["wall_time"] >= deleted_wall - 1.0 for s in steps if "wall_time" in s)
    run = json.loads((log_dir / "episode.json").read_text())["run"]
    assert run["end_reason"] == "t_max", run
    assert {"steps.jsonl", "trace.jsonl", "events.jsonl", "episode.json"} <= set(run["incomplete_logs"]), run
    holds = [e for e in safety_events(log_dir) if e["mode"] == "hold"]
    assert not holds, holds  # the flight itself was never stopped
    x_end = poses.latest()[0]
    assert x_end > x_deleted + 2.0, (x_deleted, x_end)  # flew on toward the car
    print(
        "ROW logdir-deleted",
        {
            "alert": alerts[0].split("logs: ", 1)[-1][:120],
            "x_deleted": round(x_deleted, 2),
            "x_end": round(x_end, 2),
        },
    )
