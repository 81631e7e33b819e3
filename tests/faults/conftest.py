"""Fixtures of the fault rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.failsafe import airsim_client
from tests.support.processes import sim_server


@pytest.fixture(scope="module")
def sim() -> Iterator[tuple[int, Any]]:
    """One `dronecats sim` (residential: AirSim's body-fixed camera) for a whole test file; its port
    and an airsim client."""
    with sim_server("--scene", "residential") as port:
        yield port, airsim_client(port)
