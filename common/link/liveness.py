"""Link-lost / link-restored detection from the time since a peer was last heard."""

from __future__ import annotations

import math
from dataclasses import dataclass

from common.messages import LinkStateName


def check_timing(heartbeat_interval_s: float, link_timeout_s: float) -> None:
    if not (0 < heartbeat_interval_s < link_timeout_s and math.isfinite(link_timeout_s)):
        raise ValueError(
            f"need 0 < heartbeat_interval_s ({heartbeat_interval_s}) < link_timeout_s ({link_timeout_s}): "
            "a link must hear at least one heartbeat per timeout"
        )


@dataclass(frozen=True)
class LinkEvent:
    peer: str  # the drone id (ground side) or the ground session id / "ground" (drone side)
    state: LinkStateName
    silence_s: float  # time since the peer was last heard when the event was raised
    time_s: float  # monotonic wall time of the event


class Liveness:
    """Tracks one peer. `heard(now)` on every valid message, `check(now)` periodically; both return
    the state change (if any) so the caller raises the event outside any lock."""

    def __init__(self, peer: str, timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ValueError(f"link timeout_s {timeout_s} must be positive")
        self.peer = peer
        self.timeout_s = timeout_s
        self.state: LinkStateName = "connecting"
        self.last_heard_s: float | None = None
        self.created_s: float | None = None

    def heard(self, now_s: float) -> LinkEvent | None:
        silence_s = 0.0 if self.last_heard_s is None else now_s - self.last_heard_s
        self.last_heard_s = now_s
        if self.state != "up":
            self.state = "up"
            return LinkEvent(self.peer, "up", silence_s, now_s)
        return None

    def check(self, now_s: float) -> LinkEvent | None:
        if self.created_s is None:
            self.created_s = now_s
        reference_s = self.last_heard_s if self.last_heard_s is not None else self.created_s
        silence_s = now_s - reference_s
        if self.state != "lost" and silence_s > self.timeout_s:
            self.state = "lost"
            return LinkEvent(self.peer, "lost", silence_s, now_s)
        return None
