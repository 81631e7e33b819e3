"""Safety below the model, applied on every actuation tick whatever the pilot said.

The governor turns the setpoint the plan asks for into the one that is sent, and reports every
clamp with both values. It also owns the flight mode: normal flight, hold (with a reason), landing,
e-stop. Each transition is logged once with why, and handed to `on_transition` (the runtime writes
it to events.jsonl at once).

Failsafes are evaluated on every tick (`filter(..., now_s)`), each from the time since its source was
last heard on the runtime's clock: the ground-station link (hold, then land), the pilot (no valid
action: hold), the video (no fresh frame: hold) and the vehicle's telemetry (land). A source that
comes back never resumes flight by itself: the hold stays until the operator lifts it (`resume`), or,
when no ground station is attached, until a fresh valid pilot action arrives with every source that
caused the hold back (`pilot_ok`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

import msgspec

from common.interfaces import Telemetry
from common.pose import Pose
from onboard.config_limits import check_limits
from onboard.controller import body_to_world, world_to_body
from onboard.setpoints import HOLD, Setpoint

log = logging.getLogger(__name__)


class SafetyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    geofence_radius_m: float = 150.0  # horizontal distance from home
    altitude_floor_m: float = 0.5  # above home; no descent below it while flying
    altitude_ceiling_m: float = 60.0
    max_horizontal_m_s: float = 3.0
    max_vertical_m_s: float = 1.5
    max_yaw_rate_deg_s: float = 90.0
    # How far ahead the geofence looks: a setpoint that would cross the fence within this time is cut.
    lookahead_s: float = 0.5
    max_consecutive_failures: int = 5  # pilot failures (malformed, stale, backend down) before hold
    link_lost_hold_s: float = 3.0  # ground-station link lost this long -> hold
    link_lost_land_s: float = 30.0  # ... this long -> land
    battery_land_fraction: float = 0.15
    estop_action: str = "land"  # "land" or "kill"
    land_on_collision: bool = False  # default: hold and report
    # Fleet traffic (other drones' positions, when something feeds them: see set_traffic): motion that
    # would bring the drone within this horizontal distance of one inside the look-ahead is cut, unless
    # the two are this far apart in height.
    separation_m: float = 1.5
    separation_vertical_m: float = 1.0
    # A fleet mate's position this old (its report's age plus the time since it arrived) is dropped:
    # a relay that stopped must not leave phantom drones in the way. Younger ones are carried forward
    # by their velocity.
    traffic_max_age_s: float = 1.0
    # Failsafes from the time since a source was last heard (evaluated on every actuation tick):
    pilot_silence_hold_s: float = 3.0  # no valid pilot action this long (beyond a pending reply's deadline)
    frame_stale_hold_s: float = 1.0  # no fresh camera frame this long, once a read found the video stale
    telemetry_stale_land_s: float = 2.0  # no vehicle telemetry this long -> land

    def __post_init__(self) -> None:
        check_limits(self)  # onboard.config_limits: every number's valid range
        if self.estop_action not in ("land", "kill"):
            raise ValueError(f"estop_action={self.estop_action!r} must be 'land' or 'kill'")
        if not 0 <= self.altitude_floor_m < self.altitude_ceiling_m:
            raise ValueError(
                f"need 0 <= altitude_floor_m ({self.altitude_floor_m}) < altitude_ceiling_m "
                f"({self.altitude_ceiling_m})"
            )


class Mode(str, Enum):
    FLYING = "flying"  # the pilot's plans are executed (within the limits)
    HOLD = "hold"  # position hold; the pilot's plans are not executed
    LANDING = "landing"
    ESTOP = "estop"


@dataclass(frozen=True)
class Clamp:
    """One limit that changed a setpoint: what was asked, what was sent, and which rule."""

    rule: str
    asked: Setpoint
    sent: Setpoint
    detail: str


# Failsafe sources (SafetyGovernor.watch / heard): what each one does when silent.
LINK, PILOT, VIDEO, TELEMETRY = "link", "pilot", "video", "telemetry"
SOURCE_LABELS = {
    LINK: "ground-station link lost",
    PILOT: "pilot silent (no valid action)",
    VIDEO: "video stale",
    TELEMETRY: "vehicle telemetry stale",
}


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

    def reference_s(self) -> float:
        return self.last_heard_s if self.last_heard_s is not None else self.since_s


@dataclass(frozen=True)
class Transition:
    """A mode change, as events.jsonl records it."""

    mode: Mode
    previous: Mode
    reason: str
    now_s: float
    source: str | None = None  # the failsafe source, when one caused it
    last_heard_s: float | None = None  # that source's last-heard time (runtime clock), None: never


TransitionSink = Callable[[Transition], None]


@dataclass
class SafetyStatus:
    mode: Mode = Mode.FLYING
    reason: str = ""
    consecutive_failures: int = 0
    clamps: int = 0
    events: list[str] = field(default_factory=list)


class SafetyGovernor:
    """Thread-safe: the decision loop reports failures and commands, the actuation loop filters."""

    def __init__(self, config: SafetyConfig, home: Pose, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` ages fleet traffic: the runtime's own (simulated time in lock-step, where a slow
        model call between two ticks must not age a position the driver set that same tick)."""
        self.config = config
        self.home = home
        self._clock = clock
        self._lock = threading.Lock()
        self._status = SafetyStatus()
        self._link_lost_since_s: float | None = None
        self._land_requested = False
        self._sources: dict[str, Source] = {}
        # Why the current hold holds: failsafe source names, or "other" (operator, pilot failures,
        # collision, ...): only a hold made of sources that are back again can be lifted by the pilot.
        self._hold_causes: set[str] = set()
        self._pending: list[Transition] = []  # transitions made under the lock, handed out after it
        self.on_transition: TransitionSink | None = None
        # other drones: (world NED position, velocity, age when set, self._clock() when set)
        self._traffic: list[tuple[tuple[float, float, float], tuple[float, float, float], float, float]] = []

    # ---- mode changes -------------------------------------------------------------------------
    @property
    def mode(self) -> Mode:
        with self._lock:
            return self._status.mode

    @property
    def reason(self) -> str:
        with self._lock:
            return self._status.reason

    def status(self) -> SafetyStatus:
        with self._lock:
            s = self._status
            return SafetyStatus(s.mode, s.reason, s.consecutive_failures, s.clamps, list(s.events))

    def _set_mode(
        self,
        mode: Mode,
        reason: str,
        cause: str = "other",
        now_s: float | None = None,
        last_heard_s: float | None = None,
        planned: bool = False,
    ) -> bool:
        """Caller holds the lock. Modes only escalate (FLYING < HOLD < LANDING < ESTOP) unless resumed."""
        order = [Mode.FLYING, Mode.HOLD, Mode.LANDING, Mode.ESTOP]
        if order.index(mode) < order.index(self._status.mode):
            return False
        if mode == Mode.HOLD:
            self._hold_causes.add(cause)
        if mode == self._status.mode and (reason == self._status.reason or cause in SOURCE_LABELS):
            return False  # (a failsafe joins a hold that holds already: the first reason stays)
        previous = self._status.mode
        self._status.mode = mode
        self._status.reason = reason
        self._status.events.append(f"{mode.value}: {reason}")
        # a planned landing (the run is over) is news, not a warning: successful runs print none
        log.log(logging.INFO if planned else logging.WARNING, "safety: %s (%s)", mode.value, reason)
        source = cause if cause in SOURCE_LABELS else None
        self._pending.append(
            Transition(
                mode,
                previous,
                reason,
                self._clock() if now_s is None else now_s,
                source,
                last_heard_s,
            )
        )
        return True

    def _flush(self) -> None:
        """Hand the transitions made under the lock to on_transition (outside it: the sink writes a file)."""
        with self._lock:
            pending, self._pending = self._pending, []
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
            changed = self._set_mode(Mode.HOLD, reason)
        self._flush()
        return changed

    def land(self, reason: str, planned: bool = False) -> bool:
        """`planned`: the end of a run, not a failsafe (logged at INFO instead of WARNING)."""
        with self._lock:
            changed = self._set_mode(Mode.LANDING, reason, planned=planned)
        self._flush()
        return changed

    def estop(self, reason: str = "e-stop") -> bool:
        with self._lock:
            changed = self._set_mode(Mode.ESTOP, reason)
        self._flush()
        return changed

    def resume(self, reason: str) -> bool:
        """Back to normal flight from HOLD (an operator's new instruction). Never from landing or e-stop.

        The operator takes over the failsafes' judgement: the pilot and the video are timed afresh from
        now (a source still silent holds again after its full time)."""
        with self._lock:
            now_s = self._clock()
            if not self._resume(reason, now_s):
                return False
            for source in self._sources.values():
                if source.name in (PILOT, VIDEO):
                    source.failing = False
                    source.asked_s = source.due_s = None
                    source.last_heard_s = now_s
                source.tripped = None
        self._flush()
        return True

    def _resume(self, reason: str, now_s: float) -> bool:
        """Caller holds the lock."""
        if self._status.mode != Mode.HOLD:
            return False
        previous = self._status.mode
        self._status.mode = Mode.FLYING
        self._status.reason = ""
        self._status.consecutive_failures = 0
        self._status.events.append(f"flying: {reason}")
        self._hold_causes.clear()
        self._pending.append(Transition(Mode.FLYING, previous, reason, now_s))
        log.info("safety: resume flying (%s)", reason)
        return True

    # ---- failsafe sources ---------------------------------------------------------------------
    def watch(self, name: str, now_s: float, poll: Callable[[], float | None] | None = None) -> None:
        """Start timing a source from now (a source never heard is silent since it was first watched).

        `poll` returns the source's own last-heard time on this governor's clock (None: never heard):
        the link's, read on every tick."""
        if name not in SOURCE_LABELS:
            raise ValueError(f"unknown failsafe source {name!r} (one of {sorted(SOURCE_LABELS)})")
        with self._lock:
            self._sources[name] = Source(name, now_s, poll=poll)

    def flight_started(self, now_s: float) -> None:
        """Take-off done: the failsafes act from here (on the ticks). The vehicle's telemetry is timed
        from now, and so is a source not heard yet (a ground station that never came up holds
        link_lost_hold_s into the flight and lands link_lost_land_s into it)."""
        with self._lock:
            for source in self._sources.values():
                if source.last_heard_s is None and (source.poll is None or source.poll() is None):
                    source.since_s = now_s
            self._sources[TELEMETRY] = Source(TELEMETRY, now_s)

    def watching(self, name: str) -> bool:
        with self._lock:
            return name in self._sources

    def heard(self, name: str, now_s: float) -> None:
        """The source was heard at now_s (a fresh frame, a telemetry sample); watched from then on."""
        with self._lock:
            source = self._sources.get(name)
            if source is None:
                source = self._sources[name] = Source(name, now_s)
            source.last_heard_s = now_s if source.last_heard_s is None else max(source.last_heard_s, now_s)
            source.failing = False

    def video_stale(self, now_s: float) -> None:
        """A camera read found no fresh frame: the video holds frame_stale_hold_s after its last one."""
        with self._lock:
            source = self._sources.get(VIDEO)
            if source is None:
                source = self._sources[VIDEO] = Source(VIDEO, now_s)
            source.failing = True

    def pilot_asked(self, now_s: float, deadline_s: float) -> None:
        """A decision request started (before the camera is read). A valid action is due within
        max(pilot_silence_hold_s, the reply's deadline) of the first request left unanswered."""
        with self._lock:
            source = self._sources.get(PILOT)
            if source is None:
                source = self._sources[PILOT] = Source(PILOT, now_s)
            if source.due_s is None:
                source.asked_s = now_s
                source.due_s = now_s + max(self.config.pilot_silence_hold_s, deadline_s)
                source.failing = True

    def source_age_s(self, name: str, now_s: float) -> float | None:
        """Seconds since the source was last heard (since watched, when never), None when not watched."""
        with self._lock:
            source = self._sources.get(name)
            return None if source is None else now_s - self._last_heard(source)

    def last_heard_s(self, name: str) -> float | None:
        with self._lock:
            source = self._sources.get(name)
            return None if source is None else source.last_heard_s

    def _last_heard(self, source: Source) -> float:
        """Caller holds the lock."""
        if source.poll is not None:
            polled = source.poll()
            if polled is not None and (source.last_heard_s is None or polled > source.last_heard_s):
                source.last_heard_s = polled
        return source.reference_s()

    def pilot_may_lift(self) -> bool:
        """Whether the current hold is one a fresh valid pilot action can lift, so that the decision
        loop keeps reading frames and asking the pilot while it holds: no ground station attached, and
        only failsafe sources an action can show are back (the pilot, the video) caused it."""
        with self._lock:
            return self._pilot_may_lift(require_back=False)

    def _pilot_may_lift(self, require_back: bool = True) -> bool:
        if self._status.mode != Mode.HOLD or LINK in self._sources:
            return False
        if not self._hold_causes or not self._hold_causes <= {PILOT, VIDEO}:
            return False
        video = self._sources.get(VIDEO)
        video_back = not (VIDEO in self._hold_causes and video is not None and video.failing)
        return video_back or not require_back

    def check_failsafes(self, now_s: float) -> None:
        """Every source's silence against its limits; called on every actuation tick (by filter)."""
        with self._lock:
            for source in list(self._sources.values()):
                self._check_source(source, now_s)
        self._flush()

    def _check_source(self, source: Source, now_s: float) -> None:
        """Caller holds the lock."""
        c = self.config
        last_s = self._last_heard(source)
        silent_s = now_s - last_s
        heard = source.last_heard_s
        label = SOURCE_LABELS[source.name]
        if heard is not None:
            since = f"last heard {silent_s:.2f} s ago"
        else:
            since = f"never heard in {silent_s:.2f} s of flight"
        if source.name == LINK:
            if silent_s >= c.link_lost_land_s and source.tripped != Mode.LANDING:
                source.tripped = Mode.LANDING
                self._set_mode(Mode.LANDING, f"{label} ({since})", LINK, now_s, heard)
            elif silent_s >= c.link_lost_hold_s and source.tripped is None:
                source.tripped = Mode.HOLD
                self._set_mode(Mode.HOLD, f"{label} ({since})", LINK, now_s, heard)
            elif silent_s < c.link_lost_hold_s and source.tripped is not None:
                self._back(source, now_s)
        elif source.name == TELEMETRY:
            if silent_s >= c.telemetry_stale_land_s and source.tripped is None:
                source.tripped = Mode.LANDING
                self._set_mode(Mode.LANDING, f"{label} ({since})", TELEMETRY, now_s, heard)
        elif source.name == VIDEO:
            if source.failing and silent_s >= c.frame_stale_hold_s and source.tripped is None:
                source.tripped = Mode.HOLD
                self._set_mode(Mode.HOLD, f"{label} ({since})", VIDEO, now_s, heard)
            elif not source.failing and source.tripped is not None:
                self._back(source, now_s)
        elif (
            source.name == PILOT
            and source.due_s is not None
            and now_s >= source.due_s
            and source.tripped is None
        ):
            source.tripped = Mode.HOLD
            waited_s = now_s - (source.asked_s if source.asked_s is not None else now_s)
            self._set_mode(
                Mode.HOLD,
                f"{label}: no valid action in {silent_s:.2f} s (request unanswered {waited_s:.2f} s)",
                PILOT,
                now_s,
                heard,
            )

    def _back(self, source: Source, now_s: float) -> None:
        """Caller holds the lock. A source heard again after it tripped: logged; the mode stays."""
        source.tripped = None
        if self._status.mode == Mode.FLYING:
            return
        lifted_by = "operator" if LINK in self._sources else "operator or a fresh valid pilot action"
        self._pending.append(
            Transition(
                self._status.mode,
                self._status.mode,
                f"{source.name} back; {self._status.mode.value} stays until the {lifted_by} lifts it",
                now_s,
                source.name,
                source.last_heard_s,
            )
        )
        log.info("safety: %s back; %s stays", source.name, self._status.mode.value)

    # ---- inputs from the decision loop and the link -------------------------------------------
    def pilot_failed(self, why: str) -> None:
        with self._lock:
            self._status.consecutive_failures += 1
            n = self._status.consecutive_failures
            if n >= self.config.max_consecutive_failures:
                self._set_mode(Mode.HOLD, f"{n} consecutive pilot failures (last: {why})")
        self._flush()

    def pilot_ok(self, now_s: float | None = None) -> bool:
        """A valid pilot action arrived (before it is executed). True when it lifted a failsafe hold
        (no ground station, every source that caused it back)."""
        lifted = False
        with self._lock:
            self._status.consecutive_failures = 0
            now = self._clock() if now_s is None else now_s
            source = self._sources.get(PILOT)
            tripped = source is not None and source.tripped is not None
            if source is not None:
                source.last_heard_s = now
                source.failing = False
                source.asked_s = source.due_s = None
            if self._pilot_may_lift():
                causes = " and ".join(sorted(self._hold_causes))
                lifted = self._resume(f"fresh valid pilot action after {causes} back", now)
            if source is not None:
                if tripped and not lifted:
                    self._back(source, now)
                source.tripped = None
        self._flush()
        return lifted

    # ---- the per-tick filter ------------------------------------------------------------------
    def filter(
        self, asked: Setpoint, telemetry: Telemetry | None, now_s: float | None = None
    ) -> tuple[Setpoint, list[Clamp]]:
        """The setpoint to send this tick, and the clamps that changed it (empty when none did).

        With now_s (the actuation tick's time), the failsafes are evaluated first."""
        clamps: list[Clamp] = []
        if now_s is not None:
            self.check_failsafes(now_s)
        if not all(math.isfinite(v) for v in asked):
            # A bug upstream (a NaN depth, a division by zero): never sent; the drone holds.
            with self._lock:
                self._set_mode(Mode.HOLD, f"non-finite setpoint {tuple(asked)}", now_s=now_s)
            self._flush()
            clamps.append(Clamp("non-finite", asked, HOLD, "non-finite setpoint: hold"))
            return self._count(HOLD, clamps)
        if telemetry is not None:
            self._check_vehicle(telemetry)
        mode = self.mode
        if mode != Mode.FLYING:
            if not asked.is_zero:
                clamps.append(Clamp("mode", asked, HOLD, f"{mode.value}: {self.reason}"))
            return self._count(HOLD, clamps)
        sent = self._speed_caps(asked, clamps)
        if telemetry is not None:
            sent = self._fence(sent, telemetry.pose, clamps)
            sent = self._separate(sent, telemetry.pose, clamps)
        return self._count(sent, clamps)

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
        n = len(positions_ned)
        velocities = velocities_ned_m_s if velocities_ned_m_s is not None else [(0.0, 0.0, 0.0)] * n
        ages = ages_s if ages_s is not None else [0.0] * n
        if len(velocities) != n or len(ages) != n:
            raise ValueError(
                f"{n} positions need as many velocities ({len(velocities)}) and ages ({len(ages)})"
            )
        now_s = self._clock()
        traffic = [
            (
                (float(p[0]), float(p[1]), float(p[2])),
                (float(v[0]), float(v[1]), float(v[2])),
                float(age),
                now_s,
            )
            for p, v, age in zip(positions_ned, velocities, ages, strict=True)
        ]
        with self._lock:
            self._traffic = traffic

    def traffic_now(self) -> list[tuple[float, float, float]]:
        """Fleet mates' positions now: each report carried forward by its velocity over its age, the
        ones older than traffic_max_age_s left out."""
        now_s = self._clock()
        with self._lock:
            traffic = list(self._traffic)
        out = []
        for (n, e, d), (vn, ve, vd), age_s, set_s in traffic:
            dt_s = age_s + (now_s - set_s)
            if dt_s > self.config.traffic_max_age_s:
                continue
            out.append((n + vn * dt_s, e + ve * dt_s, d + vd * dt_s))
        return out

    def _separate(self, sp: Setpoint, pose: Pose, clamps: list[Clamp]) -> Setpoint:
        """Cut the velocity component toward any fleet drone that would close within separation_m, and
        vertical motion into its height band while the two are horizontally that close."""
        traffic = self.traffic_now()
        if not traffic:
            return sp
        c = self.config
        fwd, right, up, yaw = sp
        vn, ve, _ = body_to_world(fwd, right, 0.0, pose.yaw_deg)  # linear: velocities as well
        closest = None
        for n, e, d in traffic:
            dn, de, dz = n - pose.x_m, e - pose.y_m, d - pose.z_m
            dist = math.hypot(dn, de)
            if dist < c.separation_m and abs(dz) > 1e-6:
                # Inside the ring: no climbing or descending into the other's height band either.
                closing_down = -up if dz > 0 else up  # NED: dz > 0 means the other is below us
                if closing_down > 0 and abs(dz) - closing_down * c.lookahead_s < c.separation_vertical_m:
                    up = 0.0
                    closest = dist if closest is None else min(closest, dist)
            if abs(dz) >= c.separation_vertical_m or dist < 1e-6:
                continue
            un, ue = dn / dist, de / dist
            closing = vn * un + ve * ue
            if closing > 0 and dist - closing * c.lookahead_s < c.separation_m:
                vn, ve = vn - closing * un, ve - closing * ue
                closest = dist if closest is None else min(closest, dist)
        if closest is None:
            return sp
        sent = Setpoint(*world_to_body(vn, ve, 0.0, pose.yaw_deg)[:2], up, yaw)
        clamps.append(
            Clamp("separation", sp, sent, f"fleet drone {closest:.1f} m away (keep {c.separation_m} m)")
        )
        return sent

    def _count(self, sent: Setpoint, clamps: list[Clamp]) -> tuple[Setpoint, list[Clamp]]:
        if clamps:
            with self._lock:
                self._status.clamps += len(clamps)
        return sent, clamps

    def _check_vehicle(self, t: Telemetry) -> None:
        with self._lock:
            if t.collided:
                if self.config.land_on_collision:
                    self._set_mode(Mode.LANDING, "collision")
                else:
                    self._set_mode(Mode.HOLD, "collision")
            if t.battery_fraction is not None and t.battery_fraction <= self.config.battery_land_fraction:
                self._set_mode(
                    Mode.LANDING,
                    f"battery {t.battery_fraction:.0%} <= {self.config.battery_land_fraction:.0%}",
                )
        self._flush()

    def _speed_caps(self, sp: Setpoint, clamps: list[Clamp]) -> Setpoint:
        c = self.config
        fwd, right, up, yaw = sp
        h = math.hypot(fwd, right)
        if h > c.max_horizontal_m_s:
            k = c.max_horizontal_m_s / h
            fwd, right = fwd * k, right * k
        up = max(-c.max_vertical_m_s, min(c.max_vertical_m_s, up))
        yaw = max(-c.max_yaw_rate_deg_s, min(c.max_yaw_rate_deg_s, yaw))
        sent = Setpoint(fwd, right, up, yaw)
        if sent != sp:
            clamps.append(
                Clamp(
                    "speed",
                    sp,
                    sent,
                    f"caps h={c.max_horizontal_m_s} v={c.max_vertical_m_s} yaw={c.max_yaw_rate_deg_s}",
                )
            )
        return sent

    def _fence(self, sp: Setpoint, pose: Pose, clamps: list[Clamp]) -> Setpoint:
        """Cut the components that would carry the drone out of the fence within the look-ahead."""
        c = self.config
        fwd, right, up, yaw = sp
        vn, ve, _ = body_to_world(fwd, right, 0.0, pose.yaw_deg)  # linear: velocities as well
        rn, re = pose.x_m - self.home.x_m, pose.y_m - self.home.y_m
        r = math.hypot(rn, re)
        details = []
        if r > 1e-6:
            un, ue = rn / r, re / r
            outward = vn * un + ve * ue
            if outward > 0 and r + outward * c.lookahead_s > c.geofence_radius_m:
                vn, ve = vn - outward * un, ve - outward * ue
                details.append(f"geofence r={r:.1f} m (limit {c.geofence_radius_m} m)")
        altitude_m = self.home.z_m - pose.z_m
        if up < 0 and altitude_m + up * c.lookahead_s < c.altitude_floor_m:
            up = 0.0
            details.append(f"floor alt={altitude_m:.1f} m (limit {c.altitude_floor_m} m)")
        if up > 0 and altitude_m + up * c.lookahead_s > c.altitude_ceiling_m:
            up = 0.0
            details.append(f"ceiling alt={altitude_m:.1f} m (limit {c.altitude_ceiling_m} m)")
        if not details:
            return sp
        sent = Setpoint(*world_to_body(vn, ve, 0.0, pose.yaw_deg)[:2], up, yaw)
        clamps.append(Clamp("fence", sp, sent, "; ".join(details)))
        return sent

    def land_requested(self) -> bool:
        """True once when the mode asks the vehicle to land (LANDING, or ESTOP configured to land)."""
        with self._lock:
            mode = self._status.mode
            wants = mode == Mode.LANDING or (mode == Mode.ESTOP and self.config.estop_action == "land")
            if wants and not self._land_requested:
                self._land_requested = True
                return True
            return False
