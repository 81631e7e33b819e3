"""JSON schemas of the model's replies (docs/protocol.md#the-reply-format), sent as `response_format`.

Every schema is OpenAI strict-compatible: each object lists all its properties as required and
forbids others, so fields an action does not use are present and null rather than absent.
Schemas are built once per shape and cached: the same (kind, switches, N) always yields the very
same dict, so the request bytes after the system message stay identical too. Treat them as
read-only.

Free-text length limits (maxLength 1200 on the plan texts, the order length) are in the schema
for engines that enforce them (xgrammar, llguidance); OpenAI's strict mode lists no string-length
keywords, so a profile can leave them out (`string_lengths=False`). The parser enforces them anyway.

Points are integers in the schema (a constrained decoder then never spends tokens on decimals);
the parser still accepts any finite number and rounds it, for servers that do not enforce schemas.
"""

from __future__ import annotations

import enum
import functools
from typing import Any

from common.actions import ACTION_NAMES, POINT_MAX, ROTATE_LIMIT_DEG

PLAN_TEXT_MAX_CHARS = 1200
TARGET_IN_VIEW = ("yes", "partly", "no")
TARGET_MATCH = ("confirmed", "uncertain", "wrong_target")
CLOSING_IN = ("closing", "holding", "receding", "unknown")
PLAN_FIELDS = ("target_in_view", "target_match", "closing_in", "current_frame", "action_planning")
ORDER_MAX_CHARS = 600


class SchemaKind(str, enum.Enum):
    """Which reply a request asks for; also the key of a profile's output cap."""

    ACTION = "action"
    PLAN = "plan"
    MULTI = "multi"
    COMMANDER = "commander"


def action_names(think: bool) -> tuple[str, ...]:
    """The action enumeration; "think off" removes `think` (docs/protocol.md#think-and-the-plan-schema)."""
    return ACTION_NAMES if think else tuple(n for n in ACTION_NAMES if n != "think")


def _action_properties(think: bool) -> dict[str, Any]:
    return {
        "action": {"type": "string", "enum": list(action_names(think))},
        "point": {
            "type": ["array", "null"],
            "items": {"type": "integer", "minimum": 0, "maximum": POINT_MAX},
            "minItems": 2,
            "maxItems": 2,
        },
        "depth_m": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "angle_deg": {"type": ["number", "null"], "minimum": -ROTATE_LIMIT_DEG, "maximum": ROTATE_LIMIT_DEG},
    }


def _text_schema(max_chars: int, string_lengths: bool, min_chars: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if string_lengths:
        if min_chars:
            schema["minLength"] = min_chars
        schema["maxLength"] = max_chars
    return schema


def _plan_properties(string_lengths: bool) -> dict[str, Any]:
    return {
        "target_in_view": {"type": "string", "enum": list(TARGET_IN_VIEW)},
        "target_match": {"type": "string", "enum": list(TARGET_MATCH)},
        "closing_in": {"type": "string", "enum": list(CLOSING_IN)},
        "current_frame": _text_schema(PLAN_TEXT_MAX_CHARS, string_lengths),
        "action_planning": _text_schema(PLAN_TEXT_MAX_CHARS, string_lengths),
    }


def _strict_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@functools.cache
def action_schema(think: bool = True) -> dict[str, Any]:
    """One action: action, point, depth_m, angle_deg."""
    return _strict_object(_action_properties(think))


@functools.cache
def plan_schema(think: bool = True, string_lengths: bool = True) -> dict[str, Any]:
    """The five plan fields in the order the model settles them, then the action fields."""
    return _strict_object({**_plan_properties(string_lengths), **_action_properties(think)})


@functools.cache
def multi_schema(n_drones: int, think: bool = True) -> dict[str, Any]:
    """{"drones": [action_1, ..., action_N]}: an object root, since some APIs reject array roots."""
    if n_drones < 1:
        raise ValueError(f"n_drones={n_drones} must be >= 1")
    drones = {"type": "array", "items": action_schema(think), "minItems": n_drones, "maxItems": n_drones}
    return _strict_object({"drones": drones})


@functools.cache
def commander_schema(n_drones: int, string_lengths: bool = True) -> dict[str, Any]:
    """{"orders": [{"drone": i, "order": text}, ...]}, one order per drone, drones numbered from 1."""
    if n_drones < 1:
        raise ValueError(f"n_drones={n_drones} must be >= 1")
    order = _strict_object(
        {
            "drone": {"type": "integer", "minimum": 1, "maximum": n_drones},
            "order": _text_schema(ORDER_MAX_CHARS, string_lengths, min_chars=1),
        }
    )
    orders = {"type": "array", "items": order, "minItems": n_drones, "maxItems": n_drones}
    return _strict_object({"orders": orders})


def schema_name(kind: SchemaKind, think: bool = True, n_drones: int = 1) -> str:
    """The `json_schema.name` sent with the schema (letters, digits, _ and - only)."""
    name = f"dronecats_{kind.value}"
    if kind in (SchemaKind.MULTI, SchemaKind.COMMANDER):
        name += f"_{n_drones}"
    if not think and kind is not SchemaKind.COMMANDER:
        name += "_nothink"
    return name


def schema_for(
    kind: SchemaKind, think: bool = True, n_drones: int = 1, string_lengths: bool = True
) -> dict[str, Any]:
    if kind is SchemaKind.ACTION:
        return action_schema(think)
    if kind is SchemaKind.PLAN:
        return plan_schema(think, string_lengths)
    if kind is SchemaKind.MULTI:
        return multi_schema(n_drones, think)
    return commander_schema(n_drones, string_lengths)
