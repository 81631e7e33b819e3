"""`dronecats sim --tello` / `--mavlink`: real-protocol emulators in front of the simulator's vehicles,
to rehearse a flight with the real client libraries (djitellopy, pymavlink, QGroundControl).

Drone k (1-based) gets:
- Tello: commands on 127.0.0.(k+1):(9000+k) (djitellopy holds 8889 on every address of the host),
  state to the client's 8890, H.264 video to the client's 11110+k (so drone 1 uses the stock 11111).
- MAVLink: the autopilot sends to 127.0.0.1:(14539+k) (PX4 SITL's offboard port for drone 1) and the
  camera as H.264 datagrams to 127.0.0.1:(5599+k).
Each printed URL is what `dronecats onboard --vehicle` takes (with the spawn point, so poses are in
the episode's world frame).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the simulator is heavy: argument parsing must not import it
    from sim_bridge.sim.world import World


def add_emulator_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tello",
        action="store_true",
        help="also serve each drone as a Tello (SDK 2.0 over UDP, for djitellopy)",
    )
    parser.add_argument(
        "--mavlink", action="store_true", help="also serve each drone as a MAVLink autopilot (for pymavlink)"
    )
    parser.add_argument(
        "--dialect", default="px4", choices=["px4", "ardupilot"], help="autopilot for --mavlink"
    )
    parser.add_argument(
        "--mavlink-port",
        type=int,
        default=14540,
        help="companion UDP port of drone 1 (drone k: +k-1); 0 picks free ports (printed)",
    )


def _free_udp_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_emulators(world: World, args: argparse.Namespace) -> list[Any]:
    """Start the requested emulators, print their URLs, return them (each has close())."""
    started: list[Any] = []
    names = sorted(world.vehicles)
    for k, name in enumerate(names, start=1):
        p = world.vehicle_pose(name)
        spawn = f"spawn={p.x_m:g},{p.y_m:g},{p.z_m:g},{p.yaw_deg:g}"
        if getattr(args, "tello", False):
            from sim_bridge.emulators.tello_emulator import TelloEmulator, TelloEmulatorConfig

            cfg = TelloEmulatorConfig(
                ip=f"127.0.0.{k + 1}", command_port=9000 + k, client_video_port=11110 + k
            )
            emu = TelloEmulator(world, name, cfg).start()
            started.append(emu)
            print(
                f"tello {name}: tello://{cfg.ip}:{emu.command_port}?video_port={cfg.client_video_port}&{spawn}",
                flush=True,
            )
        if getattr(args, "mavlink", False):
            from sim_bridge.emulators.mavlink_emulator import MavlinkEmulator, MavlinkEmulatorConfig

            base = getattr(args, "mavlink_port", 14540)
            port, video = (base + k - 1, 5599 + k) if base else (_free_udp_port(), _free_udp_port())
            mcfg = MavlinkEmulatorConfig(
                dialect=args.dialect, companion=("127.0.0.1", port), video_dest=("127.0.0.1", video)
            )
            started.append(MavlinkEmulator(world, name, mcfg).start())
            print(
                f"mavlink {name}: mavlink://udpin:127.0.0.1:{port}?dialect={args.dialect}"
                f"&camera=h264udp://127.0.0.1:{video}&{spawn}",
                flush=True,
            )
    return started
