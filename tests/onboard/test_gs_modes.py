"""The onboard side of the fleet structures (docs/protocol.md#several-drones), in process on the built-in
simulator: remote mode (frames out, the ground station's actions in, logged as steps) and order
expiry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.actions import Go
from common.logformat import DeclarationLine
from common.pose import Frame, Pose
from episodes.local_flight import local_runtime
from models.baseline.pilot import BaselinePilot
from onboard.cli import GroundStationPilot
from onboard.lockstep import LockstepDriver
from onboard.recorder import FlightRecorder
from onboard.reporter import StepExtras, TelemetrySnapshot
from onboard.runtime import OnboardRuntime
from onboard.runtime_config import RuntimeConfig
from sim_bridge.sim.world import World


@pytest.fixture(scope="module")
def world():
    w = World("residential", vehicles=1, seed=0)
    w.spawn("target", "car@red", Pose(20.0, 0.0, 0.0, 90.0))
    w.pause(True)
    yield w
    w.close()


class Collector:
    """The runtime's Publisher, kept in memory (the link is tested in tests/e2e/test_gs_fleet.py)."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.steps: list[StepExtras] = []
        self.declarations: list[DeclarationLine] = []

    def publish_frame(self, frame: Frame) -> None:
        self.frames.append(frame)

    def publish_step(self, step: StepExtras) -> None:
        self.steps.append(step)

    def publish_telemetry(self, telemetry: TelemetrySnapshot) -> None:
        pass

    def publish_declaration(self, declaration: DeclarationLine) -> None:
        self.declarations.append(declaration)


def runtime(world: World, out: Path, pilot, **cfg) -> OnboardRuntime:
    config = RuntimeConfig(min_decision_period_s=0.5, save_frames=False, **cfg)
    return local_runtime(
        world, "Drone1", config, pilot, FlightRecorder(out), target="target", publisher=Collector()
    )


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_remote_mode_streams_frames_and_logs_the_ground_stations_actions(world, tmp_path) -> None:
    rt = runtime(world, tmp_path, GroundStationPilot(), remote=True)
    rt.start(threaded=False)  # no pre-arm pilot call: the model is at the ground station
    publisher = rt.reporter.publisher
    assert isinstance(publisher, Collector)
    frame = rt.capture.stream()
    assert publisher.frames and publisher.frames[-1] is frame and frame.image is not None
    assert rt.decisions.apply_remote(
        Go(point=(500, 600), depth_m=12.0), frame.pose, 0.2, "call-1", '{"drones":[]}'
    )
    assert not rt.decisions.apply_remote(
        Go(point=(500, 600), depth_m=12.0), frame.pose, 10.0, "call-2"
    )  # stale
    steps = lines(tmp_path / "steps.jsonl")
    assert [s["call_id"] for s in steps] == ["call-1"]
    assert steps[0]["source"] == "remote" and steps[0]["action"]["action"] == "go"
    assert steps[0]["distance_m"] == pytest.approx(20.0, abs=2.0)
    assert publisher.steps[-1].call_id == "call-1"
    assert rt.state.counters.stale == 1
    assert rt.actuator.schedule() is not None  # the go is being flown


def test_an_order_expires_after_its_steps_and_the_drone_holds(world, tmp_path) -> None:
    rt = runtime(world, tmp_path, BaselinePilot(delta_m=5.0), t_max_s=12.0, stop_on_declaration=False)
    rt.operator.set_order("o1", "go to the red car", 3)
    result = LockstepDriver(rt, world).run()
    steps = lines(tmp_path / "steps.jsonl")
    assert [(s["order_id"], s["order_steps_left"]) for s in steps] == [("o1", 2), ("o1", 1), ("o1", 0)]
    events = lines(tmp_path / "events.jsonl")
    assert any(e.get("event") == "order_expired" for e in events), events[-5:]
    # 12 s of flight time, yet 3 steps: the drone held from the expiry until the end
    assert result.reason == "t_max" and result.steps == 3 and rt.state.instruction == ""
    assert any("order expired" in e for e in rt.governor.status().events)
