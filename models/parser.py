"""The reply parser (docs/protocol.md): model text in, typed action out, or MalformedReply.

Accepted wrappings: a bare JSON object, a fenced ```json block, and JSON after (or before) prose.
Malformed: not exactly one JSON object (none, two, an array root, truncated), an unknown or
disabled action, a missing required field, a wrong type (a bool is not a number), a non-finite
number (Python's json would accept NaN and Infinity: we do not), a duplicate key, a point outside
0–1000, a depth <= 0 or beyond 1000 m. Rotations beyond ±90° are clamped, not rejected. Fields an
action does not use, and unknown extra keys, are ignored: a freely decoding model may add a
"reason" key and the action is still unambiguous.

Points come back in image order (x, y), rounded half up to integers, whatever order the model
wrote them in (`point_order`). Action names are compared after trimming and lower-casing.

Nothing but MalformedReply ever escapes `parse_*`, whatever the input.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, Literal, NoReturn, ParamSpec, TypeVar

import msgspec

from common.actions import (
    DEPTH_MAX_M,
    POINT_MAX,
    ROTATE_LIMIT_DEG,
    Action,
    Finished,
    Go,
    Plan,
    Rotate,
    Think,
    action_name,
)
from common.errors import MalformedReply
from models.schemas import (
    CLOSING_IN,
    ORDER_MAX_CHARS,
    PLAN_TEXT_MAX_CHARS,
    TARGET_IN_VIEW,
    TARGET_MATCH,
    action_names,
)

PointOrder = Literal["xy", "yx"]
_P = ParamSpec("_P")
_R = TypeVar("_R")
MAX_REPLY_CHARS = 200_000  # far beyond any output cap; bounds the work on garbage input

# A '{' that opens a JSON object (next non-blank char is a quote or '}'), or a '[' that opens an
# array of objects/arrays. Prose such as "{point_fmt}" or "[x, y]" does not match.
_JSON_START = re.compile(r"\{\s*[\"}]|\[\s*[\[{\]]")


class ParsedOrder(msgspec.Struct, frozen=True):
    """One commander order (docs/protocol.md#several-drones): drone index from 1, and its sub-agent's text."""

    drone: int
    order: str


class _NonFinite(ValueError):
    pass


class _DuplicateKey(ValueError):
    pass


def _reject_constant(name: str) -> NoReturn:
    raise _NonFinite(f"non-finite number {name} is not allowed")


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(f"duplicate key {key!r}")
        obj[key] = value
    return obj


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_pairs_hook)


def _snippet(raw: str, limit: int = 60) -> str:
    text = raw.strip().replace("\n", " ")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def extract_json_object(raw: str) -> dict[str, Any]:
    """The one JSON object in `raw`, wherever it sits among prose or code fences."""
    if not isinstance(raw, str):
        raise MalformedReply(f"reply is {type(raw).__name__}, not text", "")
    if not raw.strip():
        raise MalformedReply("empty reply", raw)
    if len(raw) > MAX_REPLY_CHARS:
        raise MalformedReply(f"reply of {len(raw)} chars exceeds {MAX_REPLY_CHARS}", raw[:1000])
    values: list[Any] = []
    pos = 0
    while True:
        match = _JSON_START.search(raw, pos)
        if match is None:
            break
        start = match.start()
        try:
            value, end = _DECODER.raw_decode(raw, start)
        except (_NonFinite, _DuplicateKey) as exc:
            raise MalformedReply(str(exc), raw) from None
        except json.JSONDecodeError as exc:
            what = "object" if raw[start] == "{" else "array"
            raise MalformedReply(
                f"truncated or invalid JSON {what} at char {start}: {exc.msg} (char {exc.pos})", raw
            ) from None
        except (ValueError, RecursionError) as exc:  # int digit limit, absurd nesting
            detail = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
            raise MalformedReply(f"invalid JSON at char {start}: {detail}", raw) from None
        values.append(value)
        pos = end
    if not values:
        raise MalformedReply(f"no JSON object in reply {_snippet(raw)}", raw)
    if len(values) > 1:
        raise MalformedReply(f"{len(values)} JSON values in reply; expected exactly one object", raw)
    value = values[0]
    if not isinstance(value, dict):
        raise MalformedReply("JSON root is an array; expected one object", raw)
    return value


