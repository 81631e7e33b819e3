"""`dronecats onboard`'s real-time defaults: a decision at most every 0.5 s, at most 2 saved frames per
second and 64 MiB of them, under whatever a config file or --set asks for; the recorder's frame rate
limit counts episode time."""

from __future__ import annotations

from pathlib import Path

from common.config import load_config
from onboard.cli import REALTIME_DEFAULTS, vehicle_named_defaults
from onboard.recorder import FlightRecorder, RecorderConfig
from onboard.runtime_config import RuntimeConfig


def test_defaults_apply_and_a_config_file_or_set_overrides_them(tmp_path: Path) -> None:
    config = load_config(RuntimeConfig, None, [], base=REALTIME_DEFAULTS)
    assert config.min_decision_period_s == 0.5
    assert config.recorder.frames_max_hz == 2.0 and config.recorder.frames_max_bytes == 64 * 1024 * 1024
    assert RuntimeConfig().min_decision_period_s == 0.0  # episodes and the library keep their own
    path = tmp_path / "onboard.yaml"
    path.write_text("min_decision_period_s: 0\nrecorder:\n  save_frames: true\n")
    config = load_config(RuntimeConfig, path, ["recorder.frames_max_hz=0"], base=REALTIME_DEFAULTS)
    assert config.min_decision_period_s == 0.0  # the file's explicit 0 wins over the default
    assert config.recorder.frames_max_hz == 0.0 and config.recorder.frames_max_bytes == 64 * 1024 * 1024


def test_the_drone_is_named_by_its_airsim_vehicle_unless_the_config_names_it(tmp_path: Path) -> None:
    def named(url: str, *overrides: str, path: Path | None = None) -> str:
        base = {**REALTIME_DEFAULTS, **vehicle_named_defaults(url)}
        return load_config(RuntimeConfig, path, list(overrides), base=base).drone

    assert named("airsim://127.0.0.1:41451/Drone2") == "Drone2"
    assert named("airsim://127.0.0.1:41451/Drone2/front_center?api=cosys") == "Drone2"
    assert named("airsim://127.0.0.1:41451") == "Drone1"  # no name in the URL: the default
    assert named("tello://192.168.10.1") == named("mavlink://udpin:0.0.0.0:14540") == "Drone1"
    assert named("airsim://127.0.0.1:41451/Drone2", "drone=Scout") == "Scout"
    path = tmp_path / "onboard.yaml"
    path.write_text("drone: Alpha\n")
    assert named("airsim://127.0.0.1:41451/Drone2", path=path) == "Alpha"


def test_the_recorder_saves_at_most_frames_max_hz_in_episode_time(tmp_path: Path) -> None:
    recorder = FlightRecorder(tmp_path / "run", RecorderConfig(frames_max_hz=2.0))
    try:
        names = [recorder.save_frame(b"\xff\xd8jpeg", f"f{i:03d}.jpg", t_s=i * 0.1) for i in range(21)]
    finally:
        recorder.close()
    saved = [n for n in names if n is not None]
    assert saved == [f"frames/f{i:03d}.jpg" for i in (0, 5, 10, 15, 20)], saved  # 0, 0.5, ... 2.0 s
    assert sorted(p.name for p in (tmp_path / "run" / "frames").iterdir()) == [s[7:] for s in saved]
    every = FlightRecorder(tmp_path / "all", RecorderConfig())  # 0: every frame (episodes)
    try:
        assert all(every.save_frame(b"x", f"g{i}.jpg", t_s=i * 0.01) for i in range(5))
    finally:
        every.close()
