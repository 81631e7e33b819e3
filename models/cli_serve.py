"""`dronecats serve-pilot`: an OpenAI-compatible server in front of a pilot (baseline, scripted, model)."""

from __future__ import annotations

import argparse
import os
import signal
import threading

from common.checks import non_negative_float, port_arg, positive_float


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pilot",
        default="baseline",
        help="baseline (default), scripted:FILE (a scripted test peer), or a backend URL such as "
        "openai://127.0.0.1:8001/v1?profile=qwen3.5-2b",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=port_arg, default=8000, help="port (0 picks a free one; default 8000)")
    parser.add_argument(
        "--model-name", default=None, help="the id GET /v1/models reports (default: the pilot's)"
    )
    parser.add_argument(
        "--delta-m", type=positive_float, default=5.0, help="baseline: arrival radius δ in metres"
    )
    parser.add_argument(
        "--camera", default=None, help="baseline: camera profile name or YAML (default: 90° HFOV)"
    )
    parser.add_argument(
        "--latency-s", type=non_negative_float, default=0.0, help="inject this delay before every reply"
    )
    parser.add_argument(
        "--latency-draws",
        default=None,
        metavar="FILE",
        help="a JSON list of seconds, one per reply in order: each reply leaves that long after its "
        "request arrived (the pilot's time included); after the last, --latency-s again",
    )


def read_latency_draws(path: str) -> list[float]:
    """--latency-draws: a non-empty JSON list of finite seconds >= 0 (ConfigError otherwise)."""
    import json
    import math
    from pathlib import Path

    from common.errors import ConfigError

    try:
        draws = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"--latency-draws {path}: {exc}") from None
    ok = (
        isinstance(draws, list)
        and draws
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            for v in draws
        )
    )
    if not ok:
        raise ConfigError(f"--latency-draws {path}: must be a non-empty JSON list of seconds >= 0")
    return [float(v) for v in draws]


def run(args: argparse.Namespace) -> int:
    from common.errors import LinkError
    from models.serve import make_pilot, start_server

    draws_s = read_latency_draws(args.latency_draws) if args.latency_draws else None
    pilot = make_pilot(args.pilot, delta_m=args.delta_m, camera=args.camera)  # ConfigError: one line, exit 2
    try:
        server, thread = start_server(pilot, args.host, args.port, args.model_name, args.latency_s, draws_s)
    except OSError as exc:
        pilot.close()
        raise LinkError(f"cannot listen on {args.host}:{args.port} ({os.strerror(exc.errno or 0)})") from None
    # One parseable line on stdout, so scripts and tests can find the port when --port 0.
    print(f"serve-pilot: {pilot.name} listening on http://{args.host}:{server.port}/v1", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        pilot.close()
    return 0
