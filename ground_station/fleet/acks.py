"""One command to several drones at once, and each drone's ack recorded as it arrives."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout

from common.errors import LinkError
from common.messages import Ack, Body
from ground_station.fleet.state import AckRecord, FleetState

log = logging.getLogger(__name__)


class AckFanOut:
    """Sends through `send_async` (the link's acked command send) and records every AckRecord in
    FleetState (the drone's latest ack per command, and an "ack" event)."""

    def __init__(self, state: FleetState, send_async: Callable[[str, Body], Future[Ack]]) -> None:
        self.state = state
        self._send_async = send_async

    def fan_out(
        self,
        command: Body,
        targets: list[str],
        wait_s: float,
        on_ack: Callable[[AckRecord], None] | None,
    ) -> dict[str, AckRecord]:
        """Send `command` to every drone in `targets` at once; one AckRecord each.

        Each ack is timed when it arrives (on the link's I/O thread, as the future completes), not
        when this call gets round to reading it: one unreachable drone delays nobody else's figure.
        Every ack is recorded, announced (an "ack" event) and passed to `on_ack` as it arrives; the
        call returns once all have arrived or given up.
        """
        started = time.monotonic()
        records: dict[str, AckRecord] = {}
        all_done = threading.Event()
        lock = threading.Lock()

        def arrived(drone_id: str, future: Future[Ack]) -> None:
            latency_s = time.monotonic() - started
            try:
                ack = future.result(timeout=0)
                record = AckRecord(drone_id, command.TYPE, ack.result, ack.reason, latency_s)
            except (LinkError, FutureTimeout, CancelledError) as exc:
                why = str(exc) or type(exc).__name__
                record = AckRecord(drone_id, command.TYPE, "no ack", why, latency_s)
            self.record(record, on_ack)
            with lock:
                records[drone_id] = record
                if len(records) == len(targets):
                    all_done.set()

        futures = {d: self._send_async(d, command) for d in targets}
        for drone_id, future in futures.items():
            future.add_done_callback(functools.partial(arrived, drone_id))
        if not all_done.wait(timeout=wait_s):
            for drone_id, future in futures.items():
                future.cancel()  # the link's own retries gave up later than wait_s: stop waiting
                with lock:
                    missing = drone_id not in records
                if missing:
                    record = AckRecord(
                        drone_id, command.TYPE, "no ack", f"no answer within {wait_s:g} s", wait_s
                    )
                    self.record(record, on_ack)
                    with lock:
                        records.setdefault(drone_id, record)
        with lock:
            return {d: records[d] for d in targets}

    def record(self, record: AckRecord, on_ack: Callable[[AckRecord], None] | None) -> None:
        with self.state.lock:
            self.state.drones[record.drone].acks[record.command] = record
        self.state.emit(
            "ack",
            record.drone,
            record,
            command=record.command,
            result=record.result,
            reason=record.reason,
            latency_s=round(record.latency_s, 4),
        )
        if on_ack is not None:
            try:
                on_ack(record)
            except Exception:  # a broken view must not break the link thread
                log.exception("on_ack failed for %s", record.drone)
