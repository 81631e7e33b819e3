"""Fixtures of the vehicle-adapter tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.airsim_clients import arm_both, connect, two_drone_sim


@pytest.fixture(scope="module")
def sim_port() -> Iterator[int]:
    """One `dronecats sim` with Drone1 and Drone2 at CLOCK_SPEED for a whole test file; its port."""
    with two_drone_sim() as port:
        yield port


@pytest.fixture
def client(sim_port: int) -> Any:
    """A stock `airsim` client of that server, both drones under API control and armed."""
    airsim = pytest.importorskip("airsim")
    c = connect(airsim, sim_port)
    c.confirmConnection()
    return arm_both(c)
