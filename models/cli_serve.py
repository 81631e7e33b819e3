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


def run(args: argparse.Namespace) -> int:
    from common.errors import LinkError
    from models.serve import make_pilot, start_server

    pilot = make_pilot(args.pilot, delta_m=args.delta_m, camera=args.camera)  # ConfigError: one line, exit 2
    try:
        server, thread = start_server(pilot, args.host, args.port, args.model_name, args.latency_s)
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
