"""Fixtures of the simulator-bridge tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.airsim_clients import two_drone_sim


@pytest.fixture(scope="module")
def sim_port() -> Iterator[int]:
    """One `dronecats sim` with Drone1 and Drone2 at CLOCK_SPEED for a whole test file; its port."""
    with two_drone_sim() as port:
        yield port
