"""Schema-constrained decoding (the `hf` extra's xgrammar): every schema the project sends compiles
in xgrammar's strict mode, as vLLM would compile it; the bounded grammar hf:// decodes with
admits only replies that end within the output cap, and a decoder that picks tokens at random
from what the grammar allows (what random weights amount to) always ends with a reply the
parser accepts, within the cap."""

from __future__ import annotations

import json
import random

import pytest

xgr = pytest.importorskip("xgrammar")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from models.backends.hf_grammar import (  # noqa: E402
    SEPARATORS,
    GrammarCache,
    UnboundedSchema,
    bounded_schema,
    max_reply_bytes,
)
from models.schemas import SchemaKind, action_schema, commander_schema, plan_schema  # noqa: E402
from tests.support.models_hf import parse_reply, sent_requests, tiny_model_dir  # noqa: E402

REQUESTS = sent_requests()


def test_the_schemas_cover_every_kind() -> None:
    kinds = {r.reply.kind for r in REQUESTS}
    assert kinds == set(SchemaKind)
    assert {r.reply.think for r in REQUESTS if r.reply.kind is SchemaKind.ACTION} == {True, False}
    assert {r.reply.string_lengths for r in REQUESTS} == {True, False}  # the hosted profile's too
    assert len(REQUESTS) > 40


def request_id(request) -> str:
    return f"{request.reply.schema_name}-{'lengths' if request.reply.string_lengths else 'nolengths'}"


@pytest.mark.parametrize("request_", REQUESTS, ids=request_id)
def test_every_sent_schema_compiles_in_strict_mode(request_) -> None:
    schema = request_.response_format()["json_schema"]["schema"]
    xgr.Grammar.from_json_schema(json.dumps(schema), strict_mode=True)
    bounded, limit = bounded_schema(schema, request_.max_tokens)
    grammar = xgr.Grammar.from_json_schema(
        json.dumps(bounded), strict_mode=True, any_whitespace=False, separators=SEPARATORS
    )
    assert "root" in str(grammar)
    assert max_reply_bytes(bounded) + 1 <= limit
    assert limit >= request_.max_tokens


def test_text_fields_are_cut_to_the_cap_and_numbers_ranged() -> None:
    bounded, limit = bounded_schema(plan_schema(True), 768)
    assert limit == 768 and max_reply_bytes(bounded) + 1 <= 768
    cases = {case["properties"]["action"]["enum"][0]: case["properties"] for case in bounded["anyOf"]}
    assert sorted(cases) == ["finished", "go", "rotate", "think"]
    text = cases["go"]["current_frame"]
    assert "maxLength" not in text and text["pattern"].endswith(",280}$")
    # each action with the fields it needs, the others null (what the parser requires)
    assert cases["go"]["depth_m"] == {"type": "number", "exclusiveMinimum": 0, "maximum": 1000.0}
    assert cases["go"]["point"]["type"] == "array" and cases["go"]["angle_deg"] == {"type": "null"}
    assert cases["rotate"]["angle_deg"]["type"] == "number" and cases["rotate"]["point"] == {"type": "null"}
    assert all(cases["think"][k] == {"type": "null"} for k in ("point", "depth_m", "angle_deg"))
    assert "maximum" not in plan_schema(True)["properties"]["depth_m"]  # the wire schema is untouched
    orders, _ = bounded_schema(commander_schema(3), 512)
    tuple_ = orders["properties"]["orders"]["prefixItems"]
    assert [item["properties"]["drone"]["enum"] for item in tuple_] == [[1], [2], [3]]
    # minLength 1 kept, as a first character that is not a space
    assert tuple_[0]["properties"]["order"]["pattern"].startswith("^[!#-\\[\\]-~][ !#-\\[\\]-~]{0,")
    # an action cannot fit 64 tokens at full precision: the limit grows to its worst case
    _, action_limit = bounded_schema(action_schema(True), 64)
    assert action_limit == max_reply_bytes(bounded_schema(action_schema(True), 64)[0]) + 1 > 64
    with pytest.raises(UnboundedSchema):
        max_reply_bytes({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}})


@pytest.fixture(scope="module")
def grammars(tmp_path_factory):
    from transformers import AutoTokenizer

    directory = tiny_model_dir(str(tmp_path_factory.getbasetemp()))
    tokenizer = AutoTokenizer.from_pretrained(directory)
    stop = [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    return tokenizer, GrammarCache(tokenizer, len(tokenizer), stop), stop


def random_walk(cache, compiled, vocab_size: int, limit: int, rng: random.Random) -> list[int]:
    """Tokens picked uniformly from those the grammar allows, until it ends or `limit` runs out."""
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    tokens: list[int] = []
    while not matcher.is_terminated() and len(tokens) < limit:
        matcher.fill_next_token_bitmask(bitmask)
        scores = torch.zeros(1, vocab_size)
        xgr.apply_token_bitmask_inplace(scores, bitmask)
        allowed = torch.nonzero(torch.isfinite(scores[0])).flatten().tolist()
        token = rng.choice(allowed)
        assert matcher.accept_token(token)
        tokens.append(token)
    return tokens


KINDS = [r for r in REQUESTS if r.reply.string_lengths and r.reply.n_drones in (1, 3)]


@pytest.mark.parametrize("request_", KINDS, ids=lambda r: r.reply.schema_name)
def test_random_choices_always_end_in_a_valid_reply_within_the_cap(grammars, request_) -> None:
    tokenizer, cache, stop = grammars
    schema = request_.reply.schema
    compiled, limit = cache.get(schema, request_.max_tokens)
    assert cache.get(schema, request_.max_tokens)[0] is compiled  # compiled once, then cached
    rng = random.Random(7)
    for _ in range(3):
        tokens = random_walk(cache, compiled, len(tokenizer), limit, rng)
        assert tokens[-1] in stop, "the grammar did not end within its limit"
        assert len(tokens) <= limit
        text = tokenizer.decode(tokens[:-1])
        parse_reply(request_, text)  # raises MalformedReply if the parser refuses it
        assert "<|unused" not in text
