"""The actuation loop: each tick, the plan's setpoint goes through the safety governor to the vehicle.

`Actuator.tick(now_s)` is one tick and does not sleep, so a lock-step simulator can drive it;
`ActuationThread` runs it at a fixed rate on a clock, sleeping to absolute deadlines (a relative
sleep drifts) and skipping, not bunching, ticks it overran. The period error of every tick is kept
so the served rate can be published.
"""

from __future__ import annotations

import logging
import math
import statistics
import threading
from collections import deque
from collections.abc import Callable

from common.clock import Clock
from common.interfaces import Telemetry, Vehicle
from common.obstacles import ObstacleSource
from onboard.goto import GoToFlight
from onboard.realtime import set_thread_fifo
from onboard.safety import TELEMETRY, Clamp, Mode, SafetyGovernor
from onboard.safety_obstacles import ObstacleFeed
from onboard.setpoints import HOLD, MotionSchedule, Setpoint
from onboard.vehicle_failures import VEHICLE_LOST_S, FailureStreak

log = logging.getLogger(__name__)

ClampSink = Callable[[float, Clamp], None]
TelemetrySink = Callable[[float, Telemetry, Setpoint], None]
# A GoTo ended: the flight, how ("arrived", "timed out", "abandoned: ..."), the pose then (None: unknown)
GoToSink = Callable[[GoToFlight, str, Telemetry | None], None]


class TelemetryPoller:
    """Polls vehicle telemetry in its own thread, so that a slow telemetry round trip (an RPC server
    busy rendering) never delays a setpoint. The tick reads the newest sample; one older than
    max_age_s counts as no telemetry (the tick then holds)."""

    def __init__(
        self,
        vehicle: Vehicle,
        clock: Clock,
        period_s: float,
        max_age_s: float = 0.5,
        phase_s: float = 0.0,
        obstacles: ObstacleFeed | None = None,
    ) -> None:
        self.vehicle = vehicle
        self.obstacles = obstacles  # read on this thread too, after a poll: never inside a tick
        self.clock = clock
        self.period_s = period_s
        self.max_age_s = max_age_s
        # Polls are offset from the ticks so that poll and tick never wake at the same instant and
        # queue for the interpreter lock together.
        self.phase_s = phase_s
        self._latest: tuple[float, Telemetry] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)
        self.errors = 0
        self.failures = FailureStreak("telemetry poll", log, clock.now)
        self.round_trips_s: deque[float] = deque(maxlen=2000)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def latest(self) -> Telemetry | None:
        sample = self.latest_sample()
        return None if sample is None else sample[1]

    def latest_sample(self) -> tuple[float, Telemetry] | None:
        """The newest sample with the clock time its poll started, None when older than max_age_s."""
        with self._lock:
            sample = self._latest
        if sample is None or self.clock.now() - sample[0] > self.max_age_s:
            return None
        return sample

    def _run(self) -> None:
        next_s = self.clock.now() + self.phase_s
        self.clock.sleep_until(next_s)
        while not self._stop.is_set():
            started = self.clock.now()
            try:
                telemetry = self.vehicle.telemetry()
            except Exception as exc:
                self.errors += 1
                self.failures.failed(exc)
            else:
                self.failures.ok()
                self.round_trips_s.append(self.clock.now() - started)
                with self._lock:
                    self._latest = (started, telemetry)
            if self.obstacles is not None:
                self.obstacles.refresh(self.clock.now())
            next_s = max(next_s + self.period_s, self.clock.now())
            self.clock.sleep_until(next_s)


