"""`dronecats explain [--profile P] [--camera C] [--point-order xy|yx] [--camera-pitch-deg P]
[--camera-roll-deg R] ACTION_JSON`: print the plan.

Prints the controller's plan for one action as JSON (docs/controller.md#checking-it-by-hand):
yaw_deg, yaw_rate_deg_s, yaw_duration_s, forward_m_s, right_m_s, up_m_s, duration_s, step_m, hold.
Bad input exits with status 2 and a one-line error on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from common.errors import ConfigError, MalformedReply
from common.pose import CameraAttitude


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
        "--camera-pitch-deg",
        type=float,
        default=0.0,
        help="the camera's pitch at capture (positive nose up; a body-fixed camera on a tilted drone)",
    )
    parser.add_argument(
        "--camera-roll-deg",
        type=float,
        default=0.0,
        help="the camera's roll at capture (positive right side down)",
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
        attitude = _attitude(args.camera_roll_deg, args.camera_pitch_deg)
        plan = plan_action(action, camera, profile, args.canonical_focal_px, attitude)
    except (ConfigError, MalformedReply, ValueError) as exc:
        print(f"dronecats explain: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    print(json.dumps(plan.explain_dict()))
    return 0


def _attitude(roll_deg: float, pitch_deg: float) -> CameraAttitude:
    if not (math.isfinite(roll_deg) and abs(roll_deg) <= 180.0):
        raise ConfigError(f"--camera-roll-deg {roll_deg} must be within -180..180")
    if not (math.isfinite(pitch_deg) and abs(pitch_deg) <= 90.0):
        raise ConfigError(f"--camera-pitch-deg {pitch_deg} must be within -90..90")
    return CameraAttitude(roll_deg, pitch_deg)
