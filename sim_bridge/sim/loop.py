"""The world's time: ticks in the caller's thread (lock-step) or in a background thread at the clock
speed, and pause / continue-for-time as AirSim has them.

A tick is the world's `step(dt_s)`; this module only decides when ticks happen and how long each is
(`tick_s`, the last one of an advance shorter), so lock-step runs give the same ticks every time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from common.clock import SimClock
from common.errors import ConfigError, VehicleError


@dataclass(eq=False)
class SimLoop:
    """Runs `step` on `clock`; `lock` is the world's (a pause waits out a tick in progress)."""

    step: Callable[[float | None], float]
    clock: SimClock
    tick_s: float
    lock: threading.RLock
    speed: float = 1.0  # simulated seconds per wall second (the clock speed)
    _paused: bool = field(default=False, init=False)
    _run_cond: threading.Condition = field(default_factory=threading.Condition, init=False)
    _loop: threading.Thread | None = field(default=None, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)

    def advance(self, duration_s: float, pace: bool = False) -> float:
        """Run the world for duration_s of simulation time in the caller's thread (lock-step use).

        The background loop must be paused (or not started). With pace=True it runs at the clock speed.
        """
        if duration_s < 0:
            raise ValueError(f"cannot advance by a negative duration ({duration_s} s)")
        if self._loop is not None and not self._paused:
            raise VehicleError(
                "advance() needs the simulation paused (World.pause()) or its loop not started"
            )
        # The ticks are counted from this advance's start, never from the clock's reading: `end - now`
        # rounds differently at every absolute time, so a server that had run for another while
        # (another episode, real time between runs) would get ticks an ulp longer or shorter and fly
        # another trajectory. `elapsed_s` sums the same tick sizes for the same duration_s, always.
        elapsed_s = 0.0
        wall0 = time.monotonic()
        while True:
            remaining_s = duration_s - elapsed_s
            if remaining_s <= 1e-9:
                break
            tick_s = min(self.tick_s, remaining_s)
            self.step(tick_s)
            elapsed_s += tick_s
            if pace and self.speed > 0:
                lag = elapsed_s / self.speed - (time.monotonic() - wall0)
                if lag > 0:
                    time.sleep(lag)
        return self.clock.now()

    def start(self) -> None:
        """Run the world in a background thread at the clock speed (until paused or closed)."""
        if self._loop is None:
            self._loop = threading.Thread(target=self._run, name="sim-loop", daemon=True)
            self._loop.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._run_cond:
                while self._paused and not self._stop.is_set():
                    self._run_cond.wait(0.5)
                wall0, sim0 = time.monotonic(), self.clock.now()
                speed = self.speed
            while not self._stop.is_set() and speed == self.speed:
                # Checked under the world's lock, which pause() takes after setting _paused: a tick
                # can no longer slip in after simPause(True) has returned (a paused server that moves
                # on its own makes lock-step over RPC depend on when the pause came).
                with self.lock:
                    if self._paused:
                        break
                    self.step(None)
                ahead_s = (self.clock.now() - sim0) / speed - (time.monotonic() - wall0)
                if ahead_s > 0:
                    time.sleep(ahead_s)
                elif ahead_s < -1.0:  # far behind (slow renders): do not try to catch up in a burst
                    wall0, sim0 = time.monotonic(), self.clock.now()

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self, paused: bool = True) -> None:
        with self._run_cond:
            self._paused = paused
            self._run_cond.notify_all()
        if paused:
            # wait out a tick in progress so that the caller sees a still world
            with self.lock:
                pass

    def set_clock_speed(self, speed: float) -> None:
        if speed <= 0:
            raise ConfigError(f"clock speed {speed} must be > 0")
        self.speed = speed

    @property
    def clock_speed(self) -> float:
        return self.speed

    def continue_for_time(self, duration_s: float) -> None:
        """AirSim's simContinueForTime: run duration_s at the clock speed, then stay paused."""
        self.pause(True)
        self.advance(duration_s, pace=True)

    def stop(self) -> None:
        """End the background thread (if any), waiting up to 5 s for its tick."""
        self._stop.set()
        with self._run_cond:
            self._run_cond.notify_all()
        if self._loop is not None:
            self._loop.join(timeout=5)
