"""The dependency rules (docs/architecture.md#dependency-rules), checked on every module's source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"common", "models", "onboard", "ground_station", "sim_bridge", "calibration", "episodes", "dronecats"}

# package -> packages of ours it must never import
FORBIDDEN = {
    "common": OURS - {"common"},
    "onboard": {"ground_station", "episodes"},
    "models": {"onboard", "sim_bridge"},
}
QT = ("PyQt6", "PyQt5", "PySide6")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def source_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_forbidden_imports(package: str) -> None:
    bad = []
    for path in source_files(package):
        for name in imported_modules(path):
            if name.split(".")[0] in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_qt_only_in_ground_station() -> None:
    bad = []
    for package in sorted(OURS - {"ground_station"}):
        for path in source_files(package):
            for name in imported_modules(path):
                if name.split(".")[0] in QT:
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)
