"""Onboard timing (issue 7): actuation-loop period error at 20 Hz while the simulator renders and the
decision loop makes real HTTP calls, and the per-step overhead outside the model.

Set-up, all real: `dronecats sim --vehicles 2` (AirSim-compatible server) and `dronecats serve-pilot
--pilot baseline` in their own processes, and two onboard processes (this script with --worker), each
an OnboardRuntime on wall-clock time flying its own drone (airsim://…/DroneN) toward a red car with
the openai:// pilot. They differ only in scheduling (onboard.realtime):
  old   normal scheduling (actuation_rt_priority 0, nice 0; last session's configuration)
  fifo  the actuation thread SCHED_FIFO 10, the other threads as they were
  new   SCHED_FIFO 10 and the runtime's own threads at nice -5 (the defaults)
They fly at the same time, so they see the same seconds and the same machine state (to one red car,
3 m of altitude apart so that no collision hold stops one drone's decisions). A second
phase repeats it with one CPU-burning process per core started by this script (--burners, 0 skips).
Each late tick's cause is split: time the actuation thread waited for a CPU (schedstat run-queue
delay) against its mean lateness; the rest is the interpreter lock held by another thread.

    .venv/bin/python benchmarks/bench_onboard.py --seconds 30

With --rerun (issue 46) it flies instead two drones side by side, both as "new", one streaming live
(onboard.rerun_stream) to a local Rerun sink (`rerun --port P --save FILE`, started here): the
actuation period error with the stream on against off, in the same seconds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common.procs import stop_process  # noqa: E402

CONFIGS = {"old": (0, 0), "fifo": (10, 0), "new": (10, -5)}  # name -> (actuation_rt_priority, nice)
RERUN_CONFIGS = {"new": (10, -5), "new+rerun": (10, -5)}  # a "+rerun" worker streams to the sink


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


def stop(proc: subprocess.Popen) -> None:
    stop_process(proc, 10)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def run_delay_s(tid: int | None) -> float:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux schedstat's run_delay).
    Waiting for the interpreter lock is sleeping, not this: the two causes of a late tick part here."""
    try:
        return int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return float("nan")


