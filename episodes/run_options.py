"""How a suite's episodes are flown (the options every episode of a run shares): the pilot, the
latency model, the simulator (in-process lock-step, or a server for HIL), the structure."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import ConfigError

if TYPE_CHECKING:
    from onboard.lockstep import LatencyModel

MIN_DECISION_PERIOD_S = 0.5  # a 5 ms pilot needs no 20 decisions (20 renders) per second


# ---- latency models -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LatencySpec:
    """`measured` (the pilot's own wall time), `fixed:S`, or `lognormal:MEDIAN,P95` (seconds)."""

    kind: str = "measured"
    median_s: float = 0.0
    p95_s: float = 0.0

    @classmethod
    def parse(cls, text: str | None) -> LatencySpec:
        if not text or text == "measured":
            return cls()
        kind, _, rest = text.partition(":")
        try:
            values = [float(v) for v in rest.split(",")] if rest else []
        except ValueError:
            raise ConfigError(f"--latency {text!r}: numbers expected after '{kind}:'") from None
        if kind == "fixed" and len(values) == 1 and values[0] >= 0:
            return cls("fixed", values[0], values[0])
        if kind == "lognormal" and len(values) == 2 and 0 < values[0] <= values[1]:
            return cls("lognormal", values[0], values[1])
        raise ConfigError(
            f"--latency {text!r}: use measured, fixed:S (S >= 0) or lognormal:MEDIAN,P95 (0 < MEDIAN <= P95)"
        )

    def __str__(self) -> str:
        if self.kind == "fixed":
            return f"fixed:{self.median_s:g}"
        if self.kind == "lognormal":
            return f"lognormal:{self.median_s:g},{self.p95_s:g}"
        return "measured"

    def model(self, seed: int) -> LatencyModel | None:
        """A LockstepDriver latency callable (None: the driver's measured latency)."""
        if self.kind == "fixed":
            value = self.median_s
            return lambda pending: value
        if self.kind == "lognormal":
            rng = random.Random(seed)
            mu = math.log(self.median_s)
            sigma = math.log(self.p95_s / self.median_s) / 1.6448536269514722  # z of the 95th percentile
            return lambda pending: rng.lognormvariate(mu, sigma)
        return None


@dataclass(frozen=True)
class RunOptions:
    pilot: str = "baseline"
    latency: LatencySpec = LatencySpec()
    sim_url: str | None = None  # airsim://HOST:PORT: fly against a server in real time (HIL)
    fly_on: bool = False  # go on to T_max after the first qualifying declaration
    save_frames: bool = True
    min_decision_period_s: float = MIN_DECISION_PERIOD_S
    t_max_s: float | None = None  # override the records' T_max (short test runs)
    structure: str | None = None  # single | multi | commander (None: each record's own)
    commander: str | None = None  # commander structure: "rule" (default) or a commander model URL
