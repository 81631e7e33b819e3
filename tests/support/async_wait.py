"""Polling a condition from a coroutine (MAVSDK's clients are asyncio)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def wait_until(what: str, cond: Callable[[], bool], timeout_s: float) -> None:
    """Until cond() holds; AssertionError naming `what` after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.1)
