"""`dronecats sim`: the built-in simulator behind an AirSim-compatible RPC server."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scene", default="residential", help="residential (default), blocks or indoor")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=41451, help="0 picks a free port (printed when ready)")
    parser.add_argument("--vehicles", type=int, default=1, help="number of drones, named Drone1..N")
    parser.add_argument("--clock-speed", type=float, default=1.0, help="simulated seconds per wall second")
    parser.add_argument(
        "--paused", action="store_true", help="start paused (advance with simContinueForTime)"
    )
    parser.add_argument("--camera", default="sim", help="camera profile name or YAML file (default: sim)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--render-workers",
        type=int,
        default=0,
        help="render in K worker processes (each a copy of the scene) instead of the server process: "
        "renders of several drones run in parallel and no longer hold up the physics and the RPC "
        "(default 0: render in the server process)",
    )
    parser.add_argument(
        "--renderer",
        choices=("auto", "gl", "tiny"),
        default=None,
        help="gl: OpenGL through EGL (Mesa's llvmpipe on a CPU, ~4x faster than tiny); tiny: PyBullet's "
        "TinyRenderer; auto: gl where an EGL context can be made, else tiny with a warning (default: "
        "$DRONECATS_RENDERER, else auto)",
    )
    parser.add_argument(
        "--settings",
        default=None,
        metavar="FILE",
        help="an AirSim settings.json: its Vehicles (names, X/Y/Z/Yaw), the first vehicle's Scene camera "
        "(Width, Height, FOV_Degrees) and ClockSpeed replace --vehicles, --camera and --clock-speed",
    )
    parser.add_argument(
        "--strict-airsim",
        action="store_true",
        help="behave like a foreign Unreal map: stock AirSim methods only (no dc* extensions), the "
        "scene's actors under other names, simSpawnObject takes this map's blueprints only (see "
        "simListAssets), paint through simSetObjectMaterial",
    )
    from sim_bridge.emulators.cli_emulators import add_emulator_arguments

    add_emulator_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from common.errors import DroneCatsError
    from sim_bridge.rpc.server import RpcServer

    try:
        world, api = _world_and_api(args)
    except DroneCatsError as exc:
        print(f"dronecats sim: {exc}", file=sys.stderr)
        return 2
    server = RpcServer(api.table(), host=args.host, port=args.port)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    server.start()
    print(f"listening on {server.host}:{server.port}", flush=True)
    from sim_bridge.emulators.cli_emulators import start_emulators

    emulators = start_emulators(world, args)
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        for emulator in emulators:
            emulator.close()
        server.close()
        world.close()
    return 0


def _world_and_api(args: argparse.Namespace) -> tuple[Any, Any]:
    """The World (--settings or the flags) and its method table (--strict-airsim or not)."""
    from common.camera import camera_profile
    from sim_bridge.rpc.airsim_api import AirSimApi
    from sim_bridge.sim.world import World

    vehicles: int | list[str] = args.vehicles
    spawns = None
    camera = camera_profile(args.camera)
    clock_speed = args.clock_speed
    if args.settings:
        from sim_bridge.settings import read_settings

        settings = read_settings(args.settings)
        vehicles = [name for name, _ in settings.vehicles]
        spawns = [pose for _, pose in settings.vehicles]
        camera = settings.camera or camera
        clock_speed = settings.clock_speed or clock_speed
    world = World(
        args.scene,
        vehicles=vehicles,
        camera=camera,
        seed=args.seed,
        clock_speed=clock_speed,
        spawns=spawns,
        render_workers=args.render_workers,
        renderer=args.renderer,
    )
    try:
        log.info("rendering with %s (%s)", world.renderer, world.render_device)
        world.pause(args.paused)
        world.start()
        if args.strict_airsim:
            from sim_bridge.rpc.strict import StrictAirSimApi

            api: AirSimApi = StrictAirSimApi(world)
        else:
            api = AirSimApi(world)
    except BaseException:
        world.close()
        raise
    return world, api
