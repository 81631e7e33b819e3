"""`dronecats bench-model --pilot URL`: model latency on real frames from the built-in simulator.

The frames are rendered here (this module may import the simulator; `models` may not) along an
approach to a red car: distances from --distance-m down to 4 m, with lateral offsets and yaw
jitter, at the simulator's 1280x720 camera (the pilot shrinks them to 640 wide as in flight). The
measurement itself is models.serving.bench. The report prints as a table (the JSON with --json;
--out always writes the JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.checks import non_negative_int, positive_float, positive_int
from common.errors import ConfigError
from sim_bridge.scene_flags import add_scene_arguments

TARGET = "bench_target"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pilot",
        required=False,
        default=None,
        help="OpenAI-compatible endpoint as a backend URL, e.g. "
        "openai://127.0.0.1:8000/v1?profile=qwen3.5-2b (profile= sets the prompt and served model; "
        "timeout_s= the per-request limit)",
    )
    parser.add_argument("--steps", type=positive_int, default=20, help="frames / flight steps (default 20)")
    parser.add_argument(
        "--stream-calls", type=non_negative_int, default=10, help="streaming requests for TTFT (default 10)"
    )
    parser.add_argument(
        "--instruction", default="go to the red car", help="the instruction sent with every frame"
    )
    add_scene_arguments(parser, "scene the frames are rendered in (default residential)")
    parser.add_argument(
        "--distance-m", type=positive_float, default=25.0, help="first frame's distance to the car (m)"
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="a local tokenizer directory (needs the hf extra: transformers) to count tokens; "
        "without one, the compact-encoding comparison counts characters",
    )
    parser.add_argument("--out", default=None, help="also write the JSON report to this file")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument(
        "--frames",
        default=None,
        help="use the JPEGs in this directory (e.g. written by --save-frames elsewhere) instead of "
        "rendering: for machines without the simulator, such as the Jetson image",
    )
    parser.add_argument(
        "--save-frames", default=None, help="write the frames, as the model gets them, to this directory"
    )


def approach_poses(n: int, distance_m: float, altitude_m: float = 3.0) -> list[Any]:
    """`n` drone poses approaching a target at the origin's +x: distance falls linearly to 4 m,
    with a lateral weave of ±2 m and the heading off the target by up to ±20°."""
    from common.pose import Pose

    poses = []
    for i in range(n):
        frac = i / max(1, n - 1)
        dist = distance_m + (4.0 - distance_m) * frac
        lateral = 2.0 * math.sin(1.7 * i)
        bearing = math.degrees(math.atan2(-lateral, dist))
        yaw = bearing + 20.0 * math.sin(2.3 * i + 0.5)
        poses.append(Pose(distance_m - dist, lateral, -altitude_m, yaw))
    return poses


def sim_frames(n: int, scene: str = "residential", seed: int = 0, distance_m: float = 25.0) -> list[Any]:
    """BGR frames of a red car from `n` poses, rendered by the built-in simulator."""
    from common.pose import Pose
    from sim_bridge.sim.world import World

    world = World(scene, vehicles=1, seed=seed)
    try:
        world.spawn(TARGET, "car@red", Pose(distance_m, 0.0, 0.0, 90.0))
        world.pause(True)
        poses = approach_poses(n, distance_m)
        return [world.render("Drone1", segmentation=False, vehicle_pose=p).image_bgr for p in poses]
    finally:
        world.close()


def load_frames(directory: Path) -> list[Any]:
    """The images of `directory` in name order (frame_000.jpg, ...)."""
    import cv2

    paths = sorted(p for p in directory.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    frames = [cv2.imread(str(p), cv2.IMREAD_COLOR) for p in paths]
    return [f for f in frames if f is not None]


def make_token_counter(path: str) -> Callable[[str], int]:
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ConfigError("--tokenizer needs transformers (pip install 'dronecats[hf]')") from None
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


def run(args: argparse.Namespace) -> int:
    from models.serving.bench import bench_model

    frames = (
        load_frames(Path(args.frames))
        if args.frames
        else sim_frames(args.steps, args.scene, args.seed, args.distance_m)
    )
    if not frames:
        raise ConfigError(f"--frames {args.frames}: no JPEG/PNG frames there")
    if args.save_frames:
        from models.frames import encode_frame

        out_dir = Path(args.save_frames)
        out_dir.mkdir(parents=True, exist_ok=True)
        for i, image in enumerate(frames):
            # as the model receives them: 640 wide, JPEG quality 85
            (out_dir / f"frame_{i:03d}.jpg").write_bytes(encode_frame(image).jpeg)
        print(f"wrote {len(frames)} frames to {out_dir}", file=sys.stderr)
    if not args.pilot:
        if args.save_frames:
            return 0
        raise ConfigError("--pilot URL is required (or --save-frames alone to only write the frames)")
    counter = make_token_counter(args.tokenizer) if args.tokenizer else None
    report = bench_model(args.pilot, frames, args.instruction, args.stream_calls, counter)
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text if args.json else format_report(report))
    return 0


def format_report(report: dict[str, Any]) -> str:
    """The report as a two-column table, one measure a line."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value:g} ms"

    def num(value: float | None, unit: str = "") -> str:
        return "n/a" if value is None else f"{value:g}{unit}"

    latency = report.get("step_latency_ms") or {}
    first = report.get("first_vs_warm") or {}
    tokens = report.get("output_tokens_per_action") or {}
    stream = report.get("stream") or {}
    encoding = report.get("compact_encoding") or {}
    width, height = report.get("frame_size_px") or (0, 0)
    steps, valid = report.get("steps", 0), report.get("valid", 0)
    rate = report.get("schema_validity_rate")
    rows = [
        ("model", f"{report.get('model_profile')} (serves {report.get('served_model')})"),
        ("endpoint", str(report.get("pilot_url"))),
        ("frames", f"{report.get('frames')} at {width}x{height}, {num(report.get('wall_s'), ' s')} in all"),
        ("schema-valid", f"{valid} of {steps} ({num(None if rate is None else round(100 * rate, 1), '%')})"),
        ("failures", f"{report.get('backend_errors', 0)} backend, {report.get('malformed', 0)} malformed"),
        ("actions", ", ".join(f"{k} {v}" for k, v in (report.get("actions") or {}).items()) or "none"),
        (
            "step latency",
            "   ".join(f"{k} {ms(latency.get(k))}" for k in ("p50", "p95", "mean", "max")),
        ),
        (
            "first call",
            f"{ms(first.get('first_ms'))} ({num(first.get('first_over_warm'), 'x')} the warm p50 of "
            f"{ms(first.get('warm_p50_ms'))})",
        ),
        (
            "output per action",
            f"{num(report.get('output_chars_per_action'))} characters; "
            + (
                f"{num(tokens.get('mean'))} tokens mean, p50 {num(tokens.get('p50'))}, max "
                f"{num(tokens.get('max'))} ({tokens.get('source')})"
                if tokens.get("mean") is not None
                else f"tokens {tokens.get('source')}"
            ),
        ),
        ("prompt tokens", f"{num(report.get('prompt_tokens'))} (p50)"),
    ]
    if stream.get("supported"):
        ttft = stream.get("ttft_ms") or {}
        rows.append(
            (
                "first token",
                "   ".join(f"{k} {ms(ttft.get(k))}" for k in ("first", "p50", "p95"))
                + f"   ({stream.get('calls')} streamed calls)",
            )
        )
        rows.append(
            (
                "decode rate",
                f"{num(stream.get('decode_tok_s'), ' tok/s')}, "
                f"{num(stream.get('decode_chars_s'), ' chars/s')}",
            )
        )
    else:
        rows.append(("first token", f"not measured ({stream.get('reason')})"))
    saving = encoding.get("short_key_saving")
    rows.append(
        (
            f"reply size ({encoding.get('unit')})",
            f"as served {num(encoding.get('as_served_mean'))}, strict schema "
            f"{num(encoding.get('strict_schema_json_mean'))}, short keys "
            f"{num(encoding.get('short_key_json_mean'))}"
            + (f" ({round(100 * saving, 1):g}% shorter)" if saving is not None else "")
            + f", history line {num(encoding.get('history_line_mean'))}",
        )
    )
    for error in report.get("errors") or []:
        rows.append(("error", str(error)))
    label_width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{label_width}}  {value}" for label, value in rows)
