"""Episode suites on a real Ray cluster on loopback (a head and a second node, each its own `ray start`
process): the same per-episode outcomes as `--jobs`, a second node whose raylet is killed mid-run, and
a pool of two `dronecats sim` servers that never fly two episodes at once (from their own logs)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path

import pytest

from common.errors import ConfigError
from episodes.episode import RESULT_FILE
from episodes.preflight import expectation_for
from episodes.ray_runner import RayOptions, parse_pool, source_hash
from episodes.runner import PARTIAL_DIR
from episodes.suites import Suite, SuiteEntry, save_suite
from tests.support.episodes import short_record
from tests.support.ports import free_port
from tests.support.processes import dronecats_cmd, run_dronecats, stop_process, subprocess_env, wait_for

pytest.importorskip("pybullet")
ray = pytest.importorskip("ray")

# A Ray cluster is a dozen processes: these tests share one xdist worker, one cluster at a time.
pytestmark = pytest.mark.xdist_group("ray")

RAY = str(Path(sys.executable).with_name("ray"))
NODE_IP = "127.0.0.2"


def ray_env() -> dict[str, str]:
    """For every Ray process of these tests. Token authentication off: a `ray.init()` on this machine
    leaves a token in ~/.ray that a later `ray start --head` adopts and a joining node does not send,
    so whether a second node could join would depend on what ran here before."""
    return subprocess_env(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")


def suite_file(tmp_path: Path, n: int, name: str = "slice", start_x_m: float = -2.0) -> Path:
    """n short approaches (a few seconds of lock-step flight each), as a suite file."""
    records = [short_record(f"{name}-{i}", start_x_m=start_x_m - 0.5 * i) for i in range(1, n + 1)]
    path = tmp_path / f"{name}.json"
    save_suite(Suite(name, [SuiteEntry(r, expectation_for(r)) for r in records]), path)
    return path


def run_cli(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return run_dronecats(
        "episodes", "run", *args, "--latency", "fixed:0.44", "--no-frames", timeout_s=timeout_s
    )


def outcomes(out: Path) -> dict[str, tuple]:
    """Per episode: what must be identical between two lock-step runs of one configuration."""
    table = {}
    for result_file in sorted(out.glob(f"*/{RESULT_FILE}")):
        r = json.loads(result_file.read_text())
        v = r["verdict"]
        table[r["run_name"]] = (v["success"], v["ne_m"], v["decisive_t"], r["steps"], r["end_reason"])
    return table


@contextmanager
def ray_cluster() -> Iterator[str]:
    """`ray start --head` plus a second node (`ray start --address`), one CPU each, on loopback, in a
    temp dir of their own (so only these processes are stopped at the end). Yields the GCS address.

    127.0.0.2, not 127.0.0.1: Ray replaces 127.0.0.1 with the host's network address."""
    temp_dir = Path("/tmp") / f"rt{os.getpid()}{int(time.time() * 1000) % 100000}"  # socket paths: short
    port = free_port()
    env = ray_env()
    common = ["--num-cpus=1", "--disable-usage-stats", f"--node-ip-address={NODE_IP}"]
    try:
        subprocess.run(
            [
                RAY,
                "start",
                "--head",
                f"--port={port}",
                f"--temp-dir={temp_dir}",
                "--include-dashboard=false",
                *common,
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        subprocess.run(
            [RAY, "start", f"--address={NODE_IP}:{port}", *common, '--resources={"second_node": 1}'],
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield f"{NODE_IP}:{port}"
    finally:
        _kill_cluster(temp_dir, port)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _processes() -> Iterator[tuple[int, str]]:
    """(pid, command line) of every process this user can see."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            yield (
                int(proc.name),
                (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"),
            )
        except OSError:
            continue


def _cluster_pids(temp_dir: Path, port: int) -> list[tuple[int, str]]:
    return [(p, c) for p, c in _processes() if str(temp_dir) in c or f"{NODE_IP}:{port}" in c]


def _kill_cluster(temp_dir: Path, port: int) -> None:
    for pid, _ in _cluster_pids(temp_dir, port):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def running_tasks() -> list[int]:
    """Ray workers executing an episode now (Ray titles a worker's process after its task)."""
    return [pid for pid, cmdline in _processes() if cmdline.startswith("ray::fly_task")]


def _on(raylet: int) -> list[int]:
    """The episodes in flight on the node of this raylet (its workers are its children)."""
    return [pid for pid in running_tasks() if _parent(pid) == raylet]


def _parent(pid: int) -> int | None:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state, past "(comm)"


def second_node_raylet(port: int) -> int:
    """The raylet of the node started with the `second_node` resource."""
    for pid, cmdline in _processes():
        if "raylet" in cmdline.split(" ", 1)[0] and "second_node" in cmdline and str(port) in cmdline:
            return pid
    raise AssertionError("no raylet with the second_node resource")


def test_options_are_validated() -> None:
    assert parse_pool(" airsim://a:1, airsim://b:2 ,") == ("airsim://a:1", "airsim://b:2")
    for bad in (
        {"address": "localhost"},
        {"address": "local", "slots": 0},
        {"address": "local", "max_retries": -1},
        {"address": "local", "sim_pool": ("tcp://a:1",)},
        {"address": "local", "sim_pool": ("airsim://a:1", "airsim://a:1")},
    ):
        with pytest.raises(ConfigError):
            RayOptions(**bad)  # type: ignore[arg-type]
    RayOptions("127.0.0.1:6379")
    RayOptions("ray://10.0.0.1:10001")


def test_code_version_follows_the_sources(tmp_path: Path, repo_root: Path) -> None:
    copy = tmp_path / "copy"
    for package in ("common", "models", "onboard", "sim_bridge", "episodes", "calibration", "dronecats"):
        shutil.copytree(repo_root / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    assert source_hash(copy) == source_hash(repo_root)
    with open(copy / "onboard" / "safety.py", "a") as f:
        f.write("# changed\n")
    assert source_hash(copy) != source_hash(repo_root)


@pytest.mark.slow
def test_ray_cluster_flies_the_slice_as_jobs_does_even_when_a_node_dies(tmp_path: Path) -> None:
    """Lock-step is deterministic: two --jobs 2 runs agree episode by episode, and so does a run on a
    two-node Ray cluster whose second node's raylet is SIGKILLed while it flies an episode."""
    # ~18 m approaches: long enough (several seconds of wall each) that the kill lands mid-episode
    slice_file = suite_file(tmp_path, 4, start_x_m=-10.0)
    jobs = [tmp_path / "jobs-a", tmp_path / "jobs-b"]
    for out in jobs:
        done = run_cli(str(slice_file), "--jobs", "2", "--out", str(out))
        assert done.returncode == 0, done.stderr[-3000:]
    expected = outcomes(jobs[0])
    assert len(expected) == 4 and outcomes(jobs[1]) == expected

    with ray_cluster() as address:
        out = tmp_path / "ray"
        proc = subprocess.Popen(
            dronecats_cmd(
                "episodes",
                "run",
                str(slice_file),
                "--latency",
                "fixed:0.44",
                "--no-frames",
                "--ray",
                address,
                "--out",
                str(out),
            ),
            env=ray_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            raylet = second_node_raylet(int(address.rsplit(":", 1)[1]))
            # The second node's episode in flight: its worker is a child of that node's raylet.
            assert wait_for(lambda: _on(raylet), timeout_s=120), "the second node never flew an episode"
            assert not list(out.glob(f"*/{RESULT_FILE}")), "killed too late: an episode had finished"
            # The node dies: its raylet and the worker flying the episode (a worker outlives a killed
            # raylet by a moment, long enough to hand in a result it was about to finish).
            for pid in (raylet, *_on(raylet)):
                os.kill(pid, signal.SIGKILL)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                stop_process(proc)
        assert proc.returncode == 0, stderr[-3000:]
        assert "worker lost" in stdout, stdout  # the episode of the dead node was flown again
        assert outcomes(out) == expected
        assert not (out / PARTIAL_DIR).exists()
        results = [json.loads(p.read_text()) for p in out.glob(f"*/{RESULT_FILE}")]
        assert sorted(r["run_name"] for r in results) == sorted(expected)
        assert any(r["attempt"] == 2 for r in results), results
        assert re.search(r"episodes per node: \w+@\S+ \d", stdout), stdout

        # Resume across --jobs and --ray: a finished Ray run has nothing left for --jobs to fly.
        again = run_cli(str(slice_file), "--jobs", "2", "--out", str(out))
        assert again.returncode == 0 and "4 of 4 runs already complete" in again.stdout, again.stdout


def _episode_spans(log_text: str) -> list[tuple[str, float, float]]:
    """(episode, start, end) from a `dronecats sim` log's 'client message: dronecats episode' lines."""
    starts: dict[str, float] = {}
    spans = []
    for line in log_text.splitlines():
        m = re.match(r"(\d\d:\d\d:\d\d\.\d{3}) .*client message: dronecats episode (start|end): (\S+)", line)
        if not m:
            continue
        t = datetime.strptime(m.group(1), "%H:%M:%S.%f")
        t_s = t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6
        if m.group(2) == "start":
            starts[m.group(3)] = t_s
        else:
            spans.append((m.group(3), starts.pop(m.group(3)), t_s))
    assert not starts, f"episodes started and never ended: {starts}"
    return spans


@pytest.mark.slow
def test_sim_pool_never_flies_two_episodes_on_one_server(tmp_path: Path) -> None:
    """Four HIL episodes over two `dronecats sim` servers, on a local Ray cluster with more CPUs than
    servers: each server's own log shows its episodes one after another, and every episode ran."""
    logs = [tmp_path / "sim-a.log", tmp_path / "sim-b.log"]
    servers, urls = [], []
    try:
        for log in logs:
            port = free_port()
            servers.append(
                subprocess.Popen(
                    dronecats_cmd(
                        "--log-level", "INFO", "sim", "--scene", "residential", "--port", str(port)
                    ),
                    env=subprocess_env(),
                    stdout=open(log, "w"),  # noqa: SIM115 - closed with the process
                    stderr=subprocess.STDOUT,
                )
            )
            urls.append(f"airsim://127.0.0.1:{port}")
        for log in logs:
            assert wait_for(lambda log=log: "listening on" in log.read_text(), timeout_s=60), log.read_text()
        out = tmp_path / "pool"
        done = run_dronecats(
            "episodes",
            "run",
            str(suite_file(tmp_path, 4, "hil")),
            "--no-frames",
            "--t-max",
            "40",
            "--ray",
            "local",
            "--jobs",
            "3",
            "--sim-pool",
            ",".join(urls),
            "--out",
            str(out),
            timeout_s=400,
            env=ray_env(),
        )
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        for server in servers:
            stop_process(server)
    results = [json.loads(p.read_text()) for p in out.glob(f"*/{RESULT_FILE}")]
    assert sorted(r["run_name"] for r in results) == [f"hil-{i}" for i in range(1, 5)]
    flown_on = {r["run_name"]: r["sim"] for r in results}
    assert set(flown_on.values()) <= set(urls)
    for log, url in zip(logs, urls, strict=True):
        spans = sorted(_episode_spans(log.read_text()), key=lambda s: s[1])
        assert sorted(e for e, _, _ in spans) == sorted(n for n, u in flown_on.items() if u == url)
        for (_, _, end), (_, start, _) in itertools.pairwise(spans):
            assert start >= end, f"{url} flew two episodes at once: {spans}"
    assert sum(len(_episode_spans(log.read_text())) for log in logs) == 4
