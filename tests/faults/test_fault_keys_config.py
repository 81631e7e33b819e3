"""Fault rows: a secret key others can read, a config with a key or a section given twice, and an
option no scheme knows. Real `dronecats` processes with the real fault on disk (chmod 644, a YAML
file as a person writes it); each is refused with one line and a non-zero exit before anything
connects, and the vehicle in the simulator never leaves the ground."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from common.keys import generate_keypair
from tests.support.failsafe import reset_world
from tests.support.ports import free_base_port
from tests.support.processes import run_dronecats


def one_line_refusal(result, exit_code: int = 2) -> str:
    err = result.stderr.strip()
    assert result.returncode == exit_code, (result.returncode, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_secret_key_others_can_read_is_refused_naming_the_fix(tmp_path) -> None:
    keys = tmp_path / "keys"
    generate_keypair(keys, "Drone1")
    generate_keypair(keys, "gs")
    drone_secret, gs_secret = keys / "Drone1.key_secret", keys / "gs.key_secret"
    assert drone_secret.stat().st_mode & 0o777 == 0o600  # as `keys generate` writes it
    drone_secret.chmod(0o644)
    gs_secret.chmod(0o640)
    onboard = run_dronecats(
        "onboard", "--vehicle", "airsim://127.0.0.1:1/Drone1",
        "--gs", f"tcp://127.0.0.1:{free_base_port()}", "--link-secret", str(drone_secret),
        "--link-allow", str(keys / "gs.key"), "--log-dir", str(tmp_path / "f"),
    )  # fmt: skip
    err = one_line_refusal(onboard)
    assert f"secret key {drone_secret} is accessible by others (mode 0644)" in err
    assert f"run `chmod 600 {drone_secret}`" in err
    gs = run_dronecats(
        "gs", "--headless", "--drones", f"Drone1=tcp://127.0.0.1:{free_base_port()}",
        "--keys", str(gs_secret), "--instruction", "go", "--duration-s", "5",
    )  # fmt: skip
    assert gs.returncode != 0 and f"run `chmod 600 {gs_secret}`" in gs.stderr, gs.stderr
    assert "Traceback" not in gs.stderr


@pytest.mark.parametrize(
    "text, line, key",
    [
        ("safety:\n  geofence_radius_m: 10\n  geofence_radius_m: 100000\n", 3, "geofence_radius_m"),
        ("safety:\n  geofence_radius_m: 150\nt_max_s: 30\nsafety:\n  altitude_ceiling_m: 60\n", 4, "safety"),
    ],
    ids=["duplicate-key", "repeated-section"],
)
def test_a_config_key_given_twice_is_refused_with_file_and_line(sim, tmp_path, text, line, key) -> None:
    port, client = sim
    reset_world(client)
    config = tmp_path / "onboard.yaml"
    config.write_text(text)
    result = run_dronecats(
        "onboard", "--vehicle", f"airsim://127.0.0.1:{port}/Drone1", "--pilot", "baseline",
        "--instruction", "go to the red car", "--config", str(config), "--log-dir", str(tmp_path / "f"),
    )  # fmt: skip
    err = one_line_refusal(result)
    assert f"config {config} line {line}: {key!r} is given twice" in err, err
    time.sleep(0.3)
    assert client.simGetVehiclePose(vehicle_name="Drone1").position.z_val > -0.1  # never took off


UNKNOWN_OPTIONS = [
    ("--vehicle", "airsim://127.0.0.1:1/Drone1?watchdg_s=0.1", "watchdg_s"),
    ("--vehicle", "tello://127.0.0.1?keepalive=3", "keepalive"),
    ("--vehicle", "mavlink://udpin:127.0.0.1:14540?dialekt=px4", "dialekt"),
    ("--pilot", "openai://127.0.0.1:1/v1?model=x&modle=y", "modle"),
    ("--pilot", "vllm://Qwen/Qwen3-VL-2B?dtyp=bfloat16", "dtyp"),
    ("--pilot", "hf://tiny?model=x&devic=cpu", "devic"),
    ("--pilot", "trtllm:///engines/x?profil=p", "profil"),
]


@pytest.mark.parametrize(
    "flag, url, option", UNKNOWN_OPTIONS, ids=[u.split(":", 1)[0] for _, u, _ in UNKNOWN_OPTIONS]
)
def test_an_unknown_url_option_is_refused_naming_it(tmp_path: Path, flag: str, url: str, option: str) -> None:
    args = [
        "onboard",
        "--vehicle",
        "airsim://127.0.0.1:1/Drone1",
        "--pilot",
        "baseline",
        "--log-dir",
        str(tmp_path),
    ]
    args[args.index(flag) + 1] = url
    err = one_line_refusal(run_dronecats(*args))
    # the known ones named too ("unknown" alone is not enough)
    assert option in err and ("known: " in err or "(only " in err or "not one of" in err), err


def test_an_unknown_hil_simulator_option_is_refused_naming_it(tmp_path: Path) -> None:
    result = run_dronecats(
        "episodes",
        "run",
        "single",
        "--sim",
        "airsim://127.0.0.1:1?lockstp=1",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 2 and "lockstp" in result.stderr and "Traceback" not in result.stderr, (
        result.stderr
    )
