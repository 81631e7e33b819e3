"""Seeded noise processes for the simulated sensors, evaluated when a sensor is read.

AirSim updates its sensors every physics tick; here nothing runs per tick (a drone nobody reads costs
nothing). Instead every process is a function of the sample index, drawn from streams keyed by the
simulator's seed and the sensor's name, so a reading depends on the seed and the simulation time only,
never on how often or by whom the sensor was read before:

- white noise: the normals of sample k come from a counter-based generator (Philox) at counter k;
- random walks and AirSim's Gauss-Markov drift: their increments are drawn in sample order from one
  stream (PCG64), all the samples elapsed since the last read at once, so the path is the same
  whichever samples were asked for on the way.

`Schedule` is AirSim's FrequencyLimiter + DelayLine (AirLib/include/common/FrequencyLimiter.hpp,
DelayLine.hpp): which sample a frequency-limited sensor shows at a given time.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

import numpy as np

EPS_S = 1e-9  # float slack on update instants
CHUNK = 65536  # samples drawn per batch when a process catches up a long unread interval


def stream_key(seed: int, *names: str) -> int:
    """A 128-bit key for one noise stream of one sensor (stable across runs and platforms)."""
    digest = hashlib.blake2b(json.dumps([int(seed), *names]).encode(), digest_size=16).digest()
    return int.from_bytes(digest, "little")


def normals_at(key: int, index: int, n: int) -> np.ndarray:
    """n standard normals of sample `index` of stream `key`: the same for the same (key, index)."""
    # the counter's second word is the index: a sample's draws (low word) never reach the next sample's
    return np.random.Generator(np.random.Philox(key=key, counter=int(index) << 64)).standard_normal(n)


def uniform_at(key: int, index: int, n: int, low: float, high: float) -> np.ndarray:
    return np.random.Generator(np.random.Philox(key=key, counter=int(index) << 64)).uniform(low, high, n)


class RandomWalk:
    """x_k = x_0 + sigma_step * (n_0 + ... + n_{k-1}) per axis; n_j drawn in order from one stream."""

    def __init__(self, key: int, x0: np.ndarray) -> None:
        self._gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(key)))
        self.count = 0
        self.value = np.array(x0, float)

    def at(self, k: int, sigma_step: float) -> np.ndarray:
        while self.count < k:
            n = min(k - self.count, CHUNK)
            steps = self._gen.standard_normal((n, self.value.size))
            self.value = self.value + sigma_step * steps.sum(axis=0)
            self.count += n
        return self.value


class GaussMarkov:
    """AirLib's GaussianMarkov (common/GaussianMarkov.hpp), updated once per sample of dt_s:
    x_{k+1} = a x_k + (1 - a) sigma n_k with a = exp(-dt / tau), from x_0 = 0. (Its stationary spread
    is sqrt((1 - a) / (1 + a)) sigma, far below sigma at a 50 Hz update: AirSim's drift is slow.)"""

    def __init__(self, key: int, tau_s: float, sigma: float, dt_s: float) -> None:
        self._gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(key)))
        self.a = math.exp(-dt_s / tau_s) if tau_s > 0 else 0.0
        self._log_a = -dt_s / tau_s if tau_s > 0 else -math.inf
        self.sigma = sigma
        self.count = 0
        self.value = 0.0

    def at(self, k: int) -> float:
        a = self.a
        while self.count < k:
            n = min(k - self.count, CHUNK)
            noise = self._gen.standard_normal(n)
            weights = np.exp(np.arange(n - 1, -1, -1, dtype=float) * self._log_a)  # a^(n-1-j)
            # elementwise, not a BLAS dot: that one wakes its thread pool (tens of ms on a busy machine)
            self.value = a**n * self.value + (1.0 - a) * self.sigma * float(np.sum(weights * noise))
            self.count += n
        return self.value


@dataclass(frozen=True)
class Schedule:
    """When a frequency-limited AirSim sensor updates and what its output shows.

    After a reset at elapsed 0 the sensor pushes a sample (index 0) into its delay line; it then
    updates at `first + j / frequency` (first = the startup delay, or one period without one), pushing
    sample j + 1 each time and showing the newest sample at least `latency` old. Before the first update
    it shows nothing (AirSim's default-constructed output)."""

    frequency_hz: float
    startup_delay_s: float = 0.0
    latency_s: float = 0.0

    @property
    def period_s(self) -> float:
        return 1.0 / self.frequency_hz

    @property
    def first_s(self) -> float:
        return self.startup_delay_s if self.startup_delay_s > 0 else self.period_s

    def shown(self, elapsed_s: float) -> tuple[int, float] | None:
        """(sample index, its push time since the reset) shown at elapsed_s; None: nothing yet."""
        first, period = self.first_s, self.period_s
        if elapsed_s < first - EPS_S:
            return None
        update_s = first + math.floor((elapsed_s - first) / period + EPS_S) * period
        target_s = update_s - self.latency_s
        if target_s < -EPS_S:
            return None  # nothing pushed that long ago: the delay line's default output
        if target_s < first - EPS_S:
            return 0, 0.0
        j = math.floor((target_s - first) / period + EPS_S)
        return j + 1, first + j * period


__all__ = ["GaussMarkov", "RandomWalk", "Schedule", "normals_at", "stream_key", "uniform_at"]
