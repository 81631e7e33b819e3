"""Ground truth opened by the vehicle URL's scheme (common.truth), as vehicles are (common.interfaces);
and the in-process vehicle as a context manager."""

from __future__ import annotations

import pytest

from common.errors import ConfigError
from common.truth import open_truth, truth_schemes


def test_airsim_urls_get_the_remote_truth_without_connecting() -> None:
    from onboard.vehicles.airsim_truth import RemoteTruth

    truth = open_truth("airsim://127.0.0.1:9/Drone2", "ep_target")  # nothing listens: never asked yet
    assert isinstance(truth, RemoteTruth)
    assert (truth.target, truth.vehicle.name, truth.vehicle.target.port) == ("ep_target", "Drone2", 9)


def test_a_scheme_without_truth_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"no ground truth for scheme 'tello'.*airsim"):
        open_truth("tello://192.168.10.1", "car")
    assert truth_schemes() == ["airsim"]  # pyproject.toml's dronecats.truth entry points


def test_local_vehicle_with_block_connects_and_closes() -> None:
    pytest.importorskip("pybullet")
    from sim_bridge.local import LocalVehicle
    from sim_bridge.sim.world import World

    world = World("blocks", vehicles=1, seed=0)
    try:
        vehicle = LocalVehicle(world, "Drone1")
        assert not vehicle.is_connected
        with vehicle as v:
            assert v is vehicle and v.is_connected
        assert not vehicle.is_connected
        with pytest.raises(Exception, match="Nobody"), LocalVehicle(world, "Nobody"):
            pass  # an unknown vehicle fails on entry
    finally:
        world.close()
