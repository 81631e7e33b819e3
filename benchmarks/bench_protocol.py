"""Per-step overhead of the pilot protocol, everything but the model (docs/protocol.md#the-loop; target median
<= 5 ms): 1280x720 BGR frame -> preprocessed JPEG (640x360, q85) -> request -> JSON body bytes (as
a backend would send them) -> parse a reply. Prints median and p95 per stage and in total.

    .venv/bin/python benchmarks/bench_protocol.py [--iterations 300] [--profile qwen3.5-2b]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cv2
import msgspec
import numpy as np

from common.stats import nearest_rank
from models.frames import encode_frame, encode_frame_and_view
from models.pilot_prompt import Conversation, PilotPrompt
from models.profile import load_profile
from models.templates import PromptSwitches

REPLIES = [
    '{"action": "go", "point": [612, 430], "depth_m": 9, "angle_deg": null}',
    '{"action": "rotate", "point": null, "depth_m": null, "angle_deg": 45}',
    '```json\n{"action": "go", "point": [480, 520], "depth_m": 14.5, "angle_deg": null}\n```',
    '{"action": "finished", "point": null, "depth_m": null, "angle_deg": null}',
]


def synthetic_frames(count: int) -> list[np.ndarray]:
    """Camera-like frames (sky, ground, a few boxes, sensor noise): JPEG cost depends on content."""
    rng = np.random.default_rng(7)
    frames = []
    for i in range(count):
        img = np.empty((720, 1280, 3), np.uint8)
        img[:360] = (235, 206, 160)
        img[360:] = (90, 120, 100)
        for _ in range(6):
            x, y = int(rng.integers(0, 1200)), int(rng.integers(200, 650))
            colour = tuple(int(c) for c in rng.integers(0, 255, 3))
            cv2.rectangle(
                img, (x, y), (x + int(rng.integers(30, 300)), y + int(rng.integers(20, 150))), colour, -1
            )
        noise = rng.integers(-6, 7, img.shape, dtype=np.int16)
        frames.append(np.clip(img.astype(np.int16) + noise, 0, 255).astype(np.uint8))
        frames[-1][0, 0] = i % 255
    return frames


def pct(values: list[float], q: float) -> float:
    return nearest_rank(sorted(values), q)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--profile", default="qwen3.5-2b")
    parser.add_argument("--visual-history", action="store_true")
    args = parser.parse_args()

    prompt = PilotPrompt(load_profile(args.profile), PromptSwitches(visual_history=args.visual_history))
    conv = Conversation(prompt, "go to the black SUV parked beside the white house")
    frames = synthetic_frames(16)
    encoder = msgspec.json.Encoder()
    stages: dict[str, list[float]] = {
        "preprocess": [],
        "request+body": [],
        "encode body": [],
        "parse": [],
        "total": [],
    }
    jpeg_bytes = []
    for i in range(args.iterations + 20):
        image = frames[i % len(frames)]
        t0 = time.perf_counter()
        if args.visual_history:
            frame, view_frame = encode_frame_and_view(image)
            view: bytes | None = view_frame.jpeg
        else:
            frame, view = encode_frame(image), None
        t1 = time.perf_counter()
        request = conv.request_encoded(frame, view)
        body = request.to_body()
        t2 = time.perf_counter()
        wire = encoder.encode(body)
        t3 = time.perf_counter()
        action = conv.parse(REPLIES[i % len(REPLIES)], request)
        conv.record(action)
        t4 = time.perf_counter()
        if i < 20:
            continue  # warm-up
        jpeg_bytes.append(len(frame.jpeg))
        for name, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
            stages[name].append(value * 1000.0)
    assert len(wire) > 0

    print(f"bench_protocol: {args.iterations} steps, profile {args.profile}, 1280x720 -> 640x360 JPEG q85")
    print(f"  cv2 threads {cv2.getNumThreads()}, JPEG median {statistics.median(jpeg_bytes) / 1024:.1f} KiB")
    for name, values in stages.items():
        print(f"  {name:<13} median {statistics.median(values):7.3f} ms   p95 {pct(values, 0.95):7.3f} ms")
    median_total = statistics.median(stages["total"])
    verdict = "meets" if median_total <= 5.0 else "MISSES"
    print(f"  target: median total <= 5 ms -> {verdict} ({median_total:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
