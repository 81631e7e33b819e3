"""Fixtures of the onboard tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sim_bridge.sim.world import World


@pytest.fixture
def world() -> Iterator[World]:
    """The residential scene with one drone, paused: lock-step tests advance its time themselves."""
    w = World("residential", vehicles=1, seed=0)
    w.pause(True)
    yield w
    w.close()
