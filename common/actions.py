"""The four actions as typed values, plus the plan fields after a `think` (docs/protocol.md).

Points are stored in image order [x, y], normalised 0–1000, whatever order the model wrote them in:
the reply parser (models.parser) handles the per-model axis order once, so nothing downstream can
confuse the two.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

import msgspec

TargetInView = Literal["yes", "partly", "no"]
TargetMatch = Literal["confirmed", "uncertain", "wrong_target"]
ClosingIn = Literal["closing", "holding", "receding", "unknown"]

ROTATE_LIMIT_DEG = 90.0
POINT_MAX = 1000
ANGLE_MAX_DEG = 360.0  # valid at all: the parser clamps to ROTATE_LIMIT_DEG, the controller to its profile's
DEPTH_MAX_M = 1000.0  # a depth beyond any camera's useful range is a wrong reply, not a far target
PLAN_FIELD_MAX_CHARS = 2000  # the reply parser's own limit is lower (models.schemas)

# Decode-time limits (msgspec checks them when an action arrives on the link or from JSON); the
# constructors check the same rules in __post_init__, so no invalid action can exist at all.
PointCoord = Annotated[int, msgspec.Meta(ge=0, le=POINT_MAX)]
DepthM = Annotated[float, msgspec.Meta(gt=0.0, le=DEPTH_MAX_M)]
AngleDeg = Annotated[float, msgspec.Meta(ge=-ANGLE_MAX_DEG, le=ANGLE_MAX_DEG)]
PlanText = Annotated[str, msgspec.Meta(max_length=PLAN_FIELD_MAX_CHARS)]


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The plan fields before the action, after a `think` (docs/protocol.md#think-and-the-plan-schema)."""

    target_in_view: TargetInView
    target_match: TargetMatch
    closing_in: ClosingIn
    current_frame: PlanText
    action_planning: PlanText

    def __post_init__(self) -> None:
        for name in ("current_frame", "action_planning"):
            if len(getattr(self, name)) > PLAN_FIELD_MAX_CHARS:
                raise ValueError(
                    f"{name} has {len(getattr(self, name))} chars; the limit is {PLAN_FIELD_MAX_CHARS}"
                )


class Go(msgspec.Struct, frozen=True, tag="go", tag_field="action"):
    point: tuple[PointCoord, PointCoord]  # [x, y] in image order, each 0–1000
    depth_m: DepthM
    plan: Plan | None = None

    def __post_init__(self) -> None:
        if len(self.point) != 2 or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= POINT_MAX for v in self.point
        ):
            raise ValueError(f"point={list(self.point)!r} must be two integers in 0-{POINT_MAX}")
        if not (math.isfinite(self.depth_m) and 0.0 < self.depth_m <= DEPTH_MAX_M):
            raise ValueError(f"depth_m={self.depth_m} must be finite, > 0 and <= {DEPTH_MAX_M:g}")


class Rotate(msgspec.Struct, frozen=True, tag="rotate", tag_field="action"):
    angle_deg: AngleDeg  # positive = clockwise = turn right; the parser clamps it to ±90
    plan: Plan | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.angle_deg) and abs(self.angle_deg) <= ANGLE_MAX_DEG):
            raise ValueError(f"angle_deg={self.angle_deg} must be finite and within ±{ANGLE_MAX_DEG:g}")


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
