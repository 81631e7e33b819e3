"""The RPC dispatch table: built from the families' explicit tables, a name served twice refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sim_bridge.rpc.airsim_api import AirSimApi
from sim_bridge.rpc.dispatch import DuplicateRpcName, dispatch_table
from sim_bridge.sim.world import World


@pytest.fixture(scope="module")
def api() -> Iterator[AirSimApi]:
    with World("blocks", vehicles=1, seed=0, renderer="tiny") as world:
        yield AirSimApi(world)


def test_a_name_in_two_tables_is_refused() -> None:
    with pytest.raises(DuplicateRpcName, match="'ping' is served by both A and B"):
        dispatch_table([("A", {"ping": lambda: True}), ("B", {"ping": lambda: False})])


def test_the_table_is_the_union_of_the_families_tables(api: AirSimApi) -> None:
    names = [name for family in api.families() for name in family.handlers()]
    assert len(names) == len(set(names))
    assert set(api.stock_table()) == set(names)
    assert set(api.table()) == set(names) | set(api.extensions.table())


def test_no_helper_reaches_the_wire(api: AirSimApi) -> None:
    table = api.table()
    assert not [name for name in table if name.startswith("_")]
    assert not {"handlers", "families", "apply_settings", "stock_table", "table"} & set(table)
