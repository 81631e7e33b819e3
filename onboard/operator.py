"""What the operator (the ground station, a commander, or a script) tells one drone's runtime.

`Operator` is the runtime's one command surface: the instruction and a commander's order (with its
step accounting), hold, land, e-stop, return home, an operator's GoTo, a ground station's remote
action, and the verdict on a declaration. Each command only changes the runtime's state (mode,
instruction, schedule) and returns at once, so the link's acks stay fast (onboard.link).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from common.actions import Action, Think
from common.interfaces import Telemetry
from common.logformat import pose_list
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose
from onboard.controller import plan_toward
from onboard.goto import GoToFlight, goto_refusal
from onboard.safety import Mode
from onboard.setpoints import MotionSchedule

if TYPE_CHECKING:
    from onboard.runtime import OnboardRuntime


class Operator:
    """The commands one runtime obeys, and the tasking they set (instruction, order, GoTo)."""

    def __init__(self, runtime: OnboardRuntime, instruction: str = "") -> None:
        self.rt = runtime
        self.instruction = instruction
        self.order_id: str | None = None
        self.order_steps_left: int | None = None  # executed steps left on the current order
        self.goto_s = -float("inf")  # when the last GoTo was accepted (runtime clock)
        self.step_order: tuple[str | None, int | None] = (None, None)  # of the step being recorded
        self._lock = threading.Lock()

    def _task(self, instruction: str, order_id: str | None, steps_left: int | None) -> None:
        """A new task: the pilot starts over (no history from the previous one)."""
        with self._lock:
            self.instruction = instruction
            self.order_id = order_id
            self.order_steps_left = steps_left
            self.rt.history.clear()
            self.rt.history_images.clear()
        self.rt.judgement.end()  # the operator answered a waiting declaration with new work

    def set_instruction(self, text: str) -> None:
        self._task(text, None, None)
        self.rt.governor.resume(f"new instruction: {text!r}")
        self.rt.event("instruction", text=text)

    def set_order(self, order_id: str, text: str, expires_after_steps: int) -> None:
        """A commander's order (docs/protocol.md#several-drones): the sub-agent is the single-drone agent
        with the order as its instruction, for `expires_after_steps` executed steps; then it holds until
        the next order."""
        if expires_after_steps < 1:
            raise ValueError(f"expires_after_steps={expires_after_steps} must be >= 1")
        self._task(text, order_id, expires_after_steps)
        self.rt.governor.resume(f"order {order_id}: {text!r}")
        self.rt.event("order", order_id=order_id, text=text, expires_after_steps=expires_after_steps)

    def count_order_step(self) -> None:
        """A sub-agent's order lives for a number of executed steps, then it holds.

        See docs/protocol.md#several-drones."""
        with self._lock:
            if self.order_steps_left is None:
                self.step_order = (None, None)
                return
            self.order_steps_left -= 1
            self.step_order = (self.order_id, self.order_steps_left)
            expired = self.order_steps_left <= 0
            if expired:
                self.order_steps_left = None
                self.instruction = ""
        if expired:
            self.rt.governor.hold("order expired")
            self.rt.actuator.set_schedule(None)
            self.rt.event("order_expired", order_id=self.order_id)

    def hold(self, reason: str = "operator hold") -> None:
        self.rt.governor.hold(reason)
        self.rt.actuator.set_schedule(None)
        self.rt.event("hold", reason=reason)

    def land(self, reason: str = "operator land") -> None:
        self.rt.governor.land(reason)
        self.rt.event("land", reason=reason)

    def estop(self, reason: str = "operator e-stop") -> None:
        self.rt.governor.estop(reason)
        self.rt.actuator.set_schedule(None)
        self.rt.event("estop", reason=reason)

    def return_home(self) -> None:
        """Fly back over home at the current altitude, then hold (no pilot decisions meanwhile)."""
        rt = self.rt
        rt.governor.hold("returning home")
        telemetry = rt.actuator.last_telemetry or rt.vehicle.telemetry()
        home = rt.governor.home
        goal = Pose(home.x_m, home.y_m, telemetry.pose.z_m, telemetry.pose.yaw_deg)
        rt.governor.resume("return home")
        self.instruction = ""
        rt.actuator.set_schedule(
            MotionSchedule(plan_toward(goal, telemetry.pose, rt.profile), rt.clock.now())
        )
        rt.event("return_home", goal=goal.as_list())

    def goto(self, goto_id: str, target_ned_m: tuple[float, float, float]) -> str:
        """An operator's GoTo: "" when accepted (flown from the next tick, then a hold), else why not.

        Checked here, before the ack: the target against the geofence around home and the altitude
        limits, and that the drone is flying (not landing or e-stopped, telemetry heard). Like a
        return home, it stops the pilot's decisions (the instruction and any order are dropped) and
        lifts a hold: the operator chose where the drone goes."""
        rt = self.rt
        refusal = goto_refusal(target_ned_m, rt.governor.home, rt.config.safety)
        mode = rt.governor.mode
        telemetry = rt.actuator.last_telemetry
        if not refusal and mode in (Mode.LANDING, Mode.ESTOP):
            refusal = f"not flying: {mode.value} ({rt.governor.reason})"
        if not refusal and telemetry is None:
            refusal = "not flying yet: no vehicle telemetry"
        if refusal:
            rt.event("goto", goto_id=goto_id, state="rejected", target=list(target_ned_m), reason=refusal)
            return refusal
        assert telemetry is not None
        with self._lock:
            self.instruction = ""
            self.order_id = None
            self.order_steps_left = None
            self.goto_s = rt.clock.now()
        rt.governor.hold(f"operator goto {goto_id}")
        rt.governor.resume(f"operator goto {goto_id}")
        flight = GoToFlight.start(goto_id, target_ned_m, telemetry.pose, rt.profile, rt.clock.now())
        rt.actuator.set_goto(flight)
        rt.event(
            "goto",
            goto_id=goto_id,
            state="accepted",
            target=list(target_ned_m),
            pose=pose_list(telemetry.pose),
            distance_m=round(flight.distance_m(telemetry.pose), 3),
            timeout_s=round(flight.deadline_s - flight.started_s, 1),
        )
        return ""

    def on_goto(self, flight: Any, how: str, telemetry: Telemetry | None) -> None:
        """The actuation loop ended a GoTo: arrived -> hold there (the operator decides what next)."""
        pose = telemetry.pose if telemetry is not None else None
        self.rt.event(
            "goto",
            goto_id=flight.goto_id,
            state=how,
            target=pose_list(flight.target)[:3],
            pose=pose_list(pose) if pose is not None else None,
            error_m=round(flight.distance_m(pose), 3) if pose is not None else None,
            plans=flight.plans,
            elapsed_s=round(self.rt.clock.now() - flight.started_s, 2),
        )
        if how == "arrived" or how == "timed out":
            self.rt.governor.hold(f"operator goto {flight.goto_id}: {how}")

    def remote_action(
        self,
        action: Action,
        capture_pose: Pose,
        capture_age_s: float,
        call_id: str | None = None,
        raw: str = "",
        camera_attitude: CameraAttitude = LEVEL_CAMERA,
    ) -> bool:
        """An action chosen by the ground station (one-context fleet mode), with its frame's pose
        (and its camera's attitude, where the caller has the frame: lock-step).

        The same tolerance rules as the pilot's: stale -> discarded and counted, else re-expressed.
        Logged as a step (source "remote", the multi-drone call's call_id).
        """
        rt = self.rt
        deadline_s = rt.config.plan_deadline_s if isinstance(action, Think) else rt.config.action_deadline_s
        if capture_age_s > deadline_s:
            rt.counters.stale += 1
            rt.governor.pilot_failed(f"stale remote action ({capture_age_s:.2f} s)")
            rt.event("discarded", why="stale", source="remote", age_s=capture_age_s)
            return False
        frame = Frame(
            image=None,
            capture_time_s=rt.clock.now() - capture_age_s,
            pose=capture_pose,
            camera_attitude=camera_attitude,
        )
        rt.counters.decisions += 1
        rt.steps += 1
        rt.execute(action, frame)
        rt.governor.pilot_ok()
        rt.reporter.remote_step(action, call_id, raw, rt.config.loop, self.step_order)
        return True

    def judge(self, accept: bool, declaration_t: float | None = None) -> None:
        """The operator's verdict on a declaration (docs/safety.md#real-flight): accept ends the run,
        reject lets it go on (and lifts the hold of a declaration waiting for it)."""
        t = self.rt.reporter.judgement(accept, declaration_t, self.rt.actuator.last_telemetry)
        self.rt.judged(accept, t)
