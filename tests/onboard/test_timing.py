"""Actuation-thread scheduling (onboard.realtime) and the decision step's per-stage timing."""

from __future__ import annotations

import json
import logging
import os
import threading

import pytest

from common.actions import Go
from common.clock import WallClock
from common.interfaces import Telemetry
from common.pose import Pose
from models.backends.base import CallStats, Completion
from models.parser import reply_object
from models.pilot import ModelPilot, Observation
from models.profile import load_profile
from onboard.actuation import ActuationThread, Actuator
from onboard.realtime import set_thread_fifo
from onboard.runtime_config import RuntimeConfig
from onboard.safety import SafetyConfig, SafetyGovernor
from tests.support.pilots import scene


def in_thread(fn):
    """Run fn() in a fresh thread (scheduling is per thread: never change the test runner's own)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(5.0)
    return out[0]


def test_priority_zero_is_normal_and_out_of_range_is_refused() -> None:
    assert in_thread(lambda: set_thread_fifo(0)).startswith("normal")
    with pytest.raises(ValueError, match="priority=100"):
        set_thread_fifo(100)
    with pytest.raises(ValueError, match="priority=-1"):
        set_thread_fifo(-1)


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="Linux scheduling API")
def test_what_it_reports_is_what_the_thread_runs_with() -> None:
    def probe() -> tuple[str, int, int]:
        got = set_thread_fifo(7)
        return got, os.sched_getscheduler(0), os.sched_getparam(0).sched_priority

    got, policy, priority = in_thread(probe)
    if got == "SCHED_FIFO 7":  # root or CAP_SYS_NICE
        assert (policy, priority) == (os.SCHED_FIFO, 7)
    else:
        assert got.startswith("normal (SCHED_FIFO 7 refused") and policy != os.SCHED_FIFO
    assert os.sched_getscheduler(0) != os.SCHED_FIFO  # the calling thread was left alone


def test_a_refusal_is_logged_and_the_loop_goes_on(monkeypatch, caplog) -> None:
    def refuse(pid: int, policy: int, param: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse, raising=False)
    monkeypatch.setattr(os, "SCHED_FIFO", 1, raising=False)
    with caplog.at_level(logging.WARNING, logger="onboard.realtime"):
        got = set_thread_fifo(10)
    assert got == "normal (SCHED_FIFO 10 refused: Operation not permitted)"
    assert "CAP_SYS_NICE" in caplog.text


class StillVehicle:
    """A hovering vehicle that counts setpoints."""

    def __init__(self) -> None:
        self.sent = 0

    def telemetry(self) -> Telemetry:
        return Telemetry(0.0, Pose(0.0, 0.0, -3.0, 0.0), (0.0, 0.0, 0.0), None, True, True, False, False)

    def send_velocity_body(self, *setpoint: float) -> None:
        self.sent += 1


@pytest.mark.parametrize("priority", [0, 10])
def test_actuation_thread_says_how_it_is_scheduled_and_ticks(priority: int) -> None:
    vehicle = StillVehicle()
    governor = SafetyGovernor(SafetyConfig(), home=Pose(0.0, 0.0, 0.0, 0.0))
    thread = ActuationThread(Actuator(vehicle, governor), WallClock(), 50.0, rt_priority=priority)  # type: ignore[arg-type]
    thread.start()
    try:
        assert thread.scheduling is not None  # known once start() returns
        if priority == 0:
            assert thread.scheduling.startswith("normal")
        else:
            assert thread.scheduling in ("SCHED_FIFO 10",) or "refused" in thread.scheduling
        deadline = WallClock().now() + 5.0
        while vehicle.sent < 5 and WallClock().now() < deadline:
            WallClock().sleep(0.02)
    finally:
        thread.stop()
    assert vehicle.sent >= 5 and thread.error is None


def test_runtime_config_bounds_the_priority() -> None:
    assert RuntimeConfig().actuation_rt_priority == 10
    assert RuntimeConfig(actuation_rt_priority=0).actuation_rt_priority == 0
    with pytest.raises(ValueError, match="actuation_rt_priority=120"):
        RuntimeConfig(actuation_rt_priority=120)


class CannedBackend:
    name = "canned"

    def __init__(self, text: str) -> None:
        self.text = text

    def complete(self, request: object) -> Completion:
        return Completion(self.text, CallStats(backend="canned", model="m", latency_s=0.0))

    def close(self) -> None:
        pass


def test_a_model_pilot_times_its_preprocess_and_parse() -> None:
    obs = Observation(
        image=scene(), instruction="go to the red car", history=(Go(point=(500, 500), depth_m=3.0),)
    )
    reply = json.dumps(reply_object(Go(point=(500, 600), depth_m=4.0)))
    pilot = ModelPilot(CannedBackend(reply), load_profile("qwen3.5-2b"))  # type: ignore[arg-type]
    decision = pilot.decide(obs)
    assert decision.action is not None, decision.error
    assert decision.preprocess_s is not None and decision.preprocess_s > 0
    assert decision.parse_s is not None and decision.parse_s > 0
    # A malformed reply still reports both.
    pilot.backend = CannedBackend("not json")  # type: ignore[assignment]
    bad = pilot.decide(obs)
    assert bad.action is None and bad.preprocess_s is not None and bad.parse_s is not None


def test_the_onboard_command_sets_the_priority() -> None:
    import argparse

    from common.config import load_config
    from onboard.cli import add_arguments, config_overrides

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--vehicle", "airsim://127.0.0.1:1/Drone1", "--rt-priority", "0"])
    assert load_config(RuntimeConfig, None, config_overrides(args)).actuation_rt_priority == 0
    default = parser.parse_args(["--vehicle", "airsim://127.0.0.1:1/Drone1"])
    assert load_config(RuntimeConfig, None, config_overrides(default)).actuation_rt_priority == 10
    bad = parser.parse_args(["--vehicle", "x", "--rt-priority", "200"])
    with pytest.raises(Exception, match="actuation_rt_priority=200"):
        load_config(RuntimeConfig, None, config_overrides(bad))


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="POSIX priority API")
def test_nice_applies_to_the_thread_and_the_threads_it_starts() -> None:
    from onboard.realtime import restore_thread_nice, set_thread_nice

    def probe() -> tuple[str, int | None, int, int, int]:
        before = os.getpriority(os.PRIO_PROCESS, 0)
        got, previous = set_thread_nice(-3)
        child: list[int] = []
        t = threading.Thread(target=lambda: child.append(os.getpriority(os.PRIO_PROCESS, 0)))
        t.start()
        t.join()
        now = os.getpriority(os.PRIO_PROCESS, 0)
        if previous is not None:
            restore_thread_nice(previous)
        return got, previous, now, child[0], os.getpriority(os.PRIO_PROCESS, 0) - before

    outer = os.getpriority(os.PRIO_PROCESS, 0)
    got, previous, now, child, drift = in_thread(probe)
    if got == "nice -3":  # root or CAP_SYS_NICE
        assert now == child == -3 and previous is not None
    else:
        assert "refused" in got and previous is None
    assert drift == 0 and os.getpriority(os.PRIO_PROCESS, 0) == outer  # restored; the runner untouched
    assert in_thread(lambda: set_thread_nice(0)) == ("nice unchanged (0: left as started)", None)
    with pytest.raises(ValueError, match="nice=-21"):
        set_thread_nice(-21)
    with pytest.raises(ValueError, match="nice=30"):
        RuntimeConfig(nice=30)
