"""Link benchmark: N drone processes × F fps of 640×360 JPEGs (real OpenCV encodes) plus 20 Hz telemetry,
one ground station subscribing to all of them and sending acked commands, on loopback, CURVE on.

Prints command round-trip latency and frame delivery latency (median, p99, max). Frame latency is
measured from the capture stamp (before JPEG encoding) and from the send stamp (wire only), both
converted to the ground clock with the heartbeat clock-offset estimate.

    .venv/bin/python benchmarks/bench_link.py [--drones 4] [--fps 5] [--seconds 20] [--insecure]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import zmq

from common.keys import KeyPair
from common.link import (
    CommandOutcome,
    CurveClient,
    CurveServer,
    DroneEndpoint,
    DroneLink,
    DroneLinkConfig,
    GroundLink,
    GroundLinkConfig,
    Insecure,
)
from common.link.budget import FrameBudgetConfig
from common.messages import Instruction, TelemetryMessage
from common.pose import Pose
from common.stats import latency_line


def scene(i: int, width: int = 640, height: int = 360) -> np.ndarray:
    """A textured synthetic view (sky, ground, a few objects, sensor noise), different per frame."""
    import cv2

    rng = np.random.default_rng(i)
    img = np.zeros((height, width, 3), np.uint8)
    sky = np.linspace(230, 150, height // 2).astype(np.uint8)
    img[: height // 2] = np.stack([sky, sky - 20, sky - 60], axis=1)[:, None, :]
    img[height // 2 :] = (60, 110, 70)
    for _ in range(12):
        x, y = int(rng.integers(0, width)), int(rng.integers(height // 2, height))
        size = int(rng.integers(8, 50))
        colour = tuple(int(c) for c in rng.integers(0, 255, 3))
        cv2.rectangle(img, (x, y - size), (x + size, y), colour, -1)
    cv2.circle(img, (50 + 20 * i % (width - 100), height // 2 + 20), 25, (40, 40, 200), -1)
    noise = rng.normal(0, 6, img.shape)
    return np.clip(img + noise, 0, 255).astype(np.uint8)


def drone_main(conn: Any, drone_id: str, security: Any, fps: float) -> None:
    link = DroneLink(
        DroneLinkConfig(drone_id, budget=FrameBudgetConfig(max_fps=fps * 1.2)),
        security,
        handler=lambda command: CommandOutcome(True),
    )
    link.start()
    conn.send(dict(link.endpoints))
    images = [scene(i) for i in range(20)]
    seconds = conn.recv()
    start = time.monotonic() + 0.05
    frames = 0
    k = 0
    telemetry_period_s = 0.05
    next_frame_s, next_telemetry_s = start, start
    while True:
        now = time.monotonic()
        if now - start > seconds:
            break
        if now >= next_telemetry_s:
            link.publish_telemetry(
                TelemetryMessage(
                    now, Pose(0, 0, -5, 0), (0.0, 0.0, 0.0), 90.0, "hover", True, link.ground_link_state, 20.0
                )
            )
            next_telemetry_s += telemetry_period_s
        if now >= next_frame_s:
            decision = link.publish_frame(images[k % len(images)], time.monotonic(), Pose(0, 0, -5, 0))
            frames += int(decision.send)
            k += 1
            next_frame_s += 1.0 / fps
        time.sleep(max(0.0, min(next_frame_s, next_telemetry_s) - time.monotonic()))
    time.sleep(0.5)
    conn.send({"frames_published": frames, "stats": link.stats.snapshot()})
    link.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drones", type=int, default=4)
    parser.add_argument("--fps", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--command-hz", type=float, default=10.0, help="commands per second, round-robin")
    parser.add_argument("--insecure", action="store_true", help="no CURVE (for comparison)")
    args = parser.parse_args()

    ctx = mp.get_context("spawn")
    ground_keys = KeyPair(*zmq.curve_keypair())
    drones = []
    for i in range(args.drones):
        drone_id = f"drone{i + 1}"
        drone_keys = KeyPair(*zmq.curve_keypair())
        security = (
            Insecure() if args.insecure else CurveServer(drone_keys, frozenset({ground_keys.public_key}))
        )
        parent, child = ctx.Pipe()
        process = ctx.Process(target=drone_main, args=(child, drone_id, security, args.fps), daemon=True)
        process.start()
        drones.append((drone_id, drone_keys, parent, process))

    frame_total: list[float] = []
    frame_wire: list[float] = []
    jpeg_sizes: list[int] = []
    telemetry_count = [0]
    lock = threading.Lock()
    ground: GroundLink

    def on_frame(drone_id: str, envelope: Any, meta: Any, jpeg: bytes) -> None:
        now = ground.clock.now()
        estimator = ground.clock_offset(drone_id)
        with lock:
            frame_total.append(now - estimator.to_ground_time(meta.capture_time_s))
            frame_wire.append(now - estimator.to_ground_time(envelope.send_time_s))
            jpeg_sizes.append(len(jpeg))

    def on_telemetry(drone_id: str, envelope: Any, body: Any) -> None:
        telemetry_count[0] += 1

    ground = GroundLink(
        GroundLinkConfig(heartbeat_interval_s=0.2),
        Insecure() if args.insecure else CurveClient(ground_keys),
        on_frame=on_frame,
        on_telemetry=on_telemetry,
    )
    ground.start()
    for drone_id, drone_keys, conn, _ in drones:
        e = conn.recv()
        key = None if args.insecure else drone_keys.public_key
        ground.add_drone(DroneEndpoint(drone_id, e["telemetry"], e["frame"], e["command"], key))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(ground.link_state(d[0]) == "up" for d in drones):
        time.sleep(0.05)
    time.sleep(0.5)  # clock-offset samples and subscriptions settle
    for _, _, conn, _ in drones:
        conn.send(args.seconds)

    rtts: list[float] = []
    failures = 0
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < args.seconds:
        drone_id = drones[i % len(drones)][0]
        t0 = time.perf_counter()
        try:
            ground.send_command(drone_id, Instruction(f"instruction {i}"), timeout_s=0.5, retries=3)
            rtts.append(time.perf_counter() - t0)
        except Exception:
            failures += 1
        i += 1
        time.sleep(max(0.0, start + i / args.command_hz - time.monotonic()))

    reports = [conn.recv() for _, _, conn, _ in drones]
    for *_, process in drones:
        process.join(10)
    ground_stats = ground.stats.snapshot()
    ground.close()

    published = sum(r["frames_published"] for r in reports)
    print(
        f"link benchmark: {args.drones} drones x {args.fps:g} fps 640x360 JPEG, {args.seconds:g} s, "
        f"CURVE {'off' if args.insecure else 'on'}, loopback, 1 ground station"
    )
    print(f"command round trip        : {latency_line(rtts, 0.99)}   failures {failures}")
    print(f"frame capture -> ground   : {latency_line(frame_total, 0.99)}   (includes the JPEG encode)")
    print(f"frame send -> ground      : {latency_line(frame_wire, 0.99)}   (wire only)")
    print(
        f"frames published/received : {published} / {len(frame_total)}   "
        f"(expected ~{int(args.drones * args.fps * args.seconds)})"
    )
    if jpeg_sizes:
        print(
            f"JPEG size                 : median {statistics.median(jpeg_sizes) / 1e3:.1f} kB, "
            f"throughput {sum(jpeg_sizes) / args.seconds / 1e6:.2f} MB/s"
        )
    print(f"telemetry received        : {telemetry_count[0]} (20 Hz per drone)")
    skipped = {k: v for r in reports for k, v in r["stats"].items() if k.startswith("frames_skipped")}
    print(f"drone-side frame skips    : {skipped or 'none'}")
    print(
        f"ground rejected messages  : {sum(v for k, v in ground_stats.items() if k.startswith('rejected_'))}"
    )
    for drone_id, *_ in drones:
        est = ground.clock_offset(drone_id)
        rtt_ms = (est.rtt_s or 0) * 1e3
        print(f"clock offset {drone_id:<8}    : {est.offset_s * 1e6:+.0f} us (min RTT {rtt_ms:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