def _as_number(value: object, label: str, raw: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MalformedReply(f"{label}={_short(value)} is {type(value).__name__}, not a number", raw)
    try:
        number = float(value)
    except OverflowError:
        raise MalformedReply(f"{label} is too large to be a finite number", raw) from None
    if not math.isfinite(number):
        raise MalformedReply(f"{label}={value} is not finite", raw)
    return number


def _number(obj: dict[str, Any], key: str, where: str, raw: str) -> float:
    if obj.get(key) is None:
        raise MalformedReply(f"{where}missing required field {key!r}", raw)
    return _as_number(obj[key], f"{where}{key}", raw)


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def _point(obj: dict[str, Any], order: PointOrder, where: str, raw: str) -> tuple[int, int]:
    if "point" not in obj or obj["point"] is None:
        raise MalformedReply(f"{where}missing required field 'point' for go", raw)
    point = obj["point"]
    if not isinstance(point, list):
        raise MalformedReply(
            f"{where}point={_short(point)} is {type(point).__name__}, not a [a, b] array", raw
        )
    if len(point) != 2:
        raise MalformedReply(f"{where}point has {len(point)} values; expected 2", raw)
    coords = []
    for i, value in enumerate(point):
        number = _as_number(value, f"{where}point[{i}]", raw)
        if not 0 <= number <= POINT_MAX:
            raise MalformedReply(f"{where}point[{i}]={_short(value)} is outside 0-{POINT_MAX}", raw)
        coords.append(_round_half_up(number))
    a, b = coords
    return (a, b) if order == "xy" else (b, a)


def _enum(obj: dict[str, Any], key: str, allowed: Sequence[str], where: str, raw: str) -> str:
    value = obj.get(key)
    if value is None:
        raise MalformedReply(f"{where}missing required plan field {key!r}", raw)
    if not isinstance(value, str) or value not in allowed:
        raise MalformedReply(f"{where}{key}={_short(value)} is not one of {', '.join(allowed)}", raw)
    return value


def _text(obj: dict[str, Any], key: str, limit: int, where: str, raw: str) -> str:
    value = obj.get(key)
    if value is None:
        raise MalformedReply(f"{where}missing required field {key!r}", raw)
    if not isinstance(value, str):
        raise MalformedReply(f"{where}{key} is {type(value).__name__}, not text", raw)
    if len(value) > limit:
        raise MalformedReply(f"{where}{key} has {len(value)} chars; the limit is {limit}", raw)
    return value


def _plan(obj: dict[str, Any], where: str, raw: str) -> Plan:
    return Plan(
        target_in_view=_enum(obj, "target_in_view", TARGET_IN_VIEW, where, raw),  # type: ignore[arg-type]
        target_match=_enum(obj, "target_match", TARGET_MATCH, where, raw),  # type: ignore[arg-type]
        closing_in=_enum(obj, "closing_in", CLOSING_IN, where, raw),  # type: ignore[arg-type]
        current_frame=_text(obj, "current_frame", PLAN_TEXT_MAX_CHARS, where, raw),
        action_planning=_text(obj, "action_planning", PLAN_TEXT_MAX_CHARS, where, raw),
    )


def action_from_object(
    obj: object,
    raw: str = "",
    point_order: PointOrder = "xy",
    think: bool = True,
    plan: bool = False,
    where: str = "",
) -> Action:
    """Validate one decoded reply object into an Action (`where` prefixes error reasons)."""
    if not isinstance(obj, dict):
        raise MalformedReply(f"{where}action is {type(obj).__name__}, not an object", raw)
    name = obj.get("action")
    if name is None:
        raise MalformedReply(f"{where}missing required field 'action'", raw)
    if not isinstance(name, str):
        raise MalformedReply(f"{where}action={_short(name)} is {type(name).__name__}, not text", raw)
    name = name.strip().lower()
    allowed = action_names(think)
    if name not in allowed:
        if name == "think":
            raise MalformedReply(f"{where}action 'think' is disabled (think off)", raw)
        raise MalformedReply(
            f"{where}unknown action {_short(obj['action'])}; expected {', '.join(allowed)}", raw
        )
    the_plan = _plan(obj, where, raw) if plan else None
    if name == "go":
        point = _point(obj, point_order, where, raw)
        depth_m = _number(obj, "depth_m", where, raw)
        if not 0 < depth_m <= DEPTH_MAX_M:
            raise MalformedReply(
                f"{where}depth_m={_short(obj['depth_m'])} must be > 0 and <= {DEPTH_MAX_M:g}", raw
            )
        return Go(point=point, depth_m=depth_m, plan=the_plan)
    if name == "rotate":
        angle = _number(obj, "angle_deg", where, raw)
        angle = max(-ROTATE_LIMIT_DEG, min(ROTATE_LIMIT_DEG, angle))
        return Rotate(angle_deg=angle, plan=the_plan)
    if name == "think":
        return Think(plan=the_plan)
    return Finished(plan=the_plan)


def _malformed_on_error(parse: Callable[Concatenate[str, _P], _R]) -> Callable[Concatenate[str, _P], _R]:
    """A reply parser whose every failure is a MalformedReply: a bug here must still read as a hold,
    never crash a drone."""

    @functools.wraps(parse)
    def parse_or_malformed(raw: str, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return parse(raw, *args, **kwargs)
        except MalformedReply:
            raise
        except Exception as exc:
            raise MalformedReply(
                f"parser error {type(exc).__name__}: {exc}", raw if isinstance(raw, str) else ""
            ) from exc

    return parse_or_malformed


def _array(obj: dict[str, Any], key: str, length: int, noun: str, raw: str) -> list[Any]:
    """The list `key` of exactly `length` items (`noun` names them in the error)."""
    items = obj.get(key)
    if items is None:
        raise MalformedReply(f"missing required field '{key}'", raw)
    if not isinstance(items, list):
        raise MalformedReply(f"{key} is {type(items).__name__}, not an array", raw)
    if len(items) != length:
        raise MalformedReply(f"{key} has {len(items)} {noun}; expected {length}", raw)
    return items


@_malformed_on_error
def parse_action(raw: str, point_order: PointOrder = "xy", think: bool = True, plan: bool = False) -> Action:
    """One drone's reply. `plan=True` on the call after a think: the five plan fields are required."""
    obj = extract_json_object(raw)
    return action_from_object(obj, raw, point_order, think, plan)


@_malformed_on_error
def parse_multi(
    raw: str, n_drones: int, point_order: PointOrder = "xy", think: bool = True
) -> tuple[Action, ...]:
    """{"drones": [...]}: exactly N actions in drone order; any bad entry makes the reply malformed."""
    drones = _array(extract_json_object(raw), "drones", n_drones, "actions", raw)
    return tuple(
        action_from_object(item, raw, point_order, think, where=f"drones[{i}]: ")
        for i, item in enumerate(drones)
    )


@_malformed_on_error
def parse_commander(raw: str, n_drones: int) -> tuple[ParsedOrder, ...]:
    """{"orders": [{"drone": i, "order": text}, ...]}: one order per drone 1..N, returned in drone order."""
    orders = _array(extract_json_object(raw), "orders", n_drones, "entries", raw)
    by_drone: dict[int, ParsedOrder] = {}
    for i, item in enumerate(orders):
        where = f"orders[{i}]: "
        if not isinstance(item, dict):
            raise MalformedReply(f"{where}entry is {type(item).__name__}, not an object", raw)
        drone = item.get("drone")
        if drone is None:
            raise MalformedReply(f"{where}missing required field 'drone'", raw)
        if isinstance(drone, bool) or not isinstance(drone, int):
            raise MalformedReply(f"{where}drone={_short(drone)} is not an integer", raw)
        if not 1 <= drone <= n_drones:
            raise MalformedReply(f"{where}drone={drone} is outside 1-{n_drones}", raw)
        if drone in by_drone:
            raise MalformedReply(f"{where}drone {drone} has two orders", raw)
        text = _text(item, "order", ORDER_MAX_CHARS, where, raw).strip()
        if not text:
            raise MalformedReply(f"{where}order for drone {drone} is empty", raw)
        by_drone[drone] = ParsedOrder(drone=drone, order=text)
    return tuple(by_drone[d] for d in range(1, n_drones + 1))


def reply_object(action: Action, point_order: str = "xy") -> dict[str, Any]:
    """The strict-schema JSON object a model would have written for `action` (the inverse of
    parsing: the baseline, the random-weights fixtures and the serving benchmark answer in this
    shape): plan fields first when present, unused fields null."""
    out: dict[str, Any] = {}
    if action.plan is not None:
        plan = action.plan
        out.update(
            target_in_view=plan.target_in_view,
            target_match=plan.target_match,
            closing_in=plan.closing_in,
            current_frame=plan.current_frame,
            action_planning=plan.action_planning,
        )
    point = None
    depth = None
    angle = None
    if isinstance(action, Go):
        x, y = action.point
        point = [x, y] if point_order == "xy" else [y, x]
        depth = action.depth_m
    elif isinstance(action, Rotate):
        angle = action.angle_deg
    out.update(action=action_name(action), point=point, depth_m=depth, angle_deg=angle)
    return out
