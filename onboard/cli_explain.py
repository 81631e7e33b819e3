"""`dronecats explain [--profile P] [--camera C] [--point-order xy|yx] ACTION_JSON`: print the plan.

Prints the controller's plan for one action as JSON (docs/controller.md#checking-it-by-hand):
yaw_deg, yaw_rate_deg_s, yaw_duration_s, forward_m_s, right_m_s, up_m_s, duration_s, step_m, hold.
Bad input exits with status 2 and a one-line error on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

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


def run(args: argparse.Namespace) -> int:
    from common.camera import camera_profile
    from models.parser import parse_action  # the pilot's own reply parser: same rules as in flight
    from onboard.controller import plan_action
    from onboard.profiles import flight_profile

    try:
        profile = flight_profile(args.profile)
        camera = camera_profile(args.camera) if args.camera else profile.camera_profile()
        action = parse_action(args.action_json, args.point_order)
        plan = plan_action(action, camera, profile, args.canonical_focal_px)
    except (ConfigError, MalformedReply, ValueError) as exc:
        print(f"dronecats explain: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    print(json.dumps(plan.explain_dict()))
    return 0
