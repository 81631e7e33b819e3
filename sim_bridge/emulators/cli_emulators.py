"""`dronecats sim --tello` / `--mavlink`: real-protocol emulators in front of the simulator's vehicles,
to rehearse a flight with the real client libraries (djitellopy, pymavlink, MAVSDK, MAVProxy);
docs/howto/emulators.md has the recipes.

Drone k (1-based) gets:
- Tello: commands on 127.0.0.(k+1):(9000+k) (`--tello-port`), state to the client's 8890, H.264 video
  to the client's 11110+k (so drone 1 uses the stock 11111). Not 8889: djitellopy binds 0.0.0.0:8889
  without SO_REUSEADDR, so no other socket on the host can have that port on any address (EADDRINUSE
  in either order), and its commands to any local address:8889 come back to djitellopy itself.
  djitellopy therefore needs its one extra line, `tello.address = (ip, port)`, printed below the URL.
- MAVLink: the autopilot sends to 127.0.0.1:(14539+k) (PX4 SITL's offboard port for drone 1) and the
  camera as H.264 datagrams to 127.0.0.1:(5599+k).
Each printed URL is what `dronecats onboard --vehicle` takes (with the spawn point, so poses are in
the episode's world frame); the indented lines under it say what the emulator is, how third-party
clients reach it, and that every new flight starts back at that spawn (flight_reset.py).
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the simulator is heavy: argument parsing must not import it
    from sim_bridge.sim.world import World


def add_emulator_arguments(parser: argparse.ArgumentParser) -> None:
    from common.checks import port_arg

    parser.add_argument(
        "--tello",
        action="store_true",
        help="also serve each drone as a Tello (SDK 2.0 over UDP, for djitellopy)",
    )
    parser.add_argument(
        "--tello-sdk",
        default="2.0",
        choices=["1.3", "2.0", "3.0"],
        help="Tello SDK for --tello: 2.0 Tello EDU, 3.0 RoboMaster TT (motoron, setfps, EXT), 1.3 Tello",
    )
    parser.add_argument(
        "--tello-port",
        type=port_arg,
        default=9001,
        help="Tello command port of drone 1 (drone k: +k-1); 0 picks free ports (printed). Not 8889: "
        "djitellopy holds it; set `tello.address = (ip, port)` as printed",
    )
    parser.add_argument(
        "--tello-auto-land-s",
        type=tello_auto_land_s,
        default=TELLO_AUTO_LAND_S,
        metavar="S",
        help="the Tello lands by itself after S s without a command (default 15, the firmware's fixed "
        "value; shorter only to rehearse it quickly)",
    )
    parser.add_argument(
        "--mavlink",
        action="store_true",
        help="also serve each drone as a MAVLink autopilot (for pymavlink, MAVSDK, MAVProxy)",
    )
    parser.add_argument(
        "--mavlink-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        type=mavlink_param,
        help="an autopilot parameter other than the firmware default (repeatable), e.g. GUID_TIMEOUT=1",
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


TELLO_AUTO_LAND_S = 15.0  # SDK 2.0 user guide: no command for 15 s -> the drone lands


def tello_auto_land_s(text: str) -> float:
    """argparse type for --tello-auto-land-s: 0.5..15 s (a real Tello cannot wait longer)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.5 <= value <= TELLO_AUTO_LAND_S):
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0.5..{TELLO_AUTO_LAND_S:g} s")
    return value


