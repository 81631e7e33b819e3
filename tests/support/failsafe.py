"""Shared pieces of the failsafe rows of the fault-injection suite: a built-in simulator process with
a red car ahead, `dronecats onboard` flying it through the real airsim client, the vehicle's actual
pose read back through that client (never the runtime's belief), and the logs the drone wrote."""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.processes import dronecats_cmd, run_dronecats, stop_process, subprocess_env

TICK_S = 0.05  # the onboard actuation period at its default rate_hz=20


@functools.cache
def insecure_flag(command: str) -> list[str]:
    """["--insecure"] when `dronecats COMMAND` has that flag (a link without CURVE keys must then be
    asked for explicitly), else []: these rows test failsafes, not link security."""
    out = run_dronecats(command, "--help")
    return ["--insecure"] if "--insecure" in out.stdout else []


def airsim_client(port: int) -> Any:
    import airsim

    client = airsim.MultirotorClient(port=port)
    client.confirmConnection()
    return client


def reset_world(client: Any, target_x_m: float = 30.0) -> None:
    """The drone back on the ground at its spawn, one red car ahead (north)."""
    import airsim

    client.simPause(False)
    client.reset()
    for name in client.simListSceneObjects("target.*"):
        client.simDestroyObject(name)
    pose = airsim.Pose(airsim.Vector3r(target_x_m, 0.0, 0.0), airsim.to_quaternion(0, 0, 1.5708))
    assert client.simSpawnObject("target", "car@red", pose, airsim.Vector3r(1, 1, 1)) == "target"


def onboard(
    port: int, log_dir: Path, *extra: str, instruction: str = "go to the red car", out_dir: Path | None = None
) -> subprocess.Popen:
    """`dronecats onboard` on the sim server's Drone1; its stdout/stderr go to OUT_DIR/NAME.out (OUT_DIR:
    the log dir's parent unless given)."""
    out = open(output_file(log_dir, out_dir), "w")  # noqa: SIM115 - closed with the process
    args = [
        "onboard",
        "--vehicle",
        f"airsim://127.0.0.1:{port}/Drone1",
        "--pilot",
        "baseline",
        "--log-dir",
        str(log_dir),
        "--set",
        "min_decision_period_s=0.5",
        "--set",
        "stop_on_declaration=false",
        # These rows fly on past declarations (there is no truth here to judge them, and no operator:
        # the default would hold for a verdict; that rule has its own rows, test_fault_declaration.py).
        "--set",
        "on_declaration=continue",
        *extra,
    ]
    if "--gs" in extra:
        args += insecure_flag("onboard")
    if instruction:
        args += ["--instruction", instruction]
    return subprocess.Popen(
        dronecats_cmd(*args), env=subprocess_env(), stdout=out, stderr=subprocess.STDOUT, text=True
    )


@contextlib.contextmanager
def flying(
    port: int, log_dir: Path, *extra: str, instruction: str = "go to the red car", out_dir: Path | None = None
) -> Iterator[subprocess.Popen]:
    """`onboard(...)` for the block, stopped at its end however the block ends (SIGTERM, grace, SIGKILL:
    a row that fails mid-flight leaves no drone process behind to fly into the next row)."""
    drone = onboard(port, log_dir, *extra, instruction=instruction, out_dir=out_dir)
    try:
        yield drone
    finally:
        stop_process(drone)


def wait_steps(log_dir: Path, count: int, timeout_s: float = 90.0, out_dir: Path | None = None) -> None:
    """Fail the row (with `describe`) unless steps.jsonl holds `count` decisions within `timeout_s`:
    the drone is up and flying its pilot before the fault is injected."""
    assert wait_until(lambda: len(jsonl(log_dir / "steps.jsonl")) >= count, timeout_s), describe(
        log_dir, out_dir
    )


@dataclass
class PoseRecorder:
    """Samples the vehicle's actual pose from the simulator (its own airsim client, its own thread)."""

    port: int
    period_s: float = 0.05
    samples: list[tuple[float, float, float, float]] = field(default_factory=list)  # wall, x, y, z

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PoseRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        client = airsim_client(self.port)
        while not self._stop.is_set():
            p = client.simGetVehiclePose("Drone1").position
            self.samples.append((time.time(), p.x_val, p.y_val, p.z_val))
            time.sleep(self.period_s)

    def at(self, wall_s: float) -> tuple[float, float, float]:
        """The sample nearest to wall_s."""
        _, x, y, z = min(self.samples, key=lambda s: abs(s[0] - wall_s))
        return x, y, z

    def between(self, t0: float, t1: float) -> list[tuple[float, float, float, float]]:
        return [s for s in self.samples if t0 <= s[0] <= t1]

    def latest(self) -> tuple[float, float, float]:
        _, x, y, z = self.samples[-1]
        return x, y, z

    def wait_first(self, timeout_s: float = 5.0) -> tuple[float, float, float]:
        """The pose once the first sample is in (the thread starts with the `with` block)."""
        wait_until(lambda: self.samples, timeout_s)
        return self.latest()


def end_record(log_dir: Path) -> dict[str, Any]:
    """The end-of-run record (episode.json's `run`; empty before the run wrote it)."""
    return json.loads((log_dir / "episode.json").read_text()).get("run", {})


def jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line parses (a line cut in half would raise here)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def events(log_dir: Path, kind: str | None = None) -> list[dict[str, Any]]:
    lines = jsonl(log_dir / "events.jsonl")
    return [e for e in lines if kind is None or e["event"] == kind]


def safety_events(log_dir: Path) -> list[dict[str, Any]]:
    return events(log_dir, "safety")


def wait_until(predicate: Any, timeout_s: float, interval_s: float = 0.1) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    return predicate()


def first(items: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    return next((i for i in items if all(i.get(k) == v for k, v in match.items())), None)


def output_file(log_dir: Path, out_dir: Path | None = None) -> Path:
    return (out_dir or log_dir.parent) / f"{log_dir.name}.out"


def describe(log_dir: Path, out_dir: Path | None = None) -> str:
    """What to print when a row fails: the end of the onboard output and the safety events."""
    out = output_file(log_dir, out_dir)
    tail = out.read_text()[-3000:] if out.exists() else ""
    return tail + "\n" + "\n".join(json.dumps(e) for e in safety_events(log_dir))
