"""Real-vehicle adapters through their emulators on loopback: command round trip and video frame age.

Tello (unmodified djitellopy -> Tello SDK emulator) and PX4 (pymavlink -> MAVLink emulator), both
flying the built-in simulator in wall time. Prints median / p95 / max of:
- command round trip: djitellopy `battery?` as the adapter sees it (djitellopy polls its reply queue
  every 0.1 s and spaces commands by 0.1 s), the same exchange on a bare UDP socket (the wire), and
  MAVLink COMMAND_LONG -> COMMAND_ACK through pymavlink;
- video: render-to-decoded latency per frame (the emulator's render start to our decoder's output,
  matched by frame index), and the age of the frame each Camera.read() returns (what a decision sees).

    .venv/bin/python benchmarks/bench_vehicles.py [--seconds 10] [--width 480 --height 360] [--fps 10]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from common.camera import camera_profile
from sim_bridge.sim.world import World


def stats(name: str, values_s: list[float]) -> None:
    if not values_s:
        print(f"{name:48s} no samples")
        return
    a = np.asarray(values_s) * 1000
    print(
        f"{name:48s} n={len(a):4d}  median {statistics.median(a):7.1f} ms  "
        f"p95 {np.percentile(a, 95):7.1f} ms  max {a.max():7.1f} ms"
    )


def video_latency(sent: list, source) -> list[float]:
    """Render-start to decoded, matched by index (the receiver was listening before the first frame)."""
    by_index = {f.index: f.render_wall_s for f in sent}
    return [t - by_index[i] for i, t in source.arrivals if i in by_index]


def sample_reads(camera, seconds: float) -> list[float]:
    ages = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ages.append(camera.read().meta["frame_age_s"])
        time.sleep(0.1)
    return ages


def report(
    name: str,
    args: argparse.Namespace,
    vehicle,
    emu,
    figures: list[tuple[str, list[float]]],
    ages: list[float],
) -> None:
    """One vehicle's block: its own figures, then the video's (render to decoded, age at read)."""
    print(
        f"{name} ({args.width}x{args.height} H.264 at {args.fps} fps, {vehicle.video.frames} frames decoded)"
    )
    for label, values_s in figures:
        stats(label, values_s)
    stats("  video render -> decoded", video_latency(list(emu.video.sent), vehicle.video))
    stats("  video frame age at Camera.read()", ages)


def bench_tello(args: argparse.Namespace) -> None:
    from onboard.vehicles.tello import TelloVehicle, parse_tello_url
    from sim_bridge.emulators.tello_emulator import TelloEmulator, TelloEmulatorConfig

    world = World("residential", 1, camera=camera_profile("tello").scaled_to(args.width, args.height), seed=0)
    world.start()
    emu = TelloEmulator(world, "Drone1", TelloEmulatorConfig(ip="127.0.0.2", video_fps=args.fps)).start()
    v = TelloVehicle(parse_tello_url(f"tello://127.0.0.2:{emu.command_port}"))
    with closing(world), closing(emu), closing(v):  # closed in reverse: vehicle, emulator, world
        v.connect()
        assert v.video is not None
        v.video.record_arrivals = True
        rtt = []
        for _ in range(args.commands):
            t0 = time.monotonic()
            reply = v.tello.send_command_with_return("battery?")
            rtt.append(time.monotonic() - t0)
            assert reply.strip().isdigit(), reply
        wire = []
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(2.0)
            for _ in range(args.commands):
                t0 = time.monotonic()
                s.sendto(b"battery?", ("127.0.0.2", emu.command_port))
                s.recvfrom(64)
                wire.append(time.monotonic() - t0)
        v.takeoff(1.5)
        ages = sample_reads(v.camera(), args.seconds)
        figures = [
            ("  command round trip, djitellopy battery?", rtt),
            ("  command round trip, bare UDP socket", wire),
        ]
        report("Tello", args, v, emu, figures, ages)
        v.land()


def bench_mavlink(args: argparse.Namespace) -> None:
    from onboard.vehicles.px4 import MavlinkVehicle, parse_mavlink_url
    from sim_bridge.emulators.mavlink_emulator import MavlinkEmulator, MavlinkEmulatorConfig

    ports = []
    for _ in range(2):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    world = World(
        "residential", 1, camera=camera_profile("outdoor").scaled_to(args.width, args.height), seed=0
    )
    world.start()
    cfg = MavlinkEmulatorConfig(
        companion=("127.0.0.1", ports[0]), video_dest=("127.0.0.1", ports[1]), video_fps=args.fps
    )
    emu = MavlinkEmulator(world, "Drone1", cfg)
    assert emu.video is not None
    emu.video.paused.set()  # start the stream once our receiver listens, so frame indexes match
    emu.start()
    v = MavlinkVehicle(
        parse_mavlink_url(f"mavlink://udpin:127.0.0.1:{ports[0]}?camera=h264udp://127.0.0.1:{ports[1]}")
    )
    with closing(world), closing(emu), closing(v):  # closed in reverse: vehicle, emulator, world
        v.connect()
        assert v.video is not None
        v.video.record_arrivals = True
        time.sleep(0.3)
        emu.video.sent.clear()
        emu.video.paused.clear()
        rtt = []
        for _ in range(args.commands):
            t0 = time.monotonic()
            v.link.command_long(511, 32, 50_000)  # SET_MESSAGE_INTERVAL: acknowledged at once
            rtt.append(time.monotonic() - t0)
        v.arm()
        v.takeoff(2.0)
        ages = sample_reads(v.camera(), args.seconds)
        gaps = list(emu.setpoint_intervals_s)
        figures = [
            ("  command round trip, COMMAND_LONG -> ACK", rtt),
            ("  setpoint interval at the autopilot (own 20 Hz)", gaps),
        ]
        report("PX4", args, v, emu, figures, ages)
        v.land()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="Camera.read() sampling time per vehicle")
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--width", type=int, default=480)
    parser.add_argument("--height", type=int, default=360)
    parser.add_argument("--fps", type=float, default=10.0)
    parser.add_argument("--only", choices=["tello", "mavlink"], default=None)
    args = parser.parse_args()
    if args.only in (None, "tello"):
        bench_tello(args)
    if args.only in (None, "mavlink"):
        bench_mavlink(args)


if __name__ == "__main__":
    main()
