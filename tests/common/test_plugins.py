"""Adapters chosen by URL scheme come from entry points (common.schemes): a third party's distribution
adds a vehicle or a model backend without an edit to the project, two distributions claiming one
scheme are refused, and the installed metadata is pyproject.toml's."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from common.errors import ConfigError
from common.interfaces import open_vehicle, vehicle_schemes
from common.schemes import BACKENDS_GROUP, CAMERA_SOURCES_GROUP, TRUTH_GROUP, VEHICLES_GROUP, SchemeRegistry
from tests.support import ROOT
from tests.support.plugins import install_distribution

GROUPS = (VEHICLES_GROUP, TRUTH_GROUP, BACKENDS_GROUP, CAMERA_SOURCES_GROUP)


THIRD_PARTY_VEHICLE = """
class ToyVehicle:
    def __init__(self, url):
        self.url = url


def open_toy(url):
    return ToyVehicle(url)
"""


def test_a_third_party_vehicle_opens_through_its_entry_point(tmp_path, monkeypatch) -> None:
    install_distribution(
        tmp_path,
        "toy_vehicle",
        "toy_vehicle",
        THIRD_PARTY_VEHICLE,
        f"[{VEHICLES_GROUP}]\nmyscheme = toy_vehicle:open_toy\n",
    )
    assert "myscheme" not in vehicle_schemes()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "myscheme" in vehicle_schemes()
    vehicle = open_vehicle("myscheme://x")
    assert type(vehicle).__name__ == "ToyVehicle" and vehicle.url == "myscheme://x"  # type: ignore[attr-defined]


def test_a_third_party_backend_opens_through_its_entry_point(tmp_path, monkeypatch) -> None:
    from models.backends import open_backend

    source = "def open_echo(url):\n    return ('echo', url.location, url.params)\n"
    install_distribution(
        tmp_path,
        "echo_backend",
        "echo_backend",
        source,
        f"[{BACKENDS_GROUP}]\necho = echo_backend:open_echo\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert open_backend("echo://m?x=1") == ("echo", "m", {"x": "1"})  # type: ignore[comparison-overlap]


def test_an_installed_distribution_wins_over_a_stale_build_of_the_same_name(tmp_path, monkeypatch) -> None:
    """`pip wheel` leaves NAME.egg-info in the source tree; first on sys.path, it must not hide the
    installed metadata's entry points."""
    install_distribution(
        tmp_path, "dronecats", "stale_build", "", f"[{VEHICLES_GROUP}]\nairsim = stale_build:gone\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert vehicle_schemes() == ["airsim", "mavlink", "tello"]
    assert (
        SchemeRegistry("vehicle", VEHICLES_GROUP).entry_points()["airsim"].value
        == (declared()[VEHICLES_GROUP]["airsim"])
    )


def test_two_distributions_claiming_one_scheme_are_refused_by_name(tmp_path, monkeypatch) -> None:
    install_distribution(
        tmp_path,
        "rival_sim",
        "rival_sim",
        "def open_rival(url):\n    return url\n",
        f"[{VEHICLES_GROUP}]\nairsim = rival_sim:open_rival\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"vehicle scheme 'airsim' is declared twice.*rival_sim 1\.0"):
        open_vehicle("airsim://127.0.0.1:41451/Drone1")


def test_an_unknown_scheme_names_the_known_ones() -> None:
    from models.backends import open_backend

    with pytest.raises(
        ConfigError, match=r"unknown scheme 'nosuch', known: \['airsim', 'mavlink', 'tello'\]"
    ):
        open_vehicle("nosuch://drone")
    with pytest.raises(
        ConfigError, match=r"unknown backend scheme 'grpc'.*known: \['hf', 'openai', 'openais'"
    ):
        open_backend("grpc://127.0.0.1:1")


def declared() -> dict[str, dict[str, str]]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]


def test_the_installed_entry_points_are_pyprojects_and_each_names_a_function() -> None:
    """A stale install (pyproject edited, not re-installed) or a target moved without its entry point
    fails here, not at the first flight. Checked on the source: nothing is imported."""
    for group in GROUPS:
        wanted = declared()[group]
        installed = {name: e.value for name, e in SchemeRegistry(group, group).entry_points().items()}
        assert installed == wanted, f"{group}: re-install the project (pip install -e .)"
        for scheme, target in wanted.items():
            module, _, function = target.partition(":")
            spec = importlib.util.find_spec(module)
            assert spec is not None and spec.origin is not None, f"{scheme}: no module {module}"
            tree = ast.parse(Path(spec.origin).read_text())
            names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert function in names, f"{group} {scheme}: {module} defines no {function}()"


def test_importing_common_reads_no_metadata_and_imports_nothing_of_ours() -> None:
    code = (
        "import sys; import common.interfaces, common.truth, common.schemes, common.config; "
        "from tests.support import project_packages; ours = set(project_packages()) - {'common'}; "
        "print('importlib.metadata' in sys.modules, sorted({m.split('.')[0] for m in sys.modules} & ours))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60, check=True
    )
    assert result.stdout.split(maxsplit=1) == ["False", "[]\n"]
