"""Backend URLs: `scheme://location?key=value&...`, parsed once into a typed BackendURL."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import msgspec

from common.checks import optional_number
from common.errors import ConfigError

_N = TypeVar("_N", int, float)


class BackendURL(msgspec.Struct, frozen=True):
    scheme: str
    location: str  # host:port/path for HTTP backends, a model id or engine path for in-process ones
    params: dict[str, str] = {}

    def get_str(self, key: str, default: str | None = None) -> str | None:
        return self.params.get(key, default)

    def get_float(self, key: str, default: float, minimum: float = 0.0) -> float:
        return self._number(key, default, float, minimum, "a number", "a finite number ")

    def get_int(self, key: str, default: int, minimum: int = 0) -> int:
        return self._number(key, default, int, minimum, "an integer", "")

    def _number(
        self, key: str, default: _N, convert: Callable[[str], _N], minimum: _N, kind: str, bound: str
    ) -> _N:
        raw = self.params.get(key)
        value = optional_number(raw, convert, f"backend URL parameter {key}", kind)
        if value is None:
            return default
        if (isinstance(value, float) and not math.isfinite(value)) or value < minimum:
            raise ConfigError(f"backend URL parameter {key}={raw!r} must be {bound}>= {minimum}")
        return value


def parse_backend_url(url: str) -> BackendURL:
    """Split `openai://host:8000/v1?model=m`, `vllm://Qwen/Qwen3-VL-2B?dtype=bfloat16`, ...

    In-process schemes keep everything between `://` and `?` verbatim as the location, since a model
    id (`org/name`) or an absolute engine path (`trtllm:///engines/x`) is not a host.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        raise ConfigError(f"backend URL {url!r} must look like scheme://location[?key=value...]")
    location, _, query = rest.partition("?")
    if "#" in query:
        raise ConfigError(f"backend URL {url!r}: fragments (#...) are not allowed")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise ConfigError(f"backend URL {url!r}: bad query string: {exc}") from None
    params: dict[str, str] = {}
    for key, value in pairs:
        if key in params:
            raise ConfigError(f"backend URL {url!r}: parameter {key!r} given twice")
        params[key] = value
    return BackendURL(scheme.lower(), unquote(location), params)


def http_base_url(parsed: BackendURL) -> str:
    """`openai://h:p/v1` -> `http://h:p/v1`; `openais://` -> https."""
    if not parsed.location:
        raise ConfigError(f"{parsed.scheme}:// URL needs a host, e.g. {parsed.scheme}://127.0.0.1:8000/v1")
    http_scheme = "https" if parsed.scheme == "openais" else "http"
    split = urlsplit(f"{http_scheme}://{parsed.location}")
    if not split.hostname:
        raise ConfigError(f"{parsed.scheme}://{parsed.location}: no host name")
    try:
        split.port  # noqa: B018 - validates the port
    except ValueError:
        raise ConfigError(f"{parsed.scheme}://{parsed.location}: bad port") from None
    return f"{http_scheme}://{parsed.location}".rstrip("/")
