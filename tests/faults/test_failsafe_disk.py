"""Fault rows: the log disk. A log dir on a 2 MB tmpfs that fills mid-flight (a real ENOSPC), and a
log dir on a read-only filesystem. Real processes (`dronecats sim`, `dronecats onboard`); judged by
the vehicle's pose in the simulator and by what the drone wrote."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.failsafe import (
    PoseRecorder,
    describe,
    events,
    first,
    flying,
    jsonl,
    reset_world,
    safety_events,
    wait_until,
)
from tests.support.processes import baseline_onboard_args, run_dronecats

FREE_BYTES = 300 * 1024  # left on the 2 MB filesystem when the flight starts: a few frames' worth


@contextlib.contextmanager
def tmpfs(path: Path, *options: str) -> Iterator[Path]:
    """A real small filesystem at path (mount needs root or CAP_SYS_ADMIN: skipped without)."""
    path.mkdir(parents=True, exist_ok=True)
    opts = ",".join(("size=2m", *options))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.slow
def test_failsafe_log_disk_fills_mid_flight_frames_stop_the_flight_goes_on(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=25.0)
    with tmpfs(tmp_path / "disk") as disk, PoseRecorder(port) as poses:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - FREE_BYTES))
        log_dir = disk / "flight"
        x_start, _, ground_z = poses.wait_first()
        with flying(port, log_dir, "--set", "t_max_s=25", out_dir=tmp_path) as drone:
            assert drone.wait(timeout=120) == 0, describe(log_dir, tmp_path)
        assert wait_until(lambda: abs(poses.latest()[2] - ground_z) < 0.3, 20.0), poses.latest()
        # Every line of every log parses (no line cut in half by ENOSPC), and they went on after the error.
        steps = jsonl(log_dir / "steps.jsonl")
        trace = jsonl(log_dir / "trace.jsonl")
        all_events = events(log_dir)
        disk = first(all_events, event="disk", what="frames")
        assert disk, describe(log_dir, tmp_path)
        assert "No space left on device" in disk["error"] and disk["action"] == "frames off; flying on"
        assert [s for s in steps if s["t"] > disk["t"] and s["frame"] is None]
        assert any(s["frame"] for s in steps if s["t"] < disk["t"])
        assert [line for line in trace if line["t"] > disk["t"]]
        end = first(safety_events(log_dir), mode="landing")
        assert end and end["reason"] == "end of run (t_max)", describe(log_dir, tmp_path)
        run = json.loads((log_dir / "episode.json").read_text())["run"]
        assert run["end_reason"] == "t_max"
        assert not first(safety_events(log_dir), mode="hold")  # the flight itself was never stopped
        # what the vehicle did: flew on toward the car after the disk filled, then landed at the end
        x_disk = poses.at(disk["wall_time"])[0]
        x_end = poses.at(end["wall_time"])[0]
        assert x_end > x_disk + 2.0, (x_start, x_disk, x_end)
        frames_left = sorted(p.name for p in (log_dir / "frames").iterdir())
    print(
        "ROW disk-full",
        {
            "disk_event_t": round(disk["t"], 2),
            "x_start": round(x_start, 2),
            "x_at_disk_event": round(x_disk, 2),
            "x_at_end": round(x_end, 2),
            "steps": len(steps),
            "steps_after_disk": len([s for s in steps if s["t"] > disk["t"]]),
            "frames_kept": len(frames_left),
            "disk_line": {k: disk[k] for k in ("what", "error", "action")},
            "end": end["reason"],
        },
    )


@pytest.mark.slow
def test_failsafe_read_only_log_dir_refuses_to_arm_with_one_line(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client)
    if os.geteuid() == 0:
        log_dir = tmp_path / "ro"
        mount = tmpfs(log_dir, "ro")  # root writes through file modes: a read-only filesystem instead
    else:
        log_dir = tmp_path / "ro"
        log_dir.mkdir()
        log_dir.chmod(0o555)
        mount = contextlib.nullcontext(log_dir)
    with mount, PoseRecorder(port) as poses:
        ground_z = poses.wait_first()[2]
        result = run_dronecats(
            *baseline_onboard_args(f"airsim://127.0.0.1:{port}/Drone1", log_dir), timeout_s=120
        )
        z_after = poses.latest()[2]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    # The command line checks the directory before it connects; the recorder checks again (for the
    # runner and anything else that builds a runtime): either says which directory, in one line.
    refused = ("cannot write there", "cannot be written")
    assert len(lines) == 1 and str(log_dir) in lines[0] and any(r in lines[0] for r in refused), lines
    assert abs(z_after - ground_z) < 0.05  # never armed, never took off
    print(
        "ROW read-only-log-dir", {"rc": result.returncode, "line": lines[0], "z_change_m": z_after - ground_z}
    )
