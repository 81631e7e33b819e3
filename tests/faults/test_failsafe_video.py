"""Fault row: frozen video. The simulator is paused through the real airsim client (simPause) while
`dronecats onboard` flies it: the image time_stamp stops advancing, the frames are refused as stale
(never sent to the pilot: no step is logged), the drone holds, and only a fresh valid pilot action
after the video is back lifts the hold."""

from __future__ import annotations

import time

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

PAUSE_S = 4.0


def test_the_simulators_image_stamp_advances_and_freezes_when_paused(sim) -> None:
    import airsim

    _, client = sim
    request = [airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)]

    def stamp() -> int:
        return client.simGetImages(request, vehicle_name="Drone1")[0].time_stamp

    s0 = stamp()
    time.sleep(0.3)
    s1 = stamp()
    assert s1 > s0 > 0  # a real, advancing clock (ns)
    client.simPause(True)
    try:
        p0 = stamp()
        time.sleep(0.3)
        assert stamp() == p0
    finally:
        client.simPause(False)
    time.sleep(0.2)
    assert stamp() > p0


@pytest.mark.slow
def test_failsafe_paused_simulator_frames_refused_and_hold(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=40.0)
    log_dir = tmp_path / "flight"
    steps_file = log_dir / "steps.jsonl"
    # stale once the stamp stands still 0.3 s: less than the 0.5 s between decisions
    stale = ("--set", "t_max_s=40", "--set", "max_frame_age_s=0.3")
    with PoseRecorder(port) as poses, flying(port, log_dir, *stale):
        try:
            assert wait_until(lambda: len(jsonl(steps_file)) >= 4 and poses.latest()[0] > 1.0, 90.0), (
                describe(log_dir)
            )
            steps_before = len(jsonl(steps_file))
            pause_wall = time.time()
            client.simPause(True)
            time.sleep(PAUSE_S)
            steps_during = len(jsonl(steps_file)) - steps_before
            pose_paused = poses.latest()
            resume_wall = time.time()
            client.simPause(False)
            lifted = wait_until(lambda: first(safety_events(log_dir), mode="flying", previous="hold"), 30.0)
            assert lifted, describe(log_dir)
            assert wait_until(lambda: len(jsonl(steps_file)) > steps_before + steps_during, 30.0)
        finally:
            client.simPause(False)  # resumed before `flying` stops the drone, which then lands it
    refused = [e for e in events(log_dir, "capture_failed") if pause_wall <= e["wall_time"] <= resume_wall]
    assert refused and all("video stale" in e["error"] for e in refused)
    # No frame read after the video went stale reached the pilot: no step from the first refusal
    # until the hold was lifted (before it: the decision under way at the pause, and the frame the
    # simulator rendered at the paused instant, fresh when it was read).
    lifted = first(safety_events(log_dir), mode="flying", previous="hold")
    assert lifted is not None
    steps = jsonl(steps_file)
    assert not [s for s in steps if refused[0]["t"] < s["t"] < lifted["t"]], describe(log_dir)
    assert steps_during <= 2, steps_during
    hold = first(safety_events(log_dir), mode="hold", source="video")
    assert hold and pause_wall < hold["wall_time"] < resume_wall, describe(log_dir)
    assert "video stale" in hold["reason"]
    # (the pilot, silent 3 s by then, joins the hold: both are back with the first fresh valid action)
    assert "fresh valid pilot action after" in lifted["reason"] and "video" in lifted["reason"]
    assert lifted["wall_time"] > resume_wall
    x_resumed = poses.at(lifted["wall_time"])[0]
    print(
        "ROW video-paused",
        {
            "steps_during_pause": steps_during,
            "frames_refused": len(refused),
            "hold_after_pause_s": round(hold["wall_time"] - pause_wall, 2),
            "hold_reason": hold["reason"],
            "pose_paused": pose_paused,
            "lifted_after_resume_s": round(lifted["wall_time"] - resume_wall, 2),
            "lift_reason": lifted["reason"],
            "x_at_lift": round(x_resumed, 2),
            "x_end": round(poses.latest()[0], 2),
        },
    )
