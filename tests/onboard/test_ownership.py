"""Who owns the flight's state, and who may reach the runtime.

See docs/architecture.md#inside-the-onboard-runtime.

The runtime (onboard.runtime.OnboardRuntime) assembles a drone's parts and runs its life cycle; its
collaborators get the narrow parts they need (the flight state, the governor, the actuator, the
reporter, the decision step), never the runtime. These checks read the library's source (not the
tests): which modules import the runtime, which of its members are read from outside it, and that
the flight state (onboard.flight_state) is changed only through its own methods.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = (
    "common",
    "onboard",
    "ground_station",
    "sim_bridge",
    "models",
    "episodes",
    "calibration",
    "dronecats",
)

# The modules that may import onboard.runtime: the composition root, the drivers that own time, the
# link that attaches to a runtime, the CLI (its exit codes name the runtime's end reasons), the
# episode runner's and the demo's assembly. Everything else gets collaborators.
MAY_IMPORT_RUNTIME = {
    "onboard.assembly",
    "onboard.lockstep",
    "onboard.link",
    "onboard.cli",
    "episodes.local_flight",
    "dronecats.demo",
    "episodes.fleet_episode",  # the fleet runner types the runtimes it assembles
    "benchmarks.bench_onboard",  # times the runtime's own threads
}

# What may be read of a runtime from outside onboard/runtime.py: its life cycle, its clock and
# configuration, and the collaborators it hands out. Not its flight's counters, history or tasking:
# those are the flight state's (runtime.state), read through FlightState's methods or a snapshot.
RUNTIME_SURFACE = {
    # life cycle
    "start",
    "begin_flight",
    "run",
    "stop",
    "stop_reason",
    "can_decide",
    "finish",
    "result",
    "climbed",
    # time, configuration, identity
    "clock",
    "config",
    "t",
    "takeoff_altitude_m",
    "event",
    # collaborators handed out
    "state",
    "decisions",
    "operator",
    "governor",
    "actuator",
    "actuation",
    "reporter",
    "recorder",
    "capture",
    "camera",
    "vehicle",
    "truth",
    "newest_telemetry",
    "thread_nice",
}
# Names under which a runtime travels in the library (a variable, a parameter, an attribute).
RUNTIME_NAMES = {"runtime", "rt"}
RUNTIME_ATTRIBUTES = {"runtime", "_runtime"}
# Modules where those names mean something else.
OTHER_RUNTIMES = {"sim_bridge.sim.attitude"}  # rt: the attitude controller's rate terms


def library_files() -> list[Path]:
    files = [p for package in LIBRARY for p in sorted((ROOT / package).rglob("*.py"))]
    return files + sorted((ROOT / "benchmarks").glob("*.py"))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


@functools.cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def runtime_reads(path: Path) -> list[tuple[int, str]]:
    """(line, member) of every attribute read on something named like a runtime."""
    reads = []
    for node in ast.walk(tree(path)):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        named = isinstance(value, ast.Name) and value.id in RUNTIME_NAMES
        held = isinstance(value, ast.Attribute) and value.attr in RUNTIME_ATTRIBUTES
        if named or held:
            reads.append((node.lineno, node.attr))
    return reads


def runtime_importers() -> set[str]:
    return {module_name(p) for p in library_files() if "onboard.runtime" in imports(p)}


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_only_the_assembly_and_the_drivers_import_the_runtime() -> None:
    importers = runtime_importers() - {"onboard.runtime"}
    assert importers <= MAY_IMPORT_RUNTIME, sorted(importers - MAY_IMPORT_RUNTIME)


def test_outside_the_runtime_only_its_surface_is_read() -> None:
    offending = []
    counts: Counter[str] = Counter()
    for path in library_files():
        name = module_name(path)
        if name == "onboard.runtime":
            continue
        for line, member in runtime_reads(path):
            if name not in OTHER_RUNTIMES:
                counts[name] += 1
                if member not in RUNTIME_SURFACE:
                    offending.append(f"{path.relative_to(ROOT)}:{line}: .{member}")
    assert not offending, "\n".join(offending)


def test_the_flight_state_changes_only_through_its_methods() -> None:
    """No module assigns into a flight state (its tallies, tasking and history are its own), except
    the decision step's stage latencies of the step it has just measured."""
    writes = []
    for path in library_files():
        if module_name(path) == "onboard.flight_state":
            continue
        for node in ast.walk(tree(path)):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if not isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                continue
            for target in targets:
                if not isinstance(target, ast.Attribute):
                    continue
                owner = target.value
                on_state = (isinstance(owner, ast.Attribute) and owner.attr == "state") or (
                    isinstance(owner, ast.Name) and owner.id in {"state", "flight"}
                )
                allowed = module_name(path) == "onboard.decision_step" and target.attr == "last_stages"
                if on_state and not allowed:
                    writes.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{target.attr}")
    assert not writes, "\n".join(writes)


def test_the_decision_loop_and_the_operator_never_hold_the_runtime() -> None:
    for module in ("onboard.decide_loop", "onboard.operator", "onboard.decision_step", "onboard.reporter"):
        path = ROOT / (module.replace(".", "/") + ".py")
        assert "onboard.runtime" not in imports(path), module
        assert not runtime_reads(path), (module, runtime_reads(path))
