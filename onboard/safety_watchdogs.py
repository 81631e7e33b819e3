"""The failsafes timed from when each source was last heard, on the runtime's clock: the ground-station
link (hold, then land), the pilot (no valid action: hold), the video (no fresh frame: hold) and the
vehicle's telemetry (land).

One rule for every source, applied on every actuation tick (`FailsafeWatchdogs.check`): the source's
failsafe (a `SourceFailsafe` of onboard.safety_failsafes' list) says which mode its silence calls for
now; a source trips once to each mode above the one it has caused already, and when its failsafe
says it is back, that is logged while the mode stays (a source that comes back never resumes flight
by itself). The failsafes differ only in their limits and in what "silent" and "back" mean for that
source.
"""

from __future__ import annotations

from collections.abc import Callable

from onboard.safety_config import SafetyConfig
from onboard.safety_failsafes import (
    BY_SOURCE,
    LINK,
    ONBOARD,
    PILOT,
    SOURCE_LABELS,
    TELEMETRY,
    VIDEO,
    Source,
)
from onboard.safety_modes import ORDER, Mode, ModeMachine, TrippedBy

__all__ = ["LINK", "ONBOARD", "PILOT", "SOURCE_LABELS", "TELEMETRY", "VIDEO", "FailsafeWatchdogs", "Source"]


def _rank(mode: Mode | None) -> int:
    return -1 if mode is None else ORDER.index(mode)


