"""The Jetson's health on the ground-station link: onboard.jetson's snapshot travels in
TelemetryMessage.jetson over real ZeroMQ sockets (the runtime's own telemetry, a stand-in tegrastats feeding
the monitor), the fleet client keeps it, and the drone's tile shows it. Peers from before the field:
their telemetry still decodes, and a drone without Jetson health sends what they decode."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import msgspec
import pytest

from common import wire
from common.messages import JetsonHealth, TelemetryMessage
from common.pose import Pose
from onboard.jetson import JetsonMonitor, JetsonSources
from onboard.link import attach_link
from onboard.lockstep import LockstepDriver
from sim_bridge.sim.world import World
from tests.support.jetson import ORIN_JP6, STAND_IN, executable, wait_for
from tests.support.ports import free_base_port
from tests.support.runtime import make_runtime


class TelemetryBeforeJetson(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """common.messages.TelemetryMessage as peers from before the `jetson` field have it."""

    time_s: float
    pose_ned: Pose
    velocity_ned_m_s: tuple[float, float, float]
    battery_pct: float | None
    mode: str
    armed: bool
    link_state: str
    control_rate_hz: float
    latencies_s: dict[str, float] = {}
    safety_state: str = "ok"
    pose_source: str = "vehicle"


def telemetry(**fields: object) -> TelemetryMessage:
    base: dict[str, object] = dict(
        time_s=12.5,
        pose_ned=Pose(1.0, 2.0, -5.0, 30.0),
        velocity_ned_m_s=(0.5, 0.0, 0.0),
        battery_pct=80.0,
        mode="flying",
        armed=True,
        link_state="up",
        control_rate_hz=50.0,
        latencies_s={"model": 0.4},
    )
    return TelemetryMessage(**{**base, **fields})  # type: ignore[arg-type]


def parts_of(body: msgspec.Struct) -> list[bytes]:
    envelope = wire.Envelope(wire.PROTOCOL_VERSION, "telemetry", "Drone1", "s1", 0, 1.0)
    return [wire.encode_envelope(envelope), msgspec.msgpack.encode(body)]


def test_peers_from_before_the_field_interoperate() -> None:
    # Their telemetry decodes here, without Jetson health.
    old = TelemetryBeforeJetson(3.0, Pose(0, 0, -2), (0, 0, 0), None, "hover", True, "up", 20.0)
    decoded = wire.decode(parts_of(old)).body
    assert isinstance(decoded, TelemetryMessage) and decoded.jetson is None and decoded.mode == "hover"
    # A drone without Jetson health sends what they decode.
    new = telemetry(safety_state="geofence")
    _header, body = wire.encode(new, drone_id="Drone1", session_id="s1", seq=0, send_time_s=1.0)
    assert b"jetson" not in body
    assert msgspec.msgpack.decode(body, type=TelemetryBeforeJetson).safety_state == "geofence"
    # With health it round-trips typed; a field from a later drone is ignored, not fatal.
    health = JetsonHealth("tegrastats", max_temp_c=61.0, power_mode="MAXN", throttle_reasons=("thermal",))
    with_health = telemetry(jetson=health)
    assert (
        wire.decode(wire.encode(with_health, drone_id="Drone1", session_id="s1", seq=1, send_time_s=1.0)).body
        == with_health
    )
    later = msgspec.to_builtins(with_health)
    later["jetson"]["fan_rpm"] = 3100
    assert wire.decode(parts_of_builtins(later)).body == with_health
    # The limit, stated in common.messages: peers from before the field reject telemetry that carries it.
    with pytest.raises(msgspec.ValidationError):
        msgspec.msgpack.decode(msgspec.msgpack.encode(with_health), type=TelemetryBeforeJetson)


def parts_of_builtins(body: dict[str, object]) -> list[bytes]:
    envelope = wire.Envelope(wire.PROTOCOL_VERSION, "telemetry", "Drone1", "s1", 2, 1.0)
    return [wire.encode_envelope(envelope), msgspec.msgpack.encode(body)]


def test_jetson_health_reaches_the_ground_station_tile(qtbot, tmp_path: Path) -> None:
    from ground_station.app.tiles import DroneTile
    from ground_station.fleet.client import DroneAddress, FleetClient

    hot = ORIN_JP6.replace("gpu@46.4C", "gpu@96.5C")
    tegrastats = executable(tmp_path / "tegrastats", STAND_IN.format(lines=[hot]))
    world = World("residential", vehicles=1, seed=0)
    world.pause(True)
    rt = make_runtime(world, tmp_path / "run", max_steps=2)
    rt.reporter.jetson = JetsonMonitor(
        JetsonSources(
            interval_ms=20,
            tegrastats=tegrastats,
            nvpmodel=str(tmp_path / "none"),
            oc_pattern=str(tmp_path / "oc*"),
        )
    )
    address = f"tcp://127.0.0.1:{free_base_port()}"
    bridge = attach_link(rt, address, insecure=True)
    fleet = FleetClient([DroneAddress("Drone1", address)]).start()
    try:
        # lock-step runs do not start the monitor (a flight does, in start()); start the stand-in here
        rt.reporter.jetson.start()
        wait_for(rt.reporter.jetson, lambda snap: snap.throttled)
        deadline = time.monotonic() + 20
        while fleet.link.link_state("Drone1") != "up" and time.monotonic() < deadline:
            time.sleep(0.02)  # heartbeats arrive: the subscription is live before telemetry is sent
        LockstepDriver(rt, world).run()  # the runtime's own telemetry, published by the link bridge
        deadline = time.monotonic() + 20
        state = fleet.state.snapshot("Drone1")
        while (state.telemetry is None or state.telemetry.jetson is None) and time.monotonic() < deadline:
            time.sleep(0.02)
            state = fleet.state.snapshot("Drone1")
    finally:
        rt.reporter.jetson.stop()
        fleet.close()
        bridge.close()
        world.close()
    assert state.telemetry is not None and state.telemetry.jetson is not None, "no Jetson health arrived"
    health_telemetry = state.telemetry
    health = health_telemetry.jetson
    assert health.source == "tegrastats" and health.gpu_temp_c == 96.5 and health.ram_used_mb == 5234
    assert health.throttled and health.throttle_reasons == ("thermal: 96.5 C >= 95 C",)
    assert health.temps_c["tj"] == 48.9 and health.power_mw == 5493
    tile = DroneTile("Drone1", None, lambda _kind, _drone: None)
    qtbot.addWidget(tile)
    tile.refresh(state)
    text = tile.info.text()
    assert "jetson: power mode ?" in text and "GPU 96 °C" in text and "5.5 W" in text, text
    assert "THROTTLED</b> thermal: 96.5 C &gt;= 95 C" in text, text
    # no health reported (a laptop, the simulator): no Jetson line
    tile.refresh(dataclasses.replace(state, telemetry=msgspec.structs.replace(health_telemetry, jetson=None)))
    assert "jetson" not in tile.info.text()
