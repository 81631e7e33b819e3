from __future__ import annotations

import argparse
import importlib
import subprocess
from collections.abc import Iterator

from dronecats.cli import SUBCOMMANDS, build_parser
from tests.support.processes import run_dronecats


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_dronecats(*args)


def test_every_subcommand_has_its_own_help() -> None:
    for name in SUBCOMMANDS:
        result = run(name, "--help")
        assert result.returncode == 0, (name, result.stderr)
        assert f"usage: dronecats {name}" in result.stdout


def test_no_subcommand_prints_help() -> None:
    assert "COMMAND" in run().stdout
    assert run("--help").returncode == 0


def _walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_option_of_every_subcommand_has_help() -> None:
    parser = build_parser()
    sub_action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, (module, _) in SUBCOMMANDS.items():
        importlib.import_module(module).add_arguments(sub_action.choices[name])
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, action in _walk(parser, "dronecats")
        if not action.help  # argparse.SUPPRESS (hidden on purpose) is a non-empty string
    ]
    assert not missing, "options without help:\n" + "\n".join(missing)


def test_episodes_help_names_every_action() -> None:
    from episodes.cli import ACTIONS

    summary = SUBCOMMANDS["episodes"][1]
    assert all(action in summary for action in ACTIONS), summary
    assert all(action in run("episodes", "--help").stdout for action in ACTIONS)


def test_describe_failure_maps_the_error_hierarchy_to_exit_codes() -> None:
    from common.errors import ConfigError, LinkError, RecordError, VehicleError
    from dronecats.cli import describe_failure

    assert describe_failure(ConfigError("bad\nvalue")) == (2, "bad; value")  # always one line
    assert describe_failure(RecordError("no id")) == (2, "no id")
    assert describe_failure(LinkError("no answer"))[0] == describe_failure(VehicleError("refused"))[0] == 1
    assert describe_failure(ValueError("not a number")) == (2, "not a number")
    assert describe_failure(PermissionError(13, "Permission denied", "/x")) == (1, "/x: Permission denied")
    assert describe_failure(TimeoutError("timed out")) == (1, "timed out")
    code, line = describe_failure(ModuleNotFoundError("no", name="PyQt6.QtCore"))
    assert code == 1 and "'PyQt6'" in line and "dronecats[gui]" in line
    _, line = describe_failure(ModuleNotFoundError("no", name="djitellopy"))
    assert "pip install --no-deps djitellopy==2.5.0" in line  # no extra installs it (one OpenCV wheel)
    code, line = describe_failure(KeyError("k"))
    assert code == 1 and line.startswith("unexpected KeyError") and "--debug" in line