# ---- one onboard process ---------------------------------------------------------------------------
def worker(args: argparse.Namespace) -> int:
    """Fly one drone for --seconds and write its timing figures as JSON to --out."""
    sys.setswitchinterval(0.001)  # as `dronecats onboard` does: shorter GIL hand-offs to the actuation thread

    from common.clock import WallClock
    from common.interfaces import open_vehicle
    from models.pilot import model_pilot_from_url
    from onboard.assembly import assemble
    from onboard.recorder import FlightRecorder, RecorderConfig
    from onboard.runtime_config import RuntimeConfig
    from onboard.safety import SafetyConfig
    from onboard.vehicles.airsim_truth import RemoteTruth

    # The drones (spawned 2 m apart) all fly to one red car, each 3 m above the one before, held
    # apart by the altitude floor: a collision hold would stop that drone's decisions and leave its
    # loop less contended than the others'.
    level_m = 3.0 * (int(args.drone.removeprefix("Drone")) - 1)
    url = f"airsim://127.0.0.1:{args.port}/{args.drone}"
    vehicle = open_vehicle(url)
    pilot = model_pilot_from_url(f"openai://{args.pilot_hostport}/v1?profile=qwen3.5-2b&timeout_s=10")
    out = Path(tempfile.mkdtemp(prefix=f"bench-onboard-{args.drone}-"))
    config = RuntimeConfig(
        drone=args.drone,
        instruction="go to the red car",
        rate_hz=args.rate_hz,
        actuation_rt_priority=args.rt_priority,
        nice=args.nice,
        t_max_s=args.seconds,
        stop_on_declaration=False,
        save_frames=False,
        land_at_end=False,
        takeoff_altitude_m=3.0 + level_m,
        safety=SafetyConfig(altitude_floor_m=2.5 + level_m),  # above the traffic, as in bench_jitter
    )
    runtime = assemble(
        config,
        vehicle,
        pilot,
        WallClock(),
        FlightRecorder(out, RecorderConfig(save_frames=False)),
        truth=RemoteTruth(url, "target"),
    )
    stream = None
    if args.rerun_url:
        from onboard.rerun_stream import attach_rerun

        stream = attach_rerun(runtime.reporter, args.rerun_url, RemoteTruth(url, "target"))
    # Logging a step (ground truth over RPC, the JSON line) is decision-loop work after the plan is
    # handed over; timed here so the bench can say what a whole decision cycle costs besides the model.
    # The simulator's ground truth (distance, visibility; logs only, no real flight has it) is an RPC
    # to the busy sim server: timed apart from the rest of the logging.
    record_s: list[float] = []
    truth_record_s: list[float] = []
    truth_s = [0.0]
    record_step = runtime.reporter.step
    assert runtime.truth is not None

    recording = threading.local()  # the trace worker samples truth too: count the recording thread's only

    def timed(fn: Any) -> Any:
        def call(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                if getattr(recording, "on", False):
                    truth_s[0] += time.perf_counter() - t0

        return call

    def timed_record_step(*a: Any, **kw: Any) -> None:
        truth_s[0] = 0.0
        recording.on = True
        t0 = time.perf_counter()
        try:
            record_step(*a, **kw)
        finally:
            recording.on = False
        record_s.append(time.perf_counter() - t0 - truth_s[0])
        truth_record_s.append(truth_s[0])

    runtime.truth.sample = timed(runtime.truth.sample)  # type: ignore[method-assign]
    runtime.truth.point_on_target = timed(runtime.truth.point_on_target)  # type: ignore[method-assign]
    runtime.reporter.step = timed_record_step  # type: ignore[method-assign]
    runtime.start()
    # The actuation thread's run-queue wait, sampled while it lives (it is gone after run()).
    act_tid = runtime.actuation._thread.native_id
    first = (run_delay_s(act_tid), runtime.actuator.ticks)
    last = [first]
    done = threading.Event()

    def sample_schedstat() -> None:
        while not done.wait(0.25):
            delay = run_delay_s(act_tid)
            if delay == delay:  # not NaN: the thread still runs
                last[0] = (delay, runtime.actuator.ticks)

    threading.Thread(target=sample_schedstat, daemon=True).start()
    runtime.run()
    done.set()
    if stream is not None:
        stream.close()
    runqueue_wait_s = last[0][0] - first[0]
    run_ticks = last[0][1] - first[1]
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    act = runtime.actuation
    poller = runtime.actuator.poller
    result = {
        "drone": args.drone,
        "rt_priority": args.rt_priority,
        "scheduling": act.scheduling,
        "nice": runtime.thread_nice.label,
        "period_errors_s": list(act.period_errors_s),
        "served_hz": act.served_rate_hz(),
        "skipped": act.skipped_ticks,
        "telemetry_rtt_s": list(poller.round_trips_s) if poller is not None else [],
        "stages": [
            {**s["stages"], "action": (s.get("action") or {}).get("action")} for s in steps if s.get("stages")
        ],
        "record_s": record_s,
        "truth_s": truth_record_s,
        "runqueue_wait_per_tick_s": runqueue_wait_s / max(1, run_ticks),
        "rerun_logged_dropped": (stream.logged, stream.dropped) if stream is not None else None,
    }
    Path(args.out).write_text(json.dumps(result))
    return 0


# ---- the comparison -----------------------------------------------------------------------------------
def burn() -> None:
    while True:
        pass


def phase(
    port: int, hostport: str, args: argparse.Namespace, burners: int, configs: dict[str, tuple[int, int]]
) -> dict[str, dict]:
    procs = [multiprocessing.Process(target=burn, daemon=True) for _ in range(burners)]
    for p in procs:
        p.start()
    outs = {
        name: Path(tempfile.mkstemp(prefix=f"bench-onboard-{name}-", suffix=".json")[1]) for name in configs
    }
    workers = []
    try:
        for i, (name, (prio, nice)) in enumerate(configs.items()):
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                "--port",
                str(port),
                "--pilot-hostport",
                hostport,
                "--drone",
                f"Drone{i + 1}",
                "--rt-priority",
                str(prio),
                "--nice",
                str(nice),
                "--seconds",
                str(args.seconds),
                "--rate-hz",
                str(args.rate_hz),
                "--out",
                str(outs[name]),
            ]
            if name.endswith("+rerun"):
                cmd += ["--rerun-url", args.rerun_url]
            workers.append(subprocess.Popen(cmd, cwd=ROOT))
        for w in workers:
            w.wait(timeout=args.seconds + 120)
    finally:
        for w in workers:
            if w.poll() is None:
                stop(w)
        for p in procs:
            p.kill()
            p.join()
    return {name: json.loads(path.read_text()) for name, path in outs.items()}


