"""The command-silence landing's bound: how long a vehicle may go without a setpoint before the
simulator lands it, the one rule that both sides check.

The built-in simulator enforces it (sim_bridge.rpc.silence: `dronecats sim --land-on-silence-s`,
`dcSetSilenceLanding`); onboard's airsim:// adapter checks its `silence_land_s` against the same
range before it asks, so a bad URL fails at open rather than as the server's refusal.
"""

from __future__ import annotations

import math

from common.errors import ConfigError

SILENCE_RANGE_S = (0.1, 3600.0)  # 0 turns it off


def check_silence_s(value: float) -> float | None:
    """A silence bound from outside: 0 (off: None) or SILENCE_RANGE_S seconds; anything else refused."""
    low, high = SILENCE_RANGE_S
    if not math.isfinite(value) or not (value == 0 or low <= value <= high):
        raise ConfigError(f"command-silence landing {value!r} s: 0 (off) or {low:g}..{high:g} s")
    return None if value == 0 else float(value)
