"""Headless ground station: the fleet library driven from a script or `dronecats gs --headless`.

with SimFleet(4, targets=[...]) as sim, FleetClient(sim.addresses, sim.security) as fleet:
    session = HeadlessSession(fleet, make_structure("per-drone", fleet))
    summary = session.run("go to the red car", duration_s=120, until="qualifying")
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.declarations import qualifies
from common.errors import LinkError
from ground_station.fleet.client import FleetClient
from ground_station.fleet.state import DeclarationRecord, FleetEvent
from ground_station.fleet.structures import Structure

log = logging.getLogger(__name__)

UNTIL = ("none", "declaration", "qualifying")


@dataclass
class SessionSummary:
    structure: str
    instruction: str
    wall_s: float
    reason: str  # "duration", "declaration", "qualifying"
    steps: dict[str, int]
    declarations: list[dict[str, Any]]
    calls: int
    errors: list[str]
    extra: dict[str, Any] = field(default_factory=dict)


def declaration_dict(d: DeclarationRecord) -> dict[str, Any]:
    return {
        "declaration_id": d.declaration_id,
        "drone": d.drone,
        "t_s": round(d.t_s, 2),
        "distance_m": None if d.distance_m is None else round(d.distance_m, 2),
        "visible": d.visible,
        "judged": d.judged,
    }


class HeadlessSession:
    def __init__(self, fleet: FleetClient, structure: Structure, delta_m: float = 5.0) -> None:
        self.fleet = fleet
        self.structure = structure
        self.delta_m = delta_m

    def qualifying(self) -> list[DeclarationRecord]:
        with self.fleet.state.lock:
            return [
                d
                for d in self.fleet.state.declarations
                if qualifies(d.distance_m, d.visible, self.delta_m, d.judged)
            ]

    def run(
        self,
        instruction: str,
        duration_s: float,
        until: str = "none",
        on_event: Callable[[FleetEvent], None] | None = None,
        link_timeout_s: float = 60.0,
    ) -> SessionSummary:
        if until not in UNTIL:
            raise ValueError(f"until={until!r} is not one of {UNTIL}")
        if on_event is not None:
            self.fleet.state.add_listener(on_event)
        started = time.monotonic()
        reason = "duration"
        try:
            # The wait for the first telemetry counts against duration_s: a session never outlasts it.
            wait_s = min(link_timeout_s, duration_s)
            if not self.fleet.wait_for_link(wait_s):
                silent = [d for d, s in self.fleet.state.drones.items() if s.telemetry is None]
                where = {a.drone_id: a.base for a in self.fleet.addresses}
                named = ", ".join(f"{d} ({where.get(d, '?')})" for d in silent)
                raise LinkError(f"no telemetry from {named} within {wait_s:g} s")
            self.structure.start(instruction)
            deadline = started + duration_s
            while time.monotonic() < deadline:
                if until == "declaration" and self.fleet.state.declarations:
                    reason = "declaration"
                    break
                if until == "qualifying" and self.qualifying():
                    reason = "qualifying"
                    break
                time.sleep(0.1)
        finally:
            self.structure.stop()
            if on_event is not None:
                self.fleet.state.remove_listener(on_event)
        with self.fleet.state.lock:
            steps = {d: s.step_count for d, s in self.fleet.state.drones.items()}
            declarations = [declaration_dict(d) for d in self.fleet.state.declarations]
        return SessionSummary(
            self.structure.name,
            instruction,
            round(time.monotonic() - started, 2),
            reason,
            steps,
            declarations,
            self.structure.calls,
            list(self.structure.errors),
        )
