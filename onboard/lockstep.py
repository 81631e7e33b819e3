"""Lock-step driving (docs/safety.md#lock-step-time): the simulator is paused while the pilot thinks, then
advanced by the measured, or injected, latency while the actuation loop keeps ticking, so model
latency costs episode time exactly as it would in flight, on any machine, deterministically.

One thread does everything: capture, pilot call (simulation frozen), advance by the latency with
actuation ticks at rate_hz (the drone keeps flying its current plan, as in flight), then apply the
reply (re-expressed from the pose it finds, or discarded when stale). The loop is the real-time one
(onboard.decide_loop); `LockstepPacer` is how time passes here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from common.actions import Action
from common.clock import Clock
from common.pose import Frame
from onboard.actuation import Actuator
from onboard.capture import FrameCapture
from onboard.controller import ControlPlan
from onboard.decide_loop import (
    CAPTURE_RETRY_S,
    IDLE_S,
    STREAM_PERIOD_S,
    ask_pilot,
    loop_step,
    plan_duration_s,
    run_loop,
)
from onboard.decision import PendingDecision, RunResult
from onboard.decision_step import DecisionStep
from onboard.flight_state import FlightState
from onboard.runtime import OnboardRuntime
from onboard.runtime_config import RuntimeConfig
from onboard.safety import Mode, SafetyGovernor

log = logging.getLogger(__name__)

LatencyModel = Callable[[PendingDecision], float]


class Stepper(Protocol):
    def advance(self, duration_s: float) -> float:
        """Advance simulation time by duration_s; returns the new time."""
        ...


def measured_latency(pending: PendingDecision) -> float:
    """The pilot's real wall-clock time (the baseline's few ms, or a real model's call with its
    request building and reply parsing)."""
    return pending.stages.pilot_s


@dataclass(frozen=True, eq=False)  # one per drone: compared by identity (MultiLockstepDriver.drones.index)
class SteppedDrone:
    """What a lock-step driver reaches of one drone's runtime, named once: the flight's life cycle
    (start without threads, begin the flight after the climb, the stop reasons, finish), its decision
    step and frame capture, its actuation loop (ticked by the driver), its safety governor, its events."""

    name: str
    config: RuntimeConfig
    clock: Clock
    state: FlightState
    decisions: DecisionStep
    capture: FrameCapture
    actuator: Actuator
    governor: SafetyGovernor
    event: Callable[..., None]
    takeoff_altitude_m: float
    start: Callable[[bool], None]
    begin_flight: Callable[[float], None]
    climbed: Callable[[], bool]
    stop_reason: Callable[[], str | None]
    can_decide: Callable[[], bool]
    finish: Callable[[str, bool], None]
    result: Callable[[str], RunResult]

    @classmethod
    def of(cls, runtime: OnboardRuntime) -> SteppedDrone:
        return cls(
            runtime.config.drone,
            runtime.config,
            runtime.clock,
            runtime.state,
            runtime.decisions,
            runtime.capture,
            runtime.actuator,
            runtime.governor,
            runtime.event,
            runtime.takeoff_altitude_m,
            runtime.start,
            runtime.begin_flight,
            runtime.climbed,
            runtime.stop_reason,
            runtime.can_decide,
            runtime.finish,
            runtime.result,
        )


class LockstepDriver:
    def __init__(
        self,
        runtime: OnboardRuntime,
        stepper: Stepper,
        latency: LatencyModel = measured_latency,
        takeoff_timeout_s: float = 30.0,
        on_step: Callable[[], None] | None = None,
    ) -> None:
        self.drone = SteppedDrone.of(runtime)
        self.stepper = stepper
        self.latency = latency
        self.takeoff_timeout_s = takeoff_timeout_s
        self.on_step = on_step  # after each step (the demo's progress line)
        self.period_s = 1.0 / self.drone.config.rate_hz
        self._next_tick_s: float | None = None
        self.injected_latencies_s: list[float] = []

    def advance(self, duration_s: float) -> None:
        """Advance the simulation by duration_s, ticking the actuation loop every period."""
        clock = self.drone.clock
        end_s = clock.now() + duration_s
        if self._next_tick_s is None:
            self._next_tick_s = clock.now()
        while True:
            now = clock.now()
            if now >= self._next_tick_s - 1e-9:
                self.drone.actuator.tick(now)
                self._next_tick_s += self.period_s
            if now >= end_s - 1e-9:
                break
            self.stepper.advance(min(end_s, self._next_tick_s) - now)

    def _climb(self) -> None:
        """Lock-step take-off: the vehicle climbs while simulation time advances."""
        drone = self.drone
        deadline = drone.clock.now() + self.takeoff_timeout_s
        while drone.clock.now() < deadline:
            self.stepper.advance(0.1)
            if drone.climbed():
                break
        else:
            log.warning(
                "take-off did not reach %.1f m in %.0f s", drone.takeoff_altitude_m, self.takeoff_timeout_s
            )

    def run(self) -> RunResult:
        drone = self.drone
        drone.start(False)
        self._climb()
        drone.begin_flight(drone.clock.now())  # episode time, and the failsafes, run from the climb's end
        pacer = LockstepPacer(self)
        reason = run_loop(
            drone.stop_reason, lambda: loop_step(drone.decisions, drone.can_decide, pacer), self._finish
        )
        return drone.result(reason)

    def _finish(self, reason: str) -> None:
        self.drone.finish(reason, False)
        self.advance(self.period_s)  # one tick so a landing request reaches the vehicle


class LockstepPacer:
    """Lock-step time (onboard.decide_loop.Pacer): the simulation advances, ticking the actuation
    loop, by the pilot's latency and every wait; a step always costs at least one tick, so a 0 ms
    pilot cannot stall time."""

    def __init__(self, driver: LockstepDriver) -> None:
        self.driver = driver
        self.config = driver.drone.config

    def idle(self) -> None:
        self.driver.advance(IDLE_S)

    def after_stream(self, started_s: float) -> None:
        period_s = max(self.config.min_decision_period_s, STREAM_PERIOD_S)
        self.driver.advance(max(self.driver.period_s, started_s + period_s - self.driver.drone.clock.now()))

    def after_capture_failure(self, started_s: float) -> None:
        self.driver.advance(max(self.driver.period_s, self.config.min_decision_period_s, CAPTURE_RETRY_S))

    def charge(self, pending: PendingDecision) -> None:
        latency_s = max(0.0, self.driver.latency(pending))
        self.driver.injected_latencies_s.append(latency_s)
        self.driver.advance(latency_s)

    def after_step(self, started_s: float, plan: ControlPlan | None) -> None:
        driver = self.driver
        if driver.on_step is not None:
            driver.on_step()
        wait_s = max(
            driver.period_s, started_s + self.config.min_decision_period_s - driver.drone.clock.now()
        )
        if plan is not None and self.config.loop == "naive":
            wait_s = max(wait_s, plan_duration_s(plan))
        self.driver.advance(wait_s)


# ---- several drones in one world (docs/protocol.md#several-drones, lock-step) ---------------------
@dataclass(frozen=True)
class JointDecision:
    """One call for all drones (one-context structure): an action (or None: no action) per drone."""

    actions: Sequence[Action | None]
    latency_s: float  # what the call cost in episode time
    call_id: str
    raw: str = ""
    error: str | None = None


# frames in drone order (None for a drone not flying) -> one decision for all
JointPilot = Callable[[Sequence[Frame | None]], JointDecision]


class MultiLockstepDriver:
    """N OnboardRuntimes on one World and one clock, in rounds.

    Per-drone pilots (commander sub-agents): each round, every drone that can decide captures at the
    same frozen instant and asks its own pilot; time then advances to each reply's latency in turn
    (actuation ticking for every drone), and each reply is applied when it arrives, so the slowest
    drone sets the round's length as it would with N pilots running in parallel.
    A joint pilot (one context): every flying drone's frame goes into one call; its latency passes,
    then each action reaches its drone as a remote action with the pose and age of its frame.
    `on_round(driver)` runs after each round (the commander's re-planning hook). The run ends at the
    first qualifying declaration of any drone (unless stop_on_declaration is off), at T_max, or when
    no drone flies any more.
    """

    def __init__(
        self,
        runtimes: Sequence[OnboardRuntime],
        stepper: Stepper,
        latency: LatencyModel = measured_latency,
        joint: JointPilot | None = None,
        takeoff_timeout_s: float = 30.0,
        on_round: Callable[[MultiLockstepDriver], None] | None = None,
    ) -> None:
        if not runtimes:
            raise ValueError("MultiLockstepDriver needs at least one runtime")
        self.drones = [SteppedDrone.of(runtime) for runtime in runtimes]
        clocks = {id(drone.clock) for drone in self.drones}
        if len(clocks) != 1:
            raise ValueError(f"the {len(runtimes)} runtimes must share one clock (got {len(clocks)})")
        self.stepper = stepper
        self.latency = latency
        self.joint = joint
        self.takeoff_timeout_s = takeoff_timeout_s
        self.on_round = on_round
        self.clock = self.drones[0].clock
        self.period_s = 1.0 / max(drone.config.rate_hz for drone in self.drones)
        self._next_tick_s: float | None = None
        self.injected_latencies_s: list[float] = []
        self.rounds = 0

    def advance(self, duration_s: float) -> None:
        """Advance the simulation by duration_s, ticking every drone's actuation loop every period."""
        end_s = self.clock.now() + duration_s
        if self._next_tick_s is None:
            self._next_tick_s = self.clock.now()
        while True:
            now = self.clock.now()
            if now >= self._next_tick_s - 1e-9:
                self._share_traffic()
                for drone in self.drones:
                    drone.actuator.tick(now)
                self._next_tick_s += self.period_s
            if now >= end_s - 1e-9:
                break
            self.stepper.advance(min(end_s, self._next_tick_s) - now)

    def _share_traffic(self) -> None:
        """Each drone's safety governor learns where the others are (their newest telemetry), so that
        fleet separation holds below every pilot (SafetyConfig.separation_m)."""
        positions = {}
        for drone in self.drones:
            telemetry = drone.actuator.last_telemetry
            if telemetry is not None:
                pose = telemetry.pose
                positions[drone.name] = (pose.x_m, pose.y_m, pose.z_m)
        for drone in self.drones:
            drone.governor.set_traffic([p for name, p in positions.items() if name != drone.name])

    def _climb(self) -> None:
        """All drones climb together while simulation time advances."""
        deadline = self.clock.now() + self.takeoff_timeout_s
        while self.clock.now() < deadline:
            self.stepper.advance(0.1)
            if all(drone.climbed() for drone in self.drones):
                break
        else:
            log.warning("take-off: not every drone reached its altitude in %.0f s", self.takeoff_timeout_s)

    def stop_reason(self) -> str | None:
        """Why the whole run ends now (a landed or e-stopped drone just stops deciding)."""
        drones = self.drones
        if any(drone.state.qualifying_t is not None and drone.config.stop_on_declaration for drone in drones):
            return "declared"
        reasons = [drone.stop_reason() for drone in drones]
        if all(r is not None for r in reasons):
            return (
                reasons[0]
                if len(set(reasons)) == 1
                else "; ".join(f"{drone.name}: {r}" for drone, r in zip(drones, reasons, strict=True))
            )
        return None

    def _deciders(self) -> list[SteppedDrone]:
        if self.joint is not None:
            return [
                drone
                for drone in self.drones
                if drone.stop_reason() is None and drone.governor.mode == Mode.FLYING
            ]
        return [drone for drone in self.drones if drone.stop_reason() is None and drone.can_decide()]

    def _round_local(self, deciders: list[SteppedDrone]) -> None:
        pendings: list[tuple[float, int, SteppedDrone, PendingDecision]] = []
        for index, drone in enumerate(deciders):
            pending = ask_pilot(drone.decisions)
            if pending is None:  # the camera failed: that drone holds
                continue
            latency_s = max(0.0, self.latency(pending))
            self.injected_latencies_s.append(latency_s)
            pendings.append((latency_s, index, drone, pending))
        started_s = self.clock.now()
        for latency_s, _, drone, pending in sorted(pendings, key=lambda p: (p[0], p[1])):
            self.advance(max(0.0, started_s + latency_s - self.clock.now()))
            drone.decisions.apply_decision(pending)

    def _round_joint(self, deciders: list[SteppedDrone]) -> None:
        assert self.joint is not None
        frames: list[Frame | None] = [None] * len(self.drones)
        captured: dict[int, float] = {}
        for drone in deciders:
            index = self.drones.index(drone)
            try:
                frames[index] = drone.capture.stream()
                captured[index] = self.clock.now()
            except Exception as exc:
                drone.capture.failed(exc)
        if not captured:
            return
        decision = self.joint(frames)
        latency_s = max(0.0, decision.latency_s)
        self.injected_latencies_s.append(latency_s)
        self.advance(latency_s)
        for index, capture_s in captured.items():
            drone, frame = self.drones[index], frames[index]
            action = decision.actions[index] if index < len(decision.actions) else None
            assert frame is not None
            if action is None:
                drone.event("no_action", call_id=decision.call_id, error=decision.error)
                continue
            drone.decisions.apply_remote(
                action,
                frame.pose,
                self.clock.now() - capture_s,
                decision.call_id,
                decision.raw,
                frame.camera_attitude,
            )

    def run(self) -> str:
        """Fly every drone until the run ends; returns why it ended (each runtime's result() has more)."""
        for drone in self.drones:
            drone.start(False)
        self._climb()
        t0_s = self.clock.now()
        for drone in self.drones:
            drone.begin_flight(t0_s)  # one episode time for every drone
        return run_loop(self.stop_reason, self._round, self._finish)

    def _round(self) -> None:
        """Every drone that can decide does (the same steps as one drone's loop, interleaved), then
        the round's period passes; with none, time passes in idle steps."""
        deciders = self._deciders()
        if not deciders:
            if self.on_round is not None:
                self.on_round(self)
            self.advance(IDLE_S)
            return
        started_s = self.clock.now()
        if self.joint is not None:
            self._round_joint(deciders)
        else:
            self._round_local(deciders)
        self.rounds += 1
        if self.on_round is not None:
            self.on_round(self)
        period_s = max(drone.config.min_decision_period_s for drone in deciders)
        self.advance(max(self.period_s, started_s + period_s - self.clock.now()))

    def _finish(self, reason: str) -> None:
        for drone in self.drones:
            drone.finish(reason, False)
        self.advance(self.period_s)  # one tick so the landing requests reach the vehicles
