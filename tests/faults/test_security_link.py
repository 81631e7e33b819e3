"""Fault rows: secure by default. `dronecats onboard --gs` without CURVE keys does not start (unless
--insecure is given); a wrong or missing key is refused and counted in the drone's telemetry while
the vehicle, in the simulator, does not move; `dronecats gs --keys` reaches a secured drone end
to end; the Jetson entrypoint keys the link itself."""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import zmq

from common import wire
from common.keys import generate_keypair
from common.messages import Ack, Hold
from tests.support import ROOT
from tests.support.processes import run_dronecats, subprocess_env
from tests.support.validation import REMOTE_SECURE, Flight, hovering_flight, strict_json

STILL_M = 0.15


def run_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_dronecats(*argv, env=env or subprocess_env())


def one_line_refusal(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# ---- refusals before anything connects (no simulator needed) -------------------------------------


def test_onboard_gs_without_keys_refuses_to_start(tmp_path: Path) -> None:
    base = ["onboard", "--vehicle", "airsim://127.0.0.1:9/Drone1", "--gs", "tcp://127.0.0.1:9", "--log-dir"]
    one_line_refusal(run_cli(*base, str(tmp_path / "a")), "--gs needs CURVE keys", "--insecure")
    keys = tmp_path / "keys"
    generate_keypair(keys, "drone")
    secret = str(keys / "drone.key_secret")
    one_line_refusal(run_cli(*base, str(tmp_path / "b"), "--link-secret", secret), "--link-allow")
    one_line_refusal(run_cli(*base, str(tmp_path / "c"), "--link-secret", secret, "--insecure"), "contradict")
    assert not any((tmp_path / d).exists() for d in "abc")


def test_gs_without_keys_or_with_a_missing_drone_key_refuses(tmp_path: Path) -> None:
    drones = ["gs", "--headless", "--drones", "Drone1=tcp://127.0.0.1:9", "--instruction", "x"]
    one_line_refusal(run_cli(*drones), "--keys", "--insecure")
    keys = tmp_path / "keys"
    generate_keypair(keys, "gs")
    one_line_refusal(
        run_cli(*drones, "--keys", str(keys / "gs.key_secret")), "no public key for drone Drone1"
    )


def entrypoint(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = subprocess_env(**env)
    full["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full.get('PATH', '')}"  # python3 = this one
    return subprocess.run(
        ["bash", str(ROOT / "docker" / "entrypoint.sh")],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_jetson_entrypoint_keys_the_link_or_refuses(tmp_path: Path) -> None:
    env = {
        "DRONECATS_VEHICLE": "nosuch://drone",  # onboard stops at the vehicle, after the link checks
        "DRONECATS_GS": "tcp://127.0.0.1:9",
        "DRONECATS_KEYS": str(tmp_path / "keys"),
        "DRONECATS_LOG_DIR": str(tmp_path / "runs"),
        "DRONECATS_CONFIG": str(tmp_path / "absent.yaml"),
        "TMPDIR": str(tmp_path),
    }
    refused = entrypoint(env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "needs a ground station's public key" in refused.stderr and "Traceback" not in refused.stderr
    generate_keypair(tmp_path / "keys", "gs")  # the ground station's public key, provisioned
    keyed = entrypoint(env)
    # A fresh keypair for this session (its public key printed for the ground station), then onboard
    # accepted the link flags and stopped at the unknown vehicle.
    assert "public-key " in keyed.stdout, keyed.stdout + keyed.stderr
    assert "unknown scheme 'nosuch'" in keyed.stderr and "--gs needs" not in keyed.stderr, keyed.stderr
    assert keyed.returncode == 2
    session_keys = [p for p in tmp_path.glob("dronecats-keys-*") if (p / "drone.key_secret").exists()]
    assert len(session_keys) == 1 and (session_keys[0].stat().st_mode & 0o077) == 0  # private to its user


# ---- against a real secured drone ----------------------------------------------------------------


@pytest.fixture(scope="module")
def flight(tmp_path_factory: pytest.TempPathFactory):
    with hovering_flight(tmp_path_factory.mktemp("security"), 1, REMOTE_SECURE) as flight:
        yield flight


def hold_command(seq: int, run: str = "") -> list[bytes]:
    """A Hold for Drone1, fresh now on this host's CLOCK_MONOTONIC (the drone's clock), bound to `run`."""
    return wire.encode(
        Hold("intruder"),
        drone_id="Drone1",
        session_id="intruder",
        seq=seq,
        send_time_s=time.monotonic(),
        drone_session_id=run,
    )


def no_answer(sock: Any, wait_s: float = 1.5) -> bool:
    return not sock.poll(int(wait_s * 1000))


@pytest.mark.slow
def test_a_wrong_or_missing_curve_key_is_refused_and_counted(flight: Flight) -> None:
    drone = flight.drones["Drone1"]
    watch = flight.watcher(drone)
    try:
        start = watch.wait(lambda t: True)
        assert start.link_security == "curve"
        before = flight.sim_positions()["Drone1"]
        intruders = {
            "stranger's key": flight.commander(drone, client_key="stranger"),
            "no CURVE": flight.commander(drone, client_key=None),
        }
        wrong_server = flight.context.socket(zmq.DEALER)  # the right client key, a wrong drone key
        wrong_server.linger = 0
        public, secret = flight.gs_pair()
        wrong_server.curve_publickey, wrong_server.curve_secretkey = public, secret
        wrong_server.curve_serverkey = flight.gs_public  # not the drone's key
        wrong_server.connect(drone.command_endpoint)
        intruders["wrong drone key"] = wrong_server
        for seq, sock in enumerate(intruders.values()):
            for _ in range(3):
                with contextlib.suppress(zmq.Again):  # never connected: nothing to queue into
                    sock.send_multipart(hold_command(seq), zmq.NOBLOCK)
        for name, sock in intruders.items():
            assert no_answer(sock), f"{name}: got an answer"
            sock.close(linger=0)
        end = watch.wait(lambda t: t.link_unauthenticated - start.link_unauthenticated >= 3)
        assert end.link_accepted == start.link_accepted, "an intruder's command was accepted"
        assert end.mode == "flying" and end.safety_state == "ok", end  # no hold
        after = flight.sim_positions()["Drone1"]
        assert math.dist(before, after) < STILL_M
        assert "is not allowed" in drone.log_text()  # the ZAP refusal, logged with the key
    finally:
        watch.close()


@pytest.mark.slow
def test_gs_keys_reaches_a_secured_drone_end_to_end(flight: Flight, tmp_path: Path) -> None:
    drone = flight.drones["Drone1"]
    result = run_cli(
        "gs", "--headless", "--drones", f"Drone1=tcp://127.0.0.1:{drone.base_port}",
        "--keys", str(flight.keys / "gs.key_secret"), "--instruction", "hold still",
        "--duration-s", "2", "--until", "none",
    )  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, result.stdout + result.stderr
    summary = strict_json(lines[-1])
    stats = summary["link"]
    assert stats.get("received_telemetry", 0) > 0 and stats.get("acks", 0) >= 1, stats
    assert not summary["errors"], summary["errors"]
    assert stats.get("auth_failed_command", 0) == 0


@pytest.mark.slow
def test_the_allowed_key_commands_the_drone(flight: Flight) -> None:
    """The control case for the refusals above: the same Hold from the allowed key holds."""
    drone = flight.drones["Drone1"]
    watch = flight.watcher(drone)
    cmd = flight.commander(drone)
    try:
        watch.wait(lambda t: True)
        cmd.send_multipart(hold_command(50, watch.run_session_id))
        assert cmd.poll(5000), "no ack from the drone"
        ack = wire.decode(cmd.recv_multipart()).body
        assert isinstance(ack, Ack) and ack.result == "ok", ack
        watch.wait(lambda t: "intruder" in t.safety_state)
    finally:
        cmd.close(linger=0)
        watch.close()
    assert drone.stop() == 0
    episode = strict_json((drone.log_dir / "episode.json").read_text())
    assert episode["run"]["link_security"] == "curve"
    assert episode["run"]["link_counts"]["rejected_unauthenticated"] >= 1


def test_session_keys_are_private(tmp_path: Path) -> None:
    """SimFleet (gs --launch, demo-fleet, bench_gs) keys: a fresh private directory per session."""
    from ground_station.fleet.launch import SimFleet

    fleet = SimFleet(2)
    fleet._make_keys()
    keys_dir = fleet.keys_dir
    try:
        assert fleet.keys_dir is not None and fleet.keys_dir.parent == Path(tempfile.gettempdir())
        assert fleet.keys_dir.stat().st_mode & 0o077 == 0
        assert {p.name for p in fleet.keys_dir.iterdir()} == {
            "gs.key", "gs.key_secret", "Drone1.key", "Drone1.key_secret", "Drone2.key", "Drone2.key_secret"
        }  # fmt: skip
        args, public_key = fleet._link_args("Drone2")
        assert args[0] == "--link-secret" and "--insecure" not in args and public_key is not None
    finally:
        fleet.close()
    assert keys_dir is not None and not keys_dir.exists()  # deleted with the session
