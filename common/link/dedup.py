"""Exactly-once command execution: a bounded window of (session, seq) → cached ack.

A retried command (same session and seq, perhaps from a new socket after a reconnect) gets the
cached ack again instead of being executed twice. The window is bounded per session and in the
number of sessions; a command older than what the window still remembers is refused as stale
rather than risk a second execution (at-most-once beyond the window, exactly-once within it).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

T = TypeVar("T")


class _SessionWindow(Generic[T]):
    def __init__(self) -> None:
        self.acks: OrderedDict[int, T] = OrderedDict()
        self.forgotten_below = -1  # every seq <= this one may have been executed and forgotten


class DedupWindow(Generic[T]):
    def __init__(self, per_session: int = 1024, max_sessions: int = 64) -> None:
        if per_session < 1 or max_sessions < 1:
            raise ValueError(f"window sizes must be positive (per_session={per_session}, max={max_sessions})")
        self.per_session = per_session
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, _SessionWindow[T]] = OrderedDict()

    def lookup(self, session_id: str, seq: int) -> tuple[str, T | None]:
        """("new", None), ("duplicate", cached_ack) or ("stale", None)."""
        window = self._sessions.get(session_id)
        if window is None:
            return "new", None
        self._sessions.move_to_end(session_id)
        cached = window.acks.get(seq)
        if cached is not None:
            return "duplicate", cached
        if seq <= window.forgotten_below:
            return "stale", None
        return "new", None

    def remember(self, session_id: str, seq: int, ack: T) -> None:
        window = self._sessions.get(session_id)
        if window is None:
            window = self._sessions[session_id] = _SessionWindow()
            while len(self._sessions) > self.max_sessions:
                # An evicted session's retries would be re-executed, so evict the least recently
                # active one: its ground station is the one least likely to still be retrying.
                self._sessions.popitem(last=False)
        self._sessions.move_to_end(session_id)
        window.acks[seq] = ack
        while len(window.acks) > self.per_session:
            old_seq, _ = window.acks.popitem(last=False)
            window.forgotten_below = max(window.forgotten_below, old_seq)
