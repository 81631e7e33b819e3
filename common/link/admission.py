"""Which commands a drone runs: fresh, bound to this run, in order, and each one at most once.

A command's envelope carries the ground station's session and seq, the drone run it is for
(`drone_session_id`: this DroneLink's session_id, which the drone puts on everything it sends) and
its send time on the drone's clock (the ground station converts with its heartbeat clock estimate).
The drone refuses, and never runs:

- `unbound`: a command for another run, or for none (a capture from an earlier onboard process);
- `stale`: sent longer ago than `max_age_s` + `clock_skew_s`, or stamped more than `clock_skew_s`
  in the future; also a session this drone no longer remembers, when the command is not newer than
  what it forgot (see below);
- `replayed`: a seq at or below the last one run in its session. The last few run commands keep
  their ack, so a ground station retrying one whose ack was lost gets that ack back (`duplicate`)
  instead of a second execution.

Nothing here is a fixed window that a flood of sessions can flush. A session is forgotten only
`session_memory_s` after its newest command, when every command it ever sent is stale by its send
time (the config refuses a memory shorter than the age bound allows). Past `max_sessions`
remembered at once, the least recently active is forgotten early and its newest send time becomes
a floor: a command of a session not remembered must be sent after the floor, so nothing a
forgotten session sent can come back.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

T = TypeVar("T")

VerdictStatus = Literal["run", "duplicate", "unbound", "stale", "replayed"]
ACKS_KEPT_PER_SESSION = 16  # a ground station retries a handful of commands at once, not more


@dataclass(frozen=True)
class AdmissionConfig:
    max_age_s: float = 2.0  # a command is fresh this long after it was sent (each retry is re-stamped)
    clock_skew_s: float = 0.5  # allowance for the ground station's estimate of the drone's clock
    session_memory_s: float = 60.0  # how long a ground-station session is remembered after its last command
    max_sessions: int = 4096  # remembered at once (a few bytes each)

    def __post_init__(self) -> None:
        numbers = (self.max_age_s, self.clock_skew_s, self.session_memory_s)
        if not all(math.isfinite(n) and n > 0 for n in numbers) or self.max_sessions < 1:
            raise ValueError(
                f"command admission needs positive, finite max_age_s ({self.max_age_s}), clock_skew_s "
                f"({self.clock_skew_s}), session_memory_s ({self.session_memory_s}) and max_sessions "
                f"({self.max_sessions})"
            )
        # Forgetting a session is safe only once everything it sent is stale by its own send time.
        if self.session_memory_s < self.max_age_s + 2 * self.clock_skew_s:
            raise ValueError(
                f"session_memory_s {self.session_memory_s} must be at least max_age_s + 2 * clock_skew_s "
                f"({self.max_age_s + 2 * self.clock_skew_s:g})"
            )


@dataclass(frozen=True)
class AdmissionVerdict(Generic[T]):
    status: VerdictStatus
    reason: str = ""
    cached: T | None = None  # the ack of a duplicate


@dataclass
class _Session(Generic[T]):
    last_seq: int
    newest_send_s: float
    updated_s: float  # drone clock when it last ran a command
    acks: OrderedDict[int, T] = field(default_factory=OrderedDict)


class CommandAdmission(Generic[T]):
    """`admit` before running a command, `remember` after (with its ack). Keys are one ground
    station's session (the link keys them by the authenticated CURVE key too). Not thread-safe:
    the drone link's I/O thread owns it."""

    def __init__(self, run_session_id: str, config: AdmissionConfig | None = None) -> None:
        self.run_session_id = run_session_id
        self.config = config or AdmissionConfig()
        self._sessions: OrderedDict[str, _Session[T]] = OrderedDict()  # least recently run first
        self._floor_s = -math.inf  # newest send time of any session forgotten early

    def __len__(self) -> int:
        return len(self._sessions)

    def admit(
        self, key: str, seq: int, send_time_s: float, drone_session_id: str, now_s: float
    ) -> AdmissionVerdict[T]:
        verdict: AdmissionVerdict[T] = self.fresh(send_time_s, drone_session_id, now_s)
        if verdict.status != "run":
            return verdict
        self._expire(now_s)
        session = self._sessions.get(key)
        if session is None:
            if send_time_s <= self._floor_s:
                return AdmissionVerdict(
                    "stale", "its session was forgotten, and it is no newer than what was"
                )
            return AdmissionVerdict("run")
        cached = session.acks.get(seq)
        if cached is not None:
            return AdmissionVerdict("duplicate", cached=cached)
        if seq <= session.last_seq:
            last = session.last_seq
            return AdmissionVerdict(
                "replayed", f"seq {seq} is at or below {last}, the last one run in its session"
            )
        return AdmissionVerdict("run")

    def fresh(self, send_time_s: float, drone_session_id: str, now_s: float) -> AdmissionVerdict[T]:
        """The rules without a session: for this run, and fresh ("run" when both hold). Traffic,
        which is not acked, is held to these alone (the next relay replaces it)."""
        if drone_session_id != self.run_session_id:
            if not drone_session_id:
                return AdmissionVerdict(
                    "unbound", "carries no drone run (a ground station of another release?)"
                )
            other, this = drone_session_id[:16], self.run_session_id
            return AdmissionVerdict("unbound", f"bound to drone run {other!r}, not this run {this!r}")
        age_s = now_s - send_time_s
        limit_s = self.config.max_age_s + self.config.clock_skew_s
        if age_s > limit_s:
            return AdmissionVerdict("stale", f"sent {age_s:.1f} s ago, over the {limit_s:g} s bound")
        if age_s < -self.config.clock_skew_s:
            skew_s = self.config.clock_skew_s
            return AdmissionVerdict(
                "stale", f"stamped {-age_s:.1f} s in the future, over the {skew_s:g} s skew"
            )
        return AdmissionVerdict("run")

    def remember(self, key: str, seq: int, send_time_s: float, ack: T, now_s: float) -> None:
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session(seq, send_time_s, now_s)
        session.last_seq = max(session.last_seq, seq)
        session.newest_send_s = max(session.newest_send_s, send_time_s)
        session.updated_s = now_s
        self._sessions.move_to_end(key)
        session.acks[seq] = ack
        while len(session.acks) > ACKS_KEPT_PER_SESSION:
            session.acks.popitem(last=False)
        while len(self._sessions) > self.config.max_sessions:
            _, forgotten = self._sessions.popitem(last=False)
            self._floor_s = max(self._floor_s, forgotten.newest_send_s)

    def _expire(self, now_s: float) -> None:
        while self._sessions:
            key, oldest = next(iter(self._sessions.items()))
            if now_s - oldest.updated_s <= self.config.session_memory_s:
                return
            del self._sessions[key]
