"""models.parser against docs/protocol.md (actions, plans, several drones): table-driven malformed
and good replies, plus a seeded random fuzz that only MalformedReply ever escapes."""

from __future__ import annotations

import json
import random

import pytest

from common.actions import Finished, Go, Plan, Rotate, Think
from common.errors import MalformedReply
from models.parser import ParsedOrder, extract_json_object, parse_action, parse_commander, parse_multi

GO = '{"action": "go", "point": [612, 430], "depth_m": 9, "angle_deg": null}'

# (reply, substring the reason must contain)
MALFORMED = [
    ("", "empty"),
    ("   \n\t ", "empty"),
    ("I will fly forward now.", "no JSON object"),
    ("go to [500, 400]", "no JSON object"),
    ("{'action': 'go', 'point': [1, 2], 'depth_m': 3}", "no JSON object"),
    ('{"action": "go", "point": [612, 430], "depth_m": 9', "truncated"),
    ('{"action": "go", "point": [612, 4', "truncated"),
    ('{"action": "rot', "truncated"),
    ('{"action": "think"', "truncated"),
    ('```json\n{"action": "go", "point": [612, 430],\n```', "truncated"),
    ('{"action": "go", "point": [612, 430], "depth_m": 9,}', "truncated or invalid"),
    (GO + GO, "2 JSON values"),
    (GO + "\n" + '{"action": "think"}', "2 JSON values"),
    ('```json\n{"action": "think"}\n```\n```json\n{"action": "finished"}\n```', "2 JSON values"),
    ('{"action": "think"} then {"action": "go", "poi', "truncated"),
    ("[" + GO + "]", "array"),
    ("[]", "array"),
    ('[{"action": "think"}, {"action": "finished"}]', "array"),
    ("{}", "missing required field 'action'"),
    ('{"point": [1, 2], "depth_m": 3}', "missing required field 'action'"),
    ('{"action": null}', "missing required field 'action'"),
    ('{"action": "fly", "point": [1, 2], "depth_m": 3}', "unknown action"),
    ('{"action": "land"}', "unknown action"),
    ('{"action": "", "point": null}', "unknown action"),
    ('{"action": 1}', "not text"),
    ('{"action": true}', "not text"),
    ('{"action": ["go"]}', "not text"),
    ('{"action": "go", "depth_m": 5}', "missing required field 'point'"),
    ('{"action": "go", "point": null, "depth_m": 5}', "missing required field 'point'"),
    ('{"action": "go", "point": [500, 500]}', "missing required field 'depth_m'"),
    ('{"action": "go", "point": [500, 500], "depth_m": null}', "missing required field 'depth_m'"),
    ('{"action": "rotate"}', "missing required field 'angle_deg'"),
    ('{"action": "rotate", "angle_deg": null}', "missing required field 'angle_deg'"),
    ('{"action": "go", "point": [true, 400], "depth_m": 5}', "bool, not a number"),
    ('{"action": "go", "point": [500, 400], "depth_m": true}', "bool, not a number"),
    ('{"action": "rotate", "angle_deg": false}', "bool, not a number"),
    ('{"action": "go", "point": ["500", "400"], "depth_m": 5}', "str, not a number"),
    ('{"action": "go", "point": [500, 400], "depth_m": "5"}', "str, not a number"),
    ('{"action": "rotate", "angle_deg": "45"}', "str, not a number"),
    ('{"action": "go", "point": "500, 400", "depth_m": 5}', "not a [a, b] array"),
    ('{"action": "go", "point": {"x": 500, "y": 400}, "depth_m": 5}', "not a [a, b] array"),
    ('{"action": "go", "point": [500], "depth_m": 5}', "has 1 values"),
    ('{"action": "go", "point": [500, 400, 3], "depth_m": 5}', "has 3 values"),
    ('{"action": "go", "point": [500, null], "depth_m": 5}', "NoneType, not a number"),
    ('{"action": "go", "point": [[500], 400], "depth_m": 5}', "list, not a number"),
    ('{"action": "go", "point": [500, 400], "depth_m": NaN}', "non-finite"),
    ('{"action": "go", "point": [NaN, 400], "depth_m": 5}', "non-finite"),
    ('{"action": "go", "point": [500, 400], "depth_m": Infinity}', "non-finite"),
    ('{"action": "rotate", "angle_deg": -Infinity}', "non-finite"),
    ('{"action": "go", "point": [500, 400], "depth_m": 1e400}', "not finite"),
    ('{"action": "go", "point": [1001, 400], "depth_m": 5}', "outside 0-1000"),
    ('{"action": "go", "point": [500, -1], "depth_m": 5}', "outside 0-1000"),
    ('{"action": "go", "point": [500, 1000.4], "depth_m": 5}', "outside 0-1000"),
    ('{"action": "go", "point": [500, 400], "depth_m": 0}', "must be > 0"),
    ('{"action": "go", "point": [500, 400], "depth_m": -3.5}', "must be > 0"),
    ('{"action": "go", "point": [500, 400], "depth_m": -0.0}', "must be > 0"),
    ('{"action": "go", "action": "rotate", "angle_deg": 5}', "duplicate key"),
    ('{"action": "go", "point": [1' + "0" * 5000 + ', 4], "depth_m": 1}', "invalid JSON"),
    ('{"action": "go", "point": [1' + "0" * 400 + ', 4], "depth_m": 1}', "too large"),
    ("[" * 50_000, "invalid JSON"),
    ('"go"', "no JSON object"),
    ("42", "no JSON object"),
]


