"""The flight recorder under real write errors, in a child process whose file-size limit (RLIMIT_FSIZE)
makes the kernel refuse writes (EFBIG) exactly as a full disk does (ENOSPC): frames stop first, every
log line is whole or absent, each loss is reported once; a log dir that cannot be used is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from common.errors import ConfigError
from onboard.recorder import FlightRecorder
from tests.support.processes import subprocess_env

LIMIT_BYTES = 64 * 1024

CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from common.logformat import StepLine
    from onboard.recorder import FlightRecorder

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-limit write fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
    rec = FlightRecorder(sys.argv[1])
    reported = []
    rec.on_disk_error = lambda what, error: reported.append([what, error])
    small = rec.save_frame(b"x" * 1000, "a.jpg")
    big = rec.save_frame(b"x" * ({limit} + 1), "b.jpg")  # refused: frames stop here
    after = rec.save_frame(b"x" * 1000, "c.jpg")
    for i in range(400):  # about 100 kB of steps into a 64 kB limit
        rec.step(StepLine(t=float(i), drone="Drone1", call_id=i, action=None, raw="r" * 200))
    rec.event("still_recording", 0.0, "Drone1")
    print(json.dumps({{"small": small, "big": big, "after": after, "reported": reported,
                      "lost": rec.lines_lost, "frames_enabled": rec.frames_enabled}}))
    """
).format(limit=LIMIT_BYTES)


def test_failsafe_recorder_write_errors_stop_frames_and_keep_lines_whole(tmp_path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "log")],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["small"] == "frames/a.jpg" and result["big"] is None and result["after"] is None
    assert not result["frames_enabled"] and not (tmp_path / "log" / "frames" / "b.jpg").exists()
    whats = [what for what, _ in result["reported"]]
    assert whats == ["frames", "logs"]  # each loss once, frames first
    assert "File too large" in result["reported"][0][1]
    steps = (tmp_path / "log" / "steps.jsonl").read_bytes()
    assert steps.endswith(b"\n") and len(steps) <= LIMIT_BYTES
    lines = [json.loads(line) for line in steps.splitlines()]  # none cut in half
    assert [line["call_id"] for line in lines] == list(range(len(lines)))
    assert result["lost"] == 400 - len(lines) > 0
    # the other logs are separate files: the events went on
    events = [json.loads(line) for line in (tmp_path / "log" / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "still_recording"


def test_failsafe_log_dir_that_is_a_file_is_refused_naming_it(tmp_path) -> None:
    path = tmp_path / "not-a-dir"
    path.write_text("x")
    with pytest.raises(ConfigError, match="not-a-dir") as raised:
        FlightRecorder(path)
    assert "cannot be written" in str(raised.value)
