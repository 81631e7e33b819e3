"""URL scheme -> the factory of an adapter, named by a "package.module:function" string and imported
only when a URL of that scheme is opened, so that `common` stays free of the packages holding the
adapters. Vehicles (common.interfaces) and ground truth (common.truth) each keep one."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from common.errors import ConfigError


class SchemeRegistry:
    def __init__(self, what: str, factories: dict[str, str]) -> None:
        self.what = what  # "vehicle", "truth": for messages
        self._factories = dict(factories)

    def register(self, scheme: str, factory_path: str) -> None:
        if ":" not in factory_path:
            raise ConfigError(
                f"{self.what} factory {factory_path!r} must look like 'package.module:function'"
            )
        self._factories[scheme] = factory_path

    def schemes(self) -> list[str]:
        return sorted(self._factories)

    def factory(self, url: str) -> Callable[..., Any] | None:
        """The factory for this URL's scheme (its module imported now), or None for an unknown scheme."""
        path = self._factories.get(urlsplit(url).scheme)
        if path is None:
            return None
        module_name, func_name = path.split(":", 1)
        factory: Callable[..., Any] = getattr(importlib.import_module(module_name), func_name)
        return factory