@pytest.mark.parametrize(("raw", "reason"), MALFORMED)
def test_malformed_reply_is_a_clean_malformed_reply(raw: str, reason: str) -> None:
    with pytest.raises(MalformedReply) as info:
        parse_action(raw)
    assert reason in info.value.reason
    assert "\n" not in info.value.reason
    assert info.value.raw == raw or len(raw) > 100_000


def test_at_least_forty_malformed_cases() -> None:
    assert len(MALFORMED) >= 40


def test_non_text_reply_is_malformed() -> None:
    with pytest.raises(MalformedReply, match="not text"):
        parse_action(None)  # type: ignore[arg-type]
    with pytest.raises(MalformedReply, match="not text"):
        parse_action(b'{"action": "think"}')  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "raw",
    [
        GO,
        '{"action":"go","point":[612,430],"depth_m":9}',
        "```json\n" + GO + "\n```",
        "```\n" + GO + "\n```",
        "Looking at the frame, the SUV is ahead.\n" + GO,
        "Here is my action in [x, y] order: " + GO + "\nDone.",
        '{"action": "GO", "point": [612, 430], "depth_m": 9, "reason": "the car is ahead"}',
        '{"action": " go ", "point": [611.5, 429.6], "depth_m": 9.0, "angle_deg": 33}',
    ],
)
def test_good_go_replies_xy(raw: str) -> None:
    assert parse_action(raw, "xy") == Go(point=(612, 430), depth_m=9.0)


def test_yx_point_order_is_normalised_to_image_order() -> None:
    # The model writes [y, x]; the action stores [x, y].
    action = parse_action('{"action": "go", "point": [430, 612], "depth_m": 9}', "yx")
    assert action == Go(point=(612, 430), depth_m=9.0)
    assert parse_action('{"action": "go", "point": [0, 1000], "depth_m": 0.5}', "yx") == Go(
        point=(1000, 0), depth_m=0.5
    )


def test_point_rounding_is_half_up_and_edges_are_inside() -> None:
    assert parse_action('{"action": "go", "point": [0.5, 999.5], "depth_m": 1}').point == (1, 1000)
    assert parse_action('{"action": "go", "point": [0, 1000], "depth_m": 1}').point == (0, 1000)
    assert parse_action('{"action": "go", "point": [2.4999, 0.0], "depth_m": 1}').point == (2, 0)


@pytest.mark.parametrize(
    ("angle", "expected"),
    [(45, 45.0), (-30.5, -30.5), (90, 90.0), (120, 90.0), (-200, -90.0), (1e300, 90.0), (0, 0.0)],
)
def test_rotate_is_clamped_not_rejected(angle: float, expected: float) -> None:
    assert parse_action(json.dumps({"action": "rotate", "angle_deg": angle})) == Rotate(angle_deg=expected)


