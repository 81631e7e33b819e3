"""GoTo end to end, on real processes: `dronecats sim` and one `dronecats onboard` (its baseline
pilot, no instruction: it only hovers), the ground station's FleetClient over real ZeroMQ with this
session's CURVE keys (as `gs --launch` makes them), judged by the vehicle's pose in the simulator,
read with the real airsim client.

- a GoTo inside the fence: acked, flown, the vehicle ends within 1.5 m of the target and holds;
- outside the fence, above the ceiling: acked "rejected" with the reason, counted, no motion;
- NaN and huge numbers forged on a raw CURVE socket: refused while decoding (no ack), counted;
- the map: pick a point, confirm, the GoTo goes to the drone chosen and the drone flies there.
"""

from __future__ import annotations

import json
import math
import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import msgspec
import pytest
import zmq

from common import wire
from common.keys import load_keypair
from common.messages import Ack, GoTo
from ground_station.fleet.client import FleetClient
from ground_station.fleet.geo import geo_from_ned
from ground_station.fleet.launch import SimFleet
from tests.support.pilots import serve_pilot_process

pytestmark = pytest.mark.slow

FENCE_M = 20.0
CEILING_M = 15.0
SETTINGS = [
    f"safety.geofence_radius_m={FENCE_M:g}",
    f"safety.altitude_ceiling_m={CEILING_M:g}",
    "t_max_s=300",
    "save_frames=false",
]
ROTATE = {"action": "rotate", "point": None, "depth_m": None, "angle_deg": 15.0}


