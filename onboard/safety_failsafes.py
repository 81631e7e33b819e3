"""Every failsafe of the safety governor, each one small object in one list: `FAILSAFES`.

A failsafe has a name, what it checks (its `check`, or for a failsafe source `calls_for`/`back`),
where its reason comes from (`reason`, the text events.jsonl and the mode carry), the config fields
that tune it, and what it does, for people. The governor (onboard.safety) iterates the list on every
actuation tick; docs/safety.md's failsafe table is rendered from it (`failsafe_table`). This is
PX4's commander shape: HealthAndArmingChecks::update() runs `checkAndReport` of every check object
in one array, each check with its own parameters (src/modules/commander/HealthAndArmingChecks/
HealthAndArmingChecks.cpp in PX4-Autopilot), and the commander acts on the report.

Three kinds, by when they are checked, in this order on a tick:

- `SourceFailsafe`: timed from when its source was last heard on the runtime's clock (the
  ground-station link, the pilot, the video, the vehicle's telemetry, the onboard process's own
  stall). onboard.safety_watchdogs applies them first on every tick, to each watched source in the
  order the sources were first watched: which source trips first decides the hold's reason when two
  trip on one tick (the first reason stays), so that order is the flight's, not this list's.
- `TickFailsafe`: read off the tick's setpoint and telemetry, in this list's order; one that
  `refuses_setpoint` ends the tick there with a hold (nothing after it is checked).
- `ReportFailsafe`: checked when the decision loop reports to the governor (a pilot failure).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from common.interfaces import Telemetry
from onboard.safety_config import SafetyConfig
from onboard.safety_modes import Mode
from onboard.setpoints import Setpoint

# Failsafe sources (SafetyGovernor.watch / heard). ONBOARD is the process itself: a stall of its own
# (SafetyGovernor.stalled), never watched for silence.
LINK, PILOT, VIDEO, TELEMETRY, ONBOARD = "link", "pilot", "video", "telemetry", "onboard"


@dataclass
class Source:
    """One failsafe source, on the runtime's clock."""

    name: str
    since_s: float  # watched since (the reference while never heard)
    last_heard_s: float | None = None
    failing: bool = False  # known silent or stale now (video: a read found it stale; pilot: unanswered)
    asked_s: float | None = None  # pilot: the first request still unanswered by a valid action
    due_s: float | None = None  # pilot: when that request's reply is overdue
    tripped: Mode | None = None  # the mode this source's silence has caused (until it is back)
    poll: Callable[[], float | None] | None = None  # link: the link's own last-heard time
    stall_s: float = 0.0  # onboard: the last stall's length (its end is last_heard_s)

    def reference_s(self) -> float:
        return self.last_heard_s if self.last_heard_s is not None else self.since_s


@dataclass(frozen=True)
class Trip:
    """What a failsafe asks of the mode: `mode` with `reason`, stamped `now_s` (None: the governor's
    clock when the change is made)."""

    mode: Mode
    reason: str
    now_s: float | None = None


class Failsafe:
    """What every failsafe says of itself: its name, its config fields, and, for the docs' table, when
    it trips and what the drone then does."""

    name: str = ""
    checked: str = ""  # when it is checked (the table's column)
    trips_when: str = ""
    action: str = ""
    config_fields: tuple[str, ...] = ()

    def example_reason(self, c: SafetyConfig) -> str:
        """A reason as its own `reason` writes it, at the config's limits (the docs' table)."""
        raise NotImplementedError


# ---- timed from the source's last-heard time ----------------------------------------------------


