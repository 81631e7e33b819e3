"""The ground link's acknowledged commands: each attempt bound to one run of its drone and stamped
on the drone's clock, re-sent with the same (session, seq) until acked, the timeout growing by the
backoff, and failed with LinkError after the last retry (common.link.ground's module docstring).

Runs on the link's I/O thread only: `AckedCommands` holds no lock.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

import zmq

from common import wire
from common.clock import Clock
from common.errors import LinkError
from common.link.clock_sync import ClockOffsetEstimator
from common.link.stats import LinkStats
from common.messages import Ack

log = logging.getLogger(__name__)


class CommandPeer(Protocol):
    """What an attempt needs of its drone: its run, its clock and the DEALER to it."""

    run_session_id: str  # "" until heard
    clock: ClockOffsetEstimator
    dealer: Any


@dataclass
class PendingCommand:
    drone_id: str
    seq: int
    type_name: str
    parts: list[bytes]
    future: Future[Ack]
    timeout_s: float
    retries_left: int
    deadline_s: float = 0.0
    attempts: int = 0
    started_s: float = 0.0
    drone_session_id: str = ""  # the drone run it is bound to, from its first attempt that left


def stamped_header(header: bytes, send_time_s: float, drone_session_id: str) -> bytes:
    """An encoded envelope with a new send time (on the drone's clock) and the drone run it is bound
    to; its (session, seq) identity unchanged."""
    envelope = wire.decode_header(header)
    return wire.encode_envelope(
        wire.Envelope(
            envelope.version,
            envelope.type,
            envelope.drone_id,
            envelope.session_id,
            envelope.seq,
            send_time_s,
            drone_session_id,
        )
    )


class AckedCommands:
    """The commands in flight to the link's drones, keyed by (drone id, seq)."""

    def __init__(
        self, drones: Mapping[str, CommandPeer], stats: LinkStats, clock: Clock, backoff: float
    ) -> None:
        self._drones = drones  # the link's own table: drones come and go with add/remove_drone
        self._stats = stats
        self._clock = clock
        self._backoff = backoff
        self._pending: dict[tuple[str, int], PendingCommand] = {}

    def start(self, pending: PendingCommand, now_s: float) -> None:
        if pending.drone_id not in self._drones:
            pending.future.set_exception(LinkError(f"unknown drone {pending.drone_id!r}"))
            return
        pending.started_s = now_s
        self._pending[(pending.drone_id, pending.seq)] = pending
        self._attempt(pending, now_s)

    def send_waiting(self, drone_id: str, now_s: float) -> None:
        """The drone's run and clock just became known: send the commands that waited for them."""
        for pending in list(self._pending.values()):
            if pending.drone_id == drone_id and not pending.drone_session_id:
                self._attempt(pending, now_s)

    def waiting_drones(self) -> set[str]:
        """The drones with a command waiting for their run and clock."""
        return {p.drone_id for p in self._pending.values() if not p.drone_session_id}

    def on_ack(self, drone_id: str, ack: Ack) -> None:
        pending = self._pending.get((drone_id, ack.command_seq))
        if pending is None or pending.type_name != ack.command_type:
            self._stats.add("acks_unmatched")  # a late ack to an attempt already answered: harmless
            return
        del self._pending[(drone_id, ack.command_seq)]
        self._stats.add("acks")
        if not pending.future.done():
            pending.future.set_result(ack)

    def tick(self, now_s: float) -> None:
        """Retry each command past its deadline, or fail it after its last retry."""
        for key, pending in list(self._pending.items()):
            if now_s < pending.deadline_s:
                continue
            if pending.future.cancelled():
                del self._pending[key]
            elif pending.attempts <= pending.retries_left:
                self._stats.add("command_retries")
                self._attempt(pending, now_s)
            else:
                del self._pending[key]
                self._stats.add("command_timeouts")
                pending.future.set_exception(
                    LinkError(
                        f"no ack from drone {pending.drone_id!r} for {pending.type_name} seq {pending.seq} "
                        f"after {pending.attempts} attempts over {now_s - pending.started_s:.2f} s"
                    )
                )

    def fail_drone(self, drone_id: str) -> None:
        """The drone was removed: its commands fail."""
        for key, pending in list(self._pending.items()):
            if pending.drone_id == drone_id:
                del self._pending[key]
                pending.future.set_exception(LinkError(f"drone {drone_id!r} was removed before it acked"))

    def fail_all(self) -> None:
        """The link closes: every command still in flight fails."""
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(LinkError("ground link closed before the ack arrived"))
        self._pending.clear()

    def _attempt(self, pending: PendingCommand, now_s: float) -> None:
        drone = self._drones[pending.drone_id]
        pending.attempts += 1
        pending.deadline_s = now_s + pending.timeout_s * self._backoff ** (pending.attempts - 1)
        if not pending.drone_session_id:
            if not (drone.run_session_id and drone.clock.ready):
                self._stats.add("command_attempts_waiting")  # retried at the deadline, or on the reply
                self._stats.log_limited(
                    "command_attempts_waiting",
                    f"{pending.type_name} to {pending.drone_id} waits for the drone's run and clock",
                )
                return
            pending.drone_session_id = drone.run_session_id
        # Re-stamp the send time on each attempt (on the drone's clock, as estimated): the drone
        # refuses a stale one. The (session, seq) identity and the bound run stay the same.
        send_time_s = drone.clock.to_drone_time(self._clock.now())
        header = stamped_header(pending.parts[0], send_time_s, pending.drone_session_id)
        try:
            drone.dealer.send_multipart([header, pending.parts[1]], zmq.NOBLOCK)
            self._stats.add("command_attempts")
        except zmq.Again:
            self._stats.add("command_attempts_unsent")  # not connected right now: retried at the deadline
            self._stats.log_limited(
                "command_attempts_unsent",
                f"{pending.type_name} to {pending.drone_id} not sent yet (no connection)",
            )
