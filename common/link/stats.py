"""Counters of a link, readable from any thread as a consistent snapshot, and the bounded-rate log
of what the link threw away."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

log = logging.getLogger(__name__)

LOG_FIRST = 5  # of each kind, every one is logged ...
LOG_EVERY_S = 10.0  # ... then at most one line per kind this often, with the count so far


class LinkStats:
    """Named integer counters. Rejections are counted as `rejected_<kind>` (see common.wire
    ProtocolErrorKind, plus `unauthenticated` for ZAP denials and `handshake` for CURVE
    handshakes that failed before authentication, and `stale`, `replayed`, `unbound` for commands
    common.link.admission refused); `rejected_total()` sums them. Every message a
    link receives is counted once as `received` and then once as either `accepted` (decoded,
    valid, addressed here: handed on) or `rejected_<kind>`."""

    def __init__(self, name: str = "link") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._last_log_s: dict[str, float] = {}

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def reject(self, kind: str, detail: str = "") -> None:
        """Count one rejected message; log it while few, then at a bounded rate (a flood of garbage
        must not become a flood of log lines)."""
        self.add(f"rejected_{kind}")
        self.log_limited(f"rejected_{kind}", detail)

    def log_limited(self, counter: str, detail: str, level: int = logging.WARNING) -> None:
        """Log `detail` for `counter` if it is among the first LOG_FIRST, or LOG_EVERY_S has passed."""
        now_s = time.monotonic()
        with self._lock:
            count = self._counts[counter]
            last_s = self._last_log_s.get(counter)
            if count > LOG_FIRST and last_s is not None and now_s - last_s < LOG_EVERY_S:
                return
            self._last_log_s[counter] = now_s
        log.log(level, "%s: %s (%d so far)%s", self.name, counter, count, f": {detail}" if detail else "")

    def get(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def rejected_total(self) -> int:
        with self._lock:
            return sum(v for k, v in self._counts.items() if k.startswith("rejected_"))

    def telemetry_counts(self) -> dict[str, int]:
        """What a drone reports in its TelemetryMessage (common.messages): messages thrown away so far."""
        with self._lock:
            c = self._counts
            unauthenticated = c["rejected_unauthenticated"] + c["rejected_handshake"]
            stale = c["rejected_stale"] + c["rejected_replayed"] + c["rejected_unbound"]
            rejected = sum(v for k, v in c.items() if k.startswith("rejected_")) - unauthenticated - stale
            return {
                "link_accepted": c["accepted"],
                "link_rejected": rejected,
                "link_refused": c["refused"],
                "link_unauthenticated": unauthenticated,
                "link_dropped": c["publish_dropped"] + c["frames_skipped_backlog"],
                "link_stale": stale,
            }

    def __repr__(self) -> str:
        return f"LinkStats({self.snapshot()})"