class SourceFailsafe(Failsafe):
    """What one source's silence calls for. `silent_s`: seconds since it was last heard (since it was
    watched, when never)."""

    checked = "every tick, first"
    label: str = ""

    def calls_for(self, source: Source, silent_s: float, now_s: float, c: SafetyConfig) -> Mode | None:
        """The highest mode the source's silence calls for now (None: none)."""
        raise NotImplementedError

    def back(self, source: Source, silent_s: float, c: SafetyConfig) -> bool:
        """Whether a source that tripped is back by itself (False: only something else clears it)."""
        return False

    def reason(self, source: Source, silent_s: float, now_s: float) -> str:
        """The reason of the mode change it trips."""
        if source.last_heard_s is not None:
            since = f"last heard {silent_s:.2f} s ago"
        else:
            since = f"never heard in {silent_s:.2f} s of flight"
        return f"{self.label} ({since})"

    def example_reason(self, c: SafetyConfig) -> str:
        silent_s = self._example_silence_s(c)
        return self.reason(Source(self.name, 0.0, last_heard_s=0.0), silent_s, silent_s)

    def _example_silence_s(self, c: SafetyConfig) -> float:
        return float(getattr(c, self.config_fields[0])) if self.config_fields else 0.0


class LinkLost(SourceFailsafe):
    """The ground-station link: hold after link_lost_hold_s, land after link_lost_land_s; back once
    heard within link_lost_hold_s."""

    name = LINK
    label = "ground-station link lost"
    trips_when = (
        "no message from the ground station (a link is attached) for `link_lost_hold_s`, "
        "then `link_lost_land_s`"
    )
    action = "hold, then land"
    config_fields = ("link_lost_hold_s", "link_lost_land_s")

    def calls_for(self, source: Source, silent_s: float, now_s: float, c: SafetyConfig) -> Mode | None:
        if silent_s >= c.link_lost_land_s:
            return Mode.LANDING
        return Mode.HOLD if silent_s >= c.link_lost_hold_s else None

    def back(self, source: Source, silent_s: float, c: SafetyConfig) -> bool:
        return silent_s < c.link_lost_hold_s


class PilotSilent(SourceFailsafe):
    """The pilot: hold once a request's reply is overdue with no valid action (the deadline is set by
    `pilot_asked`); only a valid action (the governor's pilot_ok) or a resume clears it."""

    name = PILOT
    label = "pilot silent (no valid action)"
    trips_when = (
        "no valid action `pilot_silence_hold_s` (or the pending reply's deadline, if later) after a request"
    )
    action = "hold; a valid action lifts it when no ground station is attached"
    config_fields = ("pilot_silence_hold_s",)

    def calls_for(self, source: Source, silent_s: float, now_s: float, c: SafetyConfig) -> Mode | None:
        return Mode.HOLD if source.due_s is not None and now_s >= source.due_s else None

    def reason(self, source: Source, silent_s: float, now_s: float) -> str:
        waited_s = now_s - (source.asked_s if source.asked_s is not None else now_s)
        return f"{self.label}: no valid action in {silent_s:.2f} s (request unanswered {waited_s:.2f} s)"

    def example_reason(self, c: SafetyConfig) -> str:
        silent_s = c.pilot_silence_hold_s
        return self.reason(Source(PILOT, 0.0, last_heard_s=0.0, asked_s=0.0), silent_s, silent_s)


class VideoStale(SourceFailsafe):
    """The video: hold frame_stale_hold_s after the last fresh frame, once a read found it stale; back
    with the next fresh frame."""

    name = VIDEO
    label = "video stale"
    trips_when = "no fresh camera frame for `frame_stale_hold_s`, once a read found the video stale"
    action = "hold; a valid action on a fresh frame lifts it when no ground station is attached"
    config_fields = ("frame_stale_hold_s",)

    def calls_for(self, source: Source, silent_s: float, now_s: float, c: SafetyConfig) -> Mode | None:
        return Mode.HOLD if source.failing and silent_s >= c.frame_stale_hold_s else None

    def back(self, source: Source, silent_s: float, c: SafetyConfig) -> bool:
        return not source.failing


