"""Frame budget: per frame, send or skip, and at which JPEG quality (the link budget).

Three limits, checked in this order for each candidate frame:
1. rate: at most `max_fps` frames per second, judged on the frames' capture times when given (a
   camera read that takes longer one step than the next must not push a 5 fps stream's publish
   times closer than 1/max_fps and cost it a frame), else on the times they are offered;
2. backlog: at most `max_in_flight` frames sent but not yet acknowledged by a ground station (its
   heartbeats carry the newest frame seq it received); a backlog (that, or the socket reporting a
   full subscriber queue through `record_backlog`) also lowers the quality cap one step, at most
   once per frame sent, and the cap recovers one step per `recover_s` without backlog;
3. bandwidth: a token bucket of `bandwidth_bytes_s`, `burst_s` deep.

The quality is the highest step (from `quality_max` down to `quality_min`) whose estimated JPEG size
fits the per-frame share of the bandwidth at `max_fps`; sizes are learned per quality from the
frames actually sent. Telemetry does not go through this budget: it has its own socket and queue.
All times are passed in, so the policy is plain code with plain tests.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class FrameBudgetConfig:
    max_fps: float = 5.0
    bandwidth_bytes_s: float | None = None  # None: no bandwidth limit
    burst_s: float = 1.0
    quality_max: int = 85  # the model's JPEG quality (docs/protocol.md#the-loop)
    quality_min: int = 30
    quality_step: int = 10
    max_in_flight: int = 3
    ack_timeout_s: float = 2.0  # an unacknowledged frame older than this counts as lost, not in flight
    recover_s: float = 2.0
    initial_size_bytes: float = 40_000.0  # a 640×360 q85 JPEG of a textured scene, before any is measured

    def __post_init__(self) -> None:
        # NaN passes every `<= 0` test, so each number is checked to be finite and positive.
        for name in ("max_fps", "burst_s", "ack_timeout_s", "recover_s", "initial_size_bytes"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name}={value} must be finite and positive")
        if self.bandwidth_bytes_s is not None and not (
            math.isfinite(self.bandwidth_bytes_s) and self.bandwidth_bytes_s > 0
        ):
            raise ValueError(f"bandwidth_bytes_s {self.bandwidth_bytes_s} must be positive or None")
        if not 1 <= self.quality_min <= self.quality_max <= 100:
            raise ValueError(
                f"need 1 <= quality_min ({self.quality_min}) <= quality_max ({self.quality_max}) <= 100"
            )
        if self.quality_step < 1 or self.max_in_flight < 1:
            raise ValueError("quality_step and max_in_flight must be at least 1")


@dataclass(frozen=True)
class FrameDecision:
    send: bool
    quality: int
    reason: str  # "ok", "rate", "backlog", "bandwidth"


class FrameBudget:
    """Not thread-safe: one owner (the thread that encodes frames) calls everything."""

    _EMA = 0.3

    def __init__(self, config: FrameBudgetConfig | None = None) -> None:
        self.config = config or FrameBudgetConfig()
        cfg = self.config
        self._qualities = list(range(cfg.quality_max, cfg.quality_min - 1, -cfg.quality_step))
        if self._qualities[-1] != cfg.quality_min:
            self._qualities.append(cfg.quality_min)
        self._size_by_quality: dict[int, float] = {}
        self._cap_index = 0  # index into _qualities of the highest quality allowed after backlog
        self._lowered_since_sent = False
        self._last_recover_s: float | None = None
        self._last_sent_s: float | None = None
        self._last_sent_capture_s: float | None = None
        self._in_flight: deque[tuple[int, float]] = deque()  # (frame_seq, sent_s)
        self._acked_seq = -1
        capacity = self._bucket_capacity()
        self._tokens = capacity if capacity is not None else 0.0
        self._tokens_time_s: float | None = None
        self.skipped: dict[str, int] = {"rate": 0, "backlog": 0, "bandwidth": 0}

    # -- inputs -----------------------------------------------------------------------------------

    def record_sent(
        self, frame_seq: int, size_bytes: int, quality: int, now_s: float, capture_s: float | None = None
    ) -> None:
        self._refill(now_s)
        self._last_sent_capture_s = capture_s
        old = self._size_by_quality.get(quality)
        self._size_by_quality[quality] = size_bytes if old is None else old + self._EMA * (size_bytes - old)
        self._tokens -= size_bytes
        self._last_sent_s = now_s
        self._lowered_since_sent = False
        self._in_flight.append((frame_seq, now_s))

    def record_acked(self, frame_seq: int) -> None:
        """A ground station reports `frame_seq` as the newest frame it received."""
        self._acked_seq = max(self._acked_seq, frame_seq)

    def record_backlog(self, now_s: float) -> None:
        """The socket could not take a frame (a subscriber's queue is full), or too many are in flight.
        Lowers the quality cap one step, at most once per frame sent (a stalled subscriber would
        otherwise drive it to the floor at the camera's rate), and restarts the recovery timer."""
        self._last_recover_s = now_s
        if not self._lowered_since_sent:
            self._lowered_since_sent = True
            self._cap_index = min(self._cap_index + 1, len(self._qualities) - 1)

    # -- decision ---------------------------------------------------------------------------------

    def decide(self, now_s: float, capture_s: float | None = None) -> FrameDecision:
        """Send the frame captured at `capture_s` (the camera's clock) and offered at `now_s`?"""
        cfg = self.config
        self._refill(now_s)
        self._recover(now_s)
        quality = self._choose_quality()
        if self._too_soon(now_s, capture_s):
            return self._skip("rate", quality)
        if self.in_flight(now_s) >= cfg.max_in_flight:
            self.record_backlog(now_s)
            return self._skip("backlog", self._choose_quality())
        capacity = self._bucket_capacity()
        if capacity is not None:
            estimate = self.estimated_size(quality)
            # A frame larger than the whole bucket may go when the bucket is full, or it never would.
            if self._tokens < min(estimate, capacity):
                return self._skip("bandwidth", quality)
        return FrameDecision(True, quality, "ok")

    def _too_soon(self, now_s: float, capture_s: float | None) -> bool:
        min_gap_s = 0.9 / self.config.max_fps
        if capture_s is not None and self._last_sent_capture_s is not None:
            gap_s = capture_s - self._last_sent_capture_s
            return 0.0 <= gap_s < min_gap_s  # a clock that went back (a new run) starts afresh
        return self._last_sent_s is not None and now_s - self._last_sent_s < min_gap_s

    def in_flight(self, now_s: float) -> int:
        while self._in_flight and (
            self._in_flight[0][0] <= self._acked_seq
            or now_s - self._in_flight[0][1] > self.config.ack_timeout_s
        ):
            self._in_flight.popleft()
        return len(self._in_flight)

    def estimated_size(self, quality: int) -> float:
        if quality in self._size_by_quality:
            return self._size_by_quality[quality]
        if not self._size_by_quality:
            return self.config.initial_size_bytes * quality / self.config.quality_max
        # JPEG size grows roughly in proportion to quality in this range; the first frame sent at this
        # quality replaces the guess with a measurement.
        nearest = min(self._size_by_quality, key=lambda q: abs(q - quality))
        return self._size_by_quality[nearest] * quality / nearest

    @property
    def quality_cap(self) -> int:
        return self._qualities[self._cap_index]

    # -- internals --------------------------------------------------------------------------------

    def _skip(self, reason: str, quality: int) -> FrameDecision:
        self.skipped[reason] += 1
        return FrameDecision(False, quality, reason)

    def _bucket_capacity(self) -> float | None:
        cfg = self.config
        return None if cfg.bandwidth_bytes_s is None else cfg.bandwidth_bytes_s * cfg.burst_s

    def _refill(self, now_s: float) -> None:
        capacity = self._bucket_capacity()
        if capacity is None or self.config.bandwidth_bytes_s is None:
            return
        if self._tokens_time_s is not None and now_s > self._tokens_time_s:
            self._tokens = min(
                capacity, self._tokens + (now_s - self._tokens_time_s) * self.config.bandwidth_bytes_s
            )
        if self._tokens_time_s is None or now_s > self._tokens_time_s:
            self._tokens_time_s = now_s

    def _recover(self, now_s: float) -> None:
        if self._cap_index == 0 or self._last_recover_s is None:
            return
        if now_s - self._last_recover_s >= self.config.recover_s:
            self._cap_index -= 1
            self._last_recover_s = now_s

    def _choose_quality(self) -> int:
        cfg = self.config
        allowed = self._qualities[self._cap_index :]
        if cfg.bandwidth_bytes_s is None:
            return allowed[0]
        per_frame_bytes = cfg.bandwidth_bytes_s / cfg.max_fps
        for quality in allowed:
            if self.estimated_size(quality) <= per_frame_bytes:
                return quality
        return allowed[-1]
