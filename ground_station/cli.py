"""`dronecats gs`: the ground station — the PyQt6 app, or headless (`--headless`) for scripts.

dronecats gs --drones Drone1=tcp://10.0.0.5:5600,Drone2=tcp://10.0.0.6:5600      # GUI
dronecats gs --headless --drones ... --instruction "go to the red car" --structure commander
dronecats gs --launch 4 [--headless ...]     # also start the built-in sim and 4 onboard processes

Link security: `--keys gs1.key_secret` connects with CURVE; each drone's public key is read from
NAME.key (in --drone-keys DIR, default the directory of --keys). `--insecure` connects without
CURVE (to drones started with `onboard --insecure`). `--launch` makes fresh keys for the session.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common.checks import positive_float


def add_structure_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--structure`: one of the fleet's command structures, per-drone by default."""
    from ground_station.fleet.structures import STRUCTURES

    parser.add_argument("--structure", default="per-drone", choices=list(STRUCTURES), help=help_text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--drones", default="", help="NAME=tcp://HOST:PORT,... (each drone's --gs address)")
    parser.add_argument(
        "--launch",
        type=int,
        default=0,
        metavar="N",
        help="start the built-in simulator (with a red car ahead) and N onboard processes, then connect",
    )
    parser.add_argument("--scene", default="residential", help="scene for --launch")
    parser.add_argument(
        "--target-distance-m", type=float, default=20.0, help="--launch: the red car this far north"
    )
    parser.add_argument("--headless", action="store_true", help="no GUI: run the instruction and print JSON")
    parser.add_argument("--instruction", default="", help="instruction for the fleet (headless: required)")
    add_structure_argument(parser, "command structure (see docs/howto/fleet.md)")
    parser.add_argument(
        "--model", default=None, help="one-context: the model's URL (openai://HOST:PORT/v1?...)"
    )
    parser.add_argument("--commander", default="rule", help="commander: rule (default) or a model URL")
    parser.add_argument(
        "--expires-after-steps", type=int, default=6, help="order lifetime in sub-agent steps"
    )
    parser.add_argument(
        "--mark", action="append", default=[], metavar="X,Y", help="operator-marked target (NED m)"
    )
    parser.add_argument(
        "--duration-s", type=positive_float, default=120.0, help="headless: run at most this long"
    )
    parser.add_argument(
        "--until",
        default="qualifying",
        choices=["none", "declaration", "qualifying"],
        help="headless: stop at the first declaration, or the first within δ and visible (sim)",
    )
    parser.add_argument("--export", default=None, help="write the session log (JSON lines) here at the end")
    parser.add_argument(
        "--record-mcap",
        default=None,
        metavar="PATH",
        help="record the whole session (the session log, every drone's telemetry and frames) to an MCAP "
        'file, for Foxglove; needs the review extra (pip install "dronecats[review]")',
    )
    parser.add_argument(
        "--pilot", default=None, help="--launch: the drones' pilot (default baseline; remote for one-context)"
    )
    parser.add_argument("--log-dir", default=None, help="--launch: directory for the drones' logs")
    parser.add_argument(
        "--keys", default=None, help="ground-station CURVE secret key file (drones' keys: NAME.key)"
    )
    parser.add_argument(
        "--drone-keys",
        default=None,
        metavar="DIR",
        help="directory of the drones' public keys NAME.key (default: the directory of --keys)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="no CURVE: only for drones started with `onboard --insecure` (with --launch: start them so)",
    )
    parser.add_argument(
        "--screenshot", default=None, help="GUI: save a screenshot here after --screenshot-after-s"
    )
    parser.add_argument(
        "--screenshot-after-s", type=float, default=20.0, help="GUI: --screenshot this long after start"
    )
    parser.add_argument(
        "--map-tiles",
        default=None,
        metavar="PATH",
        help="GUI: offline map tiles under the map (a Z/X/Y folder or an .mbtiles file; needs a geo origin)",
    )
    parser.add_argument(
        "--geo-origin",
        default=None,
        metavar="LAT,LON,ALT",
        help="GUI: the geographic point of the drones' local (0, 0, 0) (with --launch: the simulator's)",
    )
    parser.add_argument("--quit-after-s", type=float, default=None, help="GUI: close after this long")
    # `dronecats demo-fleet` sets it: its GUI ends like its headless run, after the first qualifying
    # declaration
    parser.set_defaults(quit_after_qualifying_s=None)
    parser.add_argument(
        "--traffic-hz",
        type=float,
        default=10.0,
        help="relay each drone its fleet mates' positions this often, for its safety governor's "
        "separation (needs every drone to report one world frame: the built-in sim's, or each "
        "vehicle URL's spawn=); 0: no relay",
    )


def _marks(values: list[str]) -> list[tuple[float, float]]:
    from common.errors import ConfigError

    out = []
    for value in values:
        try:
            x, y = (float(v) for v in value.split(","))
        except ValueError:
            raise ConfigError(f"--mark {value!r} must be X,Y in metres") from None
        if not all(math.isfinite(v) and abs(v) <= 100_000 for v in (x, y)):
            raise ConfigError(f"--mark {value!r}: X and Y must be finite, within 100 km")
        out.append((x, y))
    return out


def _check_numbers(args: argparse.Namespace) -> None:
    """Every number on the command line finite and in range (NaN passes every `< 0` test)."""
    from common.errors import ConfigError

    limits = {
        "duration_s": (0.0, 7 * 86_400.0),
        "traffic_hz": (0.0, 100.0),
        "target_distance_m": (0.0, 10_000.0),
        "screenshot_after_s": (0.0, 86_400.0),
    }
    for name, (low, high) in limits.items():
        value = getattr(args, name, None)
        if value is not None and not (math.isfinite(value) and low <= value <= high):
            raise ConfigError(f"--{name.replace('_', '-')}={value} must be within {low:g}..{high:g}")


def _security(args: argparse.Namespace, addresses: list[Any]) -> tuple[Any, list[Any]]:
    """The ground station's CURVE client from --keys, and the addresses with each drone's public key
    (NAME.key), or Insecure() with --insecure. Neither: refused (a drone is secure by default)."""
    from dataclasses import replace

    from common.errors import ConfigError
    from common.keys import PUBLIC_SUFFIX, load_keypair
    from common.link import CurveClient, Insecure

    if args.keys and args.insecure:
        raise ConfigError("--keys and --insecure contradict each other: give one of them")
    if args.insecure:
        return Insecure(), addresses
    if not args.keys:
        raise ConfigError(
            "connecting to drones needs CURVE keys: --keys GS.key_secret (with each drone's NAME.key "
            "beside it or in --drone-keys DIR), or --insecure for drones started with --insecure"
        )
    client = CurveClient.from_file(args.keys)
    key_dir = Path(args.drone_keys or Path(args.keys).parent)
    keyed = []
    for address in addresses:
        path = key_dir / f"{address.drone_id}{PUBLIC_SUFFIX}"
        if not path.is_file():
            raise ConfigError(f"no public key for drone {address.drone_id}: expected {path}")
        keyed.append(replace(address, server_public_key=load_keypair(path).public_key))
    return client, keyed


def run(args: argparse.Namespace) -> int:
    from common.errors import DroneCatsError

    try:
        with _stop_on_signals():
            return _run(args)
    except KeyboardInterrupt as exc:
        # Ctrl+C or SIGTERM: _run's own finally has landed the drones and stopped the simulator.
        name = exc.args[0] if exc.args else "SIGINT"
        print(f"dronecats gs: interrupted ({name})", file=sys.stderr)
        return 128 + int(getattr(signal.Signals, name, signal.SIGINT))
    except DroneCatsError as exc:
        print(f"dronecats gs: {exc}", file=sys.stderr)
        return exc.exit_code
    except TimeoutError as exc:  # no telemetry from a drone in time
        print(f"dronecats gs: {exc}", file=sys.stderr)
        return 1


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGTERM (and SIGHUP: the terminal went away) end the ground station as Ctrl+C does, through
    every `finally`, so launched processes are stopped in order. The GUI installs its own handlers
    (it closes its window) while its event loop runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace) -> int:
    from common.pose import Pose
    from ground_station.fleet.client import DroneAddress, FleetClient
    from ground_station.fleet.launch import LaunchTarget, SimFleet

    sim: SimFleet | None = None
    if args.record_mcap:
        try:
            from ground_station.fleet.session_mcap import SessionMcap
        except ImportError as exc:
            print(
                f"dronecats gs: --record-mcap: {exc.name or exc} is missing: "
                'install the review extra (pip install "dronecats[review]")',
                file=sys.stderr,
            )
            return 2
    try:
        _check_numbers(args)
        marks = _marks(args.mark)
        geo_origin(args.geo_origin)  # bad input: said before anything is launched
        if args.map_tiles:
            from ground_station.app.map_tiles import TileSource

            TileSource(args.map_tiles).close()
        if not args.headless:
            # Before anything is launched: a GUI that cannot start must not leave drones flying.
            problem = _gui_problem()
            if problem is not None:
                print(f"dronecats gs: the GUI cannot start: {problem}", file=sys.stderr)
                print("dronecats gs: nothing was launched; use --headless to run without it", file=sys.stderr)
                return 2
        if args.launch:
            pilot = args.pilot or ("remote" if args.structure == "one-context" else "baseline")
            log_dir = Path(args.log_dir or f"runs/gs-{time.strftime('%Y%m%d-%H%M%S')}")
            print(
                f"starting the simulator and {args.launch} onboard processes (logs in {log_dir}) ...",
                flush=True,
            )
            sim = SimFleet(
                args.launch,
                pilot=pilot,
                scene=args.scene,
                targets=[LaunchTarget("target", "car@red", Pose(args.target_distance_m, 0.0, 0.0, 90.0))],
                log_dir=log_dir,
                onboard_settings=["min_decision_period_s=0.5", "t_max_s=600", "stop_on_declaration=false"],
                secure=not args.insecure,  # fresh keys for this session unless told otherwise
            ).start()
            addresses, security = list(sim.addresses), sim.security
        else:
            addresses = [DroneAddress.parse(s) for s in args.drones.split(",") if s.strip()]
            if addresses:
                security, addresses = _security(args, addresses)
        if not addresses:
            print("dronecats gs: give --drones NAME=tcp://HOST:PORT,... or --launch N", file=sys.stderr)
            return 2
        fleet = FleetClient(addresses, security, traffic_hz=args.traffic_hz)
        recording = SessionMcap(fleet.state, args.record_mcap) if args.record_mcap else None
        fleet.start()
        try:
            if args.headless:
                if sim is not None:
                    _wait_for_launched(fleet, sim)
                return _headless(args, fleet, marks)
            return _gui(args, fleet, marks, sim)
        finally:
            if args.export:
                fleet.export_session(args.export)
            if recording is not None:
                recording.close()
            fleet.close()
    finally:
        if sim is not None:
            print("dronecats gs: stopping the drones (each lands), then the simulator", file=sys.stderr)
            sim.close()
            print("dronecats gs: every launched process has stopped", file=sys.stderr)