class TelemetryStale(SourceFailsafe):
    """The vehicle's telemetry: land after telemetry_stale_land_s; a landing is never undone."""

    name = TELEMETRY
    label = "vehicle telemetry stale"
    trips_when = "no vehicle telemetry for `telemetry_stale_land_s` (timed from take-off)"
    action = "land"
    config_fields = ("telemetry_stale_land_s",)

    def calls_for(self, source: Source, silent_s: float, now_s: float, c: SafetyConfig) -> Mode | None:
        return Mode.LANDING if silent_s >= c.telemetry_stale_land_s else None


class OnboardStalled(SourceFailsafe):
    """The onboard process stalled (it did not run): `safety.on_stall` says hold or land (or nothing);
    back once the vehicle's telemetry and the link have been heard since the stall ended and the video
    is not stale (FailsafeWatchdogs.check clears it)."""

    name = ONBOARD
    label = "onboard stalled"
    trips_when = "the actuation loop itself did not run for `stall_s` (SIGSTOP, swap, starvation)"
    action = (
        "`on_stall`: hold until vehicle, link and video are fresh again, then fly on; or land; or log only"
    )
    config_fields = ("stall_s", "on_stall")

    def calls_for(self, source: Source, silent_s: float, now_s: float, c: SafetyConfig) -> Mode | None:
        if not source.failing or c.on_stall == "continue":
            return None
        return Mode.LANDING if c.on_stall == "land" else Mode.HOLD

    def back(self, source: Source, silent_s: float, c: SafetyConfig) -> bool:
        return not source.failing

    def reason(self, source: Source, silent_s: float, now_s: float) -> str:
        return f"{self.label} {source.stall_s:.1f} s (the process did not run; not a source's silence)"

    def example_reason(self, c: SafetyConfig) -> str:
        return self.reason(Source(ONBOARD, 0.0, stall_s=3.0), 0.0, 0.0)


# ---- read off the tick --------------------------------------------------------------------------


@dataclass
class TickState:
    """What the tick failsafes read and latch, one per governor (under the governor's lock)."""

    asked: Setpoint
    telemetry: Telemetry | None
    now_s: float | None
    collision: str | None  # the first collision the vehicle reported (latched: it ends the run)


class TickFailsafe(Failsafe):
    checked = "every tick, after the sources"
    refuses_setpoint = False  # True: the tick sends a hold at once, nothing after it is checked
    clamp_detail = ""  # the clamp recorded when it refuses the setpoint

    def check(self, tick: TickState, c: SafetyConfig) -> Trip | None:
        raise NotImplementedError


class NonFiniteSetpoint(TickFailsafe):
    """A bug upstream (a NaN depth, a division by zero): the setpoint is never sent; the drone holds."""

    name = "non-finite"
    trips_when = "a setpoint with a NaN or infinite component"
    action = "hold; never sent (a `non-finite` clamp), and the plan that made it is dropped"
    refuses_setpoint = True
    clamp_detail = "non-finite setpoint: hold"

    def check(self, tick: TickState, c: SafetyConfig) -> Trip | None:
        if all(math.isfinite(v) for v in tick.asked):
            return None
        return Trip(Mode.HOLD, self.reason(tick.asked), tick.now_s)

    def reason(self, asked: Setpoint) -> str:
        return f"non-finite setpoint {tuple(asked)}"

    def example_reason(self, c: SafetyConfig) -> str:
        return self.reason(Setpoint(math.nan, 0.0, 0.0, 0.0))


class Collision(TickFailsafe):
    """A collision the vehicle reports holds (or lands); the first one's reason is latched: later
    contacts (resting on what it hit) are the same collision, and it ends the run."""

    name = "collision"
    trips_when = "the vehicle reports a collision"
    action = "hold and report (`land_on_collision: true`: land); the run ends"
    config_fields = ("land_on_collision",)

    def check(self, tick: TickState, c: SafetyConfig) -> Trip | None:
        t = tick.telemetry
        if t is None or not t.collided:
            return None
        if tick.collision is None:
            tick.collision = self.reason(t.collided_with)
        return Trip(Mode.LANDING if c.land_on_collision else Mode.HOLD, tick.collision)

    def reason(self, collided_with: str) -> str:
        return f"collision with {collided_with}" if collided_with else "collision"

    def example_reason(self, c: SafetyConfig) -> str:
        return self.reason("OBJECT")


