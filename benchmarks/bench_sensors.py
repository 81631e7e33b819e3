"""Sensor models' cost: the physics tick with and without sensor reads, and one read of each sensor with
AirSim's noise and ideal. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_sensors.py [--sim-seconds 30] [--reads 2000]

What it shows: the noise costs nothing per tick when no sensor is read (the sensors are evaluated
when read), and what a read costs in-process (the RPC round trip adds ~0.2 ms: bench_sim.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim_bridge.rpc.airsim_api import AirSimApi  # noqa: E402
from sim_bridge.sim.world import World  # noqa: E402

READS = {
    "getImuData": lambda api: api.sensor_api.getImuData("", ""),
    "getBarometerData": lambda api: api.sensor_api.getBarometerData("", ""),
    "getMagnetometerData": lambda api: api.sensor_api.getMagnetometerData("", ""),
    "getGpsData": lambda api: api.sensor_api.getGpsData("", ""),
}


def bench_ticks(sim_seconds: float) -> None:
    for read_every_tick in (False, True):
        with World("blocks", vehicles=1, renderer="tiny") as w:
            api = AirSimApi(w)
            w.pause(True)
            w.move_velocity("Drone1", (1.0, 0.5, -0.5), 1e9)  # flying: the attitude model tilts the body
            ticks = round(sim_seconds / w.loop.tick_s)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(ticks):
                w.loop.advance(w.loop.tick_s)
                if read_every_tick:
                    for read in READS.values():
                        read(api)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            label = "4 sensors read every tick" if read_every_tick else "no sensor read            "
            print(
                f"physics tick, 1 drone, {label}: {wall / ticks * 1e6:7.1f} us wall, "
                f"{cpu / ticks * 1e6:7.1f} us CPU"
            )


def bench_reads(reads: int) -> None:
    with World("blocks", vehicles=1, renderer="tiny") as w:
        api = AirSimApi(w)
        w.pause(True)
        for noisy in (True, False):
            api.sensors.set_noise(noisy)
            for name, read in READS.items():
                times = []
                for _ in range(reads):
                    w.loop.advance(w.loop.tick_s)  # a new sample each read (a repeat would be cheaper)
                    t = time.perf_counter()
                    read(api)
                    times.append(time.perf_counter() - t)
                mode = "AirSim noise" if noisy else "ideal       "
                print(f"{name:20s} {mode}: median {statistics.median(times) * 1e6:6.1f} us (n={reads})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sim-seconds", type=float, default=30.0)
    parser.add_argument("--reads", type=int, default=2000)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.2f} (shared: figures are noisy)")
    bench_ticks(args.sim_seconds)
    bench_reads(args.reads)


if __name__ == "__main__":
    main()
