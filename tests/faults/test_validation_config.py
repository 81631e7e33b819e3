"""Fault row: config values that would turn the safety governor against itself are refused by
`dronecats onboard` before anything connects or arms: exit code 2, one line naming the field, the
value and its valid range, no traceback, no log directory. (The vehicle URL points at a port
nobody listens on: had the config been accepted, the run would fail on connecting instead, with a
different message.)"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.processes import run_dronecats

# (config file text, the field the error must name, the valid range it must state)
BAD_CONFIGS = {
    "vertical_speed_negative": (
        "safety:\n  max_vertical_m_s: -1.5\n",
        "safety.max_vertical_m_s=-1.5",
        "0 < x <= 20",
    ),
    "horizontal_speed_negative": (
        "safety:\n  max_horizontal_m_s: -2\n",
        "safety.max_horizontal_m_s=-2",
        "0 < x <= 50",
    ),
    "geofence_nan": (
        "safety:\n  geofence_radius_m: .nan\n",
        "safety.geofence_radius_m=nan",
        "0 < x <= 100000",
    ),
    "link_hold_negative": (
        "safety:\n  link_lost_hold_s: -3\n",
        "safety.link_lost_hold_s=-3",
        "0 <= x <= 3600",
    ),
    "lookahead_negative": ("safety:\n  lookahead_s: -0.5\n", "safety.lookahead_s=-0.5", "0 <= x <= 10"),
    "rate_infinite": ("rate_hz: .inf\n", "rate_hz=inf", "1 <= x <= 1000"),
    "deadline_nan": ("action_deadline_s: .nan\n", "action_deadline_s=nan", "0 < x <= 600"),
    "land_before_hold": (
        "safety:\n  link_lost_hold_s: 10\n  link_lost_land_s: 5\n",
        "safety.link_lost_land_s=5",
        "must be >= link_lost_hold_s=10",
    ),
    "yaw_rate_zero": ("safety:\n  max_yaw_rate_deg_s: 0\n", "safety.max_yaw_rate_deg_s=0", "0 < x <= 720"),
    "battery_over_one": (
        "safety:\n  battery_land_fraction: 1.5\n",
        "safety.battery_land_fraction=1.5",
        "0 <= x <= 0.99",
    ),
    "failures_zero": (
        "safety:\n  max_consecutive_failures: 0\n",
        "safety.max_consecutive_failures=0",
        "1 <= x <= 1000",
    ),
    "trace_rate_negative": ("recorder:\n  trace_hz: -2\n", "recorder.trace_hz=-2", "0 < x <= 1000"),
    "delta_huge": ("delta_m: 1.0e+300\n", "delta_m=1e+300", "0 < x <= 1000"),
    "ceiling_below_floor": (
        "safety:\n  altitude_floor_m: 20\n  altitude_ceiling_m: 10\n",
        "safety.altitude_ceiling_m=10",
        "must be >= altitude_floor_m=20",
    ),
}


def refuse(tmp_path: Path, name: str, text: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    config = tmp_path / f"{name}.yaml"
    config.write_text(text)
    log_dir = tmp_path / f"log-{name}"
    argv = ["onboard", "--vehicle", "airsim://127.0.0.1:9/Drone1", "--config", str(config)]
    argv += ["--log-dir", str(log_dir)]
    return run_dronecats(*argv), log_dir


def test_each_bad_config_value_is_refused_with_the_field_named(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:  # one real process per value, a few at a time
        runs = pool.map(lambda item: refuse(tmp_path, item[0], item[1][0]), BAD_CONFIGS.items())
        results = dict(zip(BAD_CONFIGS, runs, strict=True))
    for name, (result, log_dir) in results.items():
        _, field, valid_range = BAD_CONFIGS[name]
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2, (name, result.returncode, result.stderr)
        assert len(lines) == 1 and "Traceback" not in result.stderr, (name, result.stderr)
        assert field in lines[0] and valid_range in lines[0], (name, lines[0])
        assert not log_dir.exists(), f"{name}: a log directory was made before the config was checked"


@pytest.mark.parametrize("override", ["safety.max_vertical_m_s=-1.5", "rate_hz=.inf"])
def test_bad_overrides_on_the_command_line_are_refused_the_same_way(tmp_path: Path, override: str) -> None:
    argv = ["onboard", "--vehicle", "airsim://127.0.0.1:9/Drone1", "--set", override]
    result = run_dronecats(*argv)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert override.split("=")[0] in result.stderr and "out of range" in result.stderr


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        (["--traffic-hz", "nan"], "--traffic-hz=nan"),
        (["--mark", "nan,1"], "--mark 'nan,1'"),
        (["--duration-s", "-5"], "--duration-s: -5"),  # argparse refuses it first (positive_float)
    ],
)
def test_the_ground_stations_numbers_are_checked_too(option: list[str], needle: str) -> None:
    argv = [
        "gs",
        "--headless",
        "--insecure",
        "--drones",
        "Drone1=tcp://127.0.0.1:9",
        "--instruction",
        "x",
        *option,
    ]
    result = run_dronecats(*argv)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert needle in result.stderr
