"""The built-in simulator's command-silence landing through the real airsim client on a real
`dronecats sim`: off by default (a stock client's hover stays a hover), armed per vehicle with
dcSetSilenceLanding (then the vehicle lands by itself, no sooner than the bound), undone by
`reset`, validated at the wire and on the command line. The airsim:// adapter's side (it arms it where
the server has it) is tests/onboard/vehicles/test_airsim.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.failsafe import airsim_client, wait_until
from tests.support.processes import run_dronecats, sim_server

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[int, Any]]:
    with sim_server("--scene", "blocks") as port:
        yield port, airsim_client(port)


@pytest.fixture
def client(server) -> Any:
    return server[1]


def height_m(client: Any) -> float:
    return -float(client.simGetVehiclePose("Drone1").position.z_val)


def climb(client: Any, altitude_m: float = 1.5) -> None:
    client.reset()
    client.enableApiControl(True, "Drone1")
    client.armDisarm(True, "Drone1")
    client.moveToZAsync(-altitude_m, 2.0, vehicle_name="Drone1").join()
    assert height_m(client) > altitude_m - 0.3


def test_off_by_default_a_stock_client_keeps_hovering(client) -> None:
    assert client.client.call("dcGetSilenceLanding", "Drone1") == 0
    climb(client)
    time.sleep(2.5)  # AirSim's behaviour: with no command the vehicle holds where it is
    assert height_m(client) > 1.2


def test_armed_the_vehicle_lands_by_itself_and_reset_disarms(client) -> None:
    climb(client)
    assert client.client.call("dcSetSilenceLanding", "Drone1", 1.0) == 1.0
    t0 = time.monotonic()
    assert wait_until(lambda: height_m(client) < 0.1, 15.0), height_m(client)
    elapsed_s = time.monotonic() - t0
    assert elapsed_s >= 1.0, elapsed_s  # not before the silence bound: 1 s + 1.5 m at 0.5 m/s = 4 s
    client.reset()
    assert client.client.call("dcGetSilenceLanding", "Drone1") == 0


@pytest.mark.parametrize("bad", [0.01, float("nan"), -1.0, 1e9])
def test_a_bad_bound_is_refused_at_the_wire(client, bad: float) -> None:
    with pytest.raises(Exception, match=r"0 \(off\) or 0\.1\.\.3600 s"):
        client.client.call("dcSetSilenceLanding", "Drone1", bad)
    assert client.client.call("dcGetSilenceLanding", "Drone1") == 0


def test_the_command_line_refuses_a_bad_bound() -> None:
    result = run_dronecats("sim", "--land-on-silence-s", "0.01")
    assert result.returncode == 2
    assert "0 (off) or 0.1..3600 s" in result.stderr and "Traceback" not in result.stderr
