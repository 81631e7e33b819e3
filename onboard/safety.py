"""Safety below the model, applied on every actuation tick whatever the pilot said.

The governor turns the setpoint the plan asks for into the one that is sent, and reports every
clamp with both values. It also owns the flight mode: normal flight, hold (with a reason), landing,
e-stop. Each transition is logged once with why, and handed to `on_transition` (the runtime writes
it to events.jsonl at once).

Every failsafe is one object of onboard.safety_failsafes' list (`FAILSAFES`), iterated on every tick
(`filter(..., now_s)`): first those timed from when their source was last heard on the runtime's clock
(the ground-station link: hold, then land; the pilot: no valid action, hold; the video: no fresh
frame, hold; the vehicle's telemetry: land; the process's own stall), then those read off the tick
(a non-finite setpoint, a collision, a low battery); a pilot failure is counted when it is reported.
A source that comes back never resumes flight by itself: the hold stays until the operator lifts it
(`resume`), or, when no ground station is attached, until a fresh valid pilot action arrives with
every source that caused the hold back (`pilot_ok`).

`SafetyGovernor` is the one object the runtime talks to; it serialises its parts under one lock:
the envelope and fleet traffic (onboard.safety_envelope), the failsafe watchdogs
(onboard.safety_watchdogs) and the mode machine with its transition log (onboard.safety_modes). The
limits are onboard.safety_config's `SafetyConfig`. Their public names are re-exported here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from common.interfaces import Telemetry
from common.pose import Pose
from onboard.safety_config import SafetyConfig
from onboard.safety_envelope import Clamp, FleetTraffic, SafetyEnvelope
from onboard.safety_failsafes import PILOT_FAILURES, TICK_FAILSAFES, TickFailsafe, TickState
from onboard.safety_modes import Mode, ModeMachine, SafetyStatus, Transition, TransitionSink
from onboard.safety_obstacles import ObstacleMap, keep_clear
from onboard.safety_watchdogs import LINK, PILOT, SOURCE_LABELS, TELEMETRY, VIDEO, FailsafeWatchdogs, Source
from onboard.setpoints import HOLD, Setpoint

__all__ = [
    "LINK",
    "PILOT",
    "SOURCE_LABELS",
    "TELEMETRY",
    "VIDEO",
    "Clamp",
    "Mode",
    "SafetyConfig",
    "SafetyGovernor",
    "SafetyStatus",
    "Source",
    "Transition",
    "TransitionSink",
]

log = logging.getLogger(__name__)


class SafetyGovernor:
    """Thread-safe: the decision loop reports failures and commands, the actuation loop filters."""

    def __init__(self, config: SafetyConfig, home: Pose, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` ages fleet traffic: the runtime's own (simulated time in lock-step, where a slow
        model call between two ticks must not age a position the driver set that same tick)."""
        self.config = config
        self.home = home
        self._clock = clock
        # One lock over the modes and the watchdogs: a failsafe's trip and the mode it changes are one
        # step. The traffic has its own (it shares no state with them).
        self._lock = threading.Lock()
        self._modes = ModeMachine(clock, log, config.estop_action)
        self._watchdogs = FailsafeWatchdogs(config, self._modes)
        self._envelope = SafetyEnvelope(config)
        self._traffic = FleetTraffic(config.traffic_max_age_s, clock)
        # What the vehicle's world knows stands in it (onboard.safety_obstacles): fed by the actuator's
        # ObstacleFeed where the vehicle is an ObstacleSource, empty otherwise.
        self.obstacles = ObstacleMap(clock)
        self.on_transition: TransitionSink | None = None
        # The first collision the vehicle reported (what it hit, when it says; the `collision`
        # failsafe latches it): it ends the run.
        self.collision: str | None = None

    @property
    def clock(self) -> Callable[[], float]:
        """The governor's clock (the runtime's: simulated time in lock-step)."""
        return self._clock

    # ---- mode changes -------------------------------------------------------------------------
    @property
    def mode(self) -> Mode:
        with self._lock:
            return self._modes.mode

    @property
    def reason(self) -> str:
        with self._lock:
            return self._modes.status.reason

    def status(self) -> SafetyStatus:
        with self._lock:
            s = self._modes.status
            return SafetyStatus(s.mode, s.reason, s.consecutive_failures, s.clamps, list(s.events))

    def _flush(self) -> None:
        """Hand the transitions made under the lock to on_transition (outside it: the sink writes a file)."""
        with self._lock:
            pending = self._modes.take_pending()
        sink = self.on_transition
        for transition in pending:
            if sink is None:
                continue
            try:
                sink(transition)
            except Exception:  # recording must never break the safety loop
                log.exception("safety transition sink failed")

    def hold(self, reason: str) -> bool:
        with self._lock:
            changed = self._modes.set_mode(Mode.HOLD, reason)
        self._flush()
        return changed

    def land(self, reason: str, planned: bool = False) -> bool:
        """`planned`: the end of a run, not a failsafe (logged at INFO instead of WARNING)."""
        with self._lock:
            changed = self._modes.set_mode(Mode.LANDING, reason, planned=planned)
        self._flush()
        return changed

    def estop(self, reason: str = "e-stop") -> bool:
        with self._lock:
            changed = self._modes.set_mode(Mode.ESTOP, reason)
        self._flush()
        return changed

    def resume(self, reason: str) -> bool:
        """Back to normal flight from HOLD (an operator's new instruction). Never from landing or e-stop.

        The operator takes over the failsafes' judgement: the pilot and the video are timed afresh from
        now (a source still silent holds again after its full time)."""
        with self._lock:
            now_s = self._clock()
            if not self._modes.resume(reason, now_s):
                return False
            self._watchdogs.timed_afresh(now_s)
        self._flush()
        return True

    def land_requested(self) -> bool:
        """True once when the mode asks the vehicle to land (LANDING, or ESTOP configured to land)."""
        with self._lock:
            return self._modes.land_requested()

    # ---- failsafe sources ---------------------------------------------------------------------
    def watch(self, name: str, now_s: float, poll: Callable[[], float | None] | None = None) -> None:
        """Start timing a source from now (a source never heard is silent since it was first watched).

        `poll` returns the source's own last-heard time on this governor's clock (None: never heard):
        the link's, read on every tick."""
        with self._lock:
            self._watchdogs.watch(name, now_s, poll)

    def flight_started(self, now_s: float) -> None:
        """Take-off done: the failsafes act from here (on the ticks). The vehicle's telemetry is timed
        from now, and so is a source not heard yet (a ground station that never came up holds
        link_lost_hold_s into the flight and lands link_lost_land_s into it)."""
        with self._lock:
            self._watchdogs.flight_started(now_s)

    def watching(self, name: str) -> bool:
        with self._lock:
            return self._watchdogs.watching(name)

    def heard(self, name: str, now_s: float) -> None:
        """The source was heard at now_s (a fresh frame, a telemetry sample); watched from then on."""
        with self._lock:
            self._watchdogs.heard(name, now_s)

    def video_stale(self, now_s: float) -> None:
        """A camera read found no fresh frame: the video holds frame_stale_hold_s after its last one."""
        with self._lock:
            self._watchdogs.video_stale(now_s)

    def pilot_asked(self, now_s: float, deadline_s: float) -> None:
        """A decision request started (before the camera is read). A valid action is due within
        max(pilot_silence_hold_s, the reply's deadline) of the first request left unanswered."""
        with self._lock:
            self._watchdogs.pilot_asked(now_s, deadline_s)

    def source_age_s(self, name: str, now_s: float) -> float | None:
        """Seconds since the source was last heard (since watched, when never), None when not watched."""
        with self._lock:
            return self._watchdogs.source_age_s(name, now_s)

    def last_heard_s(self, name: str) -> float | None:
        with self._lock:
            return self._watchdogs.last_heard_s(name)

    def stalled(self, gap_s: float, now_s: float) -> None:
        """The onboard process itself did not run for `gap_s` until `now_s` (the actuation loop's own
        tick gap): that time is not the sources' silence, and what follows is `safety.on_stall`."""
        with self._lock:
            self._watchdogs.stalled(gap_s, now_s)
        self._flush()

    def pilot_may_lift(self) -> bool:
        """Whether the current hold is one a fresh valid pilot action can lift, so that the decision
        loop keeps reading frames and asking the pilot while it holds: no ground station attached, and
        only failsafe sources an action can show are back (the pilot, the video) caused it."""
        with self._lock:
            return self._watchdogs.pilot_may_lift(require_back=False)

    def check_failsafes(self, now_s: float) -> None:
        """Every source's silence against its limits; called on every actuation tick (by filter)."""
        with self._lock:
            self._watchdogs.check(now_s)
        self._flush()

    # ---- inputs from the decision loop and the link -------------------------------------------
    def pilot_failed(self, why: str) -> None:
        with self._lock:
            status = self._modes.status
            status.consecutive_failures += 1
            trip = PILOT_FAILURES.check(status.consecutive_failures, why, self.config)
            if trip is not None:
                self._modes.set_mode(trip.mode, trip.reason, now_s=trip.now_s)
        self._flush()

    def pilot_ok(self, now_s: float | None = None) -> bool:
        """A valid pilot action arrived (before it is executed). True when it lifted a failsafe hold
        (no ground station, every source that caused it back)."""
        with self._lock:
            self._modes.status.consecutive_failures = 0
            lifted = self._watchdogs.pilot_ok(self._clock() if now_s is None else now_s)
        self._flush()
        return lifted

    def set_traffic(
        self,
        positions_ned: Sequence[tuple[float, float, float]],
        velocities_ned_m_s: Sequence[tuple[float, float, float]] | None = None,
        ages_s: Sequence[float] | None = None,
    ) -> None:
        """The other drones' world NED positions (replacing the previous ones; empty: none known), with
        their velocities and how old each report is, when known.

        Whoever flies several drones in one world feeds this: onboard.lockstep's fleet driver every
        tick, the ground station's traffic relay (onboard.link) a few times a second. A drone alone,
        or one whose fleet mates' positions are unknown, keeps none."""
        self._traffic.set(positions_ned, velocities_ned_m_s, ages_s)

    def traffic_now(self) -> list[tuple[float, float, float]]:
        """Fleet mates' positions now: each report carried forward by its velocity over its age, the
        ones older than traffic_max_age_s left out."""
        return self._traffic.now()

    # ---- the per-tick filter ------------------------------------------------------------------
    def filter(
        self, asked: Setpoint, telemetry: Telemetry | None, now_s: float | None = None
    ) -> tuple[Setpoint, list[Clamp]]:
        """The setpoint to send this tick, and the clamps that changed it (empty when none did).

        The order is the safety argument: with now_s (the actuation tick's time) the source failsafes
        first, then the tick failsafes in their list's order (a non-finite setpoint: never sent; the
        vehicle's collision and battery), the mode (anything but flying sends a hold), and only then the
        envelope: speed caps, fence, separation; then, flying or holding, the known obstacles'
        clearance and the way back into the envelope."""
        clamps: list[Clamp] = []
        if now_s is not None:
            self.check_failsafes(now_s)
        refused = self._check_tick_failsafes(asked, telemetry, now_s)
        if refused is not None:
            clamps.append(Clamp(refused.name, asked, HOLD, refused.clamp_detail))
            return self._count(HOLD, clamps)
        mode = self.mode
        if mode in (Mode.LANDING, Mode.ESTOP):
            if not asked.is_zero:
                clamps.append(Clamp("mode", asked, HOLD, f"{mode.value}: {self.reason}"))
            return self._count(HOLD, clamps)
        if mode == Mode.HOLD:
            if not asked.is_zero:
                clamps.append(Clamp("mode", asked, HOLD, f"{mode.value}: {self.reason}"))
            sent = HOLD
        else:
            sent = self._envelope.speed_caps(asked, clamps)
            if telemetry is not None:
                sent = self._envelope.fence(sent, telemetry.pose, self.home, clamps)
                sent = self._envelope.separate(sent, telemetry.pose, self.traffic_now(), clamps)
        if telemetry is not None:  # holding or flying: clear of obstacles, and back inside the envelope
            sent = keep_clear(sent, telemetry.pose, self.home, self.obstacles.now(), self.config, clamps)
            sent = self._envelope.recover(sent, telemetry.pose, self.home, clamps)
        return self._count(sent, clamps)

    def _count(self, sent: Setpoint, clamps: list[Clamp]) -> tuple[Setpoint, list[Clamp]]:
        if clamps:
            with self._lock:
                self._modes.status.clamps += len(clamps)
        return sent, clamps

    def _check_tick_failsafes(
        self, asked: Setpoint, telemetry: Telemetry | None, now_s: float | None
    ) -> TickFailsafe | None:
        """TICK_FAILSAFES in order, each trip a mode change; the one that refused the setpoint (the
        tick then sends a hold and checks nothing after it), or None."""
        refused = None
        with self._lock:
            tick = TickState(asked, telemetry, now_s, self.collision)
            for failsafe in TICK_FAILSAFES:
                trip = failsafe.check(tick, self.config)
                self.collision = tick.collision
                if trip is None:
                    continue
                self._modes.set_mode(trip.mode, trip.reason, now_s=trip.now_s)
                if failsafe.refuses_setpoint:
                    refused = failsafe
                    break
        self._flush()
        return refused
