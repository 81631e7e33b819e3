"""`dronecats episodes replay DIR [--sheet FILE] [--video FILE] [--step]`: step through an episode's
frames with the chosen points drawn.

Headless (no window): the default writes a contact sheet (DIR/replay.jpg, up to --max frames spread
over the episode); --video writes every frame to an .mp4/.avi; --step is a terminal mode that prints
one step at a time, writes its annotated frame to --frame-file (default DIR/replay-step.jpg, for an
image viewer that reloads) and waits for Enter (q + Enter quits). Without a terminal, --step prints
every step.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="an episode directory (with frames/)")
    parser.add_argument("--sheet", default=None, help="contact sheet file (default DIR/replay.jpg)")
    parser.add_argument("--max", type=int, default=20, help="frames on the contact sheet")
    parser.add_argument("--columns", type=int, default=5, help="contact sheet: frames per row (default 5)")
    parser.add_argument("--video", default=None, help="also write every annotated frame to this video")
    parser.add_argument("--fps", type=float, default=4.0, help="--video: frames per second (default 4)")
    parser.add_argument("--step", action="store_true", help="terminal mode: one step per Enter")
    parser.add_argument("--frame-file", default=None, help="--step: where the current frame is written")
    parser.add_argument("--drone", default=None, help="only this drone's steps")


def run(args: argparse.Namespace) -> int:
    import cv2

    from episodes.logs import is_episode_dir
    from episodes.replay import contact_sheet, pick, replay_steps, write_video

    root = Path(args.directory)
    if not root.is_dir() or not is_episode_dir(root):
        print(f"dronecats episodes replay: {root} is not an episode directory", file=sys.stderr)
        return 2
    if args.step:
        frame_file = Path(args.frame_file or root / "replay-step.jpg")
        interactive = sys.stdin.isatty()
        for item in replay_steps(root, args.drone):
            cv2.imwrite(str(frame_file), item.image)
            print(f"[{item.index + 1:4d}] {item.caption}  ({item.step.frame})", flush=True)
            if interactive and input().strip().lower() == "q":
                break
        return 0
    steps = list(replay_steps(root, args.drone))
    if not steps:
        print(
            f"dronecats episodes replay: {root} has no saved frames (run without --no-frames)",
            file=sys.stderr,
        )
        return 2
    sheet_path = Path(args.sheet or root / "replay.jpg")
    chosen = [steps[i].image for i in pick(len(steps), max(1, args.max))]
    cv2.imwrite(str(sheet_path), contact_sheet(chosen, columns=args.columns))
    summary: dict[str, object] = {"sheet": str(sheet_path), "frames": len(steps), "on_sheet": len(chosen)}
    if args.video:
        summary["video"] = args.video
        summary["video_frames"] = write_video((s.image for s in steps), Path(args.video), args.fps)
    print(json.dumps(summary))
    return 0
