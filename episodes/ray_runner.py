"""Episode suites on a Ray cluster: each episode a Ray task, its directory written here by the driver.

`dronecats episodes run SUITE --ray local|auto|ray://HOST:PORT` flies the same `run_episode` as
`--jobs`, on whichever node Ray picks: the command line hands episodes.runner.run_suite a RayFlyer
instead of its LocalFlyer. The task flies into a temporary directory on its node and
returns that directory's files; the driver writes them under OUT/<run name>/ with result.json last,
exactly as `--jobs` lays a run out. So no shared filesystem is needed, and a task that dies with its
worker or node leaves nothing in OUT: its episode is submitted again (at most `max_retries` more
times), never counted twice and never counted half-written.

Scheduling is the driver's, not Ray's retry: it keeps at most `slots` tasks in flight and hands each
one a simulator and a pilot endpoint from the pools (`--sim-pool`, `--pilot-pool`), returning them
when the task ends, so one AirSim server or one model endpoint never flies two episodes at once.
Ray's own task retries are off (max_retries=0): Ray would re-run a task whose node died, but it
cannot give the retry a pool member that is free, nor tell the driver which pool member to take back.

Code reaches the workers as a runtime_env (`py_modules`: this checkout's packages) unless the
cluster already has dronecats installed (`ship_code=False`); either way each task compares its code
version with the driver's and the run refuses on a difference.
"""

from __future__ import annotations

import hashlib
import logging
import re
import socket
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.errors import ConfigError, DroneCatsError
from episodes.records import record_to_json
from episodes.suites import SuiteEntry

if TYPE_CHECKING:
    from types import ModuleType

    from episodes.run_options import RunOptions
    from episodes.runner import Report

log = logging.getLogger(__name__)

# The packages a worker needs to fly an episode: what `py_modules` ships and what the version hashes.
PACKAGES = ("common", "models", "onboard", "sim_bridge", "episodes", "calibration", "dronecats")
ROOT = Path(__file__).resolve().parent.parent
# Where `--ray local` puts its one-node cluster. Ray replaces 127.0.0.1 with the host's network address
# (so that other nodes could join), which would put a single-machine run on the network; any other
# loopback address it keeps, and on Linux the whole of 127.0.0.0/8 is loopback.
LOCAL_NODE_IP = "127.0.0.2" if sys.platform.startswith("linux") else None


@dataclass(frozen=True)
class RayOptions:
    # "local" (start a cluster in this process), "auto" (the one running on this machine), HOST:PORT
    # (a cluster's GCS, as `ray start --head` prints it) or ray://HOST:PORT (Ray Client)
    address: str
    sim_pool: tuple[str, ...] = ()  # airsim://HOST:PORT servers, one episode at a time each
    pilot_pool: tuple[str, ...] = ()  # pilot URLs (model endpoints), one episode at a time each
    slots: int | None = None  # episodes in flight (default: the cluster's CPUs, capped by the pools)
    max_retries: int = 2  # re-submissions of an episode whose worker or node died
    ship_code: bool = True  # send this checkout's packages with every task (runtime_env py_modules)

    def __post_init__(self) -> None:
        if not (
            self.address in ("local", "auto") or re.fullmatch(r"(ray://)?[\w.\-]+:\d{1,5}", self.address)
        ):
            raise ConfigError(f"--ray {self.address!r}: use local, auto, HOST:PORT or ray://HOST:PORT")
        if self.slots is not None and self.slots < 1:
            raise ConfigError(f"--jobs {self.slots} must be >= 1")
        if self.max_retries < 0:
            raise ConfigError(f"--ray-retries {self.max_retries} must be >= 0")
        from episodes.hil import parse_sim_url

        for url in self.sim_pool:
            parse_sim_url(url, "--sim-pool entry")  # the --sim rules, before any episode is submitted
        for pool, name in ((self.sim_pool, "--sim-pool"), (self.pilot_pool, "--pilot-pool")):
            if len(set(pool)) != len(pool):
                raise ConfigError(f"{name} names a member twice: {', '.join(pool)}")


