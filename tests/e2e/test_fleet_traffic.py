"""Fleet separation for drones flown by separate processes: the ground station relays each drone's
fleet mates' positions (their telemetry) as `Traffic`, and each drone's safety governor keeps its
separation from them on every tick.

- the link: Traffic crosses real sockets to the drone's handler; non-finite positions are rejected
  and counted, never handed to the governor;
- end to end: `dronecats sim` and two `dronecats onboard` processes (baseline pilot) flying head-on
  at each other, each for a car behind the other, through the real GroundLink. With the relay they
  stop short of each other and log why; with the relay off (the control case) they collide.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import msgspec
import pytest
import zmq

from common import wire
from common.link import DroneEndpoint, DroneLink, DroneLinkConfig, GroundLink, GroundLinkConfig, Insecure
from common.messages import TelemetryMessage, Traffic, TrafficEntry
from common.pose import Pose
from ground_station.fleet.client import FleetClient
from ground_station.fleet.launch import LaunchTarget, SimFleet
from tests.support.processes import wait_for


def test_traffic_reaches_the_drone_and_non_finite_traffic_is_rejected() -> None:
    received: list[Traffic] = []
    drone = DroneLink(DroneLinkConfig("d1"), Insecure(), on_traffic=received.append)
    with drone, GroundLink(GroundLinkConfig(), Insecure()) as ground:
        e = drone.endpoints
        ground.add_drone(DroneEndpoint("d1", e["telemetry"], e["frame"], e["command"]))
        # traffic is sent without waiting for a connection (a relay repeats it): connected first
        assert wait_for(lambda: drone.ground_link_state == "up", 10.0)
        # ... and the station has heard the drone's run and clock: traffic is bound and stamped like a
        # command (relayed before that, it is dropped; the next relay goes).
        assert wait_for(lambda: ground.clock_offset("d1").ready, 10.0)
        good = Traffic((TrafficEntry("d2", (1.0, 2.0, -3.0), (0.5, 0.0, 0.0), 0.1),))
        ground.send_traffic("d1", good)
        assert wait_for(lambda: len(received) == 1, 5.0)
        assert received[0] == good
        with pytest.raises(ValueError, match="not finite"):  # cannot even be built, so forged below
            TrafficEntry("d2", (math.nan, 2.0, -3.0), (0.0, 0.0, 0.0), 0.1)
        rogue = zmq.Context.instance().socket(zmq.DEALER)
        rogue.linger = 0
        rogue.connect(e["command"])
        header = wire.encode_envelope(wire.Envelope(wire.PROTOCOL_VERSION, "traffic", "d1", "rogue", 1, 0.0))
        entry = {"drone_id": "d2", "position_ned_m": [1.0, 2.0, -3.0], "velocity_ned_m_s": [0.0, 0.0, 0.0]}
        for i, forged in enumerate(
            ({**entry, "position_ned_m": [math.nan, 2.0, -3.0], "age_s": 0.1}, {**entry, "age_s": -1.0})
        ):
            rogue.send_multipart([header, msgspec.msgpack.encode({"entries": [forged]})])
            assert wait_for(lambda n=i + 1: drone.stats.rejected_total() == n, 5.0)
        rogue.close()
        ground.send_traffic("d1", good)
        assert wait_for(lambda: len(received) == 2, 5.0)  # still listening
        assert drone.stats.snapshot()["received_traffic"] == 2


# Head-on in the blocks scene's east corridor: Drone1 at the plaza facing east, for a red car 24 m
# east; Drone2 10 m east of it facing west, for a blue car 14 m west (the lock-step test's geometry,
# tests/onboard/test_fleet_separation.py).
RED = LaunchTarget("red", "car@red", Pose(0.0, 24.0, 0.0, 0.0))
BLUE = LaunchTarget("blue", "car@blue", Pose(0.0, -14.0, 0.0, 0.0))
START_WORLD = {"Drone1": (0.0, 0.0, 90.0), "Drone2": (0.0, 10.0, -90.0)}  # x, y, yaw
SETTINGS = ["min_decision_period_s=0.5", "t_max_s=300", "stop_on_declaration=false"]


def place_head_on(sim_port: int) -> None:
    """Teleport the hovering drones to their head-on start (AirSim poses are relative to the spawn)."""
    import airsim

    client = airsim.MultirotorClient(port=sim_port)
    client.confirmConnection()
    for name, (x, y, yaw_deg) in START_WORLD.items():
        spawn = client.client.call("dcGetVehicleSpawn", name)
        now = client.simGetVehiclePose(vehicle_name=name)
        pose = airsim.Pose(
            airsim.Vector3r(
                x - spawn["position"]["x_val"], y - spawn["position"]["y_val"], now.position.z_val
            ),
            airsim.to_quaternion(0.0, 0.0, math.radians(yaw_deg)),
        )
        client.simSetVehiclePose(pose, True, vehicle_name=name)


def fly_head_on(out: Path, traffic_hz: float) -> tuple[float, dict[str, str], Path]:
    """(closest horizontal distance between the drones, each drone's last safety state, log dir)."""
    closest = [math.inf]
    latest: dict[str, TelemetryMessage] = {}
    lock = threading.Lock()
    with SimFleet(
        2, "baseline", scene="blocks", targets=[RED, BLUE], log_dir=out, onboard_settings=SETTINGS
    ) as sim:
        fleet = FleetClient(sim.addresses, sim.security, traffic_hz=traffic_hz).start()
        try:
            assert fleet.wait_for_link(90.0), [sim.drone_log(f"Drone{i}")[-800:] for i in (1, 2)]
            assert wait_for(
                lambda: all(
                    d.telemetry is not None and d.telemetry.pose_ned.z_m < -2.0
                    for d in fleet.state.drones.values()
                ),
                60.0,
            ), "the drones did not take off"
            place_head_on(sim.sim_port)

            def on_event(event) -> None:
                if event.kind != "telemetry" or not isinstance(event.record, TelemetryMessage):
                    return
                with lock:
                    latest[event.drone] = event.record
                    if len(latest) == 2:
                        a, b = (t.pose_ned for t in latest.values())
                        closest[0] = min(closest[0], math.hypot(a.x_m - b.x_m, a.y_m - b.y_m))

            time.sleep(1.0)  # telemetry from the new poses
            fleet.state.add_listener(on_event)
            fleet.instruct("go to the red car", ["Drone1"])
            fleet.instruct("go to the blue car", ["Drone2"])
            # flying at each other: 10 m apart at up to 3 m/s each; collided drones hold
            time.sleep(20.0)
            states = {d: s.telemetry.safety_state for d, s in fleet.state.drones.items() if s.telemetry}
            fleet.safety("estop")
        finally:
            fleet.close()
    return closest[0], states, out


def events(out: Path, drone: str) -> list[dict]:
    path = out / drone / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_relayed_traffic_keeps_process_flown_drones_apart(tmp_path) -> None:
    closest_m, states, out = fly_head_on(tmp_path / "relay", traffic_hz=10.0)
    assert not any("collision" in s for s in states.values()), states
    assert closest_m >= 1.0, closest_m  # stopped short of each other (collision radius 0.3 m each)
    for drone, mate in (("Drone1", "Drone2"), ("Drone2", "Drone1")):
        lines = events(out, drone)
        assert any(e["event"] == "traffic" and e["drones"] == [mate] for e in lines), drone
    cuts = [
        e
        for d in ("Drone1", "Drone2")
        for e in events(out, d)
        if e["event"] == "clamp" and e["rule"] == "separation"
    ]
    assert cuts and "fleet drone" in cuts[0]["detail"]


@pytest.mark.slow
def test_without_the_relay_the_same_flight_collides(tmp_path) -> None:
    closest_m, states, _ = fly_head_on(tmp_path / "no-relay", traffic_hz=0.0)
    assert any("collision" in s for s in states.values()) or closest_m < 0.6, (states, closest_m)