def test_hold_actions_ignore_unused_fields() -> None:
    assert parse_action('{"action": "think", "point": null, "depth_m": null, "angle_deg": null}') == Think()
    assert parse_action('{"action": "finished", "point": [1, 2], "depth_m": "x"}') == Finished()
    assert parse_action('{"action": "rotate", "angle_deg": 10, "point": "junk"}') == Rotate(angle_deg=10.0)


def test_think_off_makes_think_malformed() -> None:
    with pytest.raises(MalformedReply, match="think off"):
        parse_action('{"action": "think"}', think=False)
    assert parse_action('{"action": "finished"}', think=False) == Finished()


PLAN = {
    "target_in_view": "partly",
    "target_match": "uncertain",
    "closing_in": "closing",
    "current_frame": "a black SUV at the left edge, partly hidden by a tree",
    "action_planning": "turn left and approach it",
}


def test_plan_reply_carries_a_plan() -> None:
    raw = json.dumps({**PLAN, "action": "go", "point": [430, 120], "depth_m": 14, "angle_deg": None})
    action = parse_action(raw, "yx", plan=True)
    assert action == Go(point=(120, 430), depth_m=14.0, plan=Plan(**PLAN))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"target_in_view": "maybe"}, "target_in_view"),
        ({"target_match": None}, "missing required plan field 'target_match'"),
        ({"closing_in": 3}, "closing_in"),
        ({"current_frame": 7}, "not text"),
        ({"action_planning": "x" * 1201}, "1201 chars; the limit is 1200"),
        ({"current_frame": None}, "missing required field 'current_frame'"),
    ],
)
def test_bad_plan_fields_are_malformed(change: dict, reason: str) -> None:
    raw = json.dumps({**PLAN, **change, "action": "finished"})
    with pytest.raises(MalformedReply) as info:
        parse_action(raw, plan=True)
    assert reason in info.value.reason


def test_plan_text_at_the_limit_is_accepted() -> None:
    raw = json.dumps({**PLAN, "action_planning": "y" * 1200, "action": "think"})
    action = parse_action(raw, plan=True)
    assert action.plan is not None and len(action.plan.action_planning) == 1200


def test_multi_drone_replies() -> None:
    raw = json.dumps(
        {
            "drones": [
                {"action": "go", "point": [100, 200], "depth_m": 5, "angle_deg": None},
                {"action": "rotate", "point": None, "depth_m": None, "angle_deg": 150},
                {"action": "finished", "point": None, "depth_m": None, "angle_deg": None},
            ]
        }
    )
    assert parse_multi(raw, 3, "yx") == (
        Go(point=(200, 100), depth_m=5.0),
        Rotate(angle_deg=90.0),
        Finished(),
    )


BAD_MULTI_DRONE_REPLIES = [  # for 3 drones
    ('{"drones": [{"action": "think"}, {"action": "think"}]}', "2 actions; expected 3"),
    (json.dumps({"drones": [{"action": "think"}] * 4}), "4"),
    ('{"drones": []}', "0 actions; expected 3"),
    ('[{"action": "think"}, {"action": "think"}, {"action": "think"}]', "array"),
    ('{"drones": {"action": "think"}}', "not an array"),
    ('{"actions": []}', "missing required field 'drones'"),
    ('{"drones": [{"action": "think"}, 5, {"action": "think"}]}', "drones[1]: action is int"),
    ('{"drones": [{"action": "think"}, {"action": "go"}, {"action": "think"}]}', "drones[1]: missing"),
]


def test_commander_replies() -> None:
    raw = json.dumps(
        {"orders": [{"drone": 2, "order": "hold position"}, {"drone": 1, "order": " find the red sign "}]}
    )
    assert parse_commander(raw, 2) == (ParsedOrder(1, "find the red sign"), ParsedOrder(2, "hold position"))


