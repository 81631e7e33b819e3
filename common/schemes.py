"""URL scheme -> the factory of an adapter, found through Python entry points.

Every adapter chosen by a URL's scheme is declared where it lives, as an entry point of the
distribution that holds it (pyproject.toml's `[project.entry-points."dronecats.vehicles"]` and so
on), and `common` names none of them. A third party adds a vehicle, ground truth or a model
backend in its own package by declaring an entry point in one of these groups; nothing of ours is
edited:

- `dronecats.vehicles`: `factory(url: str) -> Vehicle` (common.interfaces.open_vehicle)
- `dronecats.truth`: `factory(vehicle_url: str, target: str) -> GroundTruth` (common.truth.open_truth),
  keyed by the vehicle URL's scheme
- `dronecats.backends`: `factory(url: BackendURL) -> ModelBackend` (models.backends.open_backend)
- `dronecats.camera_sources`: `factory(src: str) -> CalibrationSource` (calibration.sources.open_source)

The entry points are read when a URL is opened, and only the chosen one's module is imported then:
importing `common` reads no package metadata and imports nothing of ours (importlib.metadata itself
costs ~20 ms, so it is imported on first use too). They are read afresh each time (a few ms), so a
distribution installed or put on sys.path meanwhile is seen.

Where one distribution is found twice, the installed copy wins over a build's: `pip wheel` and
`setup.py` leave a `dronecats.egg-info` in the source tree, and with the tree first on sys.path
(pytest, `python -m` from it) importlib.metadata's own `entry_points()` would read that copy first,
stale after an edit to the entry points or rewritten by a build meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from common.errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import Distribution, EntryPoint

VEHICLES_GROUP = "dronecats.vehicles"
TRUTH_GROUP = "dronecats.truth"
BACKENDS_GROUP = "dronecats.backends"
CAMERA_SOURCES_GROUP = "dronecats.camera_sources"


def _installed(dist: Distribution) -> bool:
    """Installed by an installer (its metadata has a RECORD, PEP 627), not left by a build."""
    return dist.read_text("RECORD") is not None


def _distributions() -> list[Distribution]:
    """One Distribution per name on sys.path: the first found, unless a later one is installed and the
    first is not."""
    from importlib.metadata import distributions

    chosen: dict[str, Distribution] = {}
    for dist in distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        first = chosen.get(name)
        if first is None or (not _installed(first) and _installed(dist)):
            chosen[name] = dist
    return list(chosen.values())


def _provider(dist: Distribution) -> str:
    return f"{dist.metadata['Name']} {dist.version}"


class SchemeRegistry:
    """The schemes of one entry-point group, each naming its factory as "package.module:function"."""

    def __init__(self, what: str, group: str) -> None:
        self.what = what  # "vehicle", "truth", "backend": for messages
        self.group = group

    def entry_points(self) -> dict[str, EntryPoint]:
        """scheme -> its entry point, as installed now. Two distributions that declare the same scheme
        are refused by name: which one would open the URL would depend on sys.path order."""
        found: dict[str, tuple[EntryPoint, Distribution]] = {}
        for dist in _distributions():
            for entry in dist.entry_points.select(group=self.group):
                scheme = entry.name.lower()
                if scheme in found:
                    first, first_dist = found[scheme]
                    raise ConfigError(
                        f"{self.what} scheme {scheme!r} is declared twice in the {self.group!r} entry "
                        f"points: by {_provider(first_dist)} ({first.value}) and by {_provider(dist)} "
                        f"({entry.value}); uninstall one of them"
                    )
                found[scheme] = (entry, dist)
        return {scheme: entry for scheme, (entry, _) in found.items()}

    def schemes(self) -> list[str]:
        return sorted(self.entry_points())

    def factory(self, url: str) -> Callable[..., Any] | None:
        """The factory for this URL's scheme (its module imported now), or None for an unknown scheme."""
        return self.factory_for(urlsplit(url).scheme)

    def factory_for(self, scheme: str) -> Callable[..., Any] | None:
        entry = self.entry_points().get(scheme.lower())
        if entry is None:
            return None
        factory: Callable[..., Any] = entry.load()
        return factory

    def known(self) -> str:
        """The known schemes for an error message, or why there are none (the project not installed:
        its entry points come with the installed distribution's metadata)."""
        schemes = self.schemes()
        if schemes:
            return str(schemes)
        return f"none (no {self.group!r} entry points: is dronecats installed? pip install -e .)"