class BatteryLow(TickFailsafe):
    name = "battery"
    trips_when = "the battery at or below `battery_land_fraction`"
    action = "land"
    config_fields = ("battery_land_fraction",)

    def check(self, tick: TickState, c: SafetyConfig) -> Trip | None:
        t = tick.telemetry
        if t is None or t.battery_fraction is None or t.battery_fraction > c.battery_land_fraction:
            return None
        return Trip(Mode.LANDING, self.reason(t.battery_fraction, c))

    def reason(self, battery_fraction: float, c: SafetyConfig) -> str:
        return f"battery {battery_fraction:.0%} <= {c.battery_land_fraction:.0%}"

    def example_reason(self, c: SafetyConfig) -> str:
        return self.reason(c.battery_land_fraction, c)


# ---- checked when the decision loop reports -----------------------------------------------------


class ReportFailsafe(Failsafe):
    checked = "on each pilot failure reported"


class PilotFailures(ReportFailsafe):
    """Pilot failures in a row (malformed or stale replies, an unreachable backend): a valid action
    resets the count (SafetyGovernor.pilot_ok)."""

    name = "pilot-failures"
    trips_when = (
        "`max_consecutive_failures` pilot failures in a row: malformed or stale replies, "
        "an unreachable backend"
    )
    action = "hold"
    config_fields = ("max_consecutive_failures",)

    def check(self, failures: int, why: str, c: SafetyConfig) -> Trip | None:
        return Trip(Mode.HOLD, self.reason(failures, why)) if failures >= c.max_consecutive_failures else None

    def reason(self, failures: int, why: str) -> str:
        return f"{failures} consecutive pilot failures (last: {why})"

    def example_reason(self, c: SafetyConfig) -> str:
        return self.reason(c.max_consecutive_failures, "malformed: ...")


# ---- the list -----------------------------------------------------------------------------------

SOURCE_FAILSAFES: tuple[SourceFailsafe, ...] = (
    LinkLost(),
    PilotSilent(),
    VideoStale(),
    TelemetryStale(),
    OnboardStalled(),
)
TICK_FAILSAFES: tuple[TickFailsafe, ...] = (NonFiniteSetpoint(), Collision(), BatteryLow())
PILOT_FAILURES = PilotFailures()
FAILSAFES: tuple[Failsafe, ...] = (*SOURCE_FAILSAFES, *TICK_FAILSAFES, PILOT_FAILURES)

BY_SOURCE: dict[str, SourceFailsafe] = {f.name: f for f in SOURCE_FAILSAFES}
SOURCE_LABELS = {f.name: f.label for f in SOURCE_FAILSAFES}


def _value(value: object) -> str:
    """A config value as the YAML file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float | int) else str(value)


def _config_cell(fields: tuple[str, ...], c: SafetyConfig) -> str:
    return ", ".join(f"`safety.{name}` ({_value(getattr(c, name))})" for name in fields) or "-"


def failsafe_table(c: SafetyConfig | None = None) -> str:
    """FAILSAFES as docs/safety.md's table (between its `failsafes:begin`/`end` markers), with the
    defaults of `c` (SafetyConfig's when None)."""
    c = SafetyConfig() if c is None else c
    rows = [
        "| failsafe | checked | trips when | the drone | reason (the mode's, in `events.jsonl`) "
        "| config (default) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for f in FAILSAFES:
        cells = (
            f"`{f.name}`",
            f.checked,
            f.trips_when,
            f.action,
            f'"{f.example_reason(c)}"',
            _config_cell(f.config_fields, c),
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
