"""Counters of a link, readable from any thread as a consistent snapshot."""

from __future__ import annotations

import threading
from collections import Counter


class LinkStats:
    """Named integer counters. Rejections are counted as `rejected_<kind>` (see common.wire
    ProtocolErrorKind, plus `unauthenticated` for ZAP denials and `handshake_failed` for CURVE
    handshakes that failed before authentication); `rejected_total()` sums them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def reject(self, kind: str) -> None:
        self.add(f"rejected_{kind}")

    def get(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def rejected_total(self) -> int:
        with self._lock:
            return sum(v for k, v in self._counts.items() if k.startswith("rejected_"))

    def __repr__(self) -> str:
        return f"LinkStats({self.snapshot()})"
