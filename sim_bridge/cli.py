"""`dronecats sim`: the built-in simulator behind an AirSim-compatible RPC server.

dronecats sim --scene residential --spawn 'target=car@red:25,0' --port 41451
dronecats sim --episode ep.json          # an episode record's scene, drones and objects

This package reads no episode records: `--episode` is answered by the caller's `EpisodeScene`
reader (`dronecats sim` passes the episodes package's, see dronecats/cli_sim.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from common.pose import Pose

if TYPE_CHECKING:
    from sim_bridge.sim.world import World

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeScene:
    """The world an `--episode` asks for, as its reader found it in an episode record."""

    label: str  # the episode's id, for messages
    scene: str
    seed: int
    vehicles: list[tuple[str, Pose]]  # (name, start pose in the world NED frame), in the record's order
    populate: Callable[[World], list[str]]  # spawns the objects in the built World; returns their names


EpisodeReader = Callable[[str], EpisodeScene]  # the `--episode` text (EP.json[#ID]) -> its scene


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from common.checks import non_negative_int, port_arg, positive_float, positive_int
    from common.viewer_address import add_rerun_argument
    from sim_bridge.sim.scenes import SCENES

    parser.add_argument(
        "--scene",
        default=None,
        choices=list(SCENES),
        help="the built-in scene: residential (default), blocks or indoor (--episode: the record's)",
    )
    parser.add_argument(
        "--spawn",
        action="append",
        default=[],
        metavar="NAME=ASSET:X,Y[,YAW]",
        help="spawn an object, e.g. target=car@red:25,0 (asset syntax of episodes new --distractor; "
        "X, Y north/east metres, YAW degrees); NAME is what --truth-target refers to. Repeatable",
    )
    parser.add_argument(
        "--episode",
        default=None,
        metavar="EP.json[#ID]",
        help="build an episode record's scene: its drones at their start poses, its targets and "
        "distractors (named by their ids); #ID picks one episode of a suite file",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port_arg, default=41451, help="0 picks a free port (printed when ready; default 41451)"
    )
    parser.add_argument(
        "--vehicles", type=positive_int, default=None, help="number of drones, named Drone1..N (default 1)"
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
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the scene's random layout and of the sensor noise (default 0)",
    )
    parser.add_argument(
        "--sensor-noise",
        choices=("airsim", "off"),
        default="airsim",
        help="airsim: the IMU, barometer, magnetometer, GPS and distance sensors have AirSim's noise models "
        "(settings.json's sensor parameters; seeded by --seed); off: ideal sensors, each reading the true "
        "value at the instant asked (no noise, bias, drift, latency; the GPS converged), for tests "
        "(default airsim)",
    )
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
    parser.add_argument(
        "--camera-gimbal",
        choices=("body-fixed", "level"),
        default=None,
        help="the forward camera: body-fixed (AirSim's default: it pitches and rolls with the drone) or "
        "level (a gimbal holds it level, heading with the drone). Default: --settings' camera Gimbal, "
        "level for --episode, else body-fixed",
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
    parser.add_argument(
        "--battery-capacity-wh",
        type=positive_float,
        default=None,
        help="each drone's battery capacity (default 74 Wh: a 4S 5000 mAh LiPo, ~20 min of hover at "
        "--battery-hover-w); reported over MAVLink (SYS_STATUS, BATTERY_STATUS) and Tello (bat:)",
    )
    parser.add_argument(
        "--battery-start-pct",
        type=_percent,
        default=None,
        help="state of charge at start, 0-100 (default 100): a low value rehearses the low-battery landing",
    )
    parser.add_argument(
        "--battery-hover-w",
        type=positive_float,
        default=None,
        help="electrical power at hover (default 200 W); climbing and accelerating draw more",
    )
    parser.add_argument(
        "--land-on-silence-s",
        type=_silence_s,
        default=None,
        metavar="S",
        help="each drone lands by itself after S s (of simulation and of wall time) in the air without a "
        "command, as a flight controller does when its companion dies (default: off, AirSim's behaviour: "
        "it hovers; a client can arm it per drone with dcSetSilenceLanding)",
    )
    add_rerun_argument(parser, "every vehicle's and object's pose")
    from sim_bridge.emulators.cli_emulators import add_emulator_arguments

    add_emulator_arguments(parser)


def _silence_s(text: str) -> float | None:
    from common.checks import finite_float
    from common.errors import ConfigError
    from common.silence import check_silence_s

    try:
        return check_silence_s(finite_float(text))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _percent(text: str) -> float:
    from common.checks import finite_float

    value = finite_float(text)
    if not 0.0 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"{text} must be a percentage 0-100")
    return value


def _battery_config(args: argparse.Namespace) -> Any:
    from sim_bridge.sim.battery import BatteryConfig

    given = {
        "capacity_wh": args.battery_capacity_wh,
        "hover_power_w": args.battery_hover_w,
        "start_fraction": None if args.battery_start_pct is None else args.battery_start_pct / 100.0,
    }
    # Only a pack someone can read lands drones when empty: a Tello or MAVLink emulator reports it, or
    # the user asked for a battery; AirSim's RPC alone has no battery field.
    readable = any(v is not None for v in given.values()) or bool(args.tello or args.mavlink)
    if not readable:
        log.info("battery: modelled, not enforced (no --tello/--mavlink/--battery-*: AirSim has no battery)")
    return BatteryConfig(**{k: v for k, v in given.items() if v is not None}, enforced=readable)


def run(args: argparse.Namespace, read_episode: EpisodeReader | None = None) -> int:
    from common.errors import DroneCatsError, LinkError
    from sim_bridge.rpc.server import RpcServer

    if args.rerun:
        try:
            from sim_bridge.rerun_stream import SimRerunStream
        except ImportError as exc:
            print(
                f"dronecats sim: --rerun: {exc.name or exc} is missing: "
                'install the review extra (pip install "dronecats[review]")',
                file=sys.stderr,
            )
            return 2
    try:
        world, table = _world_and_api(args, read_episode)
    except DroneCatsError as exc:
        print(f"dronecats sim: {exc}", file=sys.stderr)
        return 2
    try:
        server = RpcServer(table, host=args.host, port=args.port)
    except OSError as exc:
        world.close()
        raise LinkError(f"cannot listen on {args.host}:{args.port} ({os.strerror(exc.errno or 0)})") from None
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    server.start()
    print(f"listening on {server.host}:{server.port}", flush=True)
    from sim_bridge.emulators.cli_emulators import start_emulators

    emulators = start_emulators(world, args)
    stream = SimRerunStream(world, args.rerun).start() if args.rerun else None
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if stream is not None:
            stream.close()
        for emulator in emulators:
            emulator.close()
        server.close()
        world.close()
    return 0


def _world_and_api(
    args: argparse.Namespace, read_episode: EpisodeReader | None
) -> tuple[Any, dict[str, Any]]:
    """The World (--settings, --episode or the flags, plus --spawn) and its method table
    (--strict-airsim or not; a car server's in settings.json's SimMode Car), started."""
    from common.camera import camera_profile
    from sim_bridge.rpc.airsim_api import AirSimApi

    world = _build_world(args, camera_profile(args.camera), read_episode)
    try:
        log.info("rendering with %s (%s)", world.renderer, world.render_device)
        world.pause(args.paused)
        world.start()
        if args.strict_airsim:
            from sim_bridge.rpc.strict import StrictAirSimApi

            api: AirSimApi = StrictAirSimApi(world)
        else:
            api = AirSimApi(world)
        api.sensors.set_noise(args.sensor_noise != "off")
        api.silence.default_s = args.land_on_silence_s
        api.silence.apply_default()
        if args.settings:  # the vehicles' sensors and cameras (the world took their poses)
            from sim_bridge.settings import read_settings
            from sim_bridge.settings_sections import read_external_cameras, read_sections

            sections = read_sections(args.settings, world.vehicle().model.name)
            api.apply_settings(sections, read_external_cameras(args.settings))
            settings = read_settings(args.settings)
            x, y, z = settings.wind_ned_m_s
            api.weather.simSetWind({"x_val": x, "y_val": y, "z_val": z})  # AirSim's Wind setting
            if settings.sim_mode == "Car":
                return world, _car_server(args, world, api)
    except BaseException:
        world.close()
        raise
    return world, api.table()


def _car_server(args: argparse.Namespace, world: Any, api: Any) -> dict[str, Any]:
    """SimMode Car: the vehicles become cars and the table AirSim's car server's (rpc/car_api.py)."""
    from common.errors import ConfigError
    from sim_bridge.rpc.car_api import car_table, make_cars

    if args.tello or args.mavlink:
        raise ConfigError("SimMode Car: --tello and --mavlink fly multirotors; a car has neither")
    make_cars(world)
    return car_table(world, api.table())


def _build_world(args: argparse.Namespace, camera: Any, read_episode: EpisodeReader | None) -> Any:
    """The World of --scene/--vehicles, of --settings' vehicles and camera, or of --episode's record,
    with the --spawn objects added."""
    from common.errors import ConfigError
    from sim_bridge.sim.world import World
    from sim_bridge.spawn_spec import parse_spawn

    spawns = [parse_spawn(text) for text in args.spawn]  # all validated before the world is built
    if args.episode and read_episode is None:
        raise ConfigError("--episode: this caller reads no episode records (run `dronecats sim --episode`)")
    episode = read_episode(args.episode) if args.episode and read_episode is not None else None
    if episode is not None and args.settings:
        raise ConfigError("--settings and --episode both place the vehicles: give one of them")
    if episode is not None and args.scene not in (None, episode.scene):
        raise ConfigError(f"--scene {args.scene} but the episode {episode.label} is in {episode.scene}")
    if episode is not None and args.vehicles not in (None, len(episode.vehicles)):
        raise ConfigError(
            f"--vehicles {args.vehicles} but the episode {episode.label} has {len(episode.vehicles)}"
        )
    if args.vehicles is not None and args.vehicles < 1:
        raise ConfigError(f"--vehicles {args.vehicles}: at least 1")
    from sim_bridge.sim.gimbal import BODY_FIXED, STABILISED

    mounts = {"body-fixed": BODY_FIXED, "level": STABILISED}
    common = {
        "render_workers": args.render_workers,
        "renderer": args.renderer,
        "battery": _battery_config(args),
    }
    if episode is not None:
        world = World(
            episode.scene,
            vehicles=[name for name, _ in episode.vehicles],
            seed=episode.seed,
            spawns=[pose for _, pose in episode.vehicles],
            camera=camera,
            clock_speed=args.clock_speed,
            camera_mount=mounts[args.camera_gimbal or "level"],  # the project's own camera
            **common,
        )
    elif args.settings:
        from sim_bridge.settings import read_settings

        settings = read_settings(args.settings)
        if args.vehicles is not None and args.vehicles != len(settings.vehicles):
            raise ConfigError(
                f"--vehicles {args.vehicles} but {args.settings} defines {len(settings.vehicles)} vehicles"
            )
        world = World(
            args.scene or "residential",
            vehicles=[name for name, _ in settings.vehicles],
            seed=args.seed,
            spawns=[pose for _, pose in settings.vehicles],
            camera=settings.camera or camera,
            clock_speed=settings.clock_speed or args.clock_speed,
            camera_mount=mounts[args.camera_gimbal] if args.camera_gimbal else settings.camera_mount,
            **common,
        )
    else:
        world = World(
            args.scene or "residential",
            vehicles=args.vehicles or 1,
            seed=args.seed,
            camera=camera,
            clock_speed=args.clock_speed,
            camera_mount=mounts[args.camera_gimbal or "body-fixed"],  # AirSim's default camera
            **common,
        )
    try:
        if episode is not None:
            names = episode.populate(world)
            print(f"episode {episode.label}: {episode.scene}, objects {', '.join(names)}", flush=True)
        for spec in spawns:
            spawned = world.spawn(spec.name, spec.asset, spec.pose())
            if spawned.name != spec.name:
                raise ConfigError(f"--spawn {spec.name}: the name is taken in the {world.scene_name} scene")
            print(f"spawned {spec.name}: {spec.asset} at ({spec.x_m:g}, {spec.y_m:g}) yaw {spec.yaw_deg:g}")
    except BaseException:
        world.close()
        raise
    return world
