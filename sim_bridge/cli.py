"""`dronecats sim`: the built-in simulator behind an AirSim-compatible RPC server."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from common.checks import non_negative_int, port_arg, positive_float, positive_int
    from sim_bridge.sim.scenes import SCENES

    parser.add_argument(
        "--scene",
        default="residential",
        choices=list(SCENES),
        help="the built-in scene (default residential)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port_arg, default=41451, help="0 picks a free port (printed when ready; default 41451)"
    )
    parser.add_argument(
        "--vehicles", type=positive_int, default=1, help="number of drones, named Drone1..N (default 1)"
    )
    parser.add_argument(
        "--clock-speed",
        type=positive_float,
        default=1.0,
        help="simulated s per wall s (default 1)",
    )
    parser.add_argument(
        "--paused", action="store_true", help="start paused (advance with simContinueForTime)"
    )
    parser.add_argument("--camera", default="sim", help="camera profile name or YAML file (default: sim)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scene's random layout (default 0)")
    parser.add_argument(
        "--render-workers",
        type=non_negative_int,
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
    from sim_bridge.emulators.cli_emulators import add_emulator_arguments

    add_emulator_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from common.camera import camera_profile
    from common.errors import LinkError
    from sim_bridge.rpc.airsim_api import AirSimApi
    from sim_bridge.rpc.server import RpcServer
    from sim_bridge.sim.world import World

    world = World(
        args.scene,
        vehicles=args.vehicles,
        camera=camera_profile(args.camera),
        seed=args.seed,
        clock_speed=args.clock_speed,
        render_workers=args.render_workers,
        renderer=args.renderer,
    )
    log.info("rendering with %s (%s)", world.renderer, world.render_device)
    world.pause(args.paused)
    world.start()
    try:
        server = RpcServer(AirSimApi(world).table(), host=args.host, port=args.port)
    except OSError as exc:
        world.close()
        raise LinkError(f"cannot listen on {args.host}:{args.port} ({os.strerror(exc.errno or 0)})") from None
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
