"""The one qualifying-declaration rule (common.declarations.qualifies), as docs/verifier.md states it."""

from __future__ import annotations

import pytest

from common.declarations import qualifies


@pytest.mark.parametrize(
    ("distance_m", "visible", "delta_m", "judged", "expected"),
    [
        (4.9, True, 5.0, None, True),
        (5.0, True, 5.0, None, True),  # within δ includes δ itself
        (5.01, True, 5.0, None, False),
        (1.0, False, 5.0, None, False),  # not visible
        (1.0, None, 5.0, None, False),  # visibility unknown
        (None, True, 5.0, None, False),  # distance unknown (real flight, no truth)
        (1.0, True, None, None, False),  # δ unknown
        (None, None, 1.5, "accept", True),  # real flight: the operator's judgement alone decides
        (None, None, None, "accept", True),
        (1.0, True, 5.0, "reject", False),  # a rejected declaration never qualifies
    ],
)
def test_rule(distance_m, visible, delta_m, judged, expected) -> None:  # type: ignore[no-untyped-def]
    assert qualifies(distance_m, visible, delta_m, judged) is expected