class Actuator:
    def __init__(
        self,
        vehicle: Vehicle,
        governor: SafetyGovernor,
        on_clamp: ClampSink | None = None,
        on_telemetry: TelemetrySink | None = None,
    ) -> None:
        self.vehicle = vehicle
        # None: read telemetry synchronously each tick (lock-step); else the poller's newest sample.
        self.poller: TelemetryPoller | None = None
        self.governor = governor
        self.on_clamp = on_clamp
        self.on_telemetry = on_telemetry
        self._lock = threading.Lock()
        self._schedule: MotionSchedule | None = None
        self._goto: GoToFlight | None = None  # an operator's GoTo being flown (re-planned on ticks)
        self.on_goto: GoToSink | None = None
        self._last_clamp_key: tuple[str, str] | None = None
        self.last_telemetry: Telemetry | None = None
        self.last_sent: Setpoint = HOLD
        self._landing_started = False
        self.ticks = 0
        self.telemetry_errors = 0
        # The obstacles the vehicle's world knows, when it knows any: read by the telemetry poller in
        # real time, by the tick itself in lock-step (no poller).
        self.obstacles = (
            ObstacleFeed(vehicle, governor.obstacles, governor.config.obstacle_refresh_s, governor.clock)
            if isinstance(vehicle, ObstacleSource)
            else None
        )

    def set_schedule(self, schedule: MotionSchedule | None) -> None:
        """A newer plan replaces what is left of the current one (and a GoTo being flown)."""
        with self._lock:
            self._schedule = schedule
            replaced, self._goto = self._goto, None
        if replaced is not None:
            how = "replaced by a newer plan" if schedule is not None else "stopped"
            self._goto_ended(replaced, how, self.last_telemetry)

    def set_goto(self, flight: GoToFlight) -> None:
        """Fly to the GoTo's target: its first plan on the next tick, re-planned from the measured pose
        whenever one is done, until it arrives (then `on_goto`) or something replaces it."""
        with self._lock:
            replaced, self._goto = self._goto, flight
            self._schedule = None
        if replaced is not None:
            self._goto_ended(replaced, f"replaced by goto {flight.goto_id}", self.last_telemetry)

    def _goto_ended(self, flight: GoToFlight, how: str, telemetry: Telemetry | None) -> None:
        if self.on_goto is not None:
            try:
                self.on_goto(flight, how, telemetry)
            except Exception:  # recording must never break the actuation loop
                log.exception("goto sink failed")

    def _follow(self, flight: GoToFlight, telemetry: Telemetry | None, now_s: float) -> MotionSchedule | None:
        """The GoTo's schedule for this tick: the current plan, or the next one from the measured pose
        once it is done. Ends the GoTo when it arrived, timed out or the governor stopped flying."""
        with self._lock:
            schedule = self._schedule
        how = ""
        mode = self.governor.mode
        nxt = schedule
        if mode != Mode.FLYING:
            how, nxt = f"abandoned: {mode.value} ({self.governor.reason})", None
        elif now_s > flight.deadline_s:
            how, nxt = "timed out", None
        elif telemetry is not None and (schedule is None or schedule.done(now_s)):
            nxt = flight.next_schedule(telemetry.pose, now_s)
            how = "arrived" if nxt is None else ""
        with self._lock:
            if self._goto is not flight:  # replaced meanwhile (another thread): its schedule wins
                return self._schedule
            self._schedule = nxt
            if how:
                self._goto = None
        if how:
            self._goto_ended(flight, how, telemetry)
        return nxt

    def schedule(self) -> MotionSchedule | None:
        with self._lock:
            return self._schedule

    def tick(self, now_s: float) -> Setpoint:
        """One tick: the newest telemetry (heard by the governor's telemetry failsafe), the plan's
        setpoint, the governor's failsafes and filter, the vehicle."""
        self.ticks += 1
        telemetry: Telemetry | None
        sampled_s = now_s
        if self.poller is not None:
            sample = self.poller.latest_sample()
            sampled_s, telemetry = sample if sample is not None else (now_s, None)
        else:
            try:
                telemetry = self.vehicle.telemetry()
            except Exception as exc:  # a vehicle link hiccup must not stop the loop: hold this tick
                self.telemetry_errors += 1
                log.warning("telemetry failed (%s): holding this tick", exc)
                telemetry = None
        if self.poller is None and self.obstacles is not None:
            self.obstacles.refresh(now_s)
        if telemetry is not None and not _finite(telemetry):
            self.telemetry_errors += 1
            log.warning("non-finite telemetry %s: holding this tick", telemetry.pose)
            telemetry = None
        if telemetry is not None:
            self.governor.heard(TELEMETRY, sampled_s)
        self.last_telemetry = telemetry
        with self._lock:
            schedule, flight = self._schedule, self._goto
        if flight is not None:
            schedule = self._follow(flight, telemetry, now_s)
        asked = schedule.setpoint_at(now_s) if schedule is not None else HOLD
        if telemetry is None and not asked.is_zero:
            asked = HOLD
        sent, clamps = self.governor.filter(asked, telemetry, now_s)
        if any(clamp.rule == "non-finite" for clamp in clamps):
            self.set_schedule(None)  # the plan that produced it is never flown again
        for clamp in clamps:
            key = (clamp.rule, clamp.detail.split(" ")[0])
            if key != self._last_clamp_key and self.on_clamp is not None:
                self.on_clamp(now_s, clamp)
            self._last_clamp_key = key
        if not clamps:
            self._last_clamp_key = None
        mode = self.governor.mode
        if mode in (Mode.LANDING, Mode.ESTOP):
            self._handle_terminal(mode)
        else:
            self.vehicle.send_velocity_body(*sent)
        self.last_sent = sent
        if telemetry is not None and self.on_telemetry is not None:
            self.on_telemetry(now_s, telemetry, sent)
        return sent

    def _handle_terminal(self, mode: Mode) -> None:
        if self._landing_started:
            return
        self._landing_started = True
        if mode == Mode.ESTOP and self.governor.config.estop_action == "kill":
            log.warning("e-stop: killing motors")
            try:
                self.vehicle.emergency_stop()
                return
            except Exception:
                log.exception("e-stop: the vehicle refused to stop its motors; landing instead")
        # Landing blocks on some vehicles (AirSim's landAsync().join()): never inside the tick.
        threading.Thread(target=self._land, name="land", daemon=True).start()

    def _land(self) -> None:
        try:
            self.vehicle.hold()
            self.vehicle.land()
        except Exception as exc:
            log.warning("landing command failed: %s", exc)
            log.debug("landing command failed", exc_info=exc)


