"""`dronecats gs --launch` supervises what it starts, tried on the real command line:

- a GUI that cannot start is found out before anything is launched (and says what is missing);
- however the ground station ends (its window closed, Ctrl+C, SIGTERM, SIGKILL), no simulator or
  onboard process is left (checked by PID), and each drone finished its run (it landed) before
  the simulator was stopped (on SIGKILL the simulator's reaper waits for the drones);
- a drone that fails to start is reported at once with its own last log lines, not after a 60 s
  wait and a traceback; and a drone flown by a served model (`--pilot openai://…`, serve-pilot)
  passes its pre-arm check although it starts without an instruction.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.pilots import serve_pilot_process
from tests.support.ports import free_port
from tests.support.processes import dronecats_cmd, run_dronecats, subprocess_env
from tests.support.processes import wait_for as support_wait_for

pytestmark = pytest.mark.slow


def children_of(pid: int) -> set[int]:
    """Every live descendant of pid (by /proc's parent links)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
    out: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - out
        out |= frontier
    return out


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:300]
    except OSError:
        return "?"


def wait_for(predicate, timeout_s: float, step_s: float = 0.2) -> bool:
    return support_wait_for(predicate, timeout_s, step_s)


def started(log_dir: Path, drone: str = "Drone1") -> bool:
    path = log_dir / drone / "events.jsonl"
    return path.exists() and '"event": "started"' in path.read_text()


@pytest.mark.parametrize("how", ["close", "sigint", "sigterm", "sigkill", "headless-sigterm"])
def test_no_process_outlives_the_ground_station(tmp_path, how) -> None:
    log_dir = tmp_path / "run"
    extra = ["--quit-after-s", "15"] if how == "close" else []
    if how == "headless-sigterm":
        extra = ["--headless", "--instruction", "go to the red car", "--until", "none", "--duration-s", "300"]
    with (tmp_path / "gs.out").open("w") as out:
        gs = subprocess.Popen(
            dronecats_cmd("gs", "--launch", "1", "--log-dir", str(log_dir), *extra),
            env=subprocess_env(QT_QPA_PLATFORM="offscreen"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            assert wait_for(lambda: started(log_dir), 90.0), (tmp_path / "gs.out").read_text()[-2000:]
            pids = children_of(gs.pid)
            assert len(pids) >= 2, pids  # the simulator and the drone
            if how != "close":
                sig = {"sigint": signal.SIGINT, "sigkill": signal.SIGKILL}.get(how, signal.SIGTERM)
                os.kill(gs.pid, sig)
            code = gs.wait(timeout=60)
        finally:
            if gs.poll() is None:
                gs.kill()
                gs.wait()
    # SIGKILL: the children get SIGTERM from the kernel (PR_SET_PDEATHSIG) and end on their own
    left = lambda: {p: cmdline(p) for p in pids if running(p)}  # noqa: E731
    assert wait_for(lambda: not left(), 30.0), left()
    output = (tmp_path / "gs.out").read_text()
    if how != "sigkill":
        assert code == (0 if how == "close" else 130 if how == "sigint" else 143), output[-2000:]
        assert "Traceback" not in output
    # in order, SIGKILL included (the simulator's reaper waits for the drones): the drone finished
    # its run (it lands on SIGTERM) while the simulator was still there
    drone_log = (log_dir / "Drone1.log").read_text()
    result = [line for line in drone_log.splitlines() if line.startswith("{")]
    assert result and json.loads(result[-1])["reason"] == "stopped", drone_log[-2000:]


@pytest.mark.parametrize("command", ["gs", "demo-fleet"])
def test_a_gui_that_cannot_start_launches_nothing(tmp_path, command) -> None:
    log_dir = tmp_path / "run"
    launch = ["--launch", "2"] if command == "gs" else ["--drones", "2"]
    result = run_dronecats(
        command,
        *launch,
        "--log-dir",
        str(log_dir),
        env=subprocess_env(QT_QPA_PLATFORM="xcb", DISPLAY=":987"),  # no X server there
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("dronecats gs: the GUI cannot start: "), result.stderr
    assert "nothing was launched" in result.stderr and "Traceback" not in result.stderr
    assert not log_dir.exists()  # not even the simulator's log


def test_a_drone_that_fails_to_start_is_reported_at_once(tmp_path) -> None:
    """A model URL nobody serves: the drone's pre-arm check fails; the GS says so with its log lines."""
    started_s = time.monotonic()
    result = run_dronecats(
        "gs", "--headless", "--launch", "1", "--instruction", "go to the red car",
        "--pilot", f"openai://127.0.0.1:{free_port()}/v1?profile=qwen3.5-2b&retries=0",
        "--log-dir", str(tmp_path / "run"),
        timeout_s=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout[-1000:] + result.stderr[-1000:]
    assert "dronecats gs: Drone1 exited with code 3: dronecats onboard: pre-arm check" in result.stderr
    assert "last lines of its log" in result.stderr and "Traceback" not in result.stderr
    assert time.monotonic() - started_s < 60.0  # not the link wait's timeout


def test_a_served_pilot_passes_pre_arm_without_an_instruction(tmp_path) -> None:
    """`gs --launch 1 --pilot openai://…` (serve-pilot in front of the baseline): the drones start
    without an instruction (the GS sends it once they report); the pre-arm check still asks the
    model, with a placeholder instruction, instead of a prompt serve-pilot must refuse."""
    with serve_pilot_process("--pilot", "baseline") as hostport:
        result = run_dronecats(
            "gs", "--headless", "--launch", "1", "--instruction", "go to the red car",
            "--pilot", f"openai://{hostport}/v1?model=baseline",
            "--until", "none", "--duration-s", "3", "--log-dir", str(tmp_path / "run"),
            timeout_s=120,
        )  # fmt: skip
    output = result.stdout + result.stderr
    assert "pre-arm" not in output and "Traceback" not in output, output[-2000:]
    summary = json.loads([line for line in result.stdout.splitlines() if line.startswith("{")][-1])
    assert summary["steps"]["Drone1"] >= 1 and not summary["errors"], summary
    events = [json.loads(x) for x in (tmp_path / "run" / "Drone1" / "events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "prearm_ok" for e in events)


def test_a_drone_told_to_stop_several_times_at_once_still_stops(tmp_path) -> None:
    """A dying multi-threaded parent can deliver PR_SET_PDEATHSIG more than once: a burst of SIGTERMs
    must stop the drone once (it finishes its run), not deadlock its signal handler."""
    from ground_station.fleet.launch import SimFleet

    with SimFleet(1, "baseline", log_dir=tmp_path, truth=False) as sim:
        assert wait_for(lambda: started(tmp_path), 90.0), sim.drone_log("Drone1")[-2000:]
        proc = sim.drones["Drone1"].proc
        for _ in range(5):
            os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, sim.drone_log("Drone1")[-2000:]
        result = [line for line in sim.drone_log("Drone1").splitlines() if line.startswith("{")]
        assert result and json.loads(result[-1])["reason"] == "stopped"
