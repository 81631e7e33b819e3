"""Values from outside (command-line flags, vehicle URLs, addresses) checked where they enter.

Each check raises ConfigError naming the flag or URL, the value and what it must be, so that a bad
value ends a command with one line before anything connects, binds or arms.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import SplitResult, urlsplit

from common.errors import ConfigError

_N = TypeVar("_N", int, float)

MAX_PORT = 65535
# One DNS label: letters, digits and inner hyphens, at most 63 characters (and underscores, which
# DNS forbids but container and compose service names use).
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*\.?$")


def check_port(port: int, what: str, *, allow_zero: bool = True, span: int = 1) -> int:
    """A TCP/UDP port; `span` consecutive ports from it must all fit; 0 (pick a free one) if allowed."""
    low = 0 if allow_zero else 1
    high = MAX_PORT - (span - 1)
    if not low <= port <= high:
        uses = f" (it uses {span} ports from it)" if span > 1 else ""
        raise ConfigError(f"{what}: port {port} outside {low}-{high}{uses}")
    return port


def port_arg(text: str) -> int:
    """argparse `type=` for a port to listen on: 0-65535, 0 picks a free one."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"port {port} outside 0-{MAX_PORT}")
    return port


def finite_float(text: str) -> float:
    """argparse `type=` for a finite number (no nan, no inf)."""
    return _float_arg(text, lambda v: True, "a finite number")


def positive_float(text: str) -> float:
    """argparse `type=` for a finite number > 0."""
    return _float_arg(text, lambda v: v > 0, "a finite number > 0")


def non_negative_float(text: str) -> float:
    """argparse `type=` for a finite number >= 0."""
    return _float_arg(text, lambda v: v >= 0, "a finite number >= 0")


def _float_arg(text: str, ok: Callable[[float], bool], must_be: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(f"{text} must be {must_be}")
    return value


def positive_int(text: str) -> int:
    """argparse `type=` for a whole number >= 1."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """argparse `type=` for a whole number >= 0."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} must be >= {low}")
    return value


def check_host(host: str, what: str, *, wildcard: bool = False) -> str:
    """An IP address or a DNS host name (`*`, any interface, only where `wildcard`)."""
    if wildcard and host == "*":
        return host
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if len(host) > 253 or not _HOSTNAME.match(host):
        raise ConfigError(f"{what}: {host!r} is not a host name or IP address")
    return host


def url_host_port(url: str, parts: SplitResult, default_host: str, default_port: int) -> tuple[str, int]:
    """The checked host and port of a parsed vehicle URL, defaults where the URL gives none."""
    try:
        port = parts.port
    except ValueError:  # urllib's own check: not a number, or outside 0-65535
        raise ConfigError(f"{url!r}: port {parts.netloc.rpartition(':')[2]!r} is not 1-{MAX_PORT}") from None
    host = parts.hostname or default_host
    check_host(host, repr(url))
    return host, check_port(port or default_port, repr(url), allow_zero=False)


def optional_number(text: str | None, convert: Callable[[str], _N], what: str, kind: str) -> _N | None:
    """None for a value not given, else `convert(text)`; one line "{what}={text!r} is not {kind}"
    when it does not convert."""
    if text is None:
        return None
    try:
        return convert(text)
    except ValueError:
        raise ConfigError(f"{what}={text!r} is not {kind}") from None


def query_float(url: str, query: dict[str, str], key: str, default: float, low: float, high: float) -> float:
    """A finite number `key=` from a URL's query (popped), within [low, high]."""
    text = query.pop(key, None)
    value = optional_number(text, float, f"{url!r}: {key}", "a number")
    if value is None:
        return default
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{url!r}: {key}={text} outside {low:g}-{high:g}")
    return value


def query_port(url: str, query: dict[str, str], key: str, default: int) -> int:
    """A port number `key=` from a URL's query (popped), 1-65535."""
    port = optional_number(query.pop(key, None), int, f"{url!r}: {key}", "a port number")
    return default if port is None else check_port(port, f"{url!r}: {key}", allow_zero=False)


def tcp_address(address: str, what: str, *, span: int = 1) -> tuple[str, int]:
    """tcp://HOST:PORT (HOST may be `*`, every interface); `span` consecutive ports from PORT."""
    parts = urlsplit(address)
    shape = f"{what} {address!r} must look like tcp://HOST:PORT"
    if parts.scheme != "tcp" or not parts.hostname:
        raise ConfigError(shape)
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{shape}, with PORT 1-{MAX_PORT - (span - 1)}") from None
    if port is None:
        raise ConfigError(shape)
    check_host(parts.hostname, f"{what} {address!r}", wildcard=True)
    return parts.hostname, check_port(port, f"{what} {address!r}", allow_zero=False, span=span)


def writable_dir(path: str | Path, what: str) -> Path:
    """Create the directory if needed and prove a file can be written in it (read-only filesystems,
    permissions and a file in the way are found here, not at the first log line)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {path}: exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot write there ({exc.strerror or exc})") from None
    return path
