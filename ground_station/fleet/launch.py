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

import contextlib
import json
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
from ground_station.fleet.pdeathsig import die_with_parent

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


# The built-in simulator's home geopoint (its AirSim API reports every position from it): the
# ground station's map turns local NED metres into latitude/longitude with it.
SIM_GEO_ORIGIN = (47.641468, -122.140165, 122.0)  # lat deg, lon deg, alt m


@dataclass(frozen=True)
class LaunchTarget:
    """An object SimFleet spawns in the built-in simulator before the drones start."""

    name: str
    asset: str  # e.g. "car@red"
    pose: Pose


LOG_TAIL_LINES = 12
RELAUNCH_MARK = "---- re-launched by the ground station"


@dataclass(frozen=True)
class DroneExit:
    """How a launched drone's process ended: its exit code, the run's end reason (the last JSON
    line `dronecats onboard` prints) and the last lines of its log (what went wrong, if it did)."""

    drone: str
    returncode: int
    reason: str | None  # e.g. "declared", "t_max", "estop: ground station estop"; None: no result line
    log_tail: list[str]

    @property
    def failed(self) -> bool:
        return self.returncode != 0 or self.reason is None

    def summary(self) -> str:
        if not self.failed:
            return f"{self.drone} done: {self.reason}"
        last = next((line for line in reversed(self.log_tail) if line.strip()), "")
        return f"{self.drone} exited with code {self.returncode}: {last.strip() or 'no output'}"


@dataclass
class DroneProcess:
    name: str
    argv: list[str]
    log_path: Path
    address: DroneAddress
    proc: subprocess.Popen[str] | None = None
    log: IO[str] | None = None
    launches: int = 0
    ended: DroneExit | None = None  # how this launch ended, once it has


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    if not path.exists():
        return []
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - 16384))
        text = fh.read().decode("utf-8", "replace")
    return text.splitlines()[-lines:]


