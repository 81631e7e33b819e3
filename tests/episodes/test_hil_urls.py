"""The HIL path's inputs: --sim URLs, vehicle URLs and asset maps, each refused with a sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import ConfigError
from common.pose import Pose
from episodes.asset_map import BUILTIN, load_asset_map, placement
from episodes.hil import RouteMover, parse_sim_url
from episodes.records import SceneObject
from onboard.vehicles.airsim import parse_airsim_url


def test_sim_url_options() -> None:
    t = parse_sim_url("airsim://10.0.0.5:41452?api=cosys&assets=builtin-strict&lockstep=1&spawn=1,2,0")
    assert (t.server.host, t.server.port, t.server.api, t.lockstep) == ("10.0.0.5", 41452, "cosys", True)
    assert t.server.spawn == Pose(1.0, 2.0, 0.0, 0.0)
    assert t.assets.name == "builtin-strict" and t.assets.kinds["van"] == "BP_Van"
    d = parse_sim_url("airsim://127.0.0.1:41451")
    assert (d.server.api, d.lockstep, d.assets) == ("auto", False, BUILTIN)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("tcp://127.0.0.1:1", "expected airsim://HOST:PORT"),
        ("airsim://127.0.0.1:1?api=v2", "api='v2' is not one of"),
        ("airsim://127.0.0.1:1?lockstep=yes", "lockstep must be 0 or 1"),
        ("airsim://127.0.0.1:1?speed=3", "unknown option(s) ['speed']"),
        ("airsim://127.0.0.1:1?assets=/no/such/map.yaml", "cannot read asset map"),
    ],
)
def test_bad_sim_urls(url: str, message: str) -> None:
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        parse_sim_url(url)


def test_vehicle_url_api_option() -> None:
    assert parse_airsim_url("airsim://h:1/Drone1").api == "auto"
    assert parse_airsim_url("airsim://h:1/Drone1?api=airsim").api == "airsim"
    with pytest.raises(ConfigError, match="api='x' is not one of airsim, cosys, auto"):
        parse_airsim_url("airsim://h:1/Drone1?api=x")
    with pytest.raises(ConfigError, match=r"watchdog_s=.soon. is not a number"):
        parse_airsim_url("airsim://h:1/Drone1?watchdog_s=soon")


def test_asset_map_placements_and_errors(tmp_path: Path) -> None:
    amap = tmp_path / "city.yaml"
    amap.write_text(
        "name: city\nkinds: {van: BP_Van}\npaints: {pink: M_Pink}\n"
        "actors: {'suv@green': SUV_3, ep_x: Car_7}\n"
    )
    city = load_asset_map(str(amap))
    van = SceneObject("ep_target", "van", (1.0, 2.0, 0.0, 0.0), colour="pink")
    assert placement(city, van).asset == "BP_Van" and placement(city, van).material == "M_Pink"
    assert placement(city, SceneObject("a", "suv", colour="green")).actor == "SUV_3"
    assert placement(city, SceneObject("ep_x", "car", colour="red")).actor == "Car_7"  # by id first
    assert placement(BUILTIN, van).asset == "van@pink"
    with pytest.raises(ConfigError, match="no material for paint 'red'"):
        placement(city, SceneObject("b", "van", colour="red"))
    with pytest.raises(ConfigError, match="no blueprint for kind 'truck'"):
        placement(city, SceneObject("c", "truck"))
    with pytest.raises(ConfigError, match="inscription"):
        placement(city, SceneObject("d", "van", inscription="EXIT"))
    amap.write_text("kinds: [van]\n")
    with pytest.raises(ConfigError, match=r"asset map .*kinds"):
        load_asset_map(str(amap))
    amap.write_text("kinds: {van: BP_Van}\nskins: {}\n")
    with pytest.raises(ConfigError, match="skins"):
        load_asset_map(str(amap))


def test_route_interpolates_in_3d_at_the_record_speed() -> None:
    mover = RouteMover("t", [(0.0, 0.0, 0.0), (3.0, 0.0, 0.0), (3.0, 0.0, -4.0)], 1.0, 10.0)
    assert mover.at(9.0).as_list() == pytest.approx([0.0, 0.0, 0.0, 0.0])  # not started yet
    assert mover.at(12.0).as_list() == pytest.approx([2.0, 0.0, 0.0, 0.0])
    p = mover.at(15.0)  # 2 m up the second leg, heading kept from the first (a vertical leg)
    assert (p.x_m, p.y_m, p.z_m) == pytest.approx((3.0, 0.0, -2.0))
    assert mover.at(100.0).as_list()[:3] == pytest.approx([3.0, 0.0, -4.0])  # stays at the end