def parse_pool(text: str | None) -> tuple[str, ...]:
    return tuple(u.strip() for u in text.split(",") if u.strip()) if text else ()


def source_hash(root: Path = ROOT) -> str:
    """A hash of the packages' Python sources and data files: equal on two machines when the code is."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*")):
            source = path.suffix in (".py", ".txt", ".yaml", ".json") and "__pycache__" not in path.parts
            if source and path.is_file():
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


class CodeVersionMismatch(ConfigError):
    """A worker runs other code than the driver: its results would not be this run's."""


# ---- the task (runs on a worker) ------------------------------------------------------------------
@dataclass
class TaskResult:
    run_name: str
    node: str  # the Ray node that flew it (hex id, shortened) and its host
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> contents
    result: dict[str, Any] | None = None  # result.json's contents (None: could not run)
    error: str | None = None


def fly_task(record_json: bytes, options: RunOptions, run_name: str, driver_version: str) -> TaskResult:
    """Fly one episode into a temporary directory on this node and return its files."""
    import json

    import ray

    from episodes.episode import RESULT_FILE, run_episode
    from episodes.records import record_from_dict

    logging.basicConfig(level=logging.WARNING)
    node = f"{ray.get_runtime_context().get_node_id()[:8]}@{socket.gethostname()}"
    worker_version = source_hash(Path(__file__).resolve().parent.parent)
    if worker_version != driver_version:
        raise CodeVersionMismatch(
            f"worker {node} runs dronecats code {worker_version}, the driver {driver_version}: "
            "install the driver's version on the cluster or let the run ship it (default)"
        )
    record = record_from_dict(json.loads(record_json), run_name)
    with tempfile.TemporaryDirectory(prefix="dronecats-ray-") as tmp:
        directory = Path(tmp) / run_name
        try:
            run_episode(record, directory, options, run_name)
        except DroneCatsError as exc:  # reported by the driver; the suite goes on
            return TaskResult(run_name, node, error=str(exc))
        files = {
            str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != RESULT_FILE
        }
        result = json.loads((directory / RESULT_FILE).read_text())
    return TaskResult(run_name, node, files, result)


# ---- the driver -----------------------------------------------------------------------------------
def _write_directory(directory: Path, files: dict[str, bytes], result: dict[str, Any]) -> None:
    """The episode's files, then result.json atomically last (a directory without it is partial)."""
    import json

    from episodes.episode import RESULT_FILE, atomic_write

    for rel, data in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    atomic_write(directory / RESULT_FILE, json.dumps(result, indent=1).encode() + b"\n")


class _Pool:
    """Members handed out one per running episode (an empty pool hands out None forever)."""

    def __init__(self, members: tuple[str, ...]) -> None:
        self.free = list(members)
        self.bounded = bool(members)

    def available(self) -> bool:
        return not self.bounded or bool(self.free)

    def take(self) -> str | None:
        return self.free.pop(0) if self.bounded else None

    def give_back(self, member: str | None) -> None:
        if member is not None:
            self.free.append(member)


def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install -e '.[ray]' (ray[client] from PyPI)") from None
    return ray


def _init_ray(ray_options: RayOptions) -> None:
    ray = _import_ray()
    runtime_env: dict[str, Any] = {}
    if ray_options.ship_code:
        import importlib

        runtime_env["py_modules"] = [importlib.import_module(p) for p in PACKAGES]
    address = None if ray_options.address == "local" else ray_options.address
    ray.init(
        address=address,
        _node_ip_address=LOCAL_NODE_IP if address is None else None,
        runtime_env=runtime_env or None,
        log_to_driver=False,  # worker warnings stay in Ray's session logs; the driver prints progress
        logging_level=logging.WARNING,
        include_dashboard=False if address is None else None,
        configure_logging=False,
    )