def end_reason(lines: list[str]) -> str | None:
    """The `reason` of the result line `dronecats onboard` prints as it exits, if there is one."""
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{") and '"reason"' in line:
            try:
                reason = json.loads(line).get("reason")
            except ValueError:
                continue
            if isinstance(reason, str):
                return reason
    return None


@dataclass
class SimFleet:
    n_drones: int = 4
    pilot: str = "baseline"  # for every drone: baseline, scripted:FILE, a model URL, or remote
    scene: str = "residential"
    targets: list[LaunchTarget] = field(default_factory=list)
    log_dir: Path = Path("runs/fleet")
    onboard_settings: list[str] = field(default_factory=list)  # --set KEY=VALUE for every drone
    instruction: str = ""  # empty: the drones wait for the ground station
    seed: int = 0
    startup_timeout_s: float = 90.0
    truth: bool = True  # ground truth for the drones' logs (costs the sim a render per `go` step)
    sim_port: int = 0
    sim_args: list[str] = field(default_factory=list)  # more `dronecats sim` options (--render-workers K)
    secure: bool = True  # per-session CURVE keys (False: the drones run --insecure)
    security: CurveClient | Insecure = field(default_factory=Insecure)  # the ground station's side
    keys_dir: Path | None = None  # this session's keys (deleted at close)
    geo_origin: tuple[float, float, float] = SIM_GEO_ORIGIN
    land_timeout_s: float = 10.0  # on close: how long the drones get to land before they are killed
    addresses: list[DroneAddress] = field(default_factory=list)
    drones: dict[str, DroneProcess] = field(default_factory=dict)
    _sim: subprocess.Popen[str] | None = None
    _logs: list[IO[str]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def _popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[str]:
        # Own session: Ctrl+C in the terminal reaches the ground station only, which then lands the
        # drones before it stops the simulator (they need it to land).
        return subprocess.Popen(
            argv, text=True, env=self.env(), preexec_fn=die_with_parent, start_new_session=True, **kwargs
        )

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
        argv += ["--camera-gimbal", "level"]  # the project's drones carry a gimbal
        argv += ["--vehicles", str(self.n_drones), "--seed", str(self.seed), *self.sim_args]
        # Through the reaper: if this process dies outright, the simulator outlives the drones
        # (they land in it) by up to land_timeout_s, then goes too (ground_station/fleet/reaper.py).
        reaper = [sys.executable, "-m", "ground_station.fleet.reaper", "--watch", self._watch()]
        reaper += ["--grace-s", f"{self.land_timeout_s + 5.0:g}", "--"]
        proc = self._popen(reaper + argv, stdout=subprocess.PIPE, stderr=sim_log)
        self._sim = proc
        assert proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout_s
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "listening on" in line or not line:
                break
        if "listening on" not in line:
            sim_log.flush()
            tail = " | ".join(log_tail(self.log_dir / "sim.log", 5))
            raise ConfigError(f"dronecats sim did not start (see {self.log_dir / 'sim.log'}): {tail}")
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
        argv = [sys.executable, "-m", "dronecats", "--log-level", "INFO", "onboard"]
        argv += ["--vehicle", f"airsim://127.0.0.1:{self.sim_port}/{name}", "--pilot", self.pilot]
        argv += ["--gs", address.base, *link_args]
        argv += ["--log-dir", str(self.log_dir.resolve() / name), "--set", f"drone={name}"]
        if self.instruction:
            argv += ["--instruction", self.instruction]
        if self.targets and self.truth:
            argv += ["--truth-target", self.targets[0].name]
        for setting in self.onboard_settings:
            argv += ["--set", setting]
        drone = DroneProcess(name, argv, self.log_dir / f"{name}.log", address)
        self.drones[name] = drone
        self.addresses.append(address)
        self._launch(drone, "w")

    def _launch(self, drone: DroneProcess, mode: str) -> None:
        if drone.log is not None:
            drone.log.close()
        drone.log = drone.log_path.open(mode)
        if mode == "a":
            drone.log.write(f"\n{RELAUNCH_MARK} at {time.strftime('%H:%M:%S')} ----\n")
            drone.log.flush()
        drone.proc = self._popen(drone.argv, stdout=drone.log, stderr=subprocess.STDOUT)
        drone.ended = None
        drone.launches += 1

    def _watch(self) -> str:
        """What every drone's command line of this fleet contains (its absolute log folder)."""
        return str(self.log_dir.resolve()) + os.sep

    def relaunch(self, name: str) -> None:
        """Start a launched drone again (same vehicle, same link address, log appended) once its
        process has ended: a drone that landed, was e-stopped or failed to start."""
        drone = self.drones.get(name)
        if drone is None:
            raise ConfigError(f"{name} was not launched by this ground station")
        if drone.proc is not None and drone.proc.poll() is None:
            raise ConfigError(f"{name} is still running (pid {drone.proc.pid})")
        if self._sim is None or self._sim.poll() is not None:
            raise ConfigError("the simulator is not running")
        self._launch(drone, "a")

    def exit_info(self, name: str) -> DroneExit | None:
        """None while the drone's process runs; how it ended once it has."""
        drone = self.drones.get(name)
        if drone is None or drone.proc is None:
            return None
        if drone.ended is not None:
            return drone.ended
        code = drone.proc.poll()
        if code is None:
            return None
        if drone.log is not None:
            drone.log.flush()
        tail = log_tail(drone.log_path)
        marks = [i for i, line in enumerate(tail) if line.startswith(RELAUNCH_MARK)]
        if marks:  # this launch's lines only
            tail = tail[marks[-1] + 1 :]
        drone.ended = DroneExit(name, code, end_reason(tail), tail)
        return drone.ended

    def geofence_radius_m(self) -> float:
        """The drones' geofence radius around their homes: the --set override, else the default."""
        for setting in reversed(self.onboard_settings):
            key, _, value = setting.partition("=")
            if key.strip() in ("safety.geofence_radius_m", "geofence_radius_m"):
                return float(value)
        from onboard.safety import SafetyConfig

        return SafetyConfig().geofence_radius_m

    def drone_log(self, name: str) -> str:
        path = self.log_dir / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def pids(self) -> list[int]:
        """Every child process id (the simulator first), running or not."""
        procs = [self._sim] + [d.proc for d in self.drones.values()]
        return [p.pid for p in procs if p is not None]

    def alive(self) -> list[bool]:
        procs = [self._sim] + [d.proc for d in self.drones.values()]
        return [p is not None and p.poll() is None for p in procs]

    def close(self, timeout_s: float | None = None) -> None:
        """Stop the drones first (SIGTERM: each lands and writes its logs, killed after
        land_timeout_s), then the simulator (the drones need it to land)."""
        land_s = self.land_timeout_s if timeout_s is None else timeout_s
        drones = [d.proc for d in self.drones.values() if d.proc is not None]
        _stop(drones, land_s)
        if self._sim is not None:
            _stop([self._sim], 8.0)  # the reaper stops the simulator (5 s at most), then itself
            if self._sim.stdout is not None:
                self._sim.stdout.close()
            self._sim = None
        for drone in self.drones.values():
            if drone.log is not None:
                drone.log.close()
                drone.log = None
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


def _stop(procs: list[subprocess.Popen[str]], timeout_s: float) -> None:
    """SIGTERM each, wait for all within one shared deadline, SIGKILL whoever is left."""
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("pid %d did not stop within %.0f s: killed", proc.pid, timeout_s)
            proc.kill()
            proc.wait()


def _rad(deg: float) -> float:
    import math

    return math.radians(deg)
