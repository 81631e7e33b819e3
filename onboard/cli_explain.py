"""`dronecats explain [--profile P] [--camera C] [--point-order xy|yx] ACTION_JSON`: print the plan.

Prints the controller's plan for one action as JSON (AGENT.md §3): yaw_deg, yaw_rate_deg_s,
yaw_duration_s, forward_m_s, right_m_s, up_m_s, duration_s, step_m, hold. Bad input exits with
status 2 and a one-line error on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import msgspec

from common.actions import POINT_MAX, Action, action_from_dict
from common.errors import ConfigError, MalformedReply


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        default="outdoor",
        help="flight profile: outdoor (default), indoor, tello, or a YAML file",
    )
    parser.add_argument("--camera", default=None, help="camera profile name or YAML (default: the profile's)")
    parser.add_argument(
        "--point-order", choices=("xy", "yx"), default="xy", help="axis order of `point` in ACTION_JSON"
    )
    parser.add_argument(
        "--canonical-focal-px",
        type=float,
        default=None,
        help="the model's depths refer to a canonical camera of this focal length (d·fx/f_c)",
    )
    parser.add_argument(
        "action_json", metavar="ACTION_JSON", help='e.g. \'{"action":"go","point":[612,430],"depth_m":9}\''
    )


def parse_action_json(text: str, point_order: str = "xy") -> Action:
    """One action object, validated as AGENT.md §2 defines a well-formed reply."""
    # models.parser (the project's reply parser) was not available when this was written; this
    # applies the same §2 rules to the explicit JSON object `explain` takes.
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"not JSON: {exc.msg} at position {exc.pos}", text) from None
    if not isinstance(data, dict):
        raise MalformedReply(f"expected one JSON object, got {type(data).__name__}", text)
    data = dict(data)
    if data.get("action") == "go":
        point = data.get("point")
        if not isinstance(point, list) or len(point) != 2:
            raise MalformedReply(f"go: point must be a list of two numbers, got {point!r}", text)
        for value in point:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise MalformedReply(f"go: point value {value!r} is not a finite number", text)
            if not 0 <= value <= POINT_MAX:
                raise MalformedReply(f"go: point value {value} is outside 0–{POINT_MAX}", text)
        a, b = (round(v) for v in point)
        data["point"] = [a, b] if point_order == "xy" else [b, a]
        depth = data.get("depth_m")
        if isinstance(depth, bool) or not isinstance(depth, (int, float)) or not math.isfinite(depth):
            raise MalformedReply(f"go: depth_m={depth!r} is not a finite number", text)
        if depth <= 0:
            raise MalformedReply(f"go: depth_m={depth} must be > 0", text)
    elif data.get("action") == "rotate":
        angle = data.get("angle_deg")
        if isinstance(angle, bool) or not isinstance(angle, (int, float)) or not math.isfinite(angle):
            raise MalformedReply(f"rotate: angle_deg={angle!r} is not a finite number", text)
    try:
        return action_from_dict(data)
    except msgspec.ValidationError as exc:
        raise MalformedReply(f"invalid action: {exc}", text) from None


def run(args: argparse.Namespace) -> int:
    from common.camera import camera_profile
    from onboard.controller import plan_action
    from onboard.profiles import flight_profile

    try:
        profile = flight_profile(args.profile)
        camera = camera_profile(args.camera) if args.camera else profile.camera_profile()
        action = parse_action_json(args.action_json, args.point_order)
        plan = plan_action(action, camera, profile, args.canonical_focal_px)
    except (ConfigError, MalformedReply, ValueError) as exc:
        print(f"dronecats explain: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    print(json.dumps(plan.explain_dict()))
    return 0