def _slots(ray_options: RayOptions, pools: tuple[_Pool, _Pool]) -> int:
    import ray

    slots = ray_options.slots or max(1, int(ray.cluster_resources().get("CPU", 1)))
    for pool in pools:
        if pool.bounded:
            slots = min(slots, len(pool.free))
    return slots


def fly_on_ray(
    todo: list[tuple[SuiteEntry, str]],
    out: Path,
    options: RunOptions,
    ray_options: RayOptions,
    account: Callable[[dict], None],
    failed: Callable[[str, str], None],
    say: Callable[[str], None],
) -> Counter[str]:
    """Fly `todo` on the cluster; each finished episode's directory is written and `account`ed as it
    arrives. Returns how many episodes each node flew."""
    ray = _import_ray()
    from ray.exceptions import RayTaskError

    _init_ray(ray_options)
    per_node: Counter[str] = Counter()
    try:
        sims, pilots = _Pool(ray_options.sim_pool), _Pool(ray_options.pilot_pool)
        slots = _slots(ray_options, (sims, pilots))
        version = source_hash()
        task = ray.remote(num_cpus=1, max_retries=0)(fly_task)
        queue: list[tuple[SuiteEntry, str, int]] = [(entry, name, 0) for entry, name in todo]
        running: dict[Any, tuple[SuiteEntry, str, int, str | None, str | None]] = {}
        say(f"ray: {len(ray.nodes())} node(s), {slots} episode(s) at a time")
        try:
            while queue or running:
                while queue and len(running) < slots and sims.available() and pilots.available():
                    entry, run_name, attempt = queue.pop(0)
                    sim, pilot = sims.take(), pilots.take()
                    flown = replace(options, sim_url=sim or options.sim_url, pilot=pilot or options.pilot)
                    ref = task.remote(record_to_json(entry.record), flown, run_name, version)
                    running[ref] = (entry, run_name, attempt, sim, pilot)
                ready, _ = ray.wait(list(running), num_returns=1)
                ref = ready[0]
                entry, run_name, attempt, sim, pilot = running.pop(ref)
                sims.give_back(sim)
                pilots.give_back(pilot)
                try:
                    done: TaskResult = ray.get(ref)
                except RayTaskError as exc:
                    cause = exc.as_instanceof_cause()
                    if isinstance(cause, CodeVersionMismatch):
                        raise CodeVersionMismatch(str(cause).splitlines()[-1]) from None
                    failed(run_name, f"{type(cause).__name__}: {str(cause).splitlines()[-1]}")
                    continue
                except ray.exceptions.RayError as exc:  # its worker or node died: fly it again elsewhere
                    if attempt >= ray_options.max_retries:
                        failed(run_name, f"lost {attempt + 1} time(s) with its worker ({type(exc).__name__})")
                    else:
                        say(f"{run_name}: worker lost ({type(exc).__name__}), flying it again")
                        queue.insert(0, (entry, run_name, attempt + 1))
                    continue
                per_node[done.node] += 1
                if done.error is not None or done.result is None:
                    failed(run_name, done.error or "no result")
                    continue
                result = {**done.result, "ray_node": done.node, "attempt": attempt + 1}
                _write_directory(out / run_name, done.files, result)
                account(result)
        except BaseException:
            for ref in running:  # Ctrl+C or a refusal: stop what is in flight; OUT stays resumable
                ray.cancel(ref, force=True)
            raise
        say("ray: episodes per node: " + ", ".join(f"{n} {c}" for n, c in sorted(per_node.items())))
    finally:
        ray.shutdown()
    return per_node


@dataclass(frozen=True)
class RayFlyer:
    """episodes.runner's Flyer for a Ray cluster: `fly_on_ray` with these options."""

    ray_options: RayOptions
    label: str = "Ray"

    def fly(self, todo: list[tuple[SuiteEntry, str]], out: Path, options: RunOptions, report: Report) -> None:
        fly_on_ray(todo, out, options, self.ray_options, report.account, report.failed, report.say)
