"""Every test under tests/e2e is marked `slow`: these files start several processes (simulator,
onboard, ground station, serve-pilot, Ray) and fly whole flights through them. `-m "not slow"` leaves
them out of a quick local loop; scripts/test.sh (and so CI) runs them all."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # Called through the item's own hook proxy, so only for items below this folder; before `-m`
    # selection (pytest_collection_modifyitems) looks at the marks.
    item.add_marker(pytest.mark.slow)