BAD_COMMANDER_REPLIES = [  # for 2 drones
    ('{"orders": [{"drone": 1, "order": "go"}]}', "1 entries; expected 2"),
    ('{"orders": [{"drone": 1, "order": "a"}, {"drone": 1, "order": "b"}]}', "two orders"),
    ('{"orders": [{"drone": 1, "order": "a"}, {"drone": 3, "order": "b"}]}', "outside 1-2"),
    ('{"orders": [{"drone": 1, "order": "a"}, {"drone": true, "order": "b"}]}', "not an integer"),
    ('{"orders": [{"drone": 1, "order": "a"}, {"drone": 2, "order": "  "}]}', "empty"),
    ('{"orders": [{"drone": 1, "order": "a"}, {"drone": 2, "order": 5}]}', "not text"),
    ('{"orders": [{"drone": 1, "order": "a"}, "b"]}', "not an object"),
    ('{"orders": "all go"}', "not an array"),
]


@pytest.mark.parametrize(
    ("parse", "raw", "reason"),
    [(lambda raw: parse_multi(raw, 3), raw, reason) for raw, reason in BAD_MULTI_DRONE_REPLIES]
    + [(lambda raw: parse_commander(raw, 2), raw, reason) for raw, reason in BAD_COMMANDER_REPLIES],
)
def test_bad_fleet_replies(parse, raw: str, reason: str) -> None:
    with pytest.raises(MalformedReply) as info:
        parse(raw)
    assert reason in info.value.reason


def test_extract_skips_prose_braces() -> None:
    assert extract_json_object('Use {point_fmt} and [x, y]. {"action": "think"}') == {"action": "think"}


# ---- random fuzz: whatever the text, the parser returns an action or raises MalformedReply ----------

SEEDS = [
    GO,
    json.dumps({**PLAN, "action": "rotate", "point": None, "depth_m": None, "angle_deg": -45}),
    '{"drones": [{"action": "go", "point": [1, 2], "depth_m": 3}, {"action": "think"}]}',
    '{"orders": [{"drone": 1, "order": "a"}, {"drone": 2, "order": "b"}]}',
    "```json\n" + GO + "\n```",
]
ALPHABET = '{}[]":,.-+eE0123456789 \n\tabcdefghijklmnopqrstuvwxyzNaInfity\\`/\x00é'


def _random_json(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1001, 500, 10**30, -(10**30)])
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e308, -1e-308, 999.5, float("nan"), float("inf")])
    if kind == 4:
        return rng.choice(["go", "rotate", "think", "finished", "", "GO", "yes", "x" * 1300])
    if kind == 5:
        return rng.choice(["action", "point", "depth_m", "angle_deg", "drones", "orders"])
    if kind == 6:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["action", "point", "depth_m", "angle_deg", "drones", "orders", "drone", "order", *PLAN]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(6))}


def _mutations(rng: random.Random) -> list[str]:
    out = []
    for seed in SEEDS:
        out += [seed[:i] for i in range(len(seed))]  # every truncation
        for _ in range(150):
            chars = list(seed)
            for _ in range(rng.randrange(1, 4)):
                op = rng.randrange(3)
                i = rng.randrange(len(chars) + 1)
                if op == 0 and chars:
                    del chars[min(i, len(chars) - 1)]
                elif op == 1:
                    chars.insert(i, rng.choice(ALPHABET))
                elif chars:
                    chars[min(i, len(chars) - 1)] = rng.choice(ALPHABET)
            out.append("".join(chars))
    for _ in range(1500):
        out.append(json.dumps(_random_json(rng)))
        out.append("".join(rng.choice(ALPHABET) for _ in range(rng.randrange(40))))
    return out


def test_fuzz_only_malformed_reply_escapes() -> None:
    rng = random.Random(20261129)
    cases = _mutations(rng)
    assert len(cases) > 4000
    parsed = 0
    for raw in cases:
        for call in (
            lambda r: parse_action(r, "xy"),
            lambda r: parse_action(r, "yx", think=False, plan=True),
            lambda r: parse_multi(r, 2),
            lambda r: parse_commander(r, 2),
        ):
            try:
                call(raw)
                parsed += 1
            except MalformedReply as exc:
                assert exc.reason and "\n" not in exc.reason, raw
    assert parsed > 0  # the mutations keep some valid replies, so the test sees both outcomes
