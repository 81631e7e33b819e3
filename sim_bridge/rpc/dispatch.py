"""The RPC server's dispatch table, built from the API families' explicit handler tables.

Each family (sim_bridge.rpc.*_api) names the RPC methods it serves in its own `handlers()` table:
nothing is registered by reflecting over a class's public methods, so a helper method can never
leak onto the wire. Two families serving one name is a wiring mistake that would silently shadow
one of them; the table refuses it when the server starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from common.errors import ConfigError

Handler = Callable[..., object]  # its msgpack-rpc arguments in, a msgpack-encodable result out
HandlerTable = dict[str, Handler]


class RpcFamily(Protocol):
    """One of AirSim's API families: the RPC names it serves and their handlers."""

    def handlers(self) -> HandlerTable: ...


class DuplicateRpcName(ConfigError):
    """Two handler tables serve the same RPC name."""


def dispatch_table(tables: Iterable[tuple[str, Mapping[str, Handler]]]) -> HandlerTable:
    """The union of (label, table) pairs; a name in two of them raises DuplicateRpcName."""
    merged: HandlerTable = {}
    owner: dict[str, str] = {}
    for label, table in tables:
        for name, handler in table.items():
            if name in merged:
                raise DuplicateRpcName(f"rpc name {name!r} is served by both {owner[name]} and {label}")
            merged[name] = handler
            owner[name] = label
    return merged


def family_tables(families: Iterable[RpcFamily]) -> list[tuple[str, HandlerTable]]:
    """(class name, handler table) of each family, for dispatch_table."""
    return [(type(family).__name__, family.handlers()) for family in families]
