"""The built-in simulator's battery: rotor power against thrust and climb, state of charge integrated
in simulation time on a flying World, the LiPo voltage curve and sag, an empty pack's forced landing,
and the `dronecats sim` battery options' validation."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from common.errors import ConfigError
from sim_bridge.sim.battery import Battery, BatteryConfig, cell_ocv_v, rotor_power_w
from sim_bridge.sim.world import World

HOVER = (np.zeros(3), np.zeros(3))


def test_rotor_power_at_hover_climb_descent_and_acceleration() -> None:
    cfg = BatteryConfig()
    hover = rotor_power_w(cfg, *HOVER)
    assert hover == pytest.approx(cfg.hover_power_w)
    climb = rotor_power_w(cfg, np.zeros(3), np.array([0.0, 0.0, -1.0]))  # 1 m/s up (NED z down)
    descend = rotor_power_w(cfg, np.zeros(3), np.array([0.0, 0.0, 1.0]))
    push_up = rotor_power_w(cfg, np.array([0.0, 0.0, -2.0]), np.zeros(3))  # accelerating upwards
    tilt = rotor_power_w(cfg, np.array([4.0, 0.0, 0.0]), np.zeros(3))  # 4 m/s2 forward: tilted thrust
    # momentum theory at v_h = 5.4 m/s: 1 m/s of climb costs ~10 %; (T/W)^1.5 for the rest
    assert climb / hover == pytest.approx(0.5 / 5.4 + np.sqrt((0.5 / 5.4) ** 2 + 1), rel=1e-9)
    assert 1.05 < climb / hover < 1.15
    assert cfg.hover_power_w * 0.7 <= descend < hover
    assert push_up / hover == pytest.approx(((9.81 + 2.0) / 9.81) ** 1.5)
    assert tilt / hover == pytest.approx((np.hypot(9.81, 4.0) / 9.81) ** 1.5)


def test_voltage_curve_and_sag() -> None:
    socs = np.linspace(0.0, 1.0, 101)
    volts = [cell_ocv_v(s) for s in socs]
    assert all(b > a for a, b in itertools.pairwise(volts))  # strictly rising
    assert cell_ocv_v(1.0) == 4.2 and cell_ocv_v(0.0) == 3.27 and cell_ocv_v(1.5) == 4.2
    b = Battery(BatteryConfig())
    assert b.voltage_v() == pytest.approx(16.8)  # no load yet: 4 cells full
    b.drain(1.0, *HOVER, rotors_on=True)
    # ~203 W from ~16.8 V: ~12 A, ~0.7 V of sag across 60 mOhm
    assert 11.5 < b.current_a() < 13.0
    assert b.voltage_v() == pytest.approx(b.ocv_v() - b.current_a() * 0.06)
    assert b.voltage_v() * b.current_a() == pytest.approx(b.power_w)


def test_discharge_integrates_power_and_default_flight_time() -> None:
    cfg = BatteryConfig()
    b = Battery(cfg)
    fractions = []
    for _ in range(600):  # 60 s of hover in 0.1 s ticks
        b.drain(0.1, *HOVER, rotors_on=True)
        fractions.append(b.fraction)
    used_wh = (cfg.hover_power_w + cfg.idle_power_w) * 60.0 / 3600.0
    assert cfg.capacity_wh - b.energy_wh == pytest.approx(used_wh)
    assert all(b2 < a for a, b2 in itertools.pairwise(fractions))
    assert b.consumed_mah == pytest.approx(b.current_a() * 60.0 / 3.6, rel=0.01)
    # the default pack lasts a realistic ~20 min of hover to the 15 % landing reserve
    minutes_to_reserve = cfg.capacity_wh * 0.85 / (cfg.hover_power_w + cfg.idle_power_w) * 60.0
    assert 17.0 < minutes_to_reserve < 22.0
    idle = Battery(cfg)
    idle.drain(60.0, *HOVER, rotors_on=False)  # on the ground: the electronics only
    assert cfg.capacity_wh - idle.energy_wh == pytest.approx(cfg.idle_power_w * 60.0 / 3600.0)


def test_config_is_validated() -> None:
    for bad in ({"capacity_wh": 0.0}, {"start_fraction": 1.2}, {"hover_power_w": float("nan")}):
        with pytest.raises(ConfigError, match="battery"):
            BatteryConfig(**bad)  # type: ignore[arg-type]
    assert BatteryConfig().capacity_mah == pytest.approx(5000.0)


@pytest.fixture(scope="module")
def world():
    w = World("blocks", vehicles=1, seed=0, renderer="tiny", battery=BatteryConfig(capacity_wh=2.0))
    yield w
    w.close()


def test_world_drains_the_flying_vehicle_in_sim_time(world: World) -> None:
    m = world.vehicle("Drone1").model
    start = m.battery.energy_wh
    world.advance(5.0)  # landed: idle draw only
    assert start - m.battery.energy_wh == pytest.approx(3.0 * 5.0 / 3600.0, rel=1e-6)
    ground = m.battery.energy_wh
    task = world.takeoff("Drone1", altitude_m=3.0)
    world.advance(6.0)
    assert task.done and task.result
    climb_wh = ground - m.battery.energy_wh
    world.advance(6.0)  # hover
    hover_wh = ground - climb_wh - m.battery.energy_wh
    assert hover_wh == pytest.approx(203.0 * 6.0 / 3600.0, rel=0.01)
    assert climb_wh > hover_wh  # accelerating and climbing at 1 m/s draw more than holding
    assert m.battery.fraction < 1.0 and not m.landed


def test_empty_battery_forces_a_landing(world: World) -> None:
    m = world.vehicle("Drone1").model
    if m.landed:
        world.takeoff("Drone1", altitude_m=3.0)
        world.advance(6.0)
    m.battery.energy_wh = 0.01  # ~0.2 s of hover left
    world.move_velocity("Drone1", np.array([1.0, 0.0, 0.0]), 30.0)
    world.advance(10.0)  # 3 m at 0.5 m/s after the pack dies
    assert m.battery.empty and m.landed
    assert m.position_ned[2] == pytest.approx(m.floor_z_m)


def test_an_unenforced_empty_pack_lands_nobody() -> None:
    """What a plain `dronecats sim` (AirSim's RPC only: no battery field) gets: the pack is modelled,
    and an empty one lands nothing."""
    w = World(
        "blocks", vehicles=1, seed=0, renderer="tiny", battery=BatteryConfig(capacity_wh=2.0, enforced=False)
    )
    try:
        m = w.vehicle("Drone1").model
        w.takeoff("Drone1", altitude_m=3.0)
        w.advance(6.0)
        m.battery.energy_wh = 0.01
        w.advance(5.0)
        assert m.battery.empty and not m.landed
        assert m.floor_z_m - m.position_ned[2] == pytest.approx(3.0, abs=0.3)
    finally:
        w.close()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--battery-start-pct=120", "120 must be a percentage 0-100"),
        ("--battery-capacity-wh=-5", "must be a finite number > 0"),
        ("--battery-hover-w=nan", "must be a finite number > 0"),
    ],
)
def test_sim_battery_options_are_checked(option: str, message: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "dronecats", "sim", "--port", "0", option],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_airsim_reset_restores_the_pack(world: World) -> None:
    from sim_bridge.rpc.airsim_api import AirSimApi

    m = world.vehicle("Drone1").model
    m.battery.energy_wh = 0.5
    AirSimApi(world).session.reset()
    assert m.battery.fraction == 1.0 and m.battery.consumed_wh == 0.0 and m.landed
