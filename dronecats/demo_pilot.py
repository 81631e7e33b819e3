"""The demo's `--pilot`: which pilot flies it, and what its decisions cost.

`baseline` (the default) is the vision baseline; any backend URL is a model pilot, such as the
in-process transformers backend with a random-weights architecture, constrained to the schema:

    dronecats demo --pilot 'hf://qwen3.5-tiny?random_init=1&device=cpu&dtype=float32&profile=qwen3.5-2b'

A random-weights pilot's flight is a timing run of real tensors through the whole runtime, not
a trained pilot: the demo says so in its output and its summary.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from common.capabilities import Loadable, RandomWeights

if TYPE_CHECKING:
    from models.backends.base import ModelBackend
    from onboard.flight_state import FlightState

STAGES = ("preprocess_s", "model_s", "parse_s", "plan_s", "total_s")


def make_demo_pilot(spec: str, delta_m: float, camera: str | None = None) -> Any:
    """The pilot, with an in-process model loaded now: a missing extra or a bad model directory
    is one error before the flight (common.errors.ConfigError / BackendError), not a hold at
    every step."""
    from models.serve import make_pilot

    pilot = make_pilot(spec, delta_m=delta_m, camera=camera)
    # Before the simulator's world: torch/transformers load triton, whose LLVM crashes the
    # process when loaded after Mesa's (the simulator's EGL renderer); the other order works.
    backend = _model_backend(pilot)
    if isinstance(backend, Loadable):
        backend.load()
    return pilot


def is_random_weights(pilot: Any) -> bool:
    backend = _model_backend(pilot)
    return isinstance(backend, RandomWeights) and bool(backend.random_init)


def _model_backend(pilot: Any) -> ModelBackend | None:
    """A model pilot's backend; None for the baseline and scripted pilots, which have none."""
    from models.pilot import ModelPilot

    return pilot.backend if isinstance(pilot, ModelPilot) else None


@dataclass
class DecisionLog:
    """Per-decision stages and whether the reply parsed, collected by the demo's step callback."""

    stages: list[Any] = field(default_factory=list)
    malformed: int = 0
    backend_errors: int = 0
    stale: int = 0  # valid replies that came too late to fly (the runtime's action deadline)

    def add(self, flight: FlightState) -> None:
        counters = flight.counters
        self.stages.append(flight.last_stages)
        self.malformed = counters.malformed
        self.backend_errors = counters.backend_errors
        self.stale = counters.stale

    def summary(self) -> dict[str, Any]:
        n = len(self.stages)
        valid = n - self.malformed - self.backend_errors
        out: dict[str, Any] = {
            "decisions": n,
            "replies_valid": valid,
            "replies_valid_pct": round(100.0 * valid / n, 1) if n else None,
            "replies_stale": self.stale,
        }
        for name in STAGES:
            values = [getattr(s, name) for s in self.stages]
            out[f"{name[:-2]}_ms_p50"] = round(1000 * statistics.median(values), 1) if values else None
        return out
