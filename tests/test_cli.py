from __future__ import annotations

import subprocess

from conftest import dronecats_cmd, subprocess_env

from dronecats.cli import SUBCOMMANDS


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        dronecats_cmd(*args), capture_output=True, text=True, env=subprocess_env(), timeout=60
    )


def test_every_subcommand_has_its_own_help() -> None:
    for name in SUBCOMMANDS:
        result = run(name, "--help")
        assert result.returncode == 0, (name, result.stderr)
        assert f"usage: dronecats {name}" in result.stdout


def test_no_subcommand_prints_help() -> None:
    assert "COMMAND" in run().stdout
    assert run("--help").returncode == 0
