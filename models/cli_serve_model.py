"""`dronecats serve-model PROFILE`: start the model engine a serving profile describes, wait until it
serves, warm it up with a real frame, then keep it running (or stop it: --stop-after-warmup).

    dronecats serve-model --list
    dronecats serve-model qwen3.5-2b-w4a16-orin --print          # the exact command, nothing run
    dronecats serve-model qwen3.5-2b-w4a16-orin --weights-dir /models --port 8000
    dronecats serve-model qwen3.5-2b-w4a16-orin \
        --command '{python} -m dronecats serve-pilot --port {port} --model-name {served_model}'

--command replaces the engine with any OpenAI-compatible server (placeholders {python} {host}
{port} {served_model} {checkpoint}); the tests use it to run the launcher against serve-pilot.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

DEFAULT_WARMUP_IMAGE = Path(__file__).resolve().parent / "serving" / "warmup_frame.jpg"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", nargs="?", help="serving profile name (see --list) or a YAML file")
    parser.add_argument("--list", action="store_true", help="list the built-in serving profiles and exit")
    parser.add_argument(
        "--engine", choices=["vllm", "trtllm"], default=None, help="default: the profile's first"
    )
    parser.add_argument(
        "--weights-dir",
        default=os.environ.get("DRONECATS_WEIGHTS", "/models"),
        help="where relative checkpoints live (default $DRONECATS_WEIGHTS or /models)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address the engine binds (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="the engine's HTTP port (default 8000)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="profile override")
    parser.add_argument("--print", action="store_true", help="print the engine command and exit")
    parser.add_argument("--command", default=None, help="run this command instead of the engine (see above)")
    parser.add_argument("--ready-timeout-s", type=float, default=900.0, help="wait this long for readiness")
    parser.add_argument("--warmup-image", default=str(DEFAULT_WARMUP_IMAGE), help="JPEG/PNG warm-up frame")
    parser.add_argument("--instruction", default="go to the red car", help="instruction of the warm-up calls")
    parser.add_argument("--no-warmup", action="store_true", help="skip the warm-up requests")
    parser.add_argument(
        "--stop-after-warmup", action="store_true", help="stop the engine once warm and exit (a check)"
    )
    parser.add_argument(
        "--ready-file",
        default=None,
        help="once warm, write {pilot_url, served_model, warmup} as JSON here (removed on exit)",
    )
    parser.add_argument(
        "--quiet-engine", action="store_true", help="do not copy the engine's output to stderr"
    )


def _say(text: str) -> None:
    print(f"serve-model: {text}", flush=True)


def _list() -> int:
    from models.serving.profile import load_serving_profile, serving_profile_names

    for name in serving_profile_names():
        prof = load_serving_profile(name)
        print(f"{name:34s} {prof.precision:6s} {','.join(prof.engines):12s} {prof.description}")
    return 0


def run(args: argparse.Namespace) -> int:
    from common.errors import BackendError, ConfigError

    if args.list:
        return _list()
    if not args.profile:
        print("serve-model: give a serving profile (see --list)", file=sys.stderr)
        return 2
    try:
        return _serve(args)
    except (ConfigError, BackendError) as exc:
        print(f"serve-model: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, BackendError) else 2


def _serve(args: argparse.Namespace) -> int:
    import cv2

    from common.errors import BackendError, ConfigError
    from models.profile import load_profile
    from models.serving.command import engine_command, override_argv
    from models.serving.launcher import EngineProcess, warm_up
    from models.serving.profile import load_serving_profile

    serving = load_serving_profile(args.profile, args.set)
    model = load_profile(serving.model_profile)
    command = engine_command(serving, model, args.engine, args.weights_dir, args.host, args.port)
    if args.print:
        print(command.shell())
        if command.extra_options_yaml:
            print(f"# {{extra_options_file}}:\n{command.extra_options_yaml}", end="")
        verified = ", ".join(serving.verified_on_hardware) or "none"
        print(f"# verified on hardware: {verified}")
        print(f"# not verified on hardware: {' '.join(command.unverified_flags)}")
        return 0

    image = None
    if not args.no_warmup:
        image = cv2.imread(args.warmup_image, cv2.IMREAD_COLOR)
        if image is None:
            raise ConfigError(f"--warmup-image {args.warmup_image} is not a readable image")

    workdir = tempfile.TemporaryDirectory(prefix="dronecats-serve-")
    if args.command:
        checkpoint = serving.checkpoint_path(args.weights_dir)
        argv = override_argv(args.command, model.served_model, checkpoint, args.host, args.port)
    else:
        options = Path(workdir.name) / "extra_llm_api_options.yaml"
        if command.extra_options_yaml:
            options.write_text(command.extra_options_yaml)
        argv = command.with_options_file(str(options))
    engine = EngineProcess(argv, sink=None if args.quiet_engine else sys.stderr)
    signal.signal(signal.SIGTERM, _terminate)
    host = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host
    root = f"http://{host}:{args.port}"
    try:
        started = time.monotonic()
        with _termination_deferred():  # a SIGTERM inside Popen would lose the engine's handle
            engine.start()
        models = engine.wait_ready(root, args.ready_timeout_s)
        served = model.served_model if model.served_model in models else models[0]
        if served != model.served_model:
            _say(f"the engine serves {models}, not {model.served_model!r}: using {served!r}")
        _say(f"ready at {root}/v1 ({served}) after {time.monotonic() - started:.1f} s")
        warm = None
        if image is not None:
            warm = warm_up(f"{root}/v1", serving.model_profile, served, image, args.instruction)
            _say("warm-up " + json.dumps(warm.summary()))
            if not warm.ok:
                raise BackendError(
                    "warm-up replies were not usable actions; not serving a model that fails them"
                )
        pilot_url = f"openai://{host}:{args.port}/v1?profile={serving.model_profile}"
        if served != model.served_model:
            pilot_url += f"&model={served}"
        _say(f"pilot URL: {pilot_url}")
        if args.ready_file:
            _write_ready_file(Path(args.ready_file), pilot_url, served, warm.summary() if warm else None)
        if args.stop_after_warmup:
            return 0
        while True:
            code = engine.returncode()
            if code is not None:
                _say(f"engine exited with status {code}")
                return code or 1
            time.sleep(0.5)
    except _Terminated:
        _say("SIGTERM: stopping the engine")
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        if args.ready_file:
            Path(args.ready_file).unlink(missing_ok=True)
        engine.stop()
        workdir.cleanup()


class _Terminated(Exception):
    """SIGTERM, raised where the main thread is (even inside a minutes-long readiness wait)."""


_deferral = {"active": False, "pending": False}  # the SIGTERM handler's state (main thread only)


def _terminate(*_: object) -> None:
    if _deferral["active"]:
        _deferral["pending"] = True
        return
    raise _Terminated


@contextlib.contextmanager
def _termination_deferred() -> Iterator[None]:
    """Hold a SIGTERM back until the block is done, then raise it. Spawning the engine is such a block:
    the child exists (and can be seen) before Popen returns its handle, and a SIGTERM raised in
    between left the engine running with nothing to stop it."""
    _deferral["active"] = True
    try:
        yield
    finally:
        _deferral["active"] = False
    if _deferral["pending"]:
        _deferral["pending"] = False
        raise _Terminated


def _write_ready_file(path: Path, pilot_url: str, served: str, warmup: dict | None) -> None:
    # written whole, then renamed: a reader (the container's entrypoint) never sees half a file
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"pilot_url": pilot_url, "served_model": served, "warmup": warmup}))
    tmp.replace(path)
