"""Pure logic of the fleet library: drone addresses and the fleet state's bookkeeping (no processes,
no sockets); and that the fleet library and the headless mode import no Qt."""

from __future__ import annotations

import pytest

from common.actions import Finished, Go
from common.errors import ConfigError
from ground_station.fleet.client import DroneAddress
from ground_station.fleet.state import DroneState, FleetState, StepRecord


def test_drone_address_parsing() -> None:
    address = DroneAddress.parse("Drone1=tcp://10.0.0.5:5600")
    endpoint = address.to_endpoint()
    assert (endpoint.telemetry_endpoint, endpoint.frame_endpoint, endpoint.command_endpoint) == (
        "tcp://10.0.0.5:5600",
        "tcp://10.0.0.5:5601",
        "tcp://10.0.0.5:5602",
    )
    for bad in ("tcp://10.0.0.5:5600", "Drone1=udp://x:1", "Drone1=tcp://host"):
        with pytest.raises(ConfigError):
            DroneAddress.parse(bad)


def step(action, t: float = 0.0) -> StepRecord:
    return StepRecord(t, 0, action, "", "c", True, 0.01, None, 0.0)


def test_fleet_state_events_log_and_staleness() -> None:
    state = FleetState(["Drone1"])
    seen = []
    state.add_listener(seen.append)
    state.emit("telemetry", "Drone1", None)  # shown, never logged
    state.emit("instruction", None, text="go")
    assert [e.kind for e in seen] == ["telemetry", "instruction"]
    assert [e["kind"] for e in state.session_log] == ["instruction"]
    drone: DroneState = state.drones["Drone1"]
    assert drone.is_stale(100.0, 2.0)  # nothing heard yet
    drone.link_state, drone.telemetry_received_s = "up", 99.0
    assert not drone.is_stale(100.0, 2.0) and drone.is_stale(101.5, 2.0)
    drone.steps.extend([step(Go(point=(1, 2), depth_m=3.0)), step(Finished())])
    assert state.finished_count() == 1


def test_the_fleet_library_and_headless_mode_import_no_qt() -> None:
    """The episode runner uses ground_station.fleet on machines without a display stack."""
    import subprocess
    import sys

    code = (
        "import sys, ground_station.fleet.client, ground_station.fleet.structures, "
        "ground_station.fleet.launch, ground_station.headless, "
        "ground_station.cli; print(sorted(m for m in sys.modules if 'Qt' in m))"
    )
    from tests.support import ROOT
    from tests.support.processes import subprocess_env

    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=subprocess_env(),
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
