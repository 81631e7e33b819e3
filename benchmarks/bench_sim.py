"""Built-in simulator speed: render time, real-time factor, RPC round trip. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_sim.py [--frames 40] [--sim-seconds 60] [--calls 1000]
        [--renderer tiny,gl]

Also the Scene frame's cost with fog and with rain drawn (the weather; off by default).

Targets (task brief): render median <= 60 ms per 640x360 frame in `residential`; real-time factor
>= 8x with one drone and frames at 2 Hz; simGetVehiclePose round trip median <= 1 ms through the
real airsim client.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common.pose import Pose  # noqa: E402
from sim_bridge.sim.world import World  # noqa: E402


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def bench_render(frames: int, renderer: str) -> None:
    with World("residential", vehicles=1, renderer=renderer) as w:
        print(f"renderer {w.renderer}: {w.render_device}")
        for segmentation in (True, False):
            times, cpu = [], []
            for i in range(frames):
                # along the street, turning, at 2-6 m: what an approach episode sees
                w.set_vehicle_pose(
                    "Drone1", Pose(-5.0 + 2.5 * i % 100, (i % 5) - 2.0, -2.0 - (i % 3) * 2, (i * 37) % 360)
                )
                t, c = time.perf_counter(), time.process_time()
                w.render("Drone1", segmentation=segmentation)
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            label = "with segmentation" if segmentation else "image only     "
            print(
                f"render 640x360 residential {label}: median {statistics.median(times) * 1e3:6.1f} ms, "
                f"p90 {pct(times, 0.9) * 1e3:6.1f} ms wall; "
                f"CPU median {statistics.median(cpu) * 1e3:6.1f} ms "
                f"(n={frames}; target median <= 60 ms)"
            )


def bench_weather(frames: int, renderer: str) -> None:
    """The Scene frame clear, with fog and with rain (sim_bridge.sim.weather), interleaved on the same
    poses: what the weather costs when on (off, the frame is not touched)."""
    from sim_bridge.sim.weather import Weather

    skies = {"clear": None, "fog 0.5": Weather(fog=0.5), "rain 1": Weather(rain=1.0)}
    with World("residential", vehicles=1, renderer=renderer) as w:
        times: dict[str, list[float]] = {k: [] for k in skies}
        for i in range(frames):
            w.set_vehicle_pose("Drone1", Pose(-5.0 + 2.5 * i % 100, (i % 5) - 2.0, -2.0, (i * 37) % 360))
            for name, weather in skies.items():
                w.cameras.weather = weather
                t = time.perf_counter()
                w.render("Drone1", segmentation=False)
                times[name].append(time.perf_counter() - t)
        w.cameras.weather = None
        print(
            f"weather, {w.renderer} 640x360 residential: "
            + ", ".join(f"{k} median {statistics.median(v) * 1e3:5.1f} ms" for k, v in times.items())
            + f" (n={frames})"
        )


def bench_truth(frames: int) -> None:
    """Ground truth per question: a full-frame render (the cost before issue 9's crop) vs the crop of the
    target's region vs one pixel, on the same poses, interleaved (same machine load for each)."""
    with World("residential", vehicles=1) as w:
        w.pause(True)
        target = w.spawn("target", "car@red", Pose(25.0, 0.0, 0.0, 90.0)).name
        full_s, crop_s, pixel_s, crop_px, flips = [], [], [], [], 0
        for i in range(frames):
            # approaching the car along the street, turning: in view, at the edge, out of view
            pose = Pose(-5.0 + 0.6 * i, (i % 5) - 2.0, -2.0 - (i % 3), ((i * 23) % 120) - 60.0)
            w.set_vehicle_pose("Drone1", pose)
            t = time.perf_counter()
            full = w.target_truth("Drone1", target, w.render("Drone1", segmentation=True))
            full_s.append(time.perf_counter() - t)
            before = w.render_stats.crop_pixels
            t = time.perf_counter()
            crop = w.target_truth("Drone1", target)
            crop_s.append(time.perf_counter() - t)
            crop_px.append(w.render_stats.crop_pixels - before)
            flips += crop.visible != full.visible
            t = time.perf_counter()
            w.point_on_target_at("Drone1", target, 500.0, 500.0)
            pixel_s.append(time.perf_counter() - t)
        med_full, med_crop = statistics.median(full_s), statistics.median(crop_s)
        print(
            f"ground truth (visibility), residential, car 0-25 m ahead: full render {med_full * 1e3:6.1f} ms,"
            f" crop {med_crop * 1e3:5.1f} ms (median; {med_full / med_crop:4.1f}x), crop p90 "
            f"{pct(crop_s, 0.9) * 1e3:5.1f} ms, crop pixels median {statistics.median(crop_px):.0f} of "
            f"{640 * 360}; point on target (1 px) {statistics.median(pixel_s) * 1e3:4.1f} ms; "
            f"visibility differing {flips}/{frames}"
        )


def bench_rtf(sim_seconds: float) -> None:
    with World("residential", vehicles=1) as w:
        w.takeoff("Drone1", 3.0)
        w.advance(4.0)
        t0_sim, t0, c0 = w.clock.now(), time.perf_counter(), time.process_time()
        k = 0
        while w.clock.now() - t0_sim < sim_seconds:
            if k % 6 == 0:  # a 3 s step pattern: go, turn
                w.move_velocity_body("Drone1", (1.2, 0.0, 0.0), 2.5)
            elif k % 6 == 3:
                w.rotate_rate("Drone1", 60.0 if k % 12 == 3 else -60.0, 0.5)
            w.render("Drone1", segmentation=True)  # a frame (and the ground-truth mask) every 0.5 s
            w.advance(0.5)
            k += 1
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        sim = w.clock.now() - t0_sim
        print(
            f"real-time factor, 1 drone, frames at 2 Hz, lock-step in-process: {sim / wall:5.1f}x "
            f"({sim:.0f} sim s in {wall:.1f} wall s; {sim / cpu:5.1f}x per CPU second; target >= 8x)"
        )


def bench_rpc(calls: int) -> None:
    import airsim

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dronecats", "sim", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        port = None
        for line in proc.stdout:
            m = re.search(r"listening on [\d.]+:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            print("rpc: the simulator did not start")
            return
        c = airsim.MultirotorClient(ip="127.0.0.1", port=port)
        c.confirmConnection()
        for _ in range(50):
            c.simGetVehiclePose("Drone1")
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            c.simGetVehiclePose("Drone1")
            times.append(time.perf_counter() - t)
        print(
            f"simGetVehiclePose round trip (real airsim client, separate process): median "
            f"{statistics.median(times) * 1e3:.3f} ms, p99 {pct(times, 0.99) * 1e3:.3f} ms (n={calls}; "
            "target median <= 1 ms)"
        )
        times = []
        req = [airsim.ImageRequest("0", airsim.ImageType.Scene, False, False)]
        for _ in range(20):
            t = time.perf_counter()
            c.simGetImages(req, "Drone1")
            times.append(time.perf_counter() - t)
        print(f"simGetImages raw 640x360 round trip: median {statistics.median(times) * 1e3:.1f} ms (n=20)")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--sim-seconds", type=float, default=60.0)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--renderer", default="tiny,gl", help="renderers to time, comma-separated")
    args = parser.parse_args()
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (shared: figures are noisy)"
    )
    for renderer in args.renderer.split(","):  # side by side, on the same poses, in this run
        bench_render(args.frames, renderer.strip())
        bench_weather(args.frames, renderer.strip())
    bench_truth(args.frames)
    bench_rtf(args.sim_seconds)
    bench_rpc(args.calls)


if __name__ == "__main__":
    main()
