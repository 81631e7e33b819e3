"""Baseline pilot speed (target < 20 ms per frame) and the openai:// round trip through serve-pilot.

Renders frames with the built-in simulator (residential scene, random poses, a target in view), then
times BaselinePilot.decide per frame (with a colour named, and with none: every colour is tried),
and a full ModelPilot step over HTTP against an in-process serve-pilot (JPEG encode, request, server
decode, baseline, schema validation, parse). Prints median / p95 / max in milliseconds.

    .venv/bin/python benchmarks/bench_baseline.py [--frames 40] [--http-steps 40]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common.stats import latency_line  # noqa: E402


def summary(label: str, seconds: list[float]) -> None:
    print(f"{label:<44} {latency_line(seconds)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40, help="frames rendered and decided (default 40)")
    parser.add_argument(
        "--http-steps", type=int, default=40, help="ModelPilot steps over openai:// (default 40)"
    )
    args = parser.parse_args()

    from models.baseline import BaselinePilot
    from models.pilot import Observation, model_pilot_from_url
    from models.serve import make_pilot, start_server
    from sim_bridge.sim.baseline_frames import make_cases
    from sim_bridge.sim.world import World

    started = time.perf_counter()
    with World("residential", vehicles=1, seed=3) as world:
        cases = make_cases(world, n_target=args.frames, n_distractor_only=0, n_empty=0, seed=11)
    print(
        f"rendered {len(cases)} frames of {cases[0].image.shape[1]}x{cases[0].image.shape[0]} "
        f"in {time.perf_counter() - started:.1f} s"
    )

    pilot = BaselinePilot()
    for c in cases[:3]:  # warm-up (first calls allocate)
        pilot.decide(Observation(c.image, c.instruction))
    named, unnamed = [], []
    for case in cases:
        t0 = time.perf_counter()
        pilot.decide(Observation(case.image, case.instruction))
        named.append(time.perf_counter() - t0)
        generic = case.instruction.replace(f"{case.colour} ", "")
        t0 = time.perf_counter()
        pilot.decide(Observation(case.image, generic))
        unnamed.append(time.perf_counter() - t0)
    summary("baseline decide, colour named", named)
    summary("baseline decide, no colour (all colours)", unnamed)

    server, thread = start_server(make_pilot("baseline"))
    try:
        model = model_pilot_from_url(f"openai://127.0.0.1:{server.port}/v1?profile=qwen3.5-2b")
        model.decide(Observation(cases[0].image, cases[0].instruction))
        steps = []
        for i in range(args.http_steps):
            case = cases[i % len(cases)]
            t0 = time.perf_counter()
            decision = model.decide(Observation(case.image, case.instruction))
            steps.append(time.perf_counter() - t0)
            assert decision.action is not None, decision.error
        summary("ModelPilot step via openai:// + serve-pilot", steps)
        model.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
