"""Shared fixtures and collection hooks. Tests import the project from the checkout (pytest
`pythonpath = ["."]`) and their helpers from `tests.support` (pytest runs in importlib mode, so test
files never import each other or this file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import ROOT

# Under pytest-xdist (scripts/test.sh), each test file runs whole on one worker, in its order: several
# files fly one module-scoped flight that their tests inspect in turn. djitellopy binds UDP 8889/8890
# for its whole process (without SO_REUSEADDR, until the process ends), so every file that drives it
# shares one group, and so one worker. These files drive it from a child process (an onboard, a
# documented script), which can bind the ports only before the worker's own djitellopy has: they run
# first (pytest_collection_modifyitems), whatever their paths.
DJITELLOPY_CHILD_FILES = (
    "tests/e2e/test_vehicles_cli.py",
    "tests/faults/test_fault_onboard_killed.py",
    "tests/faults/test_fault_onboard_stopped_tello.py",
)
# docs/howto/emulators.md's djitellopy script, whose page test joins the group by its page marker
DJITELLOPY_CHILD_PAGES = "tests/test_docs_commands.py"


def pytest_itemcollected(item: pytest.Item) -> None:
    # Here rather than in pytest_collection_modifyitems, which pytest-xdist's worker may run first.
    if item.get_closest_marker("xdist_group") is not None:
        return
    path = item.path.relative_to(ROOT).as_posix()
    if "tello" in item.path.name or path in DJITELLOPY_CHILD_FILES:
        item.add_marker(pytest.mark.xdist_group("djitellopy"))
    else:
        item.add_marker(pytest.mark.xdist_group(path))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The djitellopy group's child-process tests first (a stable sort: every other order stays)."""

    def child_first(item: pytest.Item) -> int:
        group = item.get_closest_marker("xdist_group")
        in_group = group is not None and group.args[:1] == ("djitellopy",)
        path = item.path.relative_to(ROOT).as_posix()
        return 0 if in_group and (path in DJITELLOPY_CHILD_FILES or path == DJITELLOPY_CHILD_PAGES) else 1

    items.sort(key=child_first)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
