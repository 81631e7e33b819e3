"""`dronecats SUBCOMMAND ...`: one entry point whose subcommands import only what they need.

Each subcommand is a module with `add_arguments(parser)` and `run(args) -> int`, named here by
string so that `dronecats parse` never imports the simulator, Qt or ZeroMQ.

Whatever a subcommand raises ends here as one line on stderr and an exit status (2: the command
line, a config or an input file is wrong; 1: something failed while running), never a traceback;
the hidden `--debug` flag (anywhere on the line) or DRONECATS_DEBUG=1 shows the traceback instead.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import sys
from typing import Any, ClassVar, NoReturn

from dronecats import __version__
from episodes.cli import ACTIONS as EPISODE_ACTIONS  # a light module: names and help lines only

# name -> (module, one-line help). Keep sorted by name.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "bench-model": ("dronecats.cli_bench_model", "model latency benchmark on simulator frames"),
    "calibrate": ("calibration.cli", "checkerboard camera calibration to a camera profile YAML"),
    "calibrate-board": ("calibration.cli_board", "a printable checkerboard (PDF at true scale, plus PNG)"),
    "demo": ("dronecats.demo", "fly one approach episode on the built-in simulator and print the verdict"),
    "demo-fleet": (
        "dronecats.demo_fleet",
        "four drones on the built-in simulator with the ground station (GUI, or headless without a display)",
    ),
    "episodes": ("episodes.cli", "episode tools: " + ", ".join(EPISODE_ACTIONS)),
    "explain": ("onboard.cli_explain", "print the controller's plan for one action (docs/controller.md)"),
    "gs": (
        "ground_station.cli",
        "the ground station: PyQt6 app, or --headless for scripts (fleet structures)",
    ),
    "keys": ("common.cli_keys", "generate and list CURVE keypairs for the drone/ground-station link"),
    "onboard": ("onboard.cli", "fly one drone: vehicle URL + pilot URL (+ ground-station link)"),
    "parse": ("models.cli_parse", "parse a model reply into the normalised action (docs/protocol.md)"),
    "quantize": (
        "dronecats.cli_quantize",
        "W4A16 (GPTQ) checkpoint + serving profile, flight-domain calibration",
    ),
    "serve-pilot": (
        "models.cli_serve",
        "OpenAI-compatible server in front of a pilot (baseline, scripted, model)",
    ),
    "serve-model": (
        "models.cli_serve_model",
        "start a model engine (serving profile), wait, warm it up",
    ),
    "sim": ("dronecats.cli_sim", "the built-in simulator with an AirSim-compatible RPC server"),
}


DEBUG_FLAG = "--debug"  # hidden: main takes it off the command line before argparse sees it

# third-party package -> the pyproject extra that installs it (for "not installed" errors)
OPTIONAL_PACKAGES = {
    "pybullet": "sim",
    "moderngl": "sim",
    "msgpackrpc": "airsim",
    "tornado": "airsim",
    "PyQt6": "gui",
    "av": "vehicles",
    "pymavlink": "vehicles",
    "matplotlib": "plots",
    "transformers": "hf",
    "torch": "hf",
    "vllm": "vllm",
    "jtop": "jetson",
}
# packages that go in without their declared dependencies (djitellopy 2.5.0 asks for opencv-python,
# whose cv2 would replace the headless one): the pin scripts/setup_env.sh installs
NO_DEPS_PACKAGES = {"djitellopy": "djitellopy==2.5.0"}


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors that name the closest valid choice (subparsers inherit it)."""

    argv: ClassVar[list[str]] = []  # the command line being parsed (main sets it), for error()

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required"):
            # argparse reports a missing option before a mistyped one: `--vehical x` lacks --vehicle
            hints = [h for h in (_option_hint(a, self) for a in Parser.argv) if h]
            message += "".join(f"; {h}" for h in hints)
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own message lists the choices but never says which one was probably meant
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(c) for c in choices]
        hint = _did_you_mean(str(value), names)
        raise argparse.ArgumentError(
            action, f"invalid choice {value!r}{hint} (choose from {', '.join(names)})"
        )


