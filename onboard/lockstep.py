"""Lock-step driving (AGENT.md §6 "Time"): the simulator is paused while the pilot thinks, then
advanced by the measured, or injected, latency while the actuation loop keeps ticking, so model
latency costs episode time exactly as it would in flight, on any machine, deterministically.

One thread does everything: capture, pilot call (simulation frozen), advance by the latency with
actuation ticks at rate_hz (the drone keeps flying its current plan, as in flight), then apply the
reply (re-expressed from the pose it finds, or discarded when stale).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from onboard.runtime import OnboardRuntime, PendingDecision, RunResult, plan_duration_s

log = logging.getLogger(__name__)

LatencyModel = Callable[[PendingDecision], float]


class Stepper(Protocol):
    def advance(self, duration_s: float) -> float:
        """Advance simulation time by duration_s; returns the new time."""
        ...


def measured_latency(pending: PendingDecision) -> float:
    """The pilot's real wall-clock time (the baseline's few ms, or a real model's call)."""
    return pending.stages.model_s


class LockstepDriver:
    def __init__(
        self,
        runtime: OnboardRuntime,
        stepper: Stepper,
        latency: LatencyModel = measured_latency,
        takeoff_timeout_s: float = 30.0,
        on_step: Callable[[OnboardRuntime], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.stepper = stepper
        self.latency = latency
        self.takeoff_timeout_s = takeoff_timeout_s
        self.on_step = on_step
        self.period_s = 1.0 / runtime.config.rate_hz
        self._next_tick_s: float | None = None
        self.injected_latencies_s: list[float] = []

    def advance(self, duration_s: float) -> None:
        """Advance the simulation by duration_s, ticking the actuation loop every period."""
        clock = self.runtime.clock
        end_s = clock.now() + duration_s
        if self._next_tick_s is None:
            self._next_tick_s = clock.now()
        while True:
            now = clock.now()
            if now >= self._next_tick_s - 1e-9:
                self.runtime.actuator.tick(now)
                self._next_tick_s += self.period_s
            if now >= end_s - 1e-9:
                break
            self.stepper.advance(min(end_s, self._next_tick_s) - now)

    def _climb(self) -> None:
        """Lock-step take-off: the vehicle climbs while simulation time advances."""
        vehicle, clock = self.runtime.vehicle, self.runtime.clock
        target_alt = self.runtime.config.takeoff_altitude_m or self.runtime.profile.takeoff_altitude_m or 3.0
        home_alt = self.runtime.governor.home.altitude_m
        deadline = clock.now() + self.takeoff_timeout_s
        while clock.now() < deadline:
            self.stepper.advance(0.1)
            if vehicle.telemetry().pose.altitude_m - home_alt >= 0.95 * target_alt:
                break
        else:
            log.warning("take-off did not reach %.1f m in %.0f s", target_alt, self.takeoff_timeout_s)

    def run(self) -> RunResult:
        rt = self.runtime
        rt.start(threaded=False)
        self._climb()
        rt.t0_s = rt.clock.now()
        reason = "stopped"
        try:
            while True:
                why = rt.stop_reason()
                if why is not None:
                    reason = why
                    break
                if not rt.can_decide():
                    self.advance(0.1)
                    continue
                started_s = rt.clock.now()
                try:
                    pending = rt.capture_and_decide()
                except Exception as exc:  # the camera failed: hold, and let time pass
                    rt.capture_failed(exc)
                    self.advance(max(self.period_s, rt.config.min_decision_period_s, 0.1))
                    continue
                latency_s = max(0.0, self.latency(pending))
                self.injected_latencies_s.append(latency_s)
                self.advance(latency_s)
                plan = rt.apply_decision(pending)
                if self.on_step is not None:
                    self.on_step(rt)
                # A step always costs at least one tick, so a 0 ms pilot cannot stall time.
                wait_s = max(self.period_s, started_s + rt.config.min_decision_period_s - rt.clock.now())
                if plan is not None and rt.config.loop == "naive":
                    wait_s = max(wait_s, plan_duration_s(plan))
                self.advance(wait_s)
        finally:
            rt.finish(reason, threaded=False)
            self.advance(self.period_s)  # one tick so a landing request reaches the vehicle
        return rt.result(reason)
