"""`dronecats calibrate`: guided checkerboard capture, then a camera profile YAML.

Prints one line per judged frame (accepted, or why not), the coverage grid after each accepted
view, and finally the intrinsics, distortion, FOV and reprojection errors of the profile it writes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from calibration.errors import CalibrationError
from common.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        required=True,
        help="camera device index (0), rtsp:// URL, GStreamer pipeline, folder of images, video file, "
        "airsim://HOST:PORT/VEHICLE[/CAMERA], or tello://IP",
    )
    parser.add_argument(
        "--pattern",
        required=True,
        help="COLSxROWS counted in INNER corners (where four squares meet), e.g. 9x6 for a board of "
        "10x7 squares",
    )
    parser.add_argument("--square-mm", type=float, required=True, help="side of one square, millimetres")
    parser.add_argument("--out", required=True, help="camera profile YAML to write (use with --camera)")
    parser.add_argument("--name", default=None, help="profile name (default: the --out file name)")
    parser.add_argument("--min-views", type=int, default=12, help="good views needed (default 12)")
    parser.add_argument("--max-views", type=int, default=40, help="stop accepting after this many (40)")
    parser.add_argument(
        "--min-sharpness", type=float, default=100.0, help="Laplacian variance on the board (default 100)"
    )
    parser.add_argument("--max-tilt-deg", type=float, default=60.0, help="reject steeper views (60)")
    parser.add_argument(
        "--min-coverage", type=float, default=0.6, help="fraction of the 8x6 image grid corners must reach"
    )
    parser.add_argument("--max-frames", type=int, default=0, help="stop after this many frames (0: no cap)")
    parser.add_argument("--timeout-s", type=float, default=0.0, help="stop a live capture after this long")
    parser.add_argument("--save-views", default=None, help="also save accepted frames as PNGs here")
    parser.add_argument(
        "--sim-board",
        action="store_true",
        help="with an airsim:// source: spawn the checkerboard in the simulator (simSpawnObject) and move "
        "the vehicle around it (simSetVehiclePose) instead of waiting for someone to show a board; a "
        "board of small squares is spawned at 1 m wide (the intrinsics do not depend on its scale)",
    )
    parser.add_argument(
        "--sim-board-image",
        default=None,
        metavar="PNG",
        help="with --sim-board: texture the simulated board with this image (calibrate-board's PNG)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        return _calibrate(args)
    except (CalibrationError, ConfigError) as exc:
        print(f"calibrate: {exc}", file=sys.stderr)
        return 2


def _calibrate(args: argparse.Namespace) -> int:
    import cv2

    from calibration.pattern import BoardPattern
    from calibration.solve import calibrate_views
    from calibration.sources import CalibrationSource, open_source
    from calibration.views import CaptureSettings, Verdict, ViewCollector

    pattern = BoardPattern.parse(args.pattern, args.square_mm)
    settings = CaptureSettings(
        min_views=args.min_views,
        max_views=args.max_views,
        min_sharpness=args.min_sharpness,
        max_tilt_deg=args.max_tilt_deg,
        min_coverage=args.min_coverage,
    )
    out = Path(args.out)
    save_dir = Path(args.save_views) if args.save_views else None
    if save_dir is not None:
        save_dir.mkdir(parents=True, exist_ok=True)
    collector = ViewCollector(pattern, settings)
    if args.sim_board_image and not args.sim_board:
        raise ConfigError("--sim-board-image needs --sim-board")
    if args.sim_board_image and not Path(args.sim_board_image).is_file():
        raise ConfigError(f"--sim-board-image {args.sim_board_image}: no such file")
    if args.sim_board:
        from calibration.airsim_source import AirSimCameraAddress
        from calibration.sim_sweep import SimSweepSource

        source: CalibrationSource = SimSweepSource(
            AirSimCameraAddress.parse(args.source), pattern, board_image=args.sim_board_image
        )
    else:
        source = open_source(args.source)
    print(
        f"calibrating from {source.description}: pattern {pattern.label} inner corners, {args.square_mm} mm"
    )
    started = time.monotonic()
    last_quiet_note = 0.0
    try:
        while True:
            if args.max_frames and collector.frames_seen >= args.max_frames:
                print(f"stopping: {args.max_frames} frames read (--max-frames)")
                break
            if args.timeout_s and time.monotonic() - started > args.timeout_s:
                print(f"stopping: {args.timeout_s:.0f} s elapsed (--timeout-s)")
                break
            image = source.read()
            if image is None:
                print("source ended")
                break
            verdict = collector.feed(image)
            progress = collector.progress
            # A live camera mostly sees no board between poses; say so about once a second, not per frame.
            quiet = source.live and verdict.verdict is Verdict.NO_BOARD
            if not quiet or time.monotonic() - last_quiet_note > 1.0:
                print(f"frame {verdict.frame_index}: {verdict.reason} | {progress.summary()}")
                last_quiet_note = time.monotonic() if quiet else last_quiet_note
            if verdict.accepted:
                print(collector.coverage_text(verdict.corners_px))
                if save_dir is not None:
                    cv2.imwrite(str(save_dir / f"view_{verdict.frame_index:05d}.png"), image)
            if progress.full or (source.live and progress.enough):
                print(f"enough views: {progress.summary()}")
                break
    finally:
        source.close()
    collector.check_ready()
    assert collector.image_size is not None
    result = calibrate_views(collector.views, pattern, collector.image_size, min_views=settings.min_views)
    profile = result.to_profile(
        args.name or out.stem,
        source=source.description,
        frames_seen=collector.frames_seen,
        coverage=round(collector.coverage, 3),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    profile.save(out)
    print(
        f"fx={result.fx_px:.2f} fy={result.fy_px:.2f} cx={result.cx_px:.2f} cy={result.cy_px:.2f} px "
        f"({result.width_px}x{result.height_px})"
    )
    print("distortion k1={:.5f} k2={:.5f} p1={:.5f} p2={:.5f} k3={:.5f}".format(*result.distortion))
    print(f"HFOV {result.hfov_deg:.2f}°, VFOV {result.vfov_deg:.2f}°")
    per_view = ", ".join(f"{v.frame_index}:{v.rms_px:.3f}" for v in result.used)
    print(
        f"RMS reprojection error {result.rms_px:.3f} px over {len(result.used)} views (frame:rms {per_view})"
    )
    if result.dropped:
        dropped = ", ".join(f"{v.frame_index}:{v.rms_px:.3f}" for v in result.dropped)
        print(f"dropped {len(result.dropped)} outlier views (frame:rms {dropped})")
    print(f"wrote {out}; use it with --camera {out}")
    return 0
