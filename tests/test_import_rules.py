"""The dependency rules (docs/architecture.md#dependency-rules), checked on every module's source."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"common", "models", "onboard", "ground_station", "sim_bridge", "calibration", "episodes", "dronecats"}

# package -> packages of ours it must never import
FORBIDDEN = {
    "common": OURS - {"common"},
    # a drone flies with neither ground-station nor simulator code: the AirSim adapters that talk to
    # a simulator over RPC are the onboard's own (onboard.vehicles.airsim)
    "onboard": {"ground_station", "episodes", "sim_bridge"},
    "models": {"onboard", "sim_bridge"},
    # the simulator and its adapters serve the runtime, the episodes and the ground station, never
    # the other way round (`dronecats sim --episode` hands it the episode's scene: dronecats/cli_sim.py)
    "sim_bridge": {"onboard", "episodes", "ground_station"},
    # an episode flies drones as deployed, without a ground station; the commanders both use are
    # models.commanders
    "episodes": {"ground_station"},
}
QT = ("PyQt6", "PyQt5", "PySide6")


@functools.cache  # every test reads the same files
def imported_modules(path: Path) -> frozenset[str]:
    """Every module a file imports, at the top or inside a function; relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = path.relative_to(ROOT).parent.parts
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                assert node.module is not None
                names.add(node.module)
            else:
                base = package[: len(package) - (node.level - 1)]
                names.add(".".join((*base, node.module) if node.module else base))
    return frozenset(names)


def source_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def package_graph() -> dict[str, set[str]]:
    """package -> the other packages of ours that any of its modules imports."""
    return {
        package: {
            top
            for path in source_files(package)
            for name in imported_modules(path)
            if (top := name.split(".")[0]) in OURS and top != package
        }
        for package in sorted(OURS)
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None (depth-first search)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            cycle = visit(nxt)
            if cycle is not None:
                return cycle
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle is not None:
            return cycle
    return None


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_forbidden_imports(package: str) -> None:
    bad = []
    for path in source_files(package):
        for name in imported_modules(path):
            if name.split(".")[0] in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_benchmarks_never_import_tests() -> None:
    """What a benchmark needs lives in the library; tests may change without breaking benchmarks."""
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in source_files("benchmarks")
        for name in imported_modules(path)
        if name.split(".")[0] == "tests"
    ]
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_packages() -> None:
    graph = package_graph()
    cycle = find_cycle(graph)
    edges = "\n".join(f"  {p} -> {', '.join(sorted(graph[p])) or '(none)'}" for p in sorted(graph))
    assert cycle is None, f"import cycle between packages: {' -> '.join(cycle)}\ngraph:\n{edges}"


def test_find_cycle_reports_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"x": {"x"}}) == ["x", "x"]


def test_qt_only_in_ground_station() -> None:
    bad = []
    for package in sorted(OURS - {"ground_station"}):
        for path in source_files(package):
            for name in imported_modules(path):
                if name.split(".")[0] in QT:
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)