def _gui_problem() -> str | None:
    try:
        from ground_station.app.preflight import gui_problem
    except ImportError as exc:  # PyQt6 is the `gui` extra
        return f"{exc} (install the gui extra: pip install 'dronecats[gui]')"
    return gui_problem()


def _wait_for_launched(fleet: Any, sim: Any, timeout_s: float = 90.0) -> None:
    """Until every launched drone reports; a drone whose process ends first (a failed pre-arm check,
    a bad pilot URL) is reported at once, with the last lines of its log."""
    from common.errors import ConfigError

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name in fleet.drone_ids:
            ended = sim.exit_info(name)
            if ended is not None and fleet.state.drones[name].telemetry is None:
                tail = "\n    ".join(line for line in ended.log_tail[-6:] if line.strip())
                raise ConfigError(f"{ended.summary()}\n  last lines of its log:\n    {tail}")
        if fleet.wait_for_link(0.2):
            return
    missing = [d for d, s in fleet.state.drones.items() if s.telemetry is None]
    raise ConfigError(f"no telemetry from {missing} within {timeout_s:g} s (logs in {sim.log_dir})")


def _headless(args: argparse.Namespace, fleet: Any, marks: list[tuple[float, float]]) -> int:
    from ground_station.fleet.structures import make_structure
    from ground_station.headless import HeadlessSession

    if not args.instruction:
        print("dronecats gs --headless: --instruction is required", file=sys.stderr)
        return 2
    structure = make_structure(
        args.structure, fleet, args.model, args.commander, args.expires_after_steps, marks
    )

    lock = threading.Lock()

    def show(event: Any) -> None:
        if event.kind in ("declaration", "order", "commander", "instruction", "judgement", "note"):
            line = {"event": event.kind, "drone": event.drone, **_brief(event)}
            text = json.dumps(line, allow_nan=False) + "\n"  # standard JSON: never NaN or Infinity
            # Events come from the link's thread and the session's: one write each, or print's text and
            # newline from two threads interleave into two objects on one line (seen in CI).
            with lock:
                sys.stdout.write(text)
                sys.stdout.flush()

    summary = HeadlessSession(fleet, structure).run(
        args.instruction, args.duration_s, args.until, on_event=show
    )
    # The link's counters too: what was received, accepted, rejected (and why), refused, dropped.
    out = {**summary.__dict__, "link": fleet.link.stats.snapshot()}
    with lock:
        print(json.dumps(out, default=str, allow_nan=False), flush=True)
    return 0 if summary.declarations else 1


