"""Bad input and failing peers end a `dronecats` command with one line on stderr and a non-zero exit
status, never a traceback. Each case runs the real `python -m dronecats ...` process against the
real fault (a taken port, a file where a directory should be, a read-only mount, a drone that never
answers)."""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.airsim_clients import spawn_red_car
from tests.support.processes import dronecats_cmd, run_dronecats, sim_server, subprocess_env

# Nothing listens here: opening a vehicle URL does not connect, so argument errors come first.
NO_VEHICLE = "airsim://127.0.0.1:9/Drone1"


def dronecats(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return run_dronecats(*args, timeout_s=timeout_s)


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    """Exit status `code`, exactly one line on stderr naming each of `words`, no traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == code, (result.returncode, result.stderr[-3000:])
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
    assert len(lines) == 1, result.stderr[-3000:]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback TCP port held (listening) by this test for its duration."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def test_config_file_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "onboard.yaml"
    config.write_bytes(b"rate_hz: 50\ninstruction: caf\xe9\n")
    result = dronecats(
        "onboard", "--vehicle", NO_VEHICLE, "--config", str(config), "--log-dir", str(tmp_path)
    )
    assert_one_line(result, 2, "dronecats onboard:", str(config), "not UTF-8", "0xe9", "line 2")


def test_airsim_url_with_a_watchdog_that_is_not_a_number(tmp_path: Path) -> None:
    url = "airsim://127.0.0.1:9/Drone1?watchdog_s=abc"
    result = dronecats("onboard", "--vehicle", url, "--log-dir", str(tmp_path))
    assert_one_line(result, 2, "watchdog_s='abc' is not a number")
    result = dronecats("onboard", "--vehicle", url.replace("abc", "nan"), "--log-dir", str(tmp_path))
    assert_one_line(result, 2, "watchdog_s=nan outside 0.02-2")


def test_airsim_url_with_a_port_out_of_range(tmp_path: Path) -> None:
    result = dronecats("onboard", "--vehicle", "airsim://127.0.0.1:99999/Drone1", "--log-dir", str(tmp_path))
    assert_one_line(result, 2, "port '99999' is not 1-65535")


def test_tello_url_whose_host_is_not_a_host(tmp_path: Path) -> None:
    result = dronecats("onboard", "--vehicle", "tello://not a host", "--log-dir", str(tmp_path))
    assert_one_line(result, 2, "'not a host' is not a host name or IP address")


def _link_keys(tmp_path: Path) -> tuple[str, ...]:
    """--link-secret/--link-allow for a drone: a secured link, so that no insecure-link warning (or
    refusal) comes before the error under test."""
    from common.keys import generate_keypair

    _, secret = generate_keypair(tmp_path / "keys", "drone1")
    gs_key, _ = generate_keypair(tmp_path / "keys", "gs1")
    return ("--link-secret", str(secret), "--link-allow", str(gs_key))


def test_gs_address_that_is_not_tcp(tmp_path: Path) -> None:
    log_dir = tmp_path / "run"
    keys = _link_keys(tmp_path)
    args = ("onboard", "--vehicle", NO_VEHICLE, "--log-dir", str(log_dir))
    result = dronecats(*args, "--gs", "udp://x", *keys)
    assert_one_line(result, 2, "--gs 'udp://x' must look like tcp://HOST:PORT")
    assert not log_dir.exists()  # refused before anything was created
    result = dronecats("onboard", "--vehicle", NO_VEHICLE, "--gs", "tcp://127.0.0.1:65534", *keys)
    assert_one_line(result, 2, "port 65534 outside 1-65533")


def test_gs_address_on_a_port_in_use(tmp_path: Path, busy_port: int) -> None:
    gs = f"tcp://127.0.0.1:{busy_port}"
    link = ("--gs", gs, *_link_keys(tmp_path))
    result = dronecats("onboard", "--vehicle", NO_VEHICLE, *link, "--log-dir", str(tmp_path / "f"))
    assert_one_line(result, 1, f"--gs {gs}: cannot bind", "Address already in use")


def test_log_dir_that_is_a_file(tmp_path: Path) -> None:
    in_the_way = tmp_path / "flight"
    in_the_way.write_text("not a directory")
    result = dronecats("onboard", "--vehicle", NO_VEHICLE, "--log-dir", str(in_the_way))
    assert_one_line(result, 2, f"--log-dir {in_the_way}: exists and is not a directory")


def _can_mount_read_only(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    return (
        subprocess.run(
            ["unshare", "--mount", "sh", "-c", f"mount -t tmpfs -o ro,size=64k tmpfs {probe}"],
            capture_output=True,
        ).returncode
        == 0
    )


def test_log_dir_on_a_read_only_filesystem(tmp_path: Path) -> None:
    if not _can_mount_read_only(tmp_path):
        pytest.skip("needs `unshare --mount` (root or user namespaces) for a read-only tmpfs")
    mount = tmp_path / "ro"
    mount.mkdir()
    command = " ".join(
        [
            f"mount -t tmpfs -o ro,size=64k tmpfs {mount} &&",
            "exec",
            *(f"'{a}'" for a in dronecats_cmd("onboard", "--vehicle", NO_VEHICLE)),
            f"--log-dir {mount}/flight",
        ]
    )
    result = subprocess.run(
        ["unshare", "--mount", "sh", "-c", command],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=60,
    )
    assert_one_line(result, 2, f"--log-dir {mount}/flight: cannot write there", "Read-only file system")


def test_serve_pilot_on_a_port_in_use(busy_port: int) -> None:
    result = dronecats("serve-pilot", "--port", str(busy_port))
    assert_one_line(result, 1, f"cannot listen on 127.0.0.1:{busy_port}", "Address already in use")


def test_sim_on_a_port_in_use(busy_port: int) -> None:
    result = dronecats("sim", "--port", str(busy_port), "--renderer", "tiny")
    assert_one_line(result, 1, f"dronecats sim: cannot listen on 127.0.0.1:{busy_port}", "in use")


def test_sim_with_an_unknown_scene() -> None:
    line = assert_one_line(dronecats("sim", "--scene", "atlantis"), 2, "invalid choice 'atlantis'")
    assert "residential" in line and "blocks" in line and "indoor" in line
    assert_one_line(dronecats("sim", "--scene", "residental"), 2, "did you mean residential?")


def test_keys_generate_where_nothing_can_be_written(tmp_path: Path) -> None:
    result = dronecats("keys", "generate", "--out", "/proc/nope", "--name", "gs1")
    assert_one_line(result, 2, "--out /proc/nope: cannot write there")
    (tmp_path / "file").write_text("")
    result = dronecats("keys", "generate", "--out", str(tmp_path / "file"), "--name", "gs1")
    assert_one_line(result, 2, "exists and is not a directory")


def test_gs_headless_gives_up_on_a_silent_drone_within_duration(busy_port: int) -> None:
    # busy_port: a real listener that never speaks the link protocol (nothing at all would do too)
    address = f"tcp://127.0.0.1:{busy_port}"
    result = dronecats(
        "gs", "--headless", "--insecure", "--drones", f"Drone1={address}", "--instruction", "go",
        "--duration-s", "2",
        timeout_s=30,
    )  # fmt: skip
    assert_one_line(result, 1, f"no telemetry from Drone1 ({address}) within 2 s")
    result = dronecats("gs", "--headless", "--drones", f"Drone1={address}", "--duration-s", "nan")
    assert_one_line(result, 2, "--duration-s: nan must be a finite number > 0")


def test_debug_shows_the_traceback(busy_port: int) -> None:
    args = ("serve-pilot", "--port", str(busy_port))
    assert_one_line(dronecats(*args), 1, "Address already in use")
    # --debug is hidden and may stand anywhere; with it the error is Python's own traceback
    for debug in (("--debug", *args), (*args, "--debug")):
        result = dronecats(*debug)
        assert result.returncode == 1 and "Traceback" in result.stderr, result.stderr
        assert "LinkError: cannot listen on" in result.stderr
    assert "--debug" not in dronecats("--help").stdout


def test_mistyped_subcommands_and_flags_get_a_suggestion() -> None:
    assert_one_line(dronecats("demoo"), 2, "invalid choice 'demoo'", "did you mean demo?")
    assert_one_line(dronecats("demo", "--distanse", "30"), 2, "dronecats demo:", "did you mean --distance")
    assert_one_line(dronecats("episodes", "verfy", "x"), 2, "did you mean verify?")
    assert_one_line(dronecats("episodes", "verify", "x", "--delat", "5"), 2, "did you mean --delta?")
    assert_one_line(dronecats("onboard"), 2, "required: --vehicle", "dronecats onboard --help")
    # argparse finds the missing option first; the hint still names the mistyped one
    typo = dronecats("onboard", "--vehical", "x")
    assert_one_line(typo, 2, "required: --vehicle", "did you mean --vehicle?")
    assert_one_line(
        dronecats("serve-model", "--profile", "x"), 2, "unrecognized arguments: --profile (see"
    )  # no poor guess
    assert_one_line(dronecats("--log-level", "LOUD", "parse", "{}"), 2, "invalid choice 'LOUD'")


def test_checks_of_values_from_outside(tmp_path: Path) -> None:
    from common.checks import check_host, positive_float, query_float, tcp_address, writable_dir
    from common.errors import ConfigError

    for good in ("127.0.0.1", "::1", "localhost", "sim_1", "drone-1.lab.example.org"):
        assert check_host(good, "x") == good
    for bad in ("not a host", "-x", "a..b", "", "x" * 300):
        with pytest.raises(ConfigError, match="not a host name or IP address"):
            check_host(bad, "x")
    assert tcp_address("tcp://*:5600", "--gs", span=3) == ("*", 5600)
    with pytest.raises(ConfigError, match="outside 1-65533"):
        tcp_address("tcp://127.0.0.1:65534", "--gs", span=3)
    for text, why in (("nan", "outside"), ("inf", "outside"), ("3", "outside"), ("x", "not a number")):
        with pytest.raises(ConfigError, match=why):
            query_float("u://", {"k": text}, "k", 1.0, 0.0, 2.0)
    for text in ("nan", "-inf", "0", "-1", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_float(text)
    assert writable_dir(tmp_path / "a" / "b", "--out").is_dir()
    assert list((tmp_path / "a" / "b").iterdir()) == []  # the write probe is gone


@pytest.mark.slow
def test_episodes_verify_scores_what_onboard_writes(tmp_path: Path) -> None:
    """A short `dronecats onboard` flight against `dronecats sim`; `episodes verify` on its log dir
    takes δ and the time cap from the run metadata, with no --delta/--t-max."""
    import airsim

    with sim_server("--scene", "residential") as port:
        client = airsim.MultirotorClient(port=port)
        client.ping()
        spawn_red_car(client, 12.0)
        out = tmp_path / "flight"
        flight = dronecats(
            "onboard",
            *("--vehicle", f"airsim://127.0.0.1:{port}/Drone1", "--pilot", "baseline"),
            *("--instruction", "go to the red car", "--truth-target", "target", "--log-dir", str(out)),
            *("--set", "t_max_s=60", "--set", "delta_m=4.5", "--set", "min_decision_period_s=0.5"),
            timeout_s=120,
        )
        assert flight.returncode == 0, flight.stderr[-2000:]
        # a normal successful flight warns about nothing (the end-of-run landing is INFO)
        assert "WARNING" not in flight.stderr and "Connected!" not in flight.stdout, flight.stderr
    assert "id" not in json.loads((out / "episode.json").read_text())  # no episode record: run metadata
    result = dronecats("episodes", "verify", str(out))
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert (verdict["delta_m"], verdict["t_max_s"]) == (4.5, 60.0)  # the flight's, not the defaults
    assert verdict["problems"] == []  # episode.json without a record is what onboard writes
    assert verdict["success"] and verdict["ne_m"] <= 4.5
    # the same for a directory of such flights, and explicit flags still win
    many = dronecats("episodes", "verify", str(tmp_path), "--delta", "2")
    assert many.returncode == 0, many.stderr
    assert json.loads(many.stdout)["episodes"][0]["delta_m"] == 2.0
