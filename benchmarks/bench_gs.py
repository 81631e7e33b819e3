"""Ground-station benchmark: the real GUI (offscreen unless a display exists) with N drones flying
the built-in simulator — `dronecats sim --vehicles N` and N `dronecats onboard --pilot baseline`
processes deciding every `--period-s` (0.2 s: frames at up to 5 fps each while the sim renders).

Prints (JSON) what the operator's screen experiences:
- frame age capture -> on screen (painted), and capture -> arrived at the ground station;
  "capture" is the drone's clock just before it asks the camera (the simulator renders during that
  call, so the render time is included; its p50/p95 from the drones' logs is printed too);
- command -> last ack for `hold` sent to the whole fleet every few seconds while flying (button to
  every drone's ack shown), and for one final fleet-wide e-stop;
- GUI event-loop stalls (a 10 ms timer's lateness), p50/p99/max;
- what the simulator rendered in the measured window (dcRenderStats): full frames and ground-truth
  crops per frame served, their pixels and PyBullet seconds, and render seconds per wall second
  (summed over concurrent renders when there are render workers).
  (with `--render-workers K` a render's ms is the server's wait for a worker, transfer included);
  `--truth-render full` makes the simulator answer ground truth with full-frame renders as before
  issue 9's crops (for a side-by-side comparison); `--no-truth` runs the drones without ground truth.

    .venv/bin/python benchmarks/bench_gs.py [--drones 4] [--seconds 40] [--period-s 0.2] [--truth-render crop]
        [--renderer tiny,gl]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if not os.environ.get("DISPLAY") and "QT_QPA_PLATFORM" not in os.environ:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"


def pct(values: list[float], q: float) -> float | None:
    from ground_station.app.metrics import percentile

    value = percentile(values, q)
    return None if value is None else round(value * 1000, 1)


def process_cpu_s() -> dict[str, float]:
    """CPU seconds so far of this process (the ground station) and of its children by role (the
    simulator with its render workers, the onboard processes), from /proc: where the cores go."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            parent[pid] = int(fields[1])
            cpu[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
        except (OSError, IndexError, ValueError):
            continue  # exited meanwhile
    out = {"ground_station": time.process_time()}
    for child in [pid for pid, ppid in parent.items() if ppid == os.getpid()]:
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        role = "sim" if b"sim" in argv else "onboard"
        tree, todo = 0.0, [child]
        while todo:  # the child and its descendants (a simulator's render workers)
            pid = todo.pop()
            tree += cpu.get(pid, 0.0)
            todo += [p for p, pp in parent.items() if pp == pid]
        out[role] = out.get(role, 0.0) + tree
    return out


class SimStats:
    """The simulator's render counters (dcRenderStats), asked off the GUI thread: the simulator answers
    between renders, and a GUI thread waiting for it would be measured as a stall."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._reset_done = threading.Event()
        self._clock0 = (0.0, time.monotonic())

    def call(self, method: str, *args: object) -> Any:
        import airsim

        client = airsim.MultirotorClient(ip="127.0.0.1", port=self.port, timeout_value=30)
        return client.client.call(method, *args)

    def reset(self) -> None:
        def run() -> None:
            self.call("dcRenderStats", True)
            self._clock0 = (self.call("dcGetSimTime"), time.monotonic())
            self._reset_done.set()

        threading.Thread(target=run, daemon=True).start()

    def figures(self, measured_s: float) -> dict[str, Any]:
        self._reset_done.wait(30)
        st = self.call("dcRenderStats", False)
        sim_s, wall_s = self.call("dcGetSimTime") - self._clock0[0], time.monotonic() - self._clock0[1]
        frames = sum(st["frames"].values())
        per_frame = 1.0 / frames if frames else math.nan
        return {
            "renderer": f"{st.get('renderer')} ({st.get('render_device')})",
            "truth_render": st["truth_render"],
            "frames_served": frames,
            "full_renders_per_frame": round(st["full"] * per_frame, 2),
            "crop_renders_per_frame": round(st["crop"] * per_frame, 2),
            "crop_pixels_per_frame": round(st["crop_pixels"] * per_frame),
            "answered_without_render_per_frame": round(st["skipped"] * per_frame, 2),
            "ring_hits": st["ring_hits"],
            "ring_misses": st["ring_misses"],
            "full_render_ms": round(st["full_s"] / st["full"] * 1000, 1) if st["full"] else None,
            "crop_render_ms": round(st["crop_s"] / st["crop"] * 1000, 1) if st["crop"] else None,
            # < 1: the physics loop fell behind the wall clock (renders held it up)
            "sim_clock_s_per_wall_s": round(sim_s / wall_s, 3),
            "render_s_per_wall_s": round((st["full_s"] + st["crop_s"]) / measured_s, 2),
        }


# One target per drone, in lanes whose paths never cross another drone's stopping point (a fleet
# sent to one car converges on it and collides: the held drones then stop sending frames).
# Spawns: Drone1 (0, 0), Drone2 (0, 2), Drone3 (0, -2), Drone4 (-3, 0), world NED metres.
# Colours no parked car has (else a pilot may take the parked one and descend into the kerb line).
LANES = [
    ("purple", (70.0, 0.0)),  # down the middle, between the orange and pink cars' stopping points
    # where a pilot descends to these (the last ~8 m) no car is parked on that side (parked cars:
    # x = 18, 40, 62, 84 at y = +2.9; x = 29, 51, 73, 95 at y = -2.9)
    ("orange", (33.0, 1.2)),
    ("pink", (45.0, -1.2)),
    ("brown", (55.0, 0.0)),  # behind Drone1, which is past it before Drone4 stops there
]


def lane_instruction(index: int) -> str:
    """What drone `index` is told, at the start and at each resume after a hold."""
    return f"go to the {LANES[index % len(LANES)][0]} car"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drones", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--period-s", type=float, default=0.2, help="onboard min_decision_period_s")
    parser.add_argument("--screenshot", default=None, help="save the window here near the end")
    parser.add_argument(
        "--no-truth", action="store_true", help="drones without ground truth (no extra sim renders per step)"
    )
    parser.add_argument(
        "--truth-render",
        choices=["crop", "full"],
        default="crop",
        help="how the simulator renders for ground truth (full: one full frame per question, as before)",
    )
    parser.add_argument(
        "--render-workers",
        type=int,
        default=0,
        help="dronecats sim --render-workers K (0: render in the sim)",
    )
    parser.add_argument(
        "--renderer",
        default="auto",
        help="dronecats sim --renderer: auto, gl or tiny; a comma-separated list (tiny,gl) measures each in "
        "turn in this run and prints one result per renderer",
    )
    args = parser.parse_args()
    for renderer in args.renderer.split(","):
        result = measure(args, renderer.strip())
        if result is None:
            return 1
        print(json.dumps(result, indent=1), flush=True)
    return 0


def measure(args: argparse.Namespace, renderer: str) -> dict[str, Any] | None:
    """One fleet flown for args.seconds with the simulator rendering through `renderer`."""
    from PyQt6.QtCore import QEventLoop, QTimer
    from PyQt6.QtWidgets import QApplication

    from common.pose import Pose
    from ground_station.app.main import MainWindow
    from ground_station.fleet.client import FleetClient
    from ground_station.fleet.launch import LaunchTarget, SimFleet
    from ground_station.fleet.state import FleetEvent, FrameRecord

    out = Path(tempfile.mkdtemp(prefix="bench-gs-"))
    settings = [f"min_decision_period_s={args.period_s}", "t_max_s=900", "stop_on_declaration=false"]
    targets = [
        LaunchTarget(f"target_{colour}", f"car@{colour}", Pose(x, y, 0.0, 90.0))
        for colour, (x, y) in LANES[: max(1, min(args.drones, len(LANES)))]
    ]
    drone_ids = [f"Drone{i + 1}" for i in range(args.drones)]
    arrival_age_s: list[float] = []
    frames_per_drone: dict[str, int] = {}
    hold_s: list[float] = []
    cpu_at_reset: dict[str, float] = {}
    with SimFleet(
        args.drones,
        "baseline",
        targets=targets,
        log_dir=out,
        onboard_settings=settings,
        truth=not args.no_truth,
        sim_args=["--render-workers", str(args.render_workers), "--renderer", renderer],
    ) as sim:
        sim_rpc = SimStats(sim.sim_port)
        sim_rpc.call("dcSetTruthRender", args.truth_render)
        fleet = FleetClient(sim.addresses, sim.security).start()  # the session's own CURVE keys

        def on_event(event: FleetEvent) -> None:
            if event.kind == "frame" and isinstance(event.record, FrameRecord):
                arrival_age_s.append(event.record.received_s - event.record.capture_ground_s)
                frames_per_drone[event.drone or "?"] = frames_per_drone.get(event.drone or "?", 0) + 1

        fleet.state.add_listener(on_event)
        try:
            if not fleet.wait_for_link(120.0):
                print("drones did not come up; see", out, file=sys.stderr)
                return None
            app = QApplication.instance() or QApplication([])
            window = MainWindow(fleet, marks=[(t.pose.x_m, t.pose.y_m) for t in targets])
            window.show()
            for index, drone in enumerate(drone_ids):  # through the instruction panel, one drone each
                window.instruction.target.setCurrentText(drone)
                window.instruction.text.setText(lane_instruction(index))
                window.instruction.send.click()
            started = time.monotonic()
            warmup_s = 8.0

            def reset_figures() -> None:  # measure the steady state, not the start-up
                window.metrics.frame_age_s.clear()
                window.loop_monitor.stalls_s.clear()
                arrival_age_s.clear()
                frames_per_drone.clear()
                sim_rpc.reset()
                cpu_at_reset.update(process_cpu_s())

            held: list[list[float]] = []  # [hold sent, resumed] per cycle, monotonic seconds

            def hold_cycle() -> None:
                # hold then resume, through the same path as the buttons; done() records the timing
                held.append([time.monotonic(), math.inf])
                window.on_safety("hold", None)

                def resume() -> None:
                    for index, drone in enumerate(drone_ids):
                        fleet.instruct(lane_instruction(index), [drone])
                    held[-1][1] = time.monotonic()

                QTimer.singleShot(1000, lambda: window.bridge.submit("instruct", resume))

            QTimer.singleShot(int(warmup_s * 1000), reset_figures)
            cycles = QTimer(window)
            cycles.timeout.connect(hold_cycle)
            QTimer.singleShot(int(warmup_s * 1000), lambda: cycles.start(4000))
            if args.screenshot:
                QTimer.singleShot(int((args.seconds - 3) * 1000), lambda: window.grab().save(args.screenshot))
            loop = QEventLoop()  # not app.exec(): Qt 6's quit() closes the windows too
            QTimer.singleShot(int(args.seconds * 1000), loop.quit)
            loop.exec()
            cycles.stop()
            ended = time.monotonic()
            measured_s = ended - started - warmup_s
            # the drones do not decide while held: frame rates are also given per second not held
            held_s = sum(min(b, ended) - a for a, b in held)
            flying_s = max(measured_s - held_s, 1e-9)
            renders = sim_rpc.figures(measured_s)
            cpu_end = process_cpu_s()
            cores_used = {
                k: round((v - cpu_at_reset.get(k, 0.0)) / measured_s, 2) for k, v in cpu_end.items()
            }
            hold_s = list(window.metrics.command_last_ack_s.get("hold", []))
            frame_age = list(window.metrics.frame_age_s)
            stalls = list(window.loop_monitor.stalls_s)
            # the final e-stop, through the GUI's path, while the drones fly
            window.on_safety("estop", None)
            deadline = time.monotonic() + 15
            while "estop" not in window.metrics.command_last_ack_s and time.monotonic() < deadline:
                app.processEvents()
                time.sleep(0.001)
            estop = window.metrics.command_last_ack_s.get("estop", [])
            estop_acks = {d: s.acks.get("estop") for d, s in fleet.state.drones.items()}
            window.shutdown()
            window.close()
        finally:
            fleet.close()
    capture: list[float] = []
    interval: list[float] = []  # between a drone's consecutive pilot steps
    outside: list[float] = []  # of that, what the stages (capture, model, apply) do not cover
    for index in range(args.drones):
        steps = out / f"Drone{index + 1}" / "steps.jsonl"
        if steps.exists():
            rows = [json.loads(line) for line in steps.read_text().splitlines()]
            for row in rows:
                stages = row.get("stages") or {}
                if "capture_s" in stages:
                    capture.append(float(stages["capture_s"]))
            # the step line's t is taken after apply, before its ground truth, frame JPEG and publish
            pilot = [r for r in rows if r.get("source") == "pilot" and r.get("stages")]
            for a, b in itertools.pairwise(pilot):
                interval.append(b["t"] - a["t"])
                outside.append(b["t"] - a["t"] - b["stages"]["total_s"])
    # a held drone stops deciding, so stops sending frames: say so when it happened
    collision_holds = {
        f"Drone{i + 1}": log.read_text(errors="replace").count("safety: hold (collision)")
        for i in range(args.drones)
        if (log := out / f"Drone{i + 1}.log").exists()
    }
    result = {
        "drones": args.drones,
        "decision_period_s": args.period_s,
        "ground_truth": not args.no_truth,
        "render_workers": args.render_workers,
        "renderer": renders["renderer"],
        "measured_s": round(measured_s, 1),
        "frames_received_per_drone_fps": {
            d: round(n / measured_s, 2) for d, n in sorted(frames_per_drone.items())
        },
        "held_s": round(held_s, 1),
        "frames_received_per_drone_fps_not_held": {
            d: round(n / flying_s, 2) for d, n in sorted(frames_per_drone.items())
        },
        "frame_age_on_screen_ms": {"p50": pct(frame_age, 50), "p95": pct(frame_age, 95), "n": len(frame_age)},
        "frame_age_at_arrival_ms": {"p50": pct(arrival_age_s, 50), "p95": pct(arrival_age_s, 95)},
        "onboard_camera_read_ms": {"p50": pct(capture, 50), "p95": pct(capture, 95)},
        # a step's interval = its stages + the previous step's record (ground truth RPCs, frame JPEG,
        # publish) + any sleep to the period
        "onboard_step_interval_ms": {"p50": pct(interval, 50), "p95": pct(interval, 95)},
        "onboard_outside_stages_ms": {"p50": pct(outside, 50), "p95": pct(outside, 95)},
        "hold_to_last_ack_ms": {
            "p50": pct(hold_s, 50),
            "p95": pct(hold_s, 95),
            "max": pct(hold_s, 100),
            "n": len(hold_s),
        },
        "estop_to_last_ack_ms": pct(estop, 100) if estop else None,
        "estop_acks": {
            d: (a.result, round(a.latency_s * 1000, 1)) if a else None for d, a in estop_acks.items()
        },
        "collision_holds": collision_holds,
        "sim_renders": renders,
        "cores_used": {**cores_used, "machine": os.cpu_count()},
        "event_loop_stall_ms": {
            "p50": pct(stalls, 50),
            "p99": pct(stalls, 99),
            "max": pct(stalls, 100),
            "n": len(stalls),
        },
        "load_average": os.getloadavg(),
        "logs": str(out),
    }
    return result


if __name__ == "__main__":
    sys.exit(main())
