"""Onboard timing (issue 7): actuation-loop period error at 20 Hz while the simulator renders and the
decision loop makes real HTTP calls, and the per-step overhead outside the model.

Set-up, all real: `dronecats sim` (AirSim-compatible server) and `dronecats serve-pilot --pilot
baseline` in their own processes; in this process the OnboardRuntime on wall-clock time, flying
airsim://…/Drone1 with the openai:// pilot. Runs one approach for --seconds and prints percentiles.

    .venv/bin/python benchmarks/bench_onboard.py --seconds 30
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def start(cmd: list[str], marker: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if marker in line:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # drain
            return proc, line.strip()
        if not line:
            break
    proc.kill()
    raise SystemExit(f"{cmd} did not start")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate-hz", type=float, default=20.0)
    args = parser.parse_args()
    sys.setswitchinterval(0.001)  # as `dronecats onboard` does: shorter GIL hand-offs to the actuation thread

    import airsim

    from common.clock import WallClock
    from common.interfaces import open_vehicle
    from models.pilot import model_pilot_from_url
    from onboard.recorder import FlightRecorder, RecorderConfig
    from onboard.runtime import OnboardRuntime, RuntimeConfig
    from sim_bridge.remote_truth import RemoteTruth

    py = sys.executable
    sim, line = start([py, "-m", "dronecats", "sim", "--scene", "residential", "--port", "0"], "listening on")
    port = int(line.rsplit(":", 1)[1])
    pilot_proc, pline = start(
        [py, "-m", "dronecats", "serve-pilot", "--pilot", "baseline", "--port", "0"], "listening on http://"
    )
    hostport = pline.split("http://", 1)[1].split("/", 1)[0]
    try:
        client = airsim.MultirotorClient(port=port)
        client.confirmConnection()
        pose = airsim.Pose(airsim.Vector3r(40.0, 0.0, 0.0), airsim.to_quaternion(0, 0, 1.5708))
        client.simSpawnObject("target", "car@red", pose, airsim.Vector3r(1, 1, 1))
        url = f"airsim://127.0.0.1:{port}/Drone1"
        vehicle = open_vehicle(url)
        camera = vehicle.camera()  # type: ignore[attr-defined]
        pilot = model_pilot_from_url(f"openai://{hostport}/v1?profile=qwen3.5-2b&timeout_s=10")
        out = Path(tempfile.mkdtemp(prefix="bench-onboard-"))
        config = RuntimeConfig(
            instruction="go to the red car",
            rate_hz=args.rate_hz,
            t_max_s=args.seconds,
            stop_on_declaration=False,
            save_frames=False,
            land_at_end=False,
        )
        runtime = OnboardRuntime(
            config,
            vehicle,
            camera,
            pilot,
            WallClock(),
            FlightRecorder(out, RecorderConfig(save_frames=False)),
            truth=RemoteTruth(url, "target"),
        )
        runtime.start()
        runtime.run()
        errors_ms = [abs(e) * 1000 for e in runtime.actuation.period_errors_s]
        ticks = len(errors_ms)
        import json

        steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
        overhead_ms = [1000 * (s["stages"]["total_s"] - s["stages"]["model_s"]) for s in steps]
        model_ms = [1000 * s["stages"]["model_s"] for s in steps]
        act = runtime.actuation
        served = act.served_rate_hz()
        print(
            f"actuation loop at {args.rate_hz:.0f} Hz for {args.seconds:.0f} s: {ticks} periods measured, "
            f"served {served:.1f} Hz, skipped ticks {act.skipped_ticks}"
        )
        med, p95, p99 = statistics.median(errors_ms), pct(errors_ms, 0.95), pct(errors_ms, 0.99)
        print(
            f"  |period error| ms: median {med:.2f}  p95 {p95:.2f}  p99 {p99:.2f}  max {max(errors_ms):.2f}"
            "   (target p99 <= 5 ms)"
        )
        poller = runtime.actuator.poller
        if poller is not None and poller.round_trips_s:
            rtt = [1000 * x for x in poller.round_trips_s]
            print(
                f"  telemetry poll round trip ms (own thread): median {statistics.median(rtt):.1f}  "
                f"p95 {pct(rtt, 0.95):.1f}"
            )
        print(
            f"decisions: {len(steps)}; model call (HTTP to serve-pilot) ms: "
            f"median {statistics.median(model_ms):.1f}  p95 {pct(model_ms, 0.95):.1f}"
        )
        own_ms = [
            1000 * (s["stages"]["total_s"] - s["stages"]["model_s"] - s["stages"]["capture_s"]) for s in steps
        ]
        print(
            f"  apply a reply (checks, plan, hand-over to actuation; logs are written after) ms: "
            f"median {statistics.median(own_ms):.2f}  p95 {pct(own_ms, 0.95):.2f}"
        )
        print(
            f"  per-step overhead outside the model ms: median {statistics.median(overhead_ms):.1f}  "
            f"p95 {pct(overhead_ms, 0.95):.1f}   (target p95 <= 10 ms; capture = RPC render included)"
        )
        capture_ms = [1000 * s["stages"]["capture_s"] for s in steps]
        print(
            f"  of which capture (simGetImages round trip) ms: median {statistics.median(capture_ms):.1f}  "
            f"p95 {pct(capture_ms, 0.95):.1f}"
        )
    finally:
        for proc in (sim, pilot_proc):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
