"""Fault rows: a slow, flooding or garbling model server. `dronecats onboard` flies the built-in
simulator with an openai:// pilot on the stand-in server (tests/support/model_servers.py), which is
switched mid-flight to trickle its body or its headers at 1 byte/s, to hang, to send 50 MB replies
and a reply just under the cap. Judged on the vehicle's pose read back through the airsim client,
the onboard process's memory from /proc, and the logs on disk:

- every slow call ends within the step's deadline and the step is discarded (the drone holds);
- a 50 MB reply is cut at the cap (the server sees the connection closed), steps.jsonl stays small
  and onboard's resident memory does not grow with the replies;
- a bad reply is logged as its bounded excerpt (first 2 KB, length, sha256), never whole."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from tests.support.failsafe import PoseRecorder, describe, flying, jsonl, reset_world, wait_until
from tests.support.model_servers import ModelServer, model_server

GO_AHEAD = '{"action":"go","point":[500,700],"depth_m":2.0,"angle_deg":null}'
DEADLINE_S = 1.5  # action_deadline_s of the flight: every model call is cut there
SLACK_S = 3.0  # a loaded machine; the measured figures are printed
HOLD_TOLERANCE_M = 0.5


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def _discarded(steps_file: Path, n0: int, why: str) -> list[dict]:
    """The steps after the first n0 that were discarded for `why`."""
    return [s for s in jsonl(steps_file)[n0:] if s["discarded"] == why]


def _wait_discarded(steps_file: Path, n0: int, why: str, count: int, timeout_s: float = 30.0) -> list[dict]:
    assert wait_until(lambda: len(_discarded(steps_file, n0, why)) >= count, timeout_s), describe(
        steps_file.parent
    )
    return _discarded(steps_file, n0, why)


def _flying_normally(server: ModelServer, steps_file: Path, timeout_s: float = 60.0) -> int:
    """Back to valid replies until one is executed; the number of step lines then."""
    server.set_mode("normal", action=GO_AHEAD)
    n0 = len(jsonl(steps_file))
    assert wait_until(lambda: any(s["discarded"] is None for s in jsonl(steps_file)[n0:]), timeout_s)
    return len(jsonl(steps_file))


def _slow_fault(server: ModelServer, poses: PoseRecorder, steps_file: Path, mode: str) -> None:
    """One slow mode after valid flight: every call cut at the deadline, the vehicle holding."""
    # Moving on valid replies right before the fault: the hold is a change, not a hover.
    moving_from = poses.latest()
    assert wait_until(lambda: math.dist(moving_from, poses.latest()) > 0.3, 20.0), describe(steps_file.parent)
    n0 = len(jsonl(steps_file))
    first_reply = server.reply_count()
    server.set_mode(mode, rate_bytes_per_s=1, hang_s=30)
    # Held from the second failed call (the first may have begun under the valid replies).
    _wait_discarded(steps_file, n0, "backend", 2)
    held_from, held_wall = poses.latest(), time.time()
    failed = _wait_discarded(steps_file, n0, "backend", 3)
    drift_m = math.dist(held_from, poses.latest())
    slowest_s = max(s["latency_s"] for s in failed)
    calls = [r for r in server.replies[first_reply:] if r.mode == mode]
    print(
        f"{mode}: {len(failed)} calls cut, slowest {slowest_s:.2f} s (deadline {DEADLINE_S} s);"
        f" drift {drift_m:.3f} m over {time.time() - held_wall:.1f} s of hold"
    )
    assert all("timed out: the total deadline (1.50 s) passed" in s["error"] for s in failed)
    assert slowest_s < DEADLINE_S + SLACK_S
    assert calls and not any(r.completed for r in calls)
    assert drift_m < HOLD_TOLERANCE_M, describe(steps_file.parent)


@pytest.mark.slow
def test_fault_slow_huge_and_bad_model_replies_hold_and_stay_bounded(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=60.0)
    log_dir = tmp_path / "flight"
    steps_file = log_dir / "steps.jsonl"
    with model_server("normal", action=GO_AHEAD) as server, PoseRecorder(port) as poses:
        url = server.openai_url(profile="qwen3.5-2b", timeout_s=30, retries=1)
        bounded = ("--set", f"action_deadline_s={DEADLINE_S}", "--set", "t_max_s=240")
        patient = ("--set", "safety.max_consecutive_failures=1000")
        with flying(port, log_dir, "--pilot", url, *bounded, *patient) as drone:
            try:
                # Flying forward on valid replies first, so a hold is a change the pose shows.
                cruising = wait_until(lambda: len(jsonl(steps_file)) >= 3 and poses.latest()[0] > 1.0, 90.0)
                assert cruising, describe(log_dir)
                for mode in ("trickle_body", "trickle_headers", "hang"):
                    _slow_fault(server, poses, steps_file, mode)
                    _flying_normally(server, steps_file)

                # 50 MB replies: cut at the cap, one line each, no memory kept.
                rss_before_kib = _rss_kib(drone.pid)
                size_before = steps_file.stat().st_size
                n0 = len(jsonl(steps_file))
                first_reply = server.reply_count()
                server.set_mode("huge", huge_bytes=50 * 1024 * 1024)
                capped = _wait_discarded(steps_file, n0, "backend", 6, 60.0)
                rss_after_kib = _rss_kib(drone.pid)
                huge = [r for r in server.replies[first_reply:] if r.mode == "huge" and r.ended_s is not None]
                most_mib = max(r.sent_bytes for r in huge) / 2**20
                grown_bytes = steps_file.stat().st_size - size_before
                print(
                    f"huge: {len(huge)} replies of 50 MiB, the server wrote at most"
                    f" {most_mib:.1f} MiB of one; steps.jsonl +{grown_bytes} bytes;"
                    f" onboard RSS {rss_before_kib / 1024:.0f} -> {rss_after_kib / 1024:.0f} MiB"
                )
                assert all(
                    "reply over the cap of 1048576 bytes: connection closed" in s["error"] for s in capped
                )
                assert len(huge) >= 5 and not any(r.completed for r in huge)
                assert all(r.sent_bytes < 25 * 1024 * 1024 for r in huge)
                assert grown_bytes < 64 * 1024
                assert rss_after_kib - rss_before_kib < 40 * 1024  # 52 MB a reply before the cap

                # A malformed reply under the cap (900 KB of filler) is logged as its excerpt only.
                n0 = _flying_normally(server, steps_file)
                server.set_mode("huge", huge_bytes=900 * 1024)
                malformed = _wait_discarded(steps_file, n0, "malformed", 2)
                assert all(len(s["raw"].encode()) < 2048 + 120 for s in malformed)
                assert all(" [excerpt: 921" in s["raw"] and "sha256 " in s["raw"] for s in malformed)
                _flying_normally(server, steps_file)
            finally:
                server.set_mode("normal", action=GO_AHEAD)
    size = steps_file.stat().st_size
    print(f"steps.jsonl: {size} bytes in all")
    assert size < 1024 * 1024
    events = jsonl(log_dir / "events.jsonl")
    discarded = [e for e in events if e["event"] == "discarded"]
    assert discarded and all(len(e.get("raw", "").encode()) < 2048 + 120 for e in discarded)
