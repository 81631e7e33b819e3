"""Declarations as the operator judges them: one row per drone and place, not one per message.

A hovering drone re-declares every step. Consecutive declarations of one drone within
`same_place_m` of its pending row, with no judgement of that row in between, are that one row:
its count goes up and it shows the latest frame. Rows are only ever appended (never re-ordered),
so a row an operator is aiming at stays where it is.

A declaration is judged by the process that made it. When the operator re-launches a drone's process,
the rows of the one before are closed (`end_run`): the new process refuses a verdict on a declaration
it never made, so those rows keep no buttons, and one of the old process's declarations that reaches
the log only afterwards (it lags the fleet's state) is shown closed too.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from ground_station.fleet.state import DeclarationRecord

SAME_PLACE_M = 2.0


@dataclass
class DeclarationRow:
    row: int  # its index in the table: fixed for good
    drone: str
    declarations: list[DeclarationRecord] = field(default_factory=list)
    verdict: str | None = None  # "accept" / "reject" once judged (and acked by the drone)
    judged_by: str = ""
    judged_wall_s: float | None = None
    judging: str | None = None  # a verdict sent, its ack not back yet
    closed: str | None = None  # why no verdict can be given any more (its process was replaced)

    @property
    def latest(self) -> DeclarationRecord:
        return self.declarations[-1]

    @property
    def first(self) -> DeclarationRecord:
        return self.declarations[0]

    @property
    def count(self) -> int:
        return len(self.declarations)

    @property
    def pending(self) -> bool:
        return self.verdict is None and self.closed is None

    @property
    def ids(self) -> list[str]:
        return [d.declaration_id for d in self.declarations]

    def judged_text(self) -> str:
        if self.verdict is None:
            return ""
        when = time.strftime("%H:%M:%S", time.localtime(self.judged_wall_s or time.time()))
        return f"{self.verdict.upper()}ED by {self.judged_by or 'operator'} at {when}"


class DeclarationRows:
    def __init__(self, same_place_m: float = SAME_PLACE_M) -> None:
        self.same_place_m = same_place_m
        self.rows: list[DeclarationRow] = []
        self._by_id: dict[str, DeclarationRow] = {}
        # drone -> when its current process was launched, and why the rows before it were closed
        self._run_from: dict[str, tuple[float, str]] = {}

    def add(self, record: DeclarationRecord) -> tuple[DeclarationRow, bool]:
        """The row this declaration belongs to, and whether that row is new."""
        if record.declaration_id in self._by_id:
            return self._by_id[record.declaration_id], False
        mine = [r for r in self.rows if r.drone == record.drone]
        last = mine[-1] if mine else None
        run_from_wall_s, ended_why = self._run_from.get(record.drone, (-math.inf, ""))
        before_run = record.received_wall_s < run_from_wall_s
        if (
            last is not None
            and not before_run
            and last.pending
            and last.judging is None
            and _distance_m(last.latest, record) <= self.same_place_m
        ):
            last.declarations.append(record)
            self._by_id[record.declaration_id] = last
            return last, False
        row = DeclarationRow(len(self.rows), record.drone, [record])
        if before_run:
            row.closed = ended_why  # the process before's, arriving late
        self.rows.append(row)
        self._by_id[record.declaration_id] = row
        return row, True

    def end_run(self, drone: str, wall_s: float, why: str) -> list[DeclarationRow]:
        """`drone`'s process was replaced at wall_s (time.time()): its rows waiting for a verdict
        (or for the ack of one) are closed with `why`, and so is any declaration received before
        wall_s that is added later. Returns the rows closed now."""
        self._run_from[drone] = (wall_s, why)
        ended = self.pending_for(drone)
        for row in ended:
            row.closed, row.judging = why, None
        return ended

    def row_of(self, declaration_id: str) -> DeclarationRow | None:
        return self._by_id.get(declaration_id)

    def pending(self) -> list[DeclarationRow]:
        return [r for r in self.rows if r.pending]

    def pending_for(self, drone: str) -> list[DeclarationRow]:
        return [r for r in self.rows if r.pending and r.drone == drone]


def _distance_m(a: DeclarationRecord, b: DeclarationRecord) -> float:
    return math.dist((a.pose.x_m, a.pose.y_m, a.pose.z_m), (b.pose.x_m, b.pose.y_m, b.pose.z_m))
