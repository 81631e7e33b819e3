"""A moving target flown by the HIL runner with stock simSetObjectPose follows the record's route:
in lock-step (placed after every simContinueForTime chunk) and in real time (a 10 Hz thread), checked
against the built-in simulator's own path follower (what in-process runs use) at the server's time."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from episodes.asset_map import load_asset_map
from episodes.hil import MAX_LOCKSTEP_CHUNK_S, RealTimeMovers, RouteMover, RpcStepper, set_up, tear_down
from episodes.records import SceneObject
from episodes.suites import load_suite
from tests.support.processes import sim_server

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

SUITE = Path(__file__).resolve().parents[2] / "episodes" / "suites" / "single.json"
TOLERANCE_M = 0.2
MAX_LAG_S = 2.0  # real time: how far behind the route a loaded machine may place the target


def track_record(route: list[tuple[float, float, float]] | None = None):
    """residential-track-01 (an SUV driving north at 0.3 m/s), optionally on another route."""
    record = next(e.record for e in load_suite(SUITE).episodes if e.record.id == "residential-track-01")
    if route is None:
        return record
    import msgspec

    target = msgspec.structs.replace(record.targets[0], path=route, pose=(*route[0], 0.0))
    return msgspec.structs.replace(record, targets=[target])


def reference(obj: SceneObject, t0_s: float):
    from sim_bridge.sim.world import MovingPath

    assert obj.path is not None and obj.speed_m_s is not None
    return MovingPath(np.asarray(obj.path, float), obj.speed_m_s, t0_s)


def nearest_route_time(ref, where: np.ndarray, t0_s: float, t1_s: float) -> tuple[float, float]:
    """The route's time in [t0_s, t1_s] (10 ms grid) whose position is nearest `where`, and how far."""
    times_s = np.arange(t0_s, t1_s, 0.01)
    distances_m = [float(np.linalg.norm(where - ref.at(t)[0])) for t in times_s]
    best = int(np.argmin(distances_m))
    return float(times_s[best]), distances_m[best]


def object_xyz(client, name: str) -> np.ndarray:
    p = client.simGetObjectPose(name).position
    return np.array([p.x_val, p.y_val, p.z_val])


@dataclass(frozen=True)
class MovingTarget:
    """The record's moving target, placed in a running simulator, with the mover that drives it."""

    vehicle: Any  # onboard.vehicles.airsim.AirSimVehicle (imported where the simulator runs)
    client: Any
    mod: Any
    name: str
    obj: SceneObject
    t0_s: float
    mover: RouteMover
    ref: Any  # the built-in simulator's MovingPath for the same route: the expected positions


@contextlib.contextmanager
def moving_target(port: int, record) -> Iterator[MovingTarget]:
    """Set up `record` on the simulator at `port` over stock AirSim RPC, its first target starting
    its route now; torn down and disconnected when the block ends."""
    from onboard.vehicles.airsim import AirSimVehicle, parse_airsim_url

    vehicle = AirSimVehicle(parse_airsim_url(f"airsim://127.0.0.1:{port}/Drone1?api=airsim"))
    client, mod = vehicle.client(), vehicle.module
    done = set_up(client, mod, record, load_asset_map("builtin-strict"))
    try:
        name = done.names["ep_target"]
        t0 = vehicle.sim_time_s()
        obj = record.targets[0]
        mover = RouteMover(name, list(obj.path or []), obj.speed_m_s or 0.0, t0)
        yield MovingTarget(vehicle, client, mod, name, obj, t0, mover, reference(obj, t0))
    finally:
        tear_down(client, done)
        vehicle.close()


@pytest.fixture(scope="module")
def lockstep_port():
    with sim_server("--scene", "residential", "--strict-airsim", "--clock-speed", "1000", "--paused") as port:
        yield port


def test_lockstep_mover_follows_a_3d_route(lockstep_port: int) -> None:
    from common.clock import SimClock

    # a corner and a climb: 3-D interpolation, heading along each leg
    record = track_record([(-2.0, -1.0, 0.0), (2.0, -1.0, 0.0), (2.0, 2.0, -1.5)])
    with moving_target(lockstep_port, record) as target:
        vehicle, client, mover = target.vehicle, target.client, target.mover
        mover.place(client, target.mod, target.t0_s)
        clock = SimClock(target.t0_s)
        stepper = RpcStepper(vehicle, clock, [mover])
        worst = 0.0
        for _ in range(60):  # 30 s of simulated time in 0.5 s advances
            stepper.advance(0.5)
            now = vehicle.sim_time_s()  # the server's own clock
            assert now == pytest.approx(clock.now(), abs=1e-6)
            expected, _ = target.ref.at(now)
            worst = max(worst, float(np.linalg.norm(object_xyz(client, target.name) - expected)))
        assert worst <= TOLERANCE_M, worst
        assert worst < 1e-6  # placed at the very instant it is asked about
        assert mover.updates >= 30.0 / MAX_LOCKSTEP_CHUNK_S  # >= 10 Hz of simulated time
        assert object_xyz(client, target.name)[2] == pytest.approx(-1.5)  # reached the end of the climb


def test_realtime_mover_follows_the_record_route() -> None:
    record = track_record()
    with (
        sim_server("--scene", "residential", "--strict-airsim", "--clock-speed", "1") as port,
        moving_target(port, record) as target,
    ):
        vehicle, client, mover = target.vehicle, target.client, target.mover
        movers = RealTimeMovers(
            [mover],
            lambda: airsim.MultirotorClient(ip="127.0.0.1", port=port, timeout_value=30),
            target.mod,
            "Drone1",
        )
        movers.start()
        samples = []
        wall0 = time.monotonic()
        while time.monotonic() - wall0 < 3.0:
            samples.append((vehicle.sim_time_s(), object_xyz(client, target.name)))
            time.sleep(0.05)
        movers.stop()
        assert movers.error is None
        # Each sample is on the route, where the route was at most MAX_LAG_S before the sample (the
        # mover places at ~10 Hz; a loaded machine delays a placement, it never puts it off the route),
        # and never ahead of it.
        for now_s, where in samples:
            route_s, off_route_m = nearest_route_time(target.ref, where, target.t0_s, now_s + 0.5)
            assert off_route_m <= TOLERANCE_M, (now_s, where, off_route_m)
            assert -0.1 <= now_s - route_s <= MAX_LAG_S, (now_s, route_s)
        assert mover.updates >= 3.0 * 10 * 0.5  # ~10 Hz (a loaded machine misses some)
        assert object_xyz(client, target.name)[0] > target.obj.pose[0] + 0.5  # it did drive (0.3 m/s)
