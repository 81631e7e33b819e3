"""Shared fixtures. Tests import the project from the checkout (pytest `pythonpath = ["."]`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def dronecats_cmd(*args: str) -> list[str]:
    """The `dronecats` command as a subprocess argv, run from this checkout's sources."""
    return [sys.executable, "-m", "dronecats", *args]


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env
