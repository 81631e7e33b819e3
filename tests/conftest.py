"""Shared fixtures and collection hooks. Tests import the project from the checkout (pytest
`pythonpath = ["."]`) and their helpers from `tests.support` (pytest runs in importlib mode, so test
files never import each other or this file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import ROOT

# Under pytest-xdist (scripts/test.sh), each test file runs whole on one worker, in its order: several
# files fly one module-scoped flight that their tests inspect in turn. djitellopy binds UDP 8889/8890
# for its whole process, so every file that drives it shares one group, and so one worker.
# (The fault row's onboard process binds them itself: it runs before the in-process files, by path.)
DJITELLOPY_TEST_FILES = ("tests/e2e/test_vehicles_cli.py", "tests/faults/test_fault_onboard_killed.py")


def pytest_itemcollected(item: pytest.Item) -> None:
    # Here rather than in pytest_collection_modifyitems, which pytest-xdist's worker may run first.
    if item.get_closest_marker("xdist_group") is not None:
        return
    path = item.path.relative_to(ROOT).as_posix()
    if "tello" in item.path.name or path in DJITELLOPY_TEST_FILES:
        item.add_marker(pytest.mark.xdist_group("djitellopy"))
    else:
        item.add_marker(pytest.mark.xdist_group(path))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
