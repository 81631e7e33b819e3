"""Vehicle faults (autopilot failsafe, RC takeover, stale video, link loss, refused commands) and how
the onboard runtime hears of them.

Vehicles own a `FaultReporter`; `attach_vehicle_faults` subscribes the runtime so that every fault is
written to the episode's events with its reason and acted on through the operator's commands (the
one hold path, with its event): "hold" faults hold (and "clear" ones resume a hold that a fault
caused), "land" faults end the run through the governor's landing (a vehicle whose pilot took over
ignores that landing itself).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onboard.vehicles.fault_kinds import FaultAction, FaultKind

if TYPE_CHECKING:  # the runtime's side; vehicles import this module without it
    from onboard.operator import Operator
    from onboard.reporter import StepReporter

log = logging.getLogger(__name__)

ACTIONS = FaultAction.values()
FAULT_PREFIX = "vehicle fault"


@dataclass(frozen=True)
class VehicleFault:
    kind: FaultKind
    why: str
    action: FaultAction = FaultAction.INFO
    wall_s: float = 0.0

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"fault action {self.action!r} not in {ACTIONS}")


FaultSink = Callable[[VehicleFault], None]


class FaultReporter:
    def __init__(self, vehicle_name: str) -> None:
        self.vehicle_name = vehicle_name
        self.history: list[VehicleFault] = []
        self._sinks: list[FaultSink] = []
        self._lock = threading.Lock()

    def subscribe(self, sink: FaultSink) -> None:
        with self._lock:
            self._sinks.append(sink)

    def emit(self, kind: FaultKind, why: str, action: FaultAction = FaultAction.INFO) -> VehicleFault:
        fault = VehicleFault(kind, why, action, time.monotonic())
        with self._lock:
            self.history.append(fault)
            sinks = list(self._sinks)
        level = logging.WARNING if FaultAction(action).is_warning else logging.INFO
        log.log(level, "%s: %s (%s) -> %s", self.vehicle_name, kind, why, action)
        for sink in sinks:
            try:
                sink(fault)
            except Exception:
                log.exception("fault sink failed")
        return fault

    def kinds(self) -> list[str]:
        with self._lock:
            return [f.kind for f in self.history]


def attach_vehicle_faults(faults: object, operator: Operator, reporter: StepReporter) -> bool:
    """Route a vehicle's faults (its FaultReporter) into the runtime's events and, through the
    operator's commands, its safety governor. False if the vehicle reports none (simulated vehicles)."""
    if not isinstance(faults, FaultReporter):
        return False

    def on_fault(fault: VehicleFault) -> None:
        reporter.event("vehicle_fault", fault=fault.kind, why=fault.why, action=fault.action)
        reason = f"{FAULT_PREFIX} {fault.kind}: {fault.why}"
        if fault.action == FaultAction.HOLD:
            operator.hold(reason)
        elif fault.action == FaultAction.LAND:
            operator.land(reason)
        elif fault.action == FaultAction.CLEAR and operator.governor.reason.startswith(FAULT_PREFIX):
            operator.resume(f"{fault.kind}: {fault.why}")

    faults.subscribe(on_fault)
    return True