class FailsafeWatchdogs:
    """Every watched source, and the mode changes their silence causes (through the ModeMachine).

    Not thread-safe on its own: SafetyGovernor calls every method under its one lock."""

    def __init__(self, config: SafetyConfig, modes: ModeMachine) -> None:
        self.config = config
        self._modes = modes
        self._sources: dict[str, Source] = {}  # checked in the order they were first watched

    def watch(self, name: str, now_s: float, poll: Callable[[], float | None] | None = None) -> None:
        if name not in BY_SOURCE:
            raise ValueError(f"unknown failsafe source {name!r} (one of {sorted(SOURCE_LABELS)})")
        self._sources[name] = Source(name, now_s, poll=poll)

    def flight_started(self, now_s: float) -> None:
        for source in self._sources.values():
            if source.last_heard_s is None and (source.poll is None or source.poll() is None):
                source.since_s = now_s
        self._sources[TELEMETRY] = Source(TELEMETRY, now_s)

    def watching(self, name: str) -> bool:
        return name in self._sources

    def _source(self, name: str, now_s: float) -> Source:
        """The source, watched from now_s when it was not yet."""
        source = self._sources.get(name)
        if source is None:
            source = self._sources[name] = Source(name, now_s)
        return source

    def heard(self, name: str, now_s: float) -> None:
        source = self._source(name, now_s)
        source.last_heard_s = now_s if source.last_heard_s is None else max(source.last_heard_s, now_s)
        source.failing = False

    def video_stale(self, now_s: float) -> None:
        self._source(VIDEO, now_s).failing = True

    def pilot_asked(self, now_s: float, deadline_s: float) -> None:
        source = self._source(PILOT, now_s)
        if source.due_s is None:
            source.asked_s = now_s
            source.due_s = now_s + max(self.config.pilot_silence_hold_s, deadline_s)
            source.failing = True

    def source_age_s(self, name: str, now_s: float) -> float | None:
        source = self._sources.get(name)
        return None if source is None else now_s - self._last_heard(source)

    def last_heard_s(self, name: str) -> float | None:
        source = self._sources.get(name)
        return None if source is None else source.last_heard_s

    def _last_heard(self, source: Source) -> float:
        """The source's reference time, after taking in its own polled last-heard time (the link's)."""
        if source.poll is not None:
            polled = source.poll()
            if polled is not None and (source.last_heard_s is None or polled > source.last_heard_s):
                source.last_heard_s = polled
        return source.reference_s()

    def stalled(self, gap_s: float, now_s: float) -> None:
        """The process did not run for gap_s until now_s: every source's clock moves on by the gap
        (a source heard just before the stall is not silent for it), and the stall is a source of its
        own that trips by `on_stall` at the next check."""
        for source in self._sources.values():
            if source.name == ONBOARD:
                continue
            source.since_s += gap_s
            if source.last_heard_s is not None:
                source.last_heard_s = min(now_s, source.last_heard_s + gap_s)
            if source.asked_s is not None and source.due_s is not None:
                source.asked_s, source.due_s = source.asked_s + gap_s, source.due_s + gap_s
        stall = self._source(ONBOARD, now_s)
        stall.failing, stall.stall_s, stall.last_heard_s = True, gap_s, now_s

    def _stall_over(self, stall: Source) -> bool:
        """The vehicle's telemetry and the link (when watched) heard since the stall ended, the video
        not stale: the state the drone flies on is fresh again."""
        end_s = stall.last_heard_s if stall.last_heard_s is not None else stall.since_s
        for name in (TELEMETRY, LINK):
            source = self._sources.get(name)
            if source is not None and (self._last_heard(source) <= end_s):
                return False
        video = self._sources.get(VIDEO)
        return video is None or not video.failing

    def check(self, now_s: float) -> None:
        """The one rule, for every source in turn: trip to what its silence calls for, or log it back.
        A stall that is over and was the hold's only cause lifts it (the drone flies on by itself)."""
        stall = self._sources.get(ONBOARD)
        if stall is not None and stall.failing and self._stall_over(stall):
            stall.failing = False
            if self._modes.mode == Mode.HOLD and self._modes.hold_causes == {ONBOARD}:
                stall.tripped = None
                self._modes.resume("onboard stall over: vehicle, link and video fresh again", now_s)
        for source in list(self._sources.values()):
            failsafe = BY_SOURCE[source.name]
            silent_s = now_s - self._last_heard(source)
            wanted = failsafe.calls_for(source, silent_s, now_s, self.config)
            if wanted is not None and _rank(wanted) > _rank(source.tripped):
                source.tripped = wanted
                why = failsafe.reason(source, silent_s, now_s)
                self._modes.trip(wanted, why, now_s, TrippedBy(source.name, source.last_heard_s))
            elif source.tripped is not None and failsafe.back(source, silent_s, self.config):
                self._back(source, now_s)

    def _back(self, source: Source, now_s: float) -> None:
        source.tripped = None
        lifted_by = "operator" if LINK in self._sources else "operator or a fresh valid pilot action"
        self._modes.source_back(source.name, source.last_heard_s, now_s, lifted_by)

    def pilot_may_lift(self, require_back: bool = True) -> bool:
        """Whether a fresh valid pilot action may lift the current hold: no ground station attached,
        and only the pilot and the video caused it (`require_back`: and the video is fresh again)."""
        hold_causes = self._modes.hold_causes
        if self._modes.mode != Mode.HOLD or LINK in self._sources:
            return False
        if not hold_causes or not hold_causes <= {PILOT, VIDEO}:
            return False
        video = self._sources.get(VIDEO)
        video_back = not (VIDEO in hold_causes and video is not None and video.failing)
        return video_back or not require_back

    def pilot_ok(self, now_s: float) -> bool:
        """A valid pilot action at now_s: the pilot is heard, and a hold it may lift is lifted (True)."""
        lifted = False
        source = self._sources.get(PILOT)
        tripped = source is not None and source.tripped is not None
        if source is not None:
            source.last_heard_s = now_s
            source.failing = False
            source.asked_s = source.due_s = None
        if self.pilot_may_lift():
            causes = " and ".join(sorted(self._modes.hold_causes))
            lifted = self._modes.resume(f"fresh valid pilot action after {causes} back", now_s)
        if source is not None:
            if tripped and not lifted:
                self._back(source, now_s)
            source.tripped = None
        return lifted

    def timed_afresh(self, now_s: float) -> None:
        """After an operator's resume: the pilot and the video are timed from now, nothing has tripped."""
        for source in self._sources.values():
            if source.name in (PILOT, VIDEO):
                source.failing = False
                source.asked_s = source.due_s = None
                source.last_heard_s = now_s
            source.tripped = None
