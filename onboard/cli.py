"""`dronecats onboard`: fly one drone with a pilot, from URLs, until the instruction is done.

    dronecats onboard --vehicle airsim://127.0.0.1:41451/Drone1 --pilot baseline \\
        --instruction "go to the red car" --log-dir runs/flight1 [--config onboard.yaml] [--set k=v ...]
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import FrameType

    from common.camera import CameraProfile
    from models.pilot import Decision, Observation, Pilot
    from onboard.runtime import OnboardRuntime

log = logging.getLogger(__name__)

# Real-time defaults under the config file and --set: a fast pilot (the baseline answers in ~10 ms)
# would otherwise decide back to back (~70 decisions/s) and save every frame (~70 MB a minute).
REALTIME_DEFAULTS: dict[str, Any] = {
    "min_decision_period_s": 0.5,
    "recorder": {"frames_max_hz": 2.0, "frames_max_bytes": 64 * 1024 * 1024},
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from common.viewer_address import add_rerun_argument

    parser.add_argument("--vehicle", required=True, help="vehicle URL, e.g. airsim://127.0.0.1:41451/Drone1")
    parser.add_argument(
        "--pilot",
        default="baseline",
        help="baseline, scripted:FILE, a model URL (openai://HOST:PORT/v1?model=M&profile=P), or "
        "remote (the ground station's one-context model decides: stream frames, run its actions)",
    )
    parser.add_argument(
        "--instruction", default="", help="the operator's instruction (or send one from the gs)"
    )
    parser.add_argument(
        "--gs",
        default=None,
        help="ground-station link: bind address for this drone, e.g. tcp://127.0.0.1:5600",
    )
    parser.add_argument(
        "--link-secret",
        default=None,
        help="this drone's CURVE secret key file (dronecats keys generate); --gs needs it (or --insecure)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="run the --gs link without CURVE: any host that reaches its ports can command the drone "
        "(local tests and demos only; recorded as link_security: insecure in episode.json and telemetry)",
    )
    parser.add_argument(
        "--link-allow",
        action="append",
        default=[],
        metavar="KEY",
        help="a ground station's public key (Z85 text or NAME.key file) allowed to command; repeatable",
    )
    parser.add_argument("--log-dir", default=None, help="episode log directory (default runs/onboard-TIME)")
    parser.add_argument("--config", default=None, help="YAML/TOML file of RuntimeConfig fields")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (dotted), e.g. --set safety.geofence_radius_m=80",
    )
    parser.add_argument("--camera", default=None, help="camera profile (name or calibrate's YAML)")
    parser.add_argument("--profile", default=None, help="flight profile: outdoor, indoor, tello or FILE")
    parser.add_argument(
        "--rt-priority",
        type=int,
        default=None,
        metavar="N",
        help="SCHED_FIFO priority of the actuation thread, 1-99 (default 10; 0: normal scheduling). "
        "Needs root or CAP_SYS_NICE; refused -> logged, and the loop runs normally",
    )
    add_rerun_argument(parser, "the flight")
    parser.add_argument(
        "--truth-target",
        default=None,
        help="simulator object to measure distance/visibility against (logs only)",
    )


def run(args: argparse.Namespace) -> int:
    from common.checks import tcp_address, writable_dir
    from common.clock import WallClock
    from common.config import load_config
    from common.errors import DroneCatsError, LinkError
    from common.interfaces import open_vehicle
    from common.truth import open_truth
    from models.pilot import StepDeadlines
    from models.serve import make_pilot
    from onboard.assembly import assemble, fly_realtime
    from onboard.runtime_config import RuntimeConfig

    if args.rerun:
        import importlib.util

        if importlib.util.find_spec("rerun") is None:  # its sink process runs the SDK
            print(
                "dronecats onboard: --rerun: rerun is missing: "
                'install the review extra (pip install "dronecats[review]")',
                file=sys.stderr,
            )
            return 2
    overrides = config_overrides(args)
    stream = None
    try:
        base = {**REALTIME_DEFAULTS, **vehicle_named_defaults(args.vehicle)}
        config = load_config(RuntimeConfig, args.config, overrides, base=base)
        log.info(
            "decisions at most every %.2f s; frames at most %g/s and %d MiB (config/--set to change)",
            config.min_decision_period_s,
            config.recorder.frames_max_hz,
            config.recorder.frames_max_bytes // (1024 * 1024),
        )
        if args.gs:  # telemetry, frames and commands on PORT, PORT+1, PORT+2
            tcp_address(args.gs, "--gs", span=3)
        check_link_flags(args)  # before anything connects: a drone never comes up insecure by accident
        log_dir = writable_dir(args.log_dir or f"runs/onboard-{time.strftime('%Y%m%d-%H%M%S')}", "--log-dir")
        vehicle = open_vehicle(args.vehicle)
        pilot: Pilot = (
            GroundStationPilot()
            if config.remote
            else make_pilot(
                args.pilot,
                delta_m=config.delta_m,
                camera=config.camera,
                deadlines=StepDeadlines(config.action_deadline_s, config.plan_deadline_s),
            )
        )
        truth = None
        if args.truth_target:
            truth = open_truth(args.vehicle, args.truth_target)
        # real vehicles' faults (failsafe, RC takeover, stale video, link loss) routed in by assemble
        runtime = assemble(config, vehicle, pilot, WallClock(), log_dir, truth=truth)
        link = None
        if args.gs:
            import zmq

            from onboard.link import attach_link

            try:
                link = attach_link(
                    runtime, args.gs, args.link_secret, args.link_allow, insecure=args.insecure
                )
            except zmq.ZMQError as exc:
                raise LinkError(
                    f"--gs {args.gs}: cannot bind PORT to PORT+2 ({zmq.strerror(exc.errno or 0)})"
                ) from None
        if args.rerun:  # its truth is a connection of its own: sampled on the stream's thread
            stream_truth = open_truth(args.vehicle, args.truth_target) if args.truth_target else None
            from onboard.rerun_stream import attach_rerun

            stream = attach_rerun(runtime.reporter, args.rerun, stream_truth)
        # SIGINT (Ctrl+C) as SIGTERM: the run ends through its own stop path, the vehicle lands and the
        # end-of-run record is written, whatever thread the signal lands in the middle of.
        stop_handler = _stop_on_sigterm(runtime)
        signal.signal(signal.SIGTERM, stop_handler)
        signal.signal(signal.SIGINT, stop_handler)
        # The actuation thread shares the GIL with the decision loop: hand it over sooner (default 5 ms).
        sys.setswitchinterval(0.001)
        result = fly_realtime(runtime)
    except DroneCatsError as exc:
        print(f"dronecats onboard: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        if stream is not None:  # its worker thread is joined: a failed run still exits
            stream.close()
    if link is not None:
        time.sleep(0.3)  # the final status (published by finish) goes out before the sockets close
        link.close()
        runtime.recorder.write_metadata(run={"link_counts": link.link.stats.snapshot()})
    from onboard.runtime import VEHICLE_LOST_REASON

    flown_s = max(1e-9, runtime.t())
    log.info("served %.2f decisions/s over %.1f s", result.steps / flown_s, flown_s)
    print(
        json.dumps(
            {
                "log_dir": str(log_dir),
                "decisions_per_s": round(result.steps / flown_s, 2),
                "reason": result.reason,
                "steps": result.steps,
                "declarations": result.declarations,
                "qualifying_t": result.qualifying_declaration_t,
                "served_rate_hz": round(result.served_rate_hz, 2),
                "mode": result.mode,
            }
        )
    )
    if result.reason.startswith(VEHICLE_LOST_REASON):
        from common.errors import VehicleConnectionLost

        print(f"dronecats onboard: {result.reason}", file=sys.stderr)
        return VehicleConnectionLost.exit_code
    return 0


def check_link_flags(args: argparse.Namespace) -> None:
    """--gs needs CURVE keys (--link-secret, --link-allow) unless --insecure is given explicitly."""
    from common.errors import ConfigError

    if args.insecure and args.link_secret:
        raise ConfigError("--insecure and --link-secret contradict each other: give one of them")
    if args.gs and not args.insecure:
        if not args.link_secret:
            raise ConfigError(
                "--gs needs CURVE keys: --link-secret DRONE.key_secret and --link-allow GS.key "
                "(make them with `dronecats keys generate`), or --insecure to run the link without them"
            )
        if not args.link_allow:
            raise ConfigError("--link-secret needs at least one --link-allow GS.key (a ground station's key)")


def _stop_on_sigterm(runtime: OnboardRuntime) -> Callable[[int, FrameType | None], None]:
    """A SIGTERM handler that stops the run once, from another thread.

    SIGTERM can come twice in a row (PR_SET_PDEATHSIG fires again as a dying multi-threaded parent's
    threads exit one after another), and a handler runs in the main thread between two bytecodes: one
    calling Event.set inside another's Event.set deadlocks on the Event's lock (seen: a drone that
    never exited). So the first call only starts a thread that stops the runtime; later calls return.
    """
    fired: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        fired.append(signum)  # one bytecode: a nested call sees it
        if len(fired) == 1:
            threading.Thread(target=runtime.stop, name="sigterm-stop", daemon=True).start()

    return handler


def vehicle_named_defaults(vehicle_url: str) -> dict[str, Any]:
    """`drone`: the vehicle's own name where its URL has one (`airsim://HOST:PORT/Drone2`), so a second
    drone does not call itself Drone1 to the ground station; a config file or --set still decides."""
    parts = urllib.parse.urlsplit(vehicle_url)
    name = parts.path.strip("/").split("/", 1)[0]
    return {"drone": urllib.parse.unquote(name)} if parts.scheme == "airsim" and name else {}


def config_overrides(args: argparse.Namespace) -> list[str]:
    """RuntimeConfig overrides from the command line: --set first, then the dedicated flags."""
    overrides = list(args.set)
    if args.instruction:
        overrides.append(f"instruction={json.dumps(args.instruction)}")
    if args.camera:
        overrides.append(f"camera={args.camera}")
    if args.profile:
        overrides.append(f"flight_profile={args.profile}")
    if args.pilot == "remote":
        overrides.append("remote=true")
    if args.rt_priority is not None:
        overrides.append(f"actuation_rt_priority={args.rt_priority}")
    return overrides


class GroundStationPilot:
    """Remote mode's pilot: the model runs at the ground station (one call for the whole fleet) and its
    actions arrive as RemoteActions; the runtime never asks this object to decide."""

    name = "remote"

    def decide(self, observation: Observation) -> Decision:
        from models.pilot import Decision

        return Decision(action=None, raw="", error="remote mode: actions come from the ground station")

    def identity(self) -> None:
        return None

    def canonical_focal_px(self, camera: CameraProfile) -> None:
        return None

    def close(self) -> None:
        pass
