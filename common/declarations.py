"""The qualifying-declaration rule, once, for everything that judges a `finished` (docs/verifier.md).

A declaration qualifies when the drone was within δ of the target and the target was visible when it
was measured. In real flight the operator's judgement (`judged`) replaces that rule: "accept"
qualifies, "reject" never does. It lives in `common` because the onboard runtime, the ground station
and the episode tools all apply it, and those packages do not import each other.
"""

from __future__ import annotations


def qualifies(
    distance_m: float | None,
    visible: bool | None,
    delta_m: float | None,
    judged: str | None = None,
) -> bool:
    """True when a declaration measured at `distance_m` (None: unknown) with the target `visible`
    qualifies for arrival radius `delta_m` (None: unknown, never qualifies unless judged)."""
    if judged is not None:
        return judged == "accept"
    return delta_m is not None and distance_m is not None and distance_m <= delta_m and bool(visible)