def _did_you_mean(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost parser that args went through (e.g. `episodes run`'s), for its option names."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or chosen not in sub.choices:
            return parser
        parser = sub.choices[chosen]


def _unrecognized(extras: list[str], parser: argparse.ArgumentParser) -> str:
    hints = "".join(f"; {h}" for h in (_option_hint(e, parser) for e in extras) if h)
    return f"unrecognized arguments: {' '.join(extras)}{hints}"


def _option_hint(word: str, parser: argparse.ArgumentParser) -> str:
    """A "did you mean --x?" for a mistyped option of `parser`; "" for anything else."""
    if not word.startswith("-"):
        return ""
    # matched without their dashes, which would make every pair of options look alike
    options = {o.lstrip("-"): o for a in parser._actions for o in a.option_strings}
    name = word.split("=", 1)[0].lstrip("-")
    if name in options or any(o.startswith(name) for o in options):  # known, or an abbreviation
        return ""
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return f"did you mean {options[close[0]]}?" if close else ""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="dronecats", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"dronecats {__version__}")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="DEBUG, INFO, WARNING (default), ERROR",
    )
    parser.add_argument("--log-file", default=None, help="also write the log to this file")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in sorted(SUBCOMMANDS.items()):
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug is taken from anywhere on the line, so that it can follow the subcommand's options too
    debug = DEBUG_FLAG in argv or os.environ.get("DRONECATS_DEBUG") == "1"
    argv = Parser.argv = [a for a in argv if a != DEBUG_FLAG]
    parser = build_parser()
    # Parse once to find the subcommand, then let its module add its own arguments.
    # (-h is held back from this first pass, so that a subcommand's help lists its own arguments)
    pre, _ = parser.parse_known_args([a for a in argv if a not in ("-h", "--help")])
    if pre.command is None:
        parser.print_help()
        return 0 if ("-h" in argv or "--help" in argv) else 2
    command = f"dronecats {pre.command}"
    try:
        module = importlib.import_module(SUBCOMMANDS[pre.command][0])
        sub_action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        module.add_arguments(sub_action.choices[pre.command])
        args, extras = parser.parse_known_args(argv)
        chosen = _chosen_parser(sub_action.choices[pre.command], args)
        if extras:
            chosen.error(_unrecognized(extras, chosen))
        command = chosen.prog  # e.g. "dronecats episodes verify": errors name the action too

        from common.errors import ConfigError
        from common.logsetup import configure_logging

        try:
            configure_logging(args.log_level, args.log_file)
        except OSError as exc:
            raise ConfigError(f"--log-file {args.log_file}: cannot write ({exc.strerror})") from None
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `dronecats ... | head`: the reader is gone, which is no error to report; stdout goes to
        # /dev/null so that the interpreter's final flush does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports it
    except SystemExit:
        raise
    except Exception as exc:
        if debug:
            raise
        logging.getLogger("dronecats").debug("%s failed", command, exc_info=True)  # --log-level DEBUG
        code, line = describe_failure(exc)
        print(f"{command}: {line}", file=sys.stderr, flush=True)
        return code


def describe_failure(exc: BaseException) -> tuple[int, str]:
    """The exit status and one line for an exception that reached the top of a command."""
    from common.errors import FAILURE_EXIT, USAGE_EXIT, DroneCatsError

    if isinstance(exc, DroneCatsError):
        return exc.exit_code, _one_line(str(exc))
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        extra, pin = OPTIONAL_PACKAGES.get(top), NO_DEPS_PACKAGES.get(top)
        if extra:
            how = f"pip install 'dronecats[{extra}]'"
        elif pin:
            how = f"pip install --no-deps {pin}, as scripts/setup_env.sh does"
        else:
            how = "scripts/setup_env.sh installs it; the README's environment notes say how"
        return FAILURE_EXIT, f"this needs the Python package {top!r}, which is not installed ({how})"
    if isinstance(exc, UnicodeDecodeError):  # a ValueError too: a file that is not UTF-8 text
        return USAGE_EXIT, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, OSError):  # a file, a socket, a timeout
        what = exc.strerror or str(exc) or type(exc).__name__
        return FAILURE_EXIT, _one_line(f"{exc.filename}: {what}" if exc.filename else what)
    if isinstance(exc, ValueError):  # a value from outside that did not parse
        return USAGE_EXIT, _one_line(str(exc))
    zmq = sys.modules.get("zmq")
    if zmq is not None and isinstance(exc, zmq.ZMQError):
        return FAILURE_EXIT, _one_line(f"ZeroMQ: {exc}")
    hint = f"rerun with {DEBUG_FLAG} for the traceback"
    return FAILURE_EXIT, _one_line(f"unexpected {type(exc).__name__}: {exc} ({hint})")


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in text.splitlines() if part.strip()) or "failed"