def mavlink_param(item: str) -> tuple[str, float]:
    """argparse type for --mavlink-param: NAME=NUMBER with a parameter the emulators serve."""
    from sim_bridge.emulators.mavlink_params import APM_DEFAULTS, PX4_DEFAULTS

    name, sep, value = item.partition("=")
    name = name.strip().upper()
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not sep or not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"{item!r}: expected NAME=NUMBER, e.g. GUID_TIMEOUT=1")
    if name not in PX4_DEFAULTS and name not in APM_DEFAULTS:
        known = ", ".join(sorted({*PX4_DEFAULTS, *APM_DEFAULTS}))
        raise argparse.ArgumentTypeError(f"{name!r} is not an emulated parameter (known: {known})")
    return name, number


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
        if args.tello:
            from sim_bridge.emulators.tello_emulator import TelloEmulator, TelloEmulatorConfig

            tello_base = args.tello_port
            cfg = TelloEmulatorConfig(
                ip=f"127.0.0.{k + 1}",
                command_port=tello_base + k - 1 if tello_base else 0,
                client_video_port=11110 + k,
                sdk=args.tello_sdk,
                auto_land_s=args.tello_auto_land_s,
            )
            emu = TelloEmulator(world, name, cfg).start()
            started.append(emu)
            print(
                f"tello {name}: tello://{cfg.ip}:{emu.command_port}?video_port={cfg.client_video_port}&{spawn}",
                *_tello_lines(emu, world, name),
                sep="\n  ",
                flush=True,
            )
        if args.mavlink:
            from sim_bridge.emulators.mavlink_emulator import MavlinkEmulator, MavlinkEmulatorConfig

            base = args.mavlink_port
            port, video = (base + k - 1, 5599 + k) if base else (_free_udp_port(), _free_udp_port())
            mcfg = MavlinkEmulatorConfig(
                dialect=args.dialect,
                companion=("127.0.0.1", port),
                video_dest=("127.0.0.1", video),
                params=dict(args.mavlink_param),
            )
            try:
                emulator = MavlinkEmulator(world, name, mcfg)
            except ValueError as exc:  # a parameter this dialect does not have
                for e in started:
                    e.close()
                raise SystemExit(f"dronecats sim: --mavlink-param: {exc}") from None
            started.append(emulator.start())
            print(
                f"mavlink {name}: mavlink://udpin:127.0.0.1:{port}?dialect={args.dialect}"
                f"&camera=h264udp://127.0.0.1:{video}&{spawn}",
                *_mavlink_lines(emulator, world, name),
                sep="\n  ",
                flush=True,
            )
    return started


TELLO_MODELS = {"1.3": "Tello", "2.0": "Tello EDU", "3.0": "RoboMaster TT"}


def _start_of_flight(world: World, name: str) -> str:
    """Where and how each flight starts, as the emulators' FlightReset puts it back."""
    model = world.vehicle(name).model
    s, pct = model.spawn, 100 * model.battery.config.start_fraction
    return f"spawn {s.x_m:g},{s.y_m:g},{s.z_m:g},{s.yaw_deg:g} with a {pct:g} % pack"


def _tello_lines(emu: Any, world: World, name: str) -> list[str]:
    """What the Tello emulator is, where each of its streams goes, and djitellopy's one extra line.
    (Indented under the URL line, so `NAME: URL` stays the line that starts with the name.)"""
    cfg = emu.config
    ip, port = cfg.ip, emu.command_port
    video = "" if cfg.client_video_port == 11111 else f", vs_udp={cfg.client_video_port}"
    return [
        f"{TELLO_MODELS[cfg.sdk]} (SDK {cfg.sdk}) at {ip}: commands to UDP {ip}:{port} (not 8889: djitellopy "
        f"holds it), state to the client's UDP {cfg.client_state_port}, H.264 video to its UDP "
        f"{cfg.client_video_port} after streamon",
        f'djitellopy: tello = Tello(host="{ip}"{video}); tello.address = ("{ip}", {port})',
        f'resets per flight: a "command" on the ground after a landing starts back at '
        f"{_start_of_flight(world, name)}; it lands by itself after {cfg.auto_land_s:g} s without a command",
    ]


def _mavlink_lines(emu: Any, world: World, name: str) -> list[str]:
    """What the autopilot emulator is, and how MAVSDK and MAVProxy reach it."""
    host, port = emu.config.companion
    camera = (
        ""
        if emu.config.video_dest is None
        else ", camera as H.264 in UDP datagrams to {}:{}".format(*emu.config.video_dest)
    )
    return [
        f"{emu.autopilot.flavour.firmware} autopilot (MAVLink 2 over UDP): sends to {host}:{port}, so a "
        f"client listens there (udpin) and is answered{camera}",
        f"MAVSDK: mavsdk_server udpin://{host}:{port}  MAVProxy: mavproxy.py --master udpin:{host}:{port}",
        "resets per flight: arming after a landed disarm starts back at home = "
        + _start_of_flight(world, name),
    ]
