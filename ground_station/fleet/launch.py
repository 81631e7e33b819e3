"""The built-in simulator and N real onboard processes, started and stopped together.

    with SimFleet(n_drones=4, pilot="baseline", targets=[("target", "car@red", Pose(25, 0, 0, 90))]) as sim:
        fleet = FleetClient(sim.addresses).start()

`dronecats sim --vehicles N` runs in one process; each drone is a `dronecats onboard` process flying
Drone<i> through the real airsim client, bound for the ground station on its own three ports, with
ground truth for its logs from the simulator (--truth-target). Every process is stopped on exit.

Secure by default: each session makes fresh CURVE keys (one for the ground station, one per
drone) in a private temporary directory that is deleted at close. Each drone allows only this
session's ground-station key; connect with `FleetClient(sim.addresses, sim.security)` (the
addresses carry the drones' public keys). `secure=False` launches the drones with --insecure.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from common.errors import ConfigError, LinkError
from common.keys import PUBLIC_SUFFIX, SECRET_SUFFIX, generate_keypair, load_keypair
from common.link.security import CurveClient, Insecure
from common.pose import Pose
from ground_station.fleet.client import DroneAddress

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]


def free_port_block(count: int = 3, host: str = "127.0.0.1", attempts: int = 200) -> int:
    """A base port such that base..base+count-1 are all free right now."""
    for _ in range(attempts):
        with socket.socket() as probe:
            probe.bind((host, 0))
            base = int(probe.getsockname()[1])
        if base + count > 65535:
            continue
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind((host, port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise ConfigError(f"no block of {count} free ports found on {host}")


@dataclass(frozen=True)
class TargetSpec:
    name: str
    asset: str  # e.g. "car@red"
    pose: Pose


@dataclass
class SimFleet:
    n_drones: int = 4
    pilot: str = "baseline"  # for every drone: baseline, scripted:FILE, a model URL, or remote
    scene: str = "residential"
    targets: list[TargetSpec] = field(default_factory=list)
    log_dir: Path = Path("runs/fleet")
    onboard_settings: list[str] = field(default_factory=list)  # --set KEY=VALUE for every drone
    instruction: str = ""  # empty: the drones wait for the ground station
    seed: int = 0
    startup_timeout_s: float = 90.0
    truth: bool = True  # ground truth for the drones' logs (costs the sim a render per `go` step)
    sim_port: int = 0
    sim_args: list[str] = field(default_factory=list)  # more `dronecats sim` options (--render-workers K)
    secure: bool = True  # per-session CURVE keys (False: the drones run --insecure)
    addresses: list[DroneAddress] = field(default_factory=list)
    security: CurveClient | Insecure = field(default_factory=Insecure)  # the ground station's side
    keys_dir: Path | None = None  # this session's keys (deleted at close)
    _procs: list[subprocess.Popen[str]] = field(default_factory=list)
    _logs: list[IO[str]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def start(self) -> SimFleet:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._make_keys()
            self._start_sim()
            self._spawn_targets()
            for index in range(self.n_drones):
                self._start_drone(index)
        except BaseException:
            self.close()
            raise
        return self

    def _make_keys(self) -> None:
        """Fresh keys for this session: only this ground station can command these drones."""
        if not self.secure:
            return
        self.keys_dir = Path(tempfile.mkdtemp(prefix="dronecats-keys-"))  # mode 0700
        _, gs_secret = generate_keypair(self.keys_dir, "gs")
        self.security = CurveClient.from_file(gs_secret)
        for index in range(self.n_drones):
            generate_keypair(self.keys_dir, f"Drone{index + 1}")

    def _link_args(self, name: str) -> tuple[list[str], bytes | None]:
        """The drone's link security flags, and its public key for the ground station."""
        if self.keys_dir is None:
            return ["--insecure"], None
        secret = self.keys_dir / f"{name}{SECRET_SUFFIX}"
        allow = self.keys_dir / f"gs{PUBLIC_SUFFIX}"
        return ["--link-secret", str(secret), "--link-allow", str(allow)], load_keypair(secret).public_key

    def _start_sim(self) -> None:
        sim_log = (self.log_dir / "sim.log").open("w")
        self._logs.append(sim_log)
        argv = [sys.executable, "-m", "dronecats", "sim", "--scene", self.scene, "--port", "0"]
        argv += ["--vehicles", str(self.n_drones), "--seed", str(self.seed), *self.sim_args]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=sim_log, text=True, env=self.env())
        self._procs.append(proc)
        assert proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout_s
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "listening on" in line or not line:
                break
        if "listening on" not in line:
            raise ConfigError(f"dronecats sim did not start (see {self.log_dir / 'sim.log'}): {line!r}")
        self.sim_port = int(line.rsplit(":", 1)[1])

    def _spawn_targets(self) -> None:
        if not self.targets:
            return
        import airsim

        client = airsim.MultirotorClient(port=self.sim_port)
        # ping, not confirmConnection: that one prints "Connected!" and versions to stdout
        if not client.ping():
            raise LinkError(f"dronecats sim on port {self.sim_port} does not answer ping")
        for target in self.targets:
            p = target.pose
            pose = airsim.Pose(
                airsim.Vector3r(p.x_m, p.y_m, p.z_m), airsim.to_quaternion(0, 0, _rad(p.yaw_deg))
            )
            client.simSpawnObject(target.name, target.asset, pose, airsim.Vector3r(1, 1, 1))

    def _start_drone(self, index: int) -> None:
        name = f"Drone{index + 1}"
        base = free_port_block(3)
        link_args, public_key = self._link_args(name)
        address = DroneAddress(name, f"tcp://127.0.0.1:{base}", public_key)
        argv = [
            sys.executable, "-m", "dronecats", "--log-level", "INFO", "onboard",
            "--vehicle", f"airsim://127.0.0.1:{self.sim_port}/{name}",
            "--pilot", self.pilot,
            "--gs", address.base, *link_args,
            "--log-dir", str(self.log_dir / name),
            "--set", f"drone={name}",
        ]  # fmt: skip
        if self.instruction:
            argv += ["--instruction", self.instruction]
        if self.targets and self.truth:
            argv += ["--truth-target", self.targets[0].name]
        for setting in self.onboard_settings:
            argv += ["--set", setting]
        out = (self.log_dir / f"{name}.log").open("w")
        self._logs.append(out)
        self._procs.append(
            subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, text=True, env=self.env())
        )
        self.addresses.append(address)

    def drone_log(self, name: str) -> str:
        path = self.log_dir / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def alive(self) -> list[bool]:
        return [p.poll() is None for p in self._procs]

    def close(self, timeout_s: float = 15.0) -> None:
        """Stop the drones first (SIGTERM: they land and write their logs), then the simulator."""
        deadline = time.monotonic() + timeout_s
        drones, sims = self._procs[1:], self._procs[:1]
        for group in (drones, sims):  # the drones need the simulator to land
            for proc in group:
                if proc.poll() is None:
                    proc.terminate()
            for proc in group:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
        self._procs.clear()
        for fh in self._logs:
            fh.close()
        self._logs.clear()
        if self.keys_dir is not None:
            shutil.rmtree(self.keys_dir, ignore_errors=True)
            self.keys_dir = None

    def __enter__(self) -> SimFleet:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _rad(deg: float) -> float:
    import math

    return math.radians(deg)
