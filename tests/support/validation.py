"""Real processes and raw wire tools for the validation and security rows of the fault suite.

`Flight` starts `dronecats sim --vehicles 2` and two `dronecats onboard` processes flying it through
the real airsim client: Drone1 in remote mode behind CURVE (this session's keys), Drone2 with its
baseline pilot and no instruction behind `--insecure`. Both only hover, so any motion in the
simulator is something a fault made them do. The hostile peer is a real ZeroMQ socket (CURVE with
the allowed key, a stranger's key, or none) sending hand-made frames, since our own constructors
refuse to build the bad values.
"""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import zmq

from common import wire
from common.keys import generate_keypair, load_keypair
from common.messages import TelemetryMessage
from ground_station.fleet.launch import free_port_block
from tests.support.processes import dronecats_cmd, sim_server, stop_process, subprocess_env

# Link-loss failsafes far beyond the test: the hostile peer sends no ground-station heartbeats.
HOVER_SETTINGS = [
    "safety.link_lost_hold_s=600",
    "safety.link_lost_land_s=900",
    "t_max_s=600",
    "min_decision_period_s=0.5",
    "save_frames=false",
]


def forge(
    type_name: str,
    body: Any,
    drone_id: str,
    seq: int = 1,
    send_time_s: Any = None,
    drone_session_id: str = "",
    session_id: str = "fault",
) -> list[bytes]:
    """[header, body] built from plain values, bypassing every check our own encoder makes. The send
    time defaults to now on CLOCK_MONOTONIC (a drone on this host judges a command's age on it);
    `drone_session_id` binds a command to a drone run (TelemetryWatch.run_session_id)."""
    when = time.monotonic() if send_time_s is None else send_time_s
    envelope = [wire.PROTOCOL_VERSION, type_name, drone_id, session_id, seq, when, drone_session_id]
    return [msgspec.msgpack.encode(envelope), msgspec.msgpack.encode(body)]


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and ±Infinity (Python's json accepts them by default)."""

    def refuse(token: str) -> Any:
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


def finite_everywhere(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite_everywhere(v) for v in value.values())
    if isinstance(value, list):
        return all(finite_everywhere(v) for v in value)
    return True


@dataclass
class Drone:
    name: str
    base_port: int
    log_dir: Path
    output: Path
    proc: subprocess.Popen[str] | None = None
    public_key: bytes | None = None  # None: insecure

    def endpoint(self, offset: int) -> str:
        return f"tcp://127.0.0.1:{self.base_port + offset}"

    @property
    def telemetry_endpoint(self) -> str:
        return self.endpoint(0)

    @property
    def frame_endpoint(self) -> str:
        return self.endpoint(1)

    @property
    def command_endpoint(self) -> str:
        return self.endpoint(2)

    def log_text(self) -> str:
        return self.output.read_text() if self.output.exists() else ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        """SIGTERM (the drone lands and writes its logs); its exit code."""
        if self.proc is not None:
            stop_process(self.proc, timeout_s=30.0)
            return self.proc.returncode
        return None


@dataclass
class Flight:
    sim_port: int
    keys: Path
    drones: dict[str, Drone] = field(default_factory=dict)
    context: Any = field(default_factory=zmq.Context)
    _airsim: Any = None

    @property
    def gs_public(self) -> bytes:
        return load_keypair(self.keys / "gs.key").public_key

    def gs_pair(self, name: str = "gs") -> tuple[bytes, bytes]:
        pair = load_keypair(self.keys / f"{name}.key_secret")
        assert pair.secret_key is not None
        return pair.public_key, pair.secret_key

    # ---- hostile and watching peers: real ZeroMQ sockets ---------------------------------------
    def socket(self, kind: int, drone: Drone, endpoint: str, client_key: str | None = "gs") -> Any:
        """A socket connected to one of the drone's ports, a CURVE client with key `client_key`
        (None: no CURVE at all) when the drone is secured."""
        sock = self.context.socket(kind)
        sock.linger = 0
        if drone.public_key is not None and client_key is not None:
            public, secret = self.gs_pair(client_key)
            sock.curve_publickey, sock.curve_secretkey = public, secret
            sock.curve_serverkey = drone.public_key
        if kind == zmq.SUB:
            sock.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_TELEMETRY)
        sock.connect(endpoint)
        return sock

    def commander(self, drone: Drone, client_key: str | None = "gs") -> Any:
        return self.socket(zmq.DEALER, drone, drone.command_endpoint, client_key)

    @contextlib.contextmanager
    def talking_to(self, drone: Drone, client_key: str | None = "gs") -> Iterator[tuple[TelemetryWatch, Any]]:
        """A telemetry watcher and a command socket (`commander`) on `drone` for the block; both closed
        at its end (the socket without linger: a refused command left queued must not hold the test)."""
        watch = self.watcher(drone)
        cmd = self.commander(drone, client_key)
        try:
            yield watch, cmd
        finally:
            cmd.close(linger=0)
            watch.close()

    def watcher(self, drone: Drone) -> TelemetryWatch:
        return TelemetryWatch(self.socket(zmq.SUB, drone, drone.telemetry_endpoint))

    # ---- the simulator's truth ------------------------------------------------------------------
    def sim_positions(self) -> dict[str, tuple[float, float, float]]:
        """Each vehicle's actual position in the simulator, read through the real airsim client."""
        import airsim

        if self._airsim is None:
            self._airsim = airsim.MultirotorClient(port=self.sim_port)
            self._airsim.confirmConnection()
        out = {}
        for name in self.drones:
            p = self._airsim.simGetVehiclePose(vehicle_name=name).position
            out[name] = (p.x_val, p.y_val, p.z_val)
        return out

    def wait_hovering(self, timeout_s: float = 120.0, altitude_m: float = 2.5) -> dict[str, tuple]:
        """Until every drone is up (above altitude_m) and still (moved < 5 cm in 1 s)."""
        deadline = time.monotonic() + timeout_s
        last = self.sim_positions()
        while time.monotonic() < deadline:
            time.sleep(1.0)
            now = self.sim_positions()
            if all(-p[2] > altitude_m and math.dist(p, last[n]) < 0.05 for n, p in now.items()):
                return now
            last = now
        logs = {n: d.log_text()[-1500:] for n, d in self.drones.items()}
        raise AssertionError(f"the drones did not reach a steady hover: {last} {logs}")


