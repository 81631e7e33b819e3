"""A third party's distribution on a path entry, as pip leaves one: its module and its `.dist-info`
with entry points (what common.schemes reads), so a test adds an adapter without editing the project."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest


def install_distribution(root: Path, name: str, module: str, source: str, entry_points_ini: str) -> None:
    """Write `module`.py and `name`-1.0.dist-info (METADATA, entry_points.txt) into `root`."""
    (root / f"{module}.py").write_text(source)
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points_ini)


def installed(
    monkeypatch: pytest.MonkeyPatch, root: Path, name: str, source: str, entry_points_ini: str
) -> ModuleType:
    """install_distribution (module named `name`) and put `root` on sys.path for this test; returns the
    module, imported, for the test to configure (the entry point loads this same module object)."""
    root.mkdir(parents=True, exist_ok=True)
    install_distribution(root, name, name, source, entry_points_ini)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module(name)