def events(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Flight:
    def __init__(self, sim: SimFleet, fleet: FleetClient) -> None:
        import airsim

        self.sim, self.fleet = sim, fleet
        self.client = airsim.MultirotorClient(port=sim.sim_port)
        self.client.ping()

    def position(self) -> tuple[float, float, float]:
        """Drone1's actual position in the simulator (the world NED frame of its telemetry)."""
        p = self.client.simGetVehiclePose(vehicle_name="Drone1").position
        return p.x_val, p.y_val, p.z_val

    def wait_still(self, timeout_s: float = 60.0, moved_m: float = 0.05) -> tuple[float, float, float]:
        deadline = time.monotonic() + timeout_s
        last = self.position()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.position()
            if math.dist(now, last) < moved_m:
                return now
            last = now
        raise AssertionError(f"Drone1 did not settle: {last}")

    def goto_events(self) -> list[dict]:
        return [e for e in events(self.sim.log_dir / "Drone1" / "events.jsonl") if e["event"] == "goto"]

    def telemetry(self):
        with self.fleet.state.lock:
            return self.fleet.state.drones["Drone1"].telemetry


@pytest.fixture(scope="module")
def flight(tmp_path_factory):
    out = tmp_path_factory.mktemp("goto-fleet")
    script = out / "rotate.json"
    script.write_text(json.dumps([ROTATE] * 2000))
    # a served pilot that takes 1 s per reply: a GoTo that comes while it decides finds a model call
    # in flight (the reply, when it comes, must not replace the GoTo)
    with serve_pilot_process("--pilot", f"scripted:{script}", "--latency-s", "1.0") as hostport:
        pilot = f"openai://{hostport}/v1?profile=qwen3.5-2b&retries=0"
        with SimFleet(1, pilot, log_dir=out, onboard_settings=SETTINGS, truth=False) as sim:
            fleet = FleetClient(sim.addresses, sim.security).start()
            try:
                assert fleet.wait_for_link(90.0), sim.drone_log("Drone1")[-1500:]
                f = Flight(sim, fleet)
                deadline = time.monotonic() + 60.0
                while -f.position()[2] < 2.5 and time.monotonic() < deadline:  # taking off
                    time.sleep(0.3)
                f.wait_still()
                yield f
            finally:
                fleet.close()


def test_a_goto_inside_the_fence_is_flown_and_the_vehicle_ends_there(flight) -> None:
    start = flight.wait_still()
    target = (start[0] + 6.0, start[1] - 4.0, start[2] - 1.0)
    sent_s = time.monotonic()
    ack = flight.fleet.goto("Drone1", *target, goto_id="g-inside")
    assert ack.result == "ok", ack
    deadline = time.monotonic() + 40.0
    while time.monotonic() < deadline and not any(e["state"] == "arrived" for e in flight.goto_events()):
        time.sleep(0.3)
    flown_s = time.monotonic() - sent_s
    end = flight.wait_still(timeout_s=20.0)
    horizontal_m = math.dist(end[:2], target[:2])
    print(f"goto 7.2 m: arrived in {flown_s:.1f} s, ends {horizontal_m:.2f} m from the target (sim pose)")
    assert horizontal_m <= 1.5, (end, target, flight.goto_events())
    assert abs(end[2] - target[2]) <= 1.0, (end, target)
    states = [e["state"] for e in flight.goto_events() if e["goto_id"] == "g-inside"]
    assert states == ["accepted", "arrived"], flight.goto_events()
    # it holds there: the operator's hold, shown in its telemetry (an info alert, not a warning)
    assert flight.telemetry().safety_state == "operator goto g-inside: arrived"
    time.sleep(1.5)
    assert math.dist(flight.position(), end) < 0.2


def test_a_goto_takes_over_from_a_deciding_pilot_whose_reply_was_in_flight(flight) -> None:
    start = flight.wait_still()
    acks = flight.fleet.instruct("search for the red car", ["Drone1"])
    assert acks["Drone1"].result == "ok", acks
    steps = flight.sim.log_dir / "Drone1" / "steps.jsonl"
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline and len(events(steps)) < 2:  # it turns, one reply a second
        time.sleep(0.2)
    assert len(events(steps)) >= 2
    time.sleep(0.5)  # mid-way through a model call
    target = (start[0] - 4.0, start[1] - 3.0, start[2])
    ack = flight.fleet.goto("Drone1", *target, goto_id="g-takeover")
    assert ack.result == "ok", ack
    deadline = time.monotonic() + 40.0
    while time.monotonic() < deadline and not any(
        e["goto_id"] == "g-takeover" and e["state"] != "accepted" for e in flight.goto_events()
    ):
        time.sleep(0.3)
    states = [e["state"] for e in flight.goto_events() if e["goto_id"] == "g-takeover"]
    assert states == ["accepted", "arrived"], flight.goto_events()
    end = flight.wait_still(timeout_s=20.0)
    assert math.dist(end[:2], target[:2]) <= 1.5, (end, target)
    drone_events = events(flight.sim.log_dir / "Drone1" / "events.jsonl")
    superseded = [e for e in drone_events if e["event"] == "discarded" and e["why"] == "superseded"]
    assert len(superseded) == 1, superseded  # the reply in flight, not flown; then no more asked
    steps_then = len(events(steps))
    time.sleep(2.0)
    assert len(events(steps)) == steps_then  # the pilot is not asked again: it holds there


def test_a_goto_outside_the_fence_or_above_the_ceiling_is_rejected_and_nothing_moves(flight) -> None:
    start = flight.wait_still()
    refused_before = flight.telemetry().link_refused
    outside = flight.fleet.goto("Drone1", FENCE_M + 5.0, 0.0, start[2], goto_id="g-outside")
    assert outside.result == "rejected" and "outside the geofence" in outside.reason, outside
    high = flight.fleet.goto("Drone1", start[0], start[1], -(CEILING_M + 5.0), goto_id="g-high")
    assert high.result == "rejected" and "above the ceiling" in high.reason, high
    low = flight.fleet.goto("Drone1", start[0], start[1], 0.0, goto_id="g-low")
    assert low.result == "rejected" and "below the floor" in low.reason, low
    # a geographic point, converted by the ground station with the simulator's geo origin: 25 m
    # north of home (the origin of the built-in sim's world frame, where Drone1 took off)
    north_25m = geo_from_ned(25.0, 0.0, start[2], flight.sim.geo_origin)
    geo = flight.fleet.goto_geo("Drone1", *north_25m, flight.sim.geo_origin, goto_id="g-geo")
    assert geo.result == "rejected" and "25.0 m from home" in geo.reason, geo
    time.sleep(2.0)
    assert math.dist(flight.position(), start) < 0.2
    rejected = [e for e in flight.goto_events() if e["state"] == "rejected"]
    assert [e["goto_id"] for e in rejected] == ["g-outside", "g-high", "g-low", "g-geo"]
    assert rejected[-1]["target"] == pytest.approx([25.0, 0.0, start[2]], abs=1e-3)
    deadline = time.monotonic() + 5.0
    while flight.telemetry().link_refused < refused_before + 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert flight.telemetry().link_refused == refused_before + 4


def test_non_finite_and_huge_targets_are_refused_while_decoding_and_counted(flight) -> None:
    start = flight.wait_still()
    sim, address = flight.sim, flight.sim.addresses[0]
    assert sim.keys_dir is not None and address.server_public_key is not None
    pair = load_keypair(sim.keys_dir / "gs.key_secret")
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.linger = 0
    sock.curve_publickey, sock.curve_secretkey = pair.public_key, pair.secret_key
    sock.curve_serverkey = address.server_public_key
    port = int(address.base.rsplit(":", 1)[1])
    sock.connect(f"tcp://127.0.0.1:{port + 2}")
    rejected_before = flight.telemetry().link_rejected
    bad = [[math.nan, 0.0, -3.0], [1e300, 0.0, -3.0], [0.0, math.inf, -3.0], [0.0, 0.0, -(2**60)]]
    try:
        for seq, target in enumerate(bad, start=1):
            header = msgspec.msgpack.encode([wire.PROTOCOL_VERSION, "goto", "Drone1", "forged", seq, 0.0])
            body = msgspec.msgpack.encode({"goto_id": f"bad{seq}", "target_ned_m": target})
            sock.send_multipart([header, body])
        # a valid one on the same socket is answered: the bad ones were read and refused, not lost
        valid = wire.encode(
            GoTo("g-forged", (FENCE_M * 3, 0.0, -3.0)),
            drone_id="Drone1",
            session_id="forged",
            seq=10,
            send_time_s=time.monotonic(),  # fresh on the drone's clock (CLOCK_MONOTONIC, this host)
            drone_session_id=flight.fleet.link.run_session_id("Drone1"),  # bound to its run
        )
        sock.send_multipart(valid)
        assert sock.poll(10_000), "no ack for the valid GoTo"
        reply = wire.decode(sock.recv_multipart())
        assert isinstance(reply.body, Ack) and reply.body.command_seq == 10, reply.body
        assert reply.body.result == "rejected" and "geofence" in reply.body.reason
        assert not sock.poll(300), "a forged GoTo was answered"
    finally:
        sock.close(linger=0)
        context.term()
    deadline = time.monotonic() + 5.0
    while flight.telemetry().link_rejected < rejected_before + len(bad) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert flight.telemetry().link_rejected == rejected_before + len(bad)
    assert not any(e["goto_id"].startswith("bad") for e in flight.goto_events())
    assert math.dist(flight.position(), start) < 0.2


def test_pick_a_point_on_the_map_confirm_and_the_drone_flies_there(qtbot, flight) -> None:
    from PyQt6.QtCore import Qt
    from PyQt6.QtWidgets import QApplication, QMessageBox

    from ground_station.app.main import MainWindow

    QApplication.instance() or QApplication([])
    window = MainWindow(flight.fleet, launcher=flight.sim, beep=False)
    window.show()
    try:
        start = flight.wait_still()
        qtbot.waitUntil(lambda: "Drone1" in window.map.homes, timeout=60_000)
        window.map.repaint()  # the view (its scale) is fitted when painted
        want = (start[0] - 3.0, start[1] + 4.0)
        window.goto_drone.setCurrentText("Drone1")
        qtbot.mouseClick(window.goto_pick, Qt.MouseButton.LeftButton)
        assert window.map.picking
        marks = list(window.map.marks)
        qtbot.mouseClick(window.map, Qt.MouseButton.LeftButton, pos=window.map.to_screen(*want).toPoint())
        assert not window.map.picking
        box = window.goto_confirm
        assert box is not None and box.isVisible()
        text = box.text()
        assert "Drone1" in text and "47.64" in text and "-122.14" in text, text  # lat/lon: sim origin
        assert window.map.marks == marks  # picking a GoTo point marks no commander target
        qtbot.mouseClick(box.button(QMessageBox.StandardButton.Yes), Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "goto: ok" in window.tiles["Drone1"].full_ack_text(), timeout=60_000)
        accepted = [e for e in flight.goto_events() if e["state"] == "accepted"][-1]
        world = tuple(accepted["target"][:2])
        assert math.dist(world, want) < 0.5, (world, want)  # the point clicked (to a pixel)
        assert f"N {world[0]:.1f} m, E {world[1]:.1f} m" in text, (text, world)  # what was confirmed
        assert accepted["target"][2] == pytest.approx(start[2], abs=0.3)  # at its altitude
        assert window.map.goto_targets["Drone1"] == pytest.approx(world)
        qtbot.waitUntil(lambda: flight.goto_events()[-1]["state"] == "arrived", timeout=160_000)
        end = flight.wait_still(timeout_s=20.0)
        print(f"map goto: ends {math.dist(end[:2], world):.2f} m from the point clicked (sim pose)")
        assert math.dist(end[:2], world) <= 1.5, (end, world)
        window.grab().save(str(flight.sim.log_dir / "goto.png"))
        assert any(a.drone == "Drone1" and "goto" in a.text for a in window.alerts.alerts)
        # a GoTo outside the fence: rejected, the reason in the alerts
        window.map.picking = True
        window.on_goto_picked((FENCE_M + 10.0, 0.0))
        yes = window.goto_confirm.button(QMessageBox.StandardButton.Yes)
        qtbot.mouseClick(yes, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(
            lambda: any("goto rejected" in a.text and "geofence" in a.text for a in window.alerts.alerts),
            timeout=60_000,
        )
    finally:
        window.shutdown()
        window.close()
