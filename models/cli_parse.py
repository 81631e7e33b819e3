"""`dronecats parse [--point-order xy|yx] TEXT`: a model reply in, the normalised action out.

Prints {"action", "point" ([x, y] in image order), "depth_m", "angle_deg" (after clamping)}, null
for fields the action lacks (and "plan" with --plan). A malformed reply exits 2 with one line on
stderr. TEXT "-" reads the reply from stdin.
"""

from __future__ import annotations

import argparse
import json
import sys

from common.actions import Go, Rotate, action_name
from common.errors import MalformedReply
from models.parser import parse_action


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "text", metavar="TEXT", help='the model reply (JSON, fenced or after prose); "-" for stdin'
    )
    parser.add_argument(
        "--point-order", choices=("xy", "yx"), default="xy", help="the order the model writes points in"
    )
    parser.add_argument(
        "--think-off", action="store_true", help="the think-off action set (think is malformed)"
    )
    parser.add_argument(
        "--plan", action="store_true", help="the reply answers the plan schema (after a think)"
    )


def run(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        action = parse_action(text, args.point_order, think=not args.think_off, plan=args.plan)
    except MalformedReply as exc:
        reason = " ".join(exc.reason.split())  # one line, whatever the reason holds
        print(f"dronecats parse: malformed reply: {reason}", file=sys.stderr)
        return 2
    out: dict[str, object] = {
        "action": action_name(action),
        "point": list(action.point) if isinstance(action, Go) else None,
        "depth_m": action.depth_m if isinstance(action, Go) else None,
        "angle_deg": action.angle_deg if isinstance(action, Rotate) else None,
    }
    if args.plan:
        out["plan"] = (
            None
            if action.plan is None
            else {f: getattr(action.plan, f) for f in action.plan.__struct_fields__}
        )
    print(json.dumps(out))
    return 0