def report(title: str, results: dict[str, dict], args: argparse.Namespace) -> None:
    print(f"\n== {title} ==")
    print(f"  {'':42s}" + "".join(f"{name:>24s}" for name in results))
    rs = list(results.values())
    print(f"  {'actuation thread':42s}" + "".join(f"{r['scheduling'].split(' (')[0]:>24s}" for r in rs))
    print(
        f"  {'other runtime threads':42s}" + "".join(f"{(r['nice'] or '').split(' (')[0]:>24s}" for r in rs)
    )

    def row(label: str, values: list[str]) -> None:
        print(f"  {label:42s}" + "".join(f"{v:>24s}" for v in values))

    rs = list(results.values())
    errs = [[abs(e) * 1000 for e in r["period_errors_s"]] for r in rs]
    row("periods measured", [str(len(e)) for e in errs])
    row("served rate Hz / skipped ticks", [f"{r['served_hz']:.2f} / {r['skipped']}" for r in rs])
    for label, q in (("median", 0.5), ("p95", 0.95), ("p99 (target <= 5 ms)", 0.99), ("max", 1.0)):
        row(f"|period error| ms {label}", [f"{pct(e, q):.2f}" for e in errs])
    late = [[1000 * max(0.0, e) for e in r["period_errors_s"]] for r in rs]
    row("mean tick lateness ms", [f"{sum(v) / max(1, len(v)):.3f}" for v in late])
    row(
        "  of which waiting for a CPU (schedstat) ms",
        [f"{1000 * r['runqueue_wait_per_tick_s']:.3f}" for r in rs],
    )
    if any(r.get("rerun_logged_dropped") for r in rs):
        row("rerun records logged / dropped", [str(r.get("rerun_logged_dropped") or "-") for r in rs])
    rtts = [[1000 * x for x in r["telemetry_rtt_s"]] for r in rs]
    row("telemetry poll round trip ms p50 / p95", [f"{pct(x, 0.5):.1f} / {pct(x, 0.95):.1f}" for x in rtts])
    # A `finished` step measures its declaration inside plan (ground truth RPC in the sim, an fsynced
    # line): those steps are counted apart and kept out of the per-step figures.
    decl = [[1000 * s["plan_s"] for s in r["stages"] if s["action"] == "finished"] for r in rs]
    moves = [[s for s in r["stages"] if s["action"] != "finished"] for r in rs]
    row(
        "decisions (of which declarations)",
        [f"{len(r['stages'])} ({len(v)})" for r, v in zip(rs, decl, strict=True)],
    )
    row("declaration steps: plan ms p50", [f"{pct(v, 0.5):.1f}" for v in decl])
    for stage in ("capture_s", "preprocess_s", "model_s", "parse_s", "plan_s"):
        vals = [[1000 * s[stage] for s in m] for m in moves]
        row(f"stage {stage[:-2]} ms p50 / p95", [f"{pct(v, 0.5):.2f} / {pct(v, 0.95):.2f}" for v in vals])
    truth = [[1000 * x for x in r["truth_s"]] for r in rs]
    row("log: sim ground truth RPCs ms p50 / p95", [f"{pct(v, 0.5):.1f} / {pct(v, 0.95):.1f}" for v in truth])
    rec = [[1000 * x for x in r["record_s"]] for r in rs]
    row("log: the rest (JSON line) ms p50 / p95", [f"{pct(v, 0.5):.2f} / {pct(v, 0.95):.2f}" for v in rec])
    own = [[1000 * (s["preprocess_s"] + s["parse_s"] + s["plan_s"]) for s in m] for m in moves]
    row("overhead w/o render, p50 / p95 ms (<= 10)", [f"{pct(v, 0.5):.2f} / {pct(v, 0.95):.2f}" for v in own])
    withr = [[1000 * (s["total_s"] - s["model_s"]) for s in m] for m in moves]
    row("overhead with render ms p50 / p95", [f"{pct(v, 0.5):.1f} / {pct(v, 0.95):.1f}" for v in withr])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate-hz", type=float, default=20.0)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1, help="CPU burners in phase 2")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--pilot-hostport", help=argparse.SUPPRESS)
    parser.add_argument("--drone", help=argparse.SUPPRESS)
    parser.add_argument("--rt-priority", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--nice", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="compare the actuation jitter with a live Rerun stream (to a local sink) on and off",
    )
    parser.add_argument("--rerun-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    import airsim

    py = sys.executable
    sim, line = start(
        [
            py,
            "-m",
            "dronecats",
            "sim",
            "--scene",
            "residential",
            "--vehicles",
            str(len(CONFIGS)),
            "--port",
            "0",
        ],
        "listening on",
    )
    port = int(line.rsplit(":", 1)[1])
    pilot_proc, pline = start(
        [py, "-m", "dronecats", "serve-pilot", "--pilot", "baseline", "--port", "0"], "listening on http://"
    )
    hostport = pline.split("http://", 1)[1].split("/", 1)[0]
    configs, sink = CONFIGS, None
    if args.rerun:
        configs, sink = RERUN_CONFIGS, rerun_sink(args)
    try:
        client = airsim.MultirotorClient(port=port)
        client.confirmConnection()
        pose = airsim.Pose(airsim.Vector3r(45.0, 0.0, 0.0), airsim.to_quaternion(0, 0, 1.5708))
        client.simSpawnObject("target", "car@red", pose, airsim.Vector3r(1, 1, 1))
        load = os.getloadavg()
        print(
            f"{os.cpu_count()} cores, load average before {load[0]:.2f}; {args.seconds:.0f} s per phase at "
            f"{args.rate_hz:.0f} Hz; {', '.join(configs)} fly at the same time (Drone1..{len(configs)})"
        )
        report("phase 1: no added load", phase(port, hostport, args, 0, configs), args)
        if args.burners > 0:
            # The drones restart from where phase 1 left them; only the timing matters here.
            result = phase(port, hostport, args, args.burners, configs)
            report(f"phase 2: {args.burners} CPU-burning processes (one per core)", result, args)
    finally:
        for proc in (sim, pilot_proc, *([sink] if sink is not None else [])):
            stop(proc)
    return 0


def rerun_sink(args: argparse.Namespace) -> subprocess.Popen:
    """The SDK's own `rerun` server, saving what arrives to a temporary .rrd: a local live sink."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    saved = Path(tempfile.mkdtemp(prefix="bench-onboard-rerun-")) / "live.rrd"
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("rerun")), "--port", str(port), "--save", str(saved)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    args.rerun_url = f"rerun+http://127.0.0.1:{port}/proxy"
    print(f"rerun sink {args.rerun_url} saving to {saved}")
    return proc


if __name__ == "__main__":
    raise SystemExit(main())
