from __future__ import annotations

import math
import threading

import msgspec
import pytest

from common.actions import Finished, Go, Plan, Rotate, Think, action_from_dict, action_name, action_to_dict
from common.camera import BUILTIN_CAMERAS, CameraProfile, camera_profile
from common.clock import SimClock, WallClock
from common.config import apply_override, load_config, validation_path
from common.errors import ConfigError
from common.pose import Pose, wrap_deg
from common.stats import latency_line, nearest_rank


def test_action_round_trip() -> None:
    plan = Plan("yes", "confirmed", "closing", "a red car ahead", "approach")
    for action in (Go((612, 430), 9.0), Rotate(45.0), Think(), Finished(plan=plan)):
        data = action_to_dict(action)
        assert data["action"] == action_name(action)
        assert action_from_dict(data) == action
    assert "plan" not in action_to_dict(Think())


def test_builtin_cameras_follow_the_spec() -> None:
    outdoor = BUILTIN_CAMERAS["outdoor"]
    assert outdoor.fx_px == pytest.approx(640.0)
    assert (outdoor.cx_px, outdoor.cy_px) == (640.0, 360.0)
    assert outdoor.hfov_deg == pytest.approx(90.0)
    tello = BUILTIN_CAMERAS["tello"]
    assert tello.fx_px == pytest.approx(480.0 / math.tan(math.radians(28.2)))
    assert tello.hfov_deg == pytest.approx(56.4)


def test_camera_yaml_round_trip(tmp_path) -> None:
    cam = CameraProfile("c", 640, 480, 500.0, 502.0, 320.5, 241.0, (-0.1, 0.02, 0.0, 0.0, 0.0))
    path = tmp_path / "cam.yaml"
    cam.save(path)
    assert camera_profile(str(path)) == cam


def test_camera_from_hfov_yaml(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("width_px: 1280\nheight_px: 720\nhfov_deg: 90\n")
    cam = CameraProfile.load(path)
    assert cam.fx_px == pytest.approx(640.0) and cam.name == "c"


def test_camera_errors_name_the_field(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nwidth_px: 640\nheight_px: 480\nfx_px: nope\nfy_px: 1\ncx_px: 1\ncy_px: 1\n")
    with pytest.raises(ConfigError, match="fx_px"):
        CameraProfile.load(path)
    with pytest.raises(ConfigError, match="unknown camera profile"):
        camera_profile("no-such-camera")


def test_camera_scaling() -> None:
    cam = BUILTIN_CAMERAS["outdoor"].scaled_to(640, 360)
    assert cam.fx_px == pytest.approx(320.0) and cam.hfov_deg == pytest.approx(90.0)


class Safety(msgspec.Struct):
    geofence_radius_m: float = 100.0
    floor_m: float = 1.0


class Cfg(msgspec.Struct):
    rate_hz: float = 20.0
    name: str = "d1"
    safety: Safety = msgspec.field(default_factory=Safety)


def test_config_yaml_toml_and_overrides(tmp_path) -> None:
    y = tmp_path / "c.yaml"
    y.write_text("rate_hz: 50\nsafety:\n  floor_m: 2\n")
    cfg = load_config(Cfg, y, ["safety.geofence_radius_m=80", "name=alpha"])
    assert cfg.rate_hz == 50 and cfg.safety.floor_m == 2 and cfg.safety.geofence_radius_m == 80
    assert cfg.name == "alpha"
    t = tmp_path / "c.toml"
    t.write_text("rate_hz = 30\n[safety]\nfloor_m = 3.5\n")
    cfg = load_config(Cfg, t)
    assert cfg.rate_hz == 30 and cfg.safety.floor_m == 3.5


def test_config_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"\$\.safety\.geofence_radius_m"):
        load_config(Cfg, None, ["safety.geofence_radius_m=[1, 2]"])
    with pytest.raises(ConfigError, match=r"dotted\.key=value"):
        apply_override({}, "novalue")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(Cfg, tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n")
    with pytest.raises(ConfigError, match="not valid"):
        load_config(Cfg, bad)


class Limited(msgspec.Struct):
    speed_m_s: float = 1.0

    def __post_init__(self) -> None:
        if self.speed_m_s < 0:
            raise ValueError("speed_m_s < 0")


class Outer(msgspec.Struct):
    limited: Limited = msgspec.field(default_factory=Limited)
    fleet: list[Limited] = msgspec.field(default_factory=list)


def test_validation_path_reads_msgspecs_location() -> None:
    """msgspec's message is the only carrier of where a check failed: its format is pinned here."""
    paths = []
    for data in ({"limited": {"speed_m_s": -1}}, {"fleet": [{}, {"speed_m_s": -1}]}, {"limited": 1}):
        with pytest.raises(msgspec.ValidationError) as caught:
            msgspec.convert(data, Outer)
        paths.append(validation_path(caught.value))
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert({"speed_m_s": -1}, Limited)
    assert [*paths, validation_path(caught.value)] == ["limited", "fleet[1]", "limited", ""]


def test_sim_clock_wakes_sleepers() -> None:
    clock = SimClock()
    woke = threading.Event()

    def sleeper() -> None:
        clock.sleep_until(2.0, timeout_wall_s=5.0)
        woke.set()

    t = threading.Thread(target=sleeper)
    t.start()
    clock.advance(1.0)
    assert not woke.wait(0.05)
    clock.advance(1.5)
    assert woke.wait(2.0)
    t.join()
    assert clock.now() == pytest.approx(2.5)
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_wall_clock_monotonic() -> None:
    clock = WallClock()
    a = clock.now()
    clock.sleep(0.001)
    assert clock.now() > a


def test_pose_helpers() -> None:
    p = Pose.from_list([1, 2, -3, 90])
    assert p.as_list() == [1.0, 2.0, -3.0, 90.0]
    assert p.altitude_m == 3.0
    assert p.distance_to(Pose(1, 2, 0)) == pytest.approx(3.0)
    assert wrap_deg(190) == pytest.approx(-170) and wrap_deg(-180) == pytest.approx(180)


def test_nearest_rank_and_the_benchmarks_latency_line() -> None:
    ordered = [0.001 * k for k in range(1, 101)]  # 1 .. 100 ms
    assert nearest_rank(ordered, 0.0) == 0.001 and nearest_rank(ordered, 1.0) == 0.1
    assert nearest_rank(ordered, 0.95) == pytest.approx(0.095)  # rank round(0.95 * 99) = 94
    line = latency_line(list(reversed(ordered)), 0.99)
    assert line == "median   50.50 ms   p99   99.00 ms   max  100.00 ms   (n=100)"
    assert latency_line([]) == "no samples"
