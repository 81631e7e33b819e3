"""The onboard runtime's ground-station link with CURVE keys: the configured ground station commands,
another key cannot (and is counted)."""

from __future__ import annotations

import pytest

from common.errors import LinkError
from common.keys import generate_keypair, load_keypair
from common.link import CurveClient, DroneEndpoint, GroundLink, GroundLinkConfig
from common.messages import Hold
from onboard.link import attach_link, endpoints
from onboard.safety import Mode
from tests.support.ports import free_base_port
from tests.support.runtime import make_runtime


def ground(keyfile, drone_public: bytes, address: str) -> GroundLink:
    telemetry, frames, commands = endpoints(address)
    link = GroundLink(
        GroundLinkConfig(command_timeout_s=0.3, command_retries=1), CurveClient.from_file(keyfile)
    )
    link.start()
    link.add_drone(DroneEndpoint("Drone1", telemetry, frames, commands, drone_public))
    return link


def test_only_the_configured_ground_station_commands(world, tmp_path) -> None:
    keys = tmp_path / "keys"
    generate_keypair(keys, "drone1")
    gs_public, gs_secret = generate_keypair(keys, "gs1")
    _, stranger_secret = generate_keypair(keys, "stranger")
    drone_public = load_keypair(keys / "drone1.key").public_key
    rt = make_runtime(world, tmp_path / "log")
    address = f"tcp://127.0.0.1:{free_base_port()}"
    bridge = attach_link(rt, address, str(keys / "drone1.key_secret"), [str(gs_public)])
    stranger = ground(stranger_secret, drone_public, address)
    try:
        with pytest.raises(LinkError):
            stranger.send_command("Drone1", Hold(reason="not allowed"))
        assert rt.governor.mode == Mode.FLYING
        assert bridge.link.stats.get("auth_failed_command") >= 1 and bridge.link.stats.rejected_total() >= 1
        allowed = ground(gs_secret, drone_public, address)
        try:
            ack = allowed.send_command("Drone1", Hold(reason="operator"), timeout_s=2.0)
            assert ack.result == "ok"
            assert rt.governor.mode == Mode.HOLD and rt.governor.reason == "operator"
        finally:
            allowed.close()
    finally:
        stranger.close()
        bridge.close()