def _brief(event: Any) -> dict[str, Any]:
    record = event.record
    if event.kind == "declaration":
        return {"t_s": round(record.t_s, 2), "distance_m": record.distance_m, "visible": record.visible}
    if event.kind == "order":
        return {"order": record.text, "expires_after_steps": record.expires_after_steps}
    if event.kind == "commander":
        return {"orders": list(record.orders or []), "error": record.error}
    return {}


def geo_origin(value: str | None) -> tuple[float, float, float] | None:
    """`LAT,LON,ALT` in degrees and metres, checked."""
    from common.errors import ConfigError

    if not value:
        return None
    try:
        lat, lon, alt = (float(v) for v in value.split(","))
    except ValueError:
        raise ConfigError(f"--geo-origin {value!r} must be LAT,LON,ALT (degrees, degrees, metres)") from None
    if not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0 and math.isfinite(alt)):
        raise ConfigError(f"--geo-origin {value!r}: latitude within ±90°, longitude within ±180°")
    return lat, lon, alt


def _gui(args: argparse.Namespace, fleet: Any, marks: list[tuple[float, float]], sim: Any = None) -> int:
    from ground_station.app.main import run_app

    # The demo's GUI ends like its headless run: a few seconds after the first qualifying declaration.
    quit_after_qualifying_s = args.quit_after_qualifying_s
    code = run_app(
        fleet,
        instruction=args.instruction,
        structure=args.structure,
        model_url=args.model,
        commander=args.commander,
        marks=marks,
        screenshot=args.screenshot,
        screenshot_after_s=args.screenshot_after_s,
        quit_after_s=args.quit_after_s,
        quit_after_qualifying_s=quit_after_qualifying_s,
        launcher=sim,
        map_tiles=args.map_tiles,
        geo_origin=geo_origin(args.geo_origin),
    )
    if quit_after_qualifying_s is None:
        return code
    from ground_station.headless import declaration_dict

    with fleet.state.lock:
        declarations = [declaration_dict(d) for d in fleet.state.declarations]
    qualifying = [
        d for d in declarations if d["visible"] and d["distance_m"] is not None and d["distance_m"] <= 5.0
    ]
    print(json.dumps({"reason": "qualifying" if qualifying else "closed", "declarations": declarations}))
    return 0 if qualifying else 1