def _finite(t: Telemetry) -> bool:
    p = t.pose
    return all(math.isfinite(v) for v in (p.x_m, p.y_m, p.z_m, p.yaw_deg, *t.velocity_ned_m_s))


class ActuationThread:
    """Runs Actuator.tick at rate_hz on `clock` until stopped.

    rt_priority > 0 asks SCHED_FIFO at that priority for this thread (onboard.realtime; best effort,
    `scheduling` says what it got); 0 leaves it normally scheduled.
    """

    def __init__(
        self,
        actuator: Actuator,
        clock: Clock,
        rate_hz: float,
        history: int = 2000,
        rt_priority: int = 0,
        stall_s: float = math.inf,
    ) -> None:
        if rate_hz <= 0:
            raise ValueError(f"rate_hz={rate_hz} must be > 0")
        self.actuator = actuator
        self.clock = clock
        self.period_s = 1.0 / rate_hz
        self.rt_priority = rt_priority
        self.scheduling: str | None = None  # set by the thread when it starts
        self._started = threading.Event()
        self.period_errors_s: deque[float] = deque(maxlen=history)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="actuation", daemon=True)
        self.skipped_ticks = 0
        self.error: BaseException | None = None
        self.tick_failures = FailureStreak("actuation tick", log, clock.now)
        self.stall_s = stall_s
        # (now_s, gap_s), before the tick after a stall: the runtime tells the governor and logs it.
        self.on_stall: Callable[[float, float], None] | None = None
        self.stalls_s: list[float] = []

    def start(self) -> None:
        poller = TelemetryPoller(
            self.actuator.vehicle,
            self.clock,
            self.period_s,
            phase_s=self.period_s / 2,
            obstacles=self.actuator.obstacles,
        )
        poller.start()
        self.actuator.poller = poller
        self._thread.start()
        self._started.wait(2.0)  # `scheduling` is known once start() returns

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
        if self.actuator.poller is not None:
            self.actuator.poller.stop(timeout_s)

    def _stalled(self, now_s: float, gap_s: float) -> None:
        """This loop did not run for gap_s (the whole process was stopped or starved): said before the
        tick, so that the governor's failsafes do not read our stall as the sources' silence."""
        self.stalls_s.append(gap_s)
        log.warning("onboard stalled %.1f s (the process did not run: not the vehicle's silence)", gap_s)
        if self.on_stall is not None:
            self.on_stall(now_s, gap_s)

    def vehicle_lost(self) -> str | None:
        """Why the vehicle's connection is gone (every setpoint and telemetry call failing for
        VEHICLE_LOST_S), or None."""
        poller = self.actuator.poller
        if self.tick_failures.failing_for_s() < VEHICLE_LOST_S:
            return None
        if poller is not None and poller.failures.failing_for_s() < VEHICLE_LOST_S:
            return None  # telemetry still comes in: the setpoints fail for another reason
        return self.tick_failures.last_error

    def served_rate_hz(self) -> float:
        errors = list(self.period_errors_s)
        if not errors:
            return 0.0
        mean_period = self.period_s + sum(errors) / len(errors)
        return 1.0 / mean_period if mean_period > 0 else 0.0

    def served_jitter_ms(self) -> float:
        """The standard deviation of the served tick period, in ms (0 before two ticks): with
        served_rate_hz, what a benchmark pins and reports of the control rate (issue 25)."""
        errors = list(self.period_errors_s)
        if len(errors) < 2:
            return 0.0
        return 1000.0 * statistics.pstdev(errors)

    def _run(self) -> None:
        try:
            self.scheduling = set_thread_fifo(self.rt_priority)
        finally:
            self._started.set()
        next_s = self.clock.now()
        last_s: float | None = None
        while not self._stop.is_set():
            self.clock.sleep_until(next_s)
            now_s = self.clock.now()
            if last_s is not None:
                self.period_errors_s.append((now_s - last_s) - self.period_s)
                if now_s - last_s >= self.stall_s:
                    self._stalled(now_s, now_s - last_s - self.period_s)
            last_s = now_s
            try:
                self.actuator.tick(now_s)
            except Exception as exc:
                # Keep streaming holds: a vehicle that stops hearing setpoints fails over on its own.
                self.tick_failures.failed(exc)
                self.error = exc
            else:
                self.tick_failures.ok()
            next_s += self.period_s
            behind = self.clock.now() - next_s
            if behind > 0:
                skipped = int(behind / self.period_s) + 1
                self.skipped_ticks += skipped
                next_s += skipped * self.period_s
