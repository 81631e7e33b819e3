"""The onboard runtime end to end on the built-in simulator (in process, lock-step time), with the
verifier judging the logs it wrote; and its fault paths, each ending in a safe state with a log line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from episodes.logs import read_episode
from episodes.verifier import VerifierSettings, verify
from models.pilot import model_pilot_from_url
from onboard.lockstep import LockstepDriver
from onboard.safety import Mode, SafetyConfig
from sim_bridge.local import LocalCamera
from sim_bridge.sim.assets import Part
from tests.support.pilots import serve_pilot_process
from tests.support.processes import dronecats_cmd, subprocess_env
from tests.support.runtime import DELTA_M, make_runtime


def verdict(out: Path, t_max_s: float = 90.0):
    return verify(read_episode(out), VerifierSettings(delta_m=DELTA_M, t_max_s=t_max_s))


def events(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("loop", ["tolerant", "naive"])
def test_approach_episode_is_accepted_by_the_verifier(world, tmp_path, loop) -> None:
    rt = make_runtime(world, tmp_path, loop=loop, save_frames=True)
    result = LockstepDriver(rt, world).run()
    assert result.reason == "declared", result
    v = verdict(tmp_path)
    assert v.success and v.ne_m is not None and v.ne_m <= DELTA_M
    assert v.decisive_t == pytest.approx(result.qualifying_declaration_t)
    steps = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["frame"] and (tmp_path / steps[0]["frame"]).exists()
    assert any(s["point_on_target"] for s in steps)
    assert {"capture_s", "model_s", "plan_s", "total_s"} <= set(steps[0]["stages"])
    meta = json.loads((tmp_path / "episode.json").read_text())
    assert meta["run"]["pilot"] == "baseline" and meta["run"]["end_reason"] == "declared"
    # The drone is told to land at the end of the run.
    assert rt.governor.mode == Mode.LANDING


def test_same_episode_through_serve_pilot_and_openai(world, tmp_path) -> None:
    with serve_pilot_process("--pilot", "baseline") as hostport:
        pilot = model_pilot_from_url(f"openai://{hostport}/v1?profile=qwen3.5-2b&timeout_s=10")
        rt = make_runtime(world, tmp_path, pilot=pilot)
        result = LockstepDriver(rt, world).run()
    assert result.reason == "declared", result
    assert verdict(tmp_path).success
    meta = json.loads((tmp_path / "episode.json").read_text())
    assert meta["run"]["model_profile"] == "qwen3.5-2b"
    assert meta["run"]["prompt_hashes"], "a model pilot's prompt hashes are recorded"
    stages = [json.loads(line)["stages"] for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    # A model pilot's request building and reply parsing are their own stages, outside the model call.
    assert all(s["preprocess_s"] > 0 and s["parse_s"] > 0 and s["model_s"] > 0 for s in stages)


def test_injected_latency_costs_episode_time_and_stale_replies_hold(world, tmp_path) -> None:
    rt = make_runtime(world, tmp_path, action_deadline_s=1.0, max_steps=4, land_at_end=False)
    latencies = iter([0.2, 1.5, 1.5, 0.2])
    driver = LockstepDriver(rt, world, latency=lambda pending: next(latencies))
    t0 = world.clock.now()
    driver.run()
    assert rt.state.counters.stale == 2 and rt.state.counters.executed == 2
    assert world.clock.now() - t0 >= 0.2 + 1.5 + 1.5 + 0.2  # latency is paid in simulation time
    assert sum(1 for e in events(tmp_path) if e["event"] == "discarded" and e["why"] == "stale") == 2


def test_garbage_from_the_model_server_ends_in_hold(world, tmp_path) -> None:
    replies = tmp_path / "replies.txt"
    replies.write_text("\n".join(["not json", '{"action": "fly"}', "{", '{"action":"go"}', "[]"] * 3) + "\n")
    with serve_pilot_process("--pilot", f"scripted:{replies}") as hostport:
        pilot = model_pilot_from_url(f"openai://{hostport}/v1?profile=qwen3.5-2b&timeout_s=10")
        # (serve-pilot refuses replies that break the schema: the backend reports each as a failure)
        rt = make_runtime(
            world, tmp_path / "log", pilot=pilot, max_steps=8, land_at_end=False, prearm_check=False
        )
        LockstepDriver(rt, world).run()
    # default: hold after 5 consecutive failures, and no decision is taken while holding
    assert rt.governor.mode == Mode.HOLD and "5 consecutive pilot failures" in rt.governor.reason
    counters = rt.state.counters
    assert counters.malformed + counters.backend_errors == 5 and counters.executed == 0
    lines = [json.loads(line) for line in (tmp_path / "log" / "steps.jsonl").read_text().splitlines()]
    assert len(lines) == 5 and all(line["action"] is None and line["discarded"] for line in lines)


def test_model_server_down_holds(world, tmp_path) -> None:
    pilot = model_pilot_from_url("openai://127.0.0.1:9/v1?profile=qwen3.5-2b&timeout_s=0.5&retries=1")
    rt = make_runtime(world, tmp_path, pilot=pilot, max_steps=6, land_at_end=False, prearm_check=False)
    LockstepDriver(rt, world).run()
    assert rt.state.counters.backend_errors == 5 and rt.governor.mode == Mode.HOLD


def test_prearm_refuses_a_pilot_without_valid_actions(world, tmp_path) -> None:
    from common.errors import SafetyError

    pilot = model_pilot_from_url("openai://127.0.0.1:9/v1?profile=qwen3.5-2b&timeout_s=0.5&retries=0")
    rt = make_runtime(world, tmp_path, pilot=pilot)
    with pytest.raises(SafetyError, match="pre-arm"):
        LockstepDriver(rt, world).run()
    assert world.vehicle("Drone1").model.landed  # never took off
    assert any(e["event"] == "prearm_failed" for e in events(tmp_path))


def test_estop_mid_move_lands_and_logs(world, tmp_path) -> None:
    rt = make_runtime(world, tmp_path)

    def estop_at_step_5() -> None:
        if rt.state.steps == 5:
            rt.operator.estop("test e-stop")

    driver = LockstepDriver(rt, world, on_step=estop_at_step_5)
    result = driver.run()
    assert result.reason.startswith("estop")
    driver.advance(8.0)
    assert world.vehicle("Drone1").model.landed
    assert any(e["event"] == "estop" and e["reason"] == "test e-stop" for e in events(tmp_path))


def test_geofence_breach_attempt_is_clamped(world, tmp_path) -> None:
    rt = make_runtime(
        world, tmp_path, target_x_m=40.0, t_max_s=25.0, safety=SafetyConfig(geofence_radius_m=8.0)
    )
    LockstepDriver(rt, world).run()
    pose = world.vehicle_pose("Drone1")
    assert abs(pose.x_m) <= 8.0 + 0.6  # the look-ahead and braking keep it at the fence
    clamps = [e for e in events(tmp_path) if e["event"] == "clamp" and e["rule"] == "fence"]
    assert clamps and "geofence" in clamps[0]["detail"] and clamps[0]["asked"] != clamps[0]["sent"]


def test_collision_holds_and_ends_the_episode_as_collided(world, tmp_path) -> None:
    # A scripted model flies straight ahead into a wall: the runtime holds, says why, and ends the
    # lock-step episode at once (it never hovers out T_max behind the wall). The wall is scenery, which
    # the simulator does not report as an obstacle (placed cars and people it does: the envelope keeps
    # clear of those, tests/faults/test_fault_obstacles.py), so nothing below the pilot stops the flight.
    world.add_scenery("wall", [Part("box", (0.2, 40.0, 20.0), (6.1, 0.0, 10.0), (0.9, 0.9, 0.9, 1.0))])
    replies = tmp_path / "replies.txt"
    replies.write_text('{"action": "go", "point": [500, 500], "depth_m": 20, "angle_deg": null}\n' * 40)
    with serve_pilot_process("--pilot", f"scripted:{replies}") as hostport:
        pilot = model_pilot_from_url(f"openai://{hostport}/v1?profile=qwen3.5-2b&timeout_s=10")
        rt = make_runtime(world, tmp_path / "log", pilot=pilot, t_max_s=20.0, land_at_end=False)
        result = LockstepDriver(rt, world).run()
    assert rt.governor.mode == Mode.HOLD and rt.governor.reason.startswith("collision with wall at (")
    assert result.reason.startswith("collided: collision with wall") and rt.t() < 10.0, (
        result.reason,
        rt.t(),
    )
    assert world.vehicle_pose("Drone1").x_m < 6.0
    trace = [json.loads(line) for line in (tmp_path / "log" / "trace.jsonl").read_text().splitlines()]
    assert any(line["collided"] for line in trace)
    scored = verdict(tmp_path / "log", 20.0)
    assert scored.collisions >= 1 and not scored.success and scored.failure_mode == "collided"


@pytest.mark.slow
def test_kill_9_mid_episode_leaves_complete_logs(tmp_path) -> None:
    out = tmp_path / "demo"
    proc = subprocess.Popen(
        dronecats_cmd("demo", "--out", str(out)),
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "step  10" in line or not line:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    logs = read_episode(out)
    assert len(logs.steps) >= 10
    assert all(p.file != "steps.jsonl" or "truncated" in p.reason for p in logs.problems)
    assert len([p for p in logs.problems if p.file == "steps.jsonl"]) <= 1
    assert logs.trace and logs.record is not None


class VideoDropout:
    """Fault injection on the Camera interface: reads 3-5 fail as a lost video stream would."""

    def __init__(self, camera: LocalCamera) -> None:
        self.camera = camera
        self.reads = 0

    def read(self):
        self.reads += 1
        if 3 <= self.reads <= 5:
            raise ConnectionError("video stream lost")
        return self.camera.read()


def test_lost_frames_hold_and_the_flight_goes_on(world, tmp_path) -> None:
    rt = make_runtime(world, tmp_path)
    rt.capture.camera = VideoDropout(rt.capture.camera)
    result = LockstepDriver(rt, world).run()
    assert rt.state.counters.capture_errors == 3
    failures = [e for e in events(tmp_path) if e["event"] == "capture_failed"]
    assert len(failures) == 3 and "video stream lost" in failures[0]["error"]
    assert result.reason == "declared" and verdict(tmp_path).success
