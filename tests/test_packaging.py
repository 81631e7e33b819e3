"""The installed distribution holds every package of ours with its data files, and never tests/."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from tests.support import ROOT, project_packages


def test_wheel_has_every_package_and_data_but_no_tests(tmp_path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("dronecats-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    top = project_packages()
    assert len(top) >= 8  # pyproject's include list, read (dronecats, common, models, onboard ...)
    packages = {str(p.parent.relative_to(ROOT)) for name in top for p in (ROOT / name).rglob("__init__.py")}
    for package in packages:
        assert f"{package}/__init__.py" in names, f"{package} is missing from the wheel"
    assert not any(n.startswith(("tests/", "benchmarks/", "scripts/")) for n in names)
    for data in (
        "models/prompts/system.txt",
        "models/profiles/qwen3.5-2b.yaml",
        "episodes/schema/episode.schema.json",
    ):
        assert data in names, data


def test_pyproject_builds_without_setuptools_deprecation_warnings() -> None:
    """setuptools reads the metadata without a warning (a TOML-table `project.license` printed a
    deprecation notice twice on every install)."""
    import warnings

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply_configuration(Distribution(), ROOT / "pyproject.toml")
    assert [str(w.message).splitlines()[0] for w in caught] == []
