"""The valid range of every safety and timing number in the onboard config, in one table.

A value outside its range would turn a limit against itself (a negative speed limit climbs while
hovering, a NaN geofence radius switches the fence off, an infinite rate never ticks), so it is
refused when the config is built, before anything connects or arms. Each config class calls
`check_limits(self)` from its `__post_init__`; the error names the field, the value and the range:

    safety.max_vertical_m_s=-1.5 is out of range: must be 0 < x <= 20 (m/s)

NaN fails every comparison, so it is out of every range; so are ±inf (every range is finite).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import ConfigError

if TYPE_CHECKING:
    import msgspec


class ConfigRangeError(ConfigError, ValueError):
    """A config number out of its valid range. A ValueError too, so that msgspec (which converts
    config files) reports where it happened; common.config turns that into the dotted field name."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}{message}")
        self.field = field
        self.message = message

    def describe(self, section: str = "") -> str:
        return f"{section + '.' if section else ''}{self.field}{self.message}"


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    low_open: bool = False  # low < x rather than low <= x
    unit: str = ""
    optional: bool = False  # None is allowed (the field's "not set")

    def holds(self, value: object) -> bool:
        if value is None:
            return self.optional
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def __str__(self) -> str:
        text = f"{self.low:g} {'<' if self.low_open else '<='} x <= {self.high:g}"
        if self.unit:
            text += f" ({self.unit})"
        return text + (", or unset" if self.optional else "")


def _gt(low: float, high: float, unit: str = "", optional: bool = False) -> Range:
    return Range(low, high, True, unit, optional)


def _ge(low: float, high: float, unit: str = "", optional: bool = False) -> Range:
    return Range(low, high, False, unit, optional)


LIMITS: dict[str, dict[str, Range]] = {
    "SafetyConfig": {
        "geofence_radius_m": _gt(0, 100_000, "m"),
        "altitude_floor_m": _ge(0, 10_000, "m"),
        "altitude_ceiling_m": _gt(0, 10_000, "m"),
        "max_horizontal_m_s": _gt(0, 50, "m/s"),
        "max_vertical_m_s": _gt(0, 20, "m/s"),
        "max_yaw_rate_deg_s": _gt(0, 720, "deg/s"),
        "lookahead_s": _ge(0, 10, "s"),
        "max_consecutive_failures": _ge(1, 1000),
        "link_lost_hold_s": _ge(0, 3600, "s"),
        "link_lost_land_s": _ge(0, 3600, "s"),
        "battery_land_fraction": _ge(0, 0.99),
        "separation_m": _ge(0, 1000, "m"),
        "separation_vertical_m": _ge(0, 1000, "m"),
        "traffic_max_age_s": _gt(0, 60, "s"),
        "pilot_silence_hold_s": _gt(0, 3600, "s"),
        "frame_stale_hold_s": _gt(0, 3600, "s"),
        "telemetry_stale_land_s": _gt(0, 3600, "s"),
        "stall_s": _gt(0, 3600, "s"),
        "recover_m_s": _gt(0, 20, "m/s"),
        "obstacle_clearance_m": _ge(0, 100, "m"),
        "obstacle_margin_m": _ge(0, 100, "m"),
        "obstacle_refresh_s": _gt(0, 60, "s"),
    },
    "RuntimeConfig": {
        "rate_hz": _ge(1, 1000, "Hz"),
        "actuation_rt_priority": _ge(0, 99),
        "nice": _ge(-20, 19),
        "action_deadline_s": _gt(0, 600, "s"),
        "plan_deadline_s": _gt(0, 600, "s"),
        "canonical_focal_px": _gt(0, 100_000, "px", optional=True),
        "takeoff_altitude_m": _gt(0, 500, "m", optional=True),
        "delta_m": _gt(0, 1000, "m"),
        "min_decision_period_s": _ge(0, 3600, "s"),
        "t_max_s": _gt(0, 7 * 86_400, "s"),
        "max_steps": _ge(0, 10_000_000, optional=True),
        "max_frame_age_s": _gt(0, 600, "s"),
        "touchdown_wait_s": _ge(0, 600, "s"),
        "judgement_wait_s": _gt(0, 86_400, "s"),
        "command_max_age_s": _gt(0, 60, "s"),
        "command_clock_skew_s": _gt(0, 10, "s"),
    },
    "RecorderConfig": {
        "frames_max_bytes": _ge(0, 2**50, "bytes"),
        "trace_hz": _gt(0, 1000, "Hz"),
        "frames_max_hz": _ge(0, 1000, "Hz"),  # 0: every frame
    },
}

# Pairs that must keep their order: (field, must be >= this field).
ORDERED: dict[str, list[tuple[str, str]]] = {
    "SafetyConfig": [("link_lost_land_s", "link_lost_hold_s"), ("altitude_ceiling_m", "altitude_floor_m")],
}


def check_limits(config: msgspec.Struct) -> None:
    """Raise ConfigRangeError naming the first field of `config` outside its range (LIMITS)."""
    name = type(config).__name__
    for field, valid in LIMITS[name].items():
        value = getattr(config, field)
        if not valid.holds(value):
            raise ConfigRangeError(field, f"={value!r} is out of range: must be {valid}")
    for field, other in ORDERED.get(name, []):
        if getattr(config, field) < getattr(config, other):
            raise ConfigRangeError(
                field, f"={getattr(config, field)!r} must be >= {other}={getattr(config, other)!r}"
            )
