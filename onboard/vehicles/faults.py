"""Vehicle faults (autopilot failsafe, RC takeover, stale video, link loss, refused commands) and how
the onboard runtime hears of them.

Vehicles own a `FaultReporter`; `attach_vehicle_faults(runtime)` subscribes the runtime so that every
fault is written to the episode's events with its reason and acted on through the safety governor:
"hold" faults hold (and "clear" ones resume a hold that a fault caused), "land" faults end the run
through the governor's landing (a vehicle whose pilot took over ignores that landing itself).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

ACTIONS = ("info", "hold", "land", "clear")
FAULT_PREFIX = "vehicle fault"


@dataclass(frozen=True)
class VehicleFault:
    kind: str  # video_stale, video_ok, failsafe, control_lost, link_lost, link_ok, refused, ...
    why: str
    action: str = "info"  # info | hold | land | clear
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

    def emit(self, kind: str, why: str, action: str = "info") -> VehicleFault:
        fault = VehicleFault(kind, why, action, time.monotonic())
        with self._lock:
            self.history.append(fault)
            sinks = list(self._sinks)
        level = logging.INFO if action in ("info", "clear") else logging.WARNING
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


def attach_vehicle_faults(runtime: Any) -> bool:
    """Route the runtime's vehicle faults into its events and safety governor. False if the vehicle
    reports none (simulated vehicles)."""
    reporter = getattr(runtime.vehicle, "faults", None)
    if not isinstance(reporter, FaultReporter):
        return False

    def on_fault(fault: VehicleFault) -> None:
        runtime.event("vehicle_fault", fault=fault.kind, why=fault.why, action=fault.action)
        reason = f"{FAULT_PREFIX} {fault.kind}: {fault.why}"
        if fault.action == "hold":
            runtime.governor.hold(reason)
            runtime.actuator.set_schedule(None)
        elif fault.action == "land":
            runtime.governor.land(reason)
        elif fault.action == "clear" and runtime.governor.reason.startswith(FAULT_PREFIX):
            runtime.governor.resume(f"{fault.kind}: {fault.why}")

    reporter.subscribe(on_fault)
    return True
