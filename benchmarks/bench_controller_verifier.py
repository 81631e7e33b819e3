"""Cost of the controller per step and of the verifier per episode (both should be negligible next
to a model call). Prints median and p95 per call.

    .venv/bin/python benchmarks/bench_controller_verifier.py [--iterations 2000]

Controller: plan_go on the default camera and on a distorted one (OpenCV undistortion), plan_toward
(latency compensation). Verifier: one synthetic 300 s episode at 2 Hz trace (600 trace lines, 100
steps, 3 declarations) read from disk and scored.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.actions import Go
from common.camera import BUILTIN_CAMERAS, CameraProfile
from common.pose import Pose
from episodes.logs import DeclarationLine, StepLine, TraceLine, read_episode, write_lines
from episodes.records import record_from_dict, save_record
from episodes.verifier import verify
from onboard.controller import go_world_goal, plan_go, plan_toward
from onboard.profiles import BUILTIN_FLIGHT_PROFILES


def timed(fn: Callable[[int], object], iterations: int) -> tuple[float, float]:
    samples = []
    for i in range(iterations):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def synthetic_episode(directory: Path) -> None:
    record = record_from_dict(
        {
            "id": "bench",
            "scene": "town",
            "task_type": "approach",
            "instruction": "Fly to the red car.",
            "environment": "outdoor",
            "delta_m": 5.0,
            "t_max_s": 300.0,
            "drones": [{"name": "Drone1", "start_pose": [0, 0, -3, 0]}],
            "targets": [{"id": "car", "class": "car", "pose": [40, 0, 0, 0]}],
        }
    )
    save_record(record, directory / "episode.json")
    trace = [TraceLine(i * 0.5, "Drone1", (0, 0, -3, 0), (40, 0, 0, 0), 40 - i * 0.06, 39 - i * 0.06, True)
             for i in range(600)]  # fmt: skip
    steps = [StepLine(i * 3.0, "Drone1", i, Go((500, 500), 9.0), "{}", 0.5, 40 - i * 0.36, True, True)
             for i in range(100)]  # fmt: skip
    decls = [
        DeclarationLine(t, "Drone1", 40 - t * 0.12, 39 - t * 0.12, True, (0, 0, -3, 0))
        for t in (90, 200, 290)
    ]
    write_lines(directory / "trace.jsonl", trace)
    write_lines(directory / "steps.jsonl", steps)
    write_lines(directory / "declarations.jsonl", decls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    n = args.iterations
    profile = BUILTIN_FLIGHT_PROFILES["outdoor"]
    camera = BUILTIN_CAMERAS["outdoor"]
    distorted = CameraProfile("d", 1280, 720, 650, 648, 645, 355, (-0.28, 0.09, 0.0012, -0.0008, -0.01))
    points = [Go((100 + (i * 37) % 800, 100 + (i * 53) % 800), 2 + (i % 20)) for i in range(n)]
    plan_go(points[0], distorted, profile)  # import OpenCV outside the timing

    rows = [
        ("plan_go, pinhole camera", lambda i: plan_go(points[i], camera, profile)),
        ("plan_go, distorted camera", lambda i: plan_go(points[i], distorted, profile)),
    ]
    capture = Pose(0, 0, -3, 30)
    goals = [go_world_goal(plan_go(p, camera, profile), capture) for p in points]
    rows.append(("plan_toward (re-plan)", lambda i: plan_toward(goals[i], Pose(0.3, 0.1, -3, 35), profile)))
    print(f"controller, {n} calls each:")
    for name, fn in rows:
        med, p95 = timed(fn, n)
        print(f"  {name:28s} median {med * 1e6:8.1f} us   p95 {p95 * 1e6:8.1f} us")

    with tempfile.TemporaryDirectory() as tmp:
        synthetic_episode(Path(tmp))
        reps = max(20, n // 50)
        med, p95 = timed(lambda i: verify(read_episode(tmp)), reps)
        print(f"verifier, read + score one 300 s episode, {reps} runs:")
        print(f"  median {med * 1e3:8.2f} ms   p95 {p95 * 1e3:8.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