class TelemetryWatch:
    """The newest TelemetryMessage a drone published, read from a raw SUB socket."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.latest: TelemetryMessage | None = None
        self.run_session_id = ""  # the drone run's nonce: the session on everything it sends

    def poll(self, timeout_s: float = 0.5) -> TelemetryMessage | None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if not self.sock.poll(50):
                continue
            while True:
                try:
                    raw = self.sock.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                message = wire.decode(raw[1:])
                if isinstance(message.body, TelemetryMessage):
                    self.latest = message.body
                    self.run_session_id = message.envelope.session_id
        return self.latest

    def wait(self, predicate: Any, timeout_s: float = 15.0) -> TelemetryMessage:
        """Until a TelemetryMessage satisfies predicate(t); returns it (AssertionError with the last one)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            t = self.poll(0.3)
            if t is not None and predicate(t):
                return t
        raise AssertionError(f"no telemetry satisfied the condition in {timeout_s} s; last: {self.latest}")

    def close(self) -> None:
        self.sock.close(linger=0)


REMOTE_SECURE = {"Drone1": (["--pilot", "remote"], True)}
TWO_DRONES = {**REMOTE_SECURE, "Drone2": (["--pilot", "baseline"], False)}


def start_flight(tmp: Path, sim_port: int, specs: dict[str, tuple[list[str], bool]]) -> Iterator[Flight]:
    """Generator for a module fixture: onboard processes on a running `dronecats sim`, one per
    entry of `specs` (name: (pilot arguments, secured with CURVE))."""
    keys = tmp / "keys"
    for name in ("gs", "stranger", *specs):
        generate_keypair(keys, name)
    flight = Flight(sim_port, keys)
    try:
        for name, (pilot, secure) in specs.items():
            drone = Drone(name, free_port_block(3), tmp / name, tmp / f"{name}.out")
            argv = [
                "--log-level", "INFO", "onboard",
                "--vehicle", f"airsim://127.0.0.1:{sim_port}/{name}", *pilot,
                "--gs", f"tcp://127.0.0.1:{drone.base_port}",
                "--log-dir", str(drone.log_dir), "--set", f"drone={name}",
            ]  # fmt: skip
            if secure:
                argv += [
                    "--link-secret",
                    str(keys / f"{name}.key_secret"),
                    "--link-allow",
                    str(keys / "gs.key"),
                ]
                drone.public_key = load_keypair(keys / f"{name}.key").public_key
            else:
                argv += ["--insecure"]
            for setting in HOVER_SETTINGS:
                argv += ["--set", setting]
            with drone.output.open("w") as out:
                drone.proc = subprocess.Popen(
                    dronecats_cmd(*argv),
                    env=subprocess_env(),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            flight.drones[name] = drone
        yield flight
    finally:
        for drone in flight.drones.values():
            if drone.proc is not None:
                stop_process(drone.proc, timeout_s=20.0)
        flight.context.destroy(linger=0)


@contextlib.contextmanager
def hovering_flight(tmp: Path, vehicles: int, specs: dict[str, tuple[list[str], bool]]) -> Iterator[Flight]:
    """`dronecats sim --vehicles N` and `start_flight`'s onboard processes on it, every drone hovering."""
    with sim_server("--vehicles", str(vehicles)) as port:
        gen = start_flight(tmp, port, specs)
        flight = next(gen)
        try:
            flight.wait_hovering()
            yield flight
        finally:
            gen.close()
