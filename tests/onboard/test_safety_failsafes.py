"""The failsafe list (onboard.safety_failsafes): each failsafe's reason is the one the governor really
writes, its config fields are SafetyConfig's, and docs/safety.md's table is the one rendered from it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from common.interfaces import Telemetry
from common.pose import Pose
from onboard.safety import SafetyConfig, SafetyGovernor
from onboard.safety_failsafes import FAILSAFES, SOURCE_FAILSAFES, SOURCE_LABELS, failsafe_table
from onboard.setpoints import HOLD, Setpoint
from tests.support import ROOT

TABLE = re.compile(r"<!-- failsafes:begin -->\n(.*?)<!-- failsafes:end -->", re.S)


class Clock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def telemetry(collided_with: str = "", battery: float | None = None) -> Telemetry:
    pose = Pose(0.0, 0.0, -5.0, 0.0)
    collided = bool(collided_with)
    return Telemetry(0.0, pose, (0.0, 0.0, 0.0), battery, True, True, False, collided, collided_with)


def governor() -> tuple[SafetyGovernor, Clock]:
    clock = Clock()
    return SafetyGovernor(SafetyConfig(), Pose(0.0, 0.0, 0.0, 0.0), clock), clock


def tick(
    g: SafetyGovernor, clock: Clock, now_s: float, sp: Setpoint = HOLD, t: Telemetry | None = None
) -> str:
    clock.now_s = now_s
    g.filter(sp, telemetry() if t is None else t, now_s)
    return g.reason


def link_lost() -> str:
    g, clock = governor()
    g.watch("link", 0.0, poll=lambda: 0.0)
    return tick(g, clock, 3.0)


def pilot_silent() -> str:
    g, clock = governor()
    g.pilot_ok(0.0)
    g.pilot_asked(0.0, 0.0)
    return tick(g, clock, 3.0)


def video_stale() -> str:
    g, clock = governor()
    g.heard("video", 0.0)
    g.video_stale(0.5)
    return tick(g, clock, 1.0)


def telemetry_stale() -> str:
    g, clock = governor()
    g.flight_started(0.0)
    g.heard("telemetry", 0.0)
    clock.now_s = 2.0
    g.check_failsafes(2.0)  # no telemetry this tick: filter is not given any
    return g.reason


def onboard_stalled() -> str:
    g, clock = governor()
    g.flight_started(0.0)  # the telemetry, not heard since the stall ended: the stall holds
    g.stalled(3.0, 3.0)
    return tick(g, clock, 3.0)


def non_finite() -> str:
    g, clock = governor()
    return tick(g, clock, 0.0, Setpoint(math.nan, 0.0, 0.0, 0.0))


def collision() -> str:
    g, clock = governor()
    return tick(g, clock, 0.0, t=telemetry(collided_with="OBJECT"))


def battery() -> str:
    g, clock = governor()
    return tick(g, clock, 0.0, t=telemetry(battery=0.15))


def pilot_failures() -> str:
    g, _ = governor()
    for _ in range(SafetyConfig().max_consecutive_failures):
        g.pilot_failed("malformed: ...")
    return g.reason


# Each failsafe made to trip through the governor's own entry points: a new failsafe needs a row.
SCENARIOS: dict[str, Callable[[], str]] = {
    "link": link_lost,
    "pilot": pilot_silent,
    "video": video_stale,
    "telemetry": telemetry_stale,
    "onboard": onboard_stalled,
    "non-finite": non_finite,
    "collision": collision,
    "battery": battery,
    "pilot-failures": pilot_failures,
}


def test_each_failsafes_reason_is_the_one_the_governor_writes() -> None:
    assert [f.name for f in FAILSAFES] == list(SCENARIOS)  # the list's order is the tick's
    for failsafe in FAILSAFES:
        assert SCENARIOS[failsafe.name]() == failsafe.example_reason(SafetyConfig()), failsafe.name


def test_each_failsafe_names_real_config_fields_and_the_sources_are_the_watchdogs() -> None:
    fields = set(SafetyConfig.__struct_fields__)
    for failsafe in FAILSAFES:
        assert set(failsafe.config_fields) <= fields, failsafe.name
        assert failsafe.trips_when and failsafe.action and failsafe.checked, failsafe.name
    assert list(SOURCE_LABELS) == [f.name for f in SOURCE_FAILSAFES]
    g, _ = governor()
    for name in SOURCE_LABELS:
        g.watch(name, 0.0)  # each one is a source the watchdogs accept


def test_the_docs_table_is_the_rendered_list() -> None:
    page = (ROOT / "docs" / "safety.md").read_text()
    found = TABLE.search(page)
    assert found is not None, "docs/safety.md lost its <!-- failsafes:begin --> ... end block"
    assert found.group(1) == failsafe_table(), (
        "docs/safety.md's failsafe table is out of date: paste "
        "`python -c 'from onboard.safety_failsafes import failsafe_table; print(failsafe_table())'`"
    )
