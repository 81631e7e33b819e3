"""Helpers shared by the tests (not collected: no `test_` file names). Import them as `tests.support.X`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def project_packages() -> tuple[str, ...]:
    """The project's top-level packages, as pyproject.toml's packages.find installs them."""
    import tomllib

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    return tuple(name.removesuffix("*") for name in include["include"])
