"""What the operator (the ground station, a commander, or a script) tells one drone's runtime.

`Operator` is the runtime's one command surface: the instruction and a commander's order (with its
step accounting), hold, land, e-stop, return home, an operator's GoTo, and the verdict on a
declaration. Each command only changes the flight's state (onboard.flight_state), the governor's
mode or the actuator's schedule and returns at once, so the link's acks stay fast (onboard.link).
Every hold, whoever asks for it (the operator, an expired order, a waiting declaration, a vehicle
fault), goes through `hold`, which logs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from common.interfaces import Telemetry
from common.logformat import pose_list
from common.pose import Pose
from onboard.actuation import Actuator
from onboard.controller import plan_toward
from onboard.flight_state import FlightState
from onboard.goto import GoToFlight, goto_refusal
from onboard.profiles import FlightProfile
from onboard.reporter import StepReporter
from onboard.safety import Mode, SafetyGovernor
from onboard.safety_config import SafetyConfig
from onboard.setpoints import MotionSchedule


@dataclass(eq=False)
class Operator:
    """The commands one runtime obeys, and the tasking they set (instruction, order, GoTo)."""

    state: FlightState
    governor: SafetyGovernor
    actuator: Actuator
    reporter: StepReporter
    profile: FlightProfile
    safety: SafetyConfig
    now_s: Callable[[], float]  # the runtime's clock
    telemetry: Callable[[], Telemetry]  # the newest sample, asked of the vehicle when none is cached

    def set_instruction(self, text: str) -> None:
        self._task(text, None, None)
        self.governor.resume(f"new instruction: {text!r}")
        self.reporter.event("instruction", text=text)

    def set_order(self, order_id: str, text: str, expires_after_steps: int) -> None:
        """A commander's order (docs/protocol.md#several-drones): the sub-agent is the single-drone agent
        with the order as its instruction, for `expires_after_steps` executed steps; then it holds until
        the next order."""
        if expires_after_steps < 1:
            raise ValueError(f"expires_after_steps={expires_after_steps} must be >= 1")
        self._task(text, order_id, expires_after_steps)
        self.governor.resume(f"order {order_id}: {text!r}")
        self.reporter.event("order", order_id=order_id, text=text, expires_after_steps=expires_after_steps)

    def _task(self, instruction: str, order_id: str | None, steps_left: int | None) -> None:
        """A new task: the pilot starts over (no history from the previous one)."""
        self.state.new_task(instruction, order_id, steps_left)
        self.state.judgement.end()  # the operator answered a waiting declaration with new work

    def count_order_step(self) -> None:
        """A sub-agent's order lives for a number of executed steps, then it holds.

        See docs/protocol.md#several-drones."""
        if self.state.count_order_step():
            self.hold("order expired")
            self.reporter.event("order_expired", order_id=self.state.order_id)

    def hold(self, reason: str = "operator hold") -> None:
        """Brake and hold here (a hold the pilot's next valid action cannot lift; docs/safety.md)."""
        self.governor.hold(reason)
        self.actuator.set_schedule(None)
        self.reporter.event("hold", reason=reason)

    def land(self, reason: str = "operator land") -> None:
        self.governor.land(reason)
        self.reporter.event("land", reason=reason)

    def resume(self, reason: str) -> None:
        """Lift a hold (its cause is gone)."""
        self.governor.resume(reason)

    def estop(self, reason: str = "operator e-stop") -> None:
        self.governor.estop(reason)
        self.actuator.set_schedule(None)
        self.reporter.event("estop", reason=reason)

    def return_home(self) -> None:
        """Fly back over home at the current altitude, then hold (no pilot decisions meanwhile)."""
        self.governor.hold("returning home")
        telemetry = self.telemetry()
        home = self.governor.home
        goal = Pose(home.x_m, home.y_m, telemetry.pose.z_m, telemetry.pose.yaw_deg)
        self.governor.resume("return home")
        self.state.stop_tasking()
        self.actuator.set_schedule(
            MotionSchedule(plan_toward(goal, telemetry.pose, self.profile), self.now_s())
        )
        self.reporter.event("return_home", goal=goal.as_list())

    def goto(self, goto_id: str, target_ned_m: tuple[float, float, float]) -> str:
        """An operator's GoTo: "" when accepted (flown from the next tick, then a hold), else why not.

        Checked here, before the ack: the target against the geofence around home and the altitude
        limits, and that the drone is flying (not landing or e-stopped, telemetry heard). Like a
        return home, it stops the pilot's decisions (the instruction and any order are dropped) and
        lifts a hold: the operator chose where the drone goes."""
        governor = self.governor
        refusal = goto_refusal(target_ned_m, governor.home, self.safety)
        mode = governor.mode
        telemetry = self.actuator.last_telemetry
        if not refusal and mode in (Mode.LANDING, Mode.ESTOP):
            refusal = f"not flying: {mode.value} ({governor.reason})"
        if not refusal and telemetry is None:
            refusal = "not flying yet: no vehicle telemetry"
        if refusal:
            self.reporter.event(
                "goto", goto_id=goto_id, state="rejected", target=list(target_ned_m), reason=refusal
            )
            return refusal
        assert telemetry is not None
        self.state.take_over(self.now_s())
        governor.hold(f"operator goto {goto_id}")
        governor.resume(f"operator goto {goto_id}")
        flight = GoToFlight.start(goto_id, target_ned_m, telemetry.pose, self.profile, self.now_s())
        self.actuator.set_goto(flight)
        self.reporter.event(
            "goto",
            goto_id=goto_id,
            state="accepted",
            target=list(target_ned_m),
            pose=pose_list(telemetry.pose),
            distance_m=round(flight.distance_m(telemetry.pose), 3),
            timeout_s=round(flight.deadline_s - flight.started_s, 1),
        )
        return ""

    def on_goto(self, flight: GoToFlight, how: str, telemetry: Telemetry | None) -> None:
        """The actuation loop ended a GoTo: arrived -> hold there (the operator decides what next)."""
        pose = telemetry.pose if telemetry is not None else None
        self.reporter.event(
            "goto",
            goto_id=flight.goto_id,
            state=how,
            target=pose_list(flight.target)[:3],
            pose=pose_list(pose) if pose is not None else None,
            error_m=round(flight.distance_m(pose), 3) if pose is not None else None,
            plans=flight.plans,
            elapsed_s=round(self.now_s() - flight.started_s, 2),
        )
        if how == "arrived" or how == "timed out":
            self.governor.hold(f"operator goto {flight.goto_id}: {how}")

    def judge(self, accept: bool, declaration_t: float | None = None) -> None:
        """The operator's verdict on a declaration (docs/safety.md#real-flight): accept ends the run,
        reject lets it go on (and lifts the hold of a declaration waiting for it)."""
        t = self.reporter.judgement(accept, declaration_t, self.actuator.last_telemetry)
        waited = self.state.judgement.end(accepted=accept)
        if accept:
            self.state.accepted(t)
        elif waited:
            self.governor.resume("declaration rejected: flying on")
