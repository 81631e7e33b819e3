"""The four actions of AGENT.md §2 as typed values, plus the plan fields of §4.

Points are stored in image order [x, y], normalised 0–1000, whatever order the model wrote them in:
the reply parser (models.parser) handles the per-model axis order once, so nothing downstream can
confuse the two.
"""

from __future__ import annotations

from typing import Literal, Union

import msgspec

TargetInView = Literal["yes", "partly", "no"]
TargetMatch = Literal["confirmed", "uncertain", "wrong_target"]
ClosingIn = Literal["closing", "holding", "receding", "unknown"]

ROTATE_LIMIT_DEG = 90.0
POINT_MAX = 1000


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The deliberation fields that precede the action on the call after a `think` (AGENT.md §4)."""

    target_in_view: TargetInView
    target_match: TargetMatch
    closing_in: ClosingIn
    current_frame: str
    action_planning: str


class Go(msgspec.Struct, frozen=True, tag="go", tag_field="action"):
    point: tuple[int, int]  # [x, y] in image order, each 0–1000
    depth_m: float
    plan: Plan | None = None


class Rotate(msgspec.Struct, frozen=True, tag="rotate", tag_field="action"):
    angle_deg: float  # positive = clockwise = turn right; already clamped to ±90
    plan: Plan | None = None


class Think(msgspec.Struct, frozen=True, tag="think", tag_field="action"):
    plan: Plan | None = None


class Finished(msgspec.Struct, frozen=True, tag="finished", tag_field="action"):
    plan: Plan | None = None


Action = Union[Go, Rotate, Think, Finished]  # noqa: UP007 - msgspec needs a runtime union object
ACTION_NAMES = ("go", "rotate", "think", "finished")


def action_name(action: Action) -> str:
    return type(action).__struct_config__.tag  # type: ignore[return-value]


def action_to_dict(action: Action) -> dict:
    """The JSON-ready form used in logs and on the wire (the `plan` key only when present)."""
    data = msgspec.to_builtins(action)
    if data.get("plan") is None:
        data.pop("plan", None)
    return data


def action_from_dict(data: dict) -> Action:
    return msgspec.convert(data, Action)


def is_hold(action: Action | None) -> bool:
    """True for the actions that keep the drone in place (a missing action holds too)."""
    return action is None or isinstance(action, (Think, Finished))
