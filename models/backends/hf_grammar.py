"""Schema-constrained decoding for the in-process `hf://` backend: the request's JSON schema,
bounded to its output cap, compiled by xgrammar once per (schema, cap) and applied as a logits
processor, the same guarantee vLLM's default structured-output backend gives.

Why the schema is narrowed before it is compiled: a grammar alone guarantees the *form* of a
reply, not that it ends within `max_tokens`. A free-text field of 1,200 characters, an unbounded
number, or free whitespace lets a model that never chooses to stop (random weights do exactly
that) run into the cap mid-string, and a truncated reply is malformed. So the grammar is compiled
from a copy of the schema in which

- whitespace is fixed (compact separators, no free whitespace between tokens);
- every number has a range (xgrammar then allows at most 6 fraction digits), `depth_m` getting
  `NUMBER_MAX` where the wire schema has only a lower bound;
- every free-text field is printable ASCII without quote or backslash (one byte per character,
  so one token covers at least one character) and its length is cut so that the longest reply
  the grammar admits fits the request's cap: `budget_tokens(schema) <= max_tokens`.

Every token of a byte-level vocabulary decodes to at least one byte (special tokens are masked
by the grammar), so a reply of at most B bytes takes at most B tokens plus the stop token. When
even the schema without text fields needs more than the cap (an action with every number at full
precision is ≈ 90 bytes, the action cap 64 tokens), the generation limit becomes that worst case:
a trained model stops long before it, and a random one still ends with a valid object.

The wire schema is never changed: what a server gets is what models.schemas builds.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
    from xgrammar import CompiledGrammar
    from xgrammar.contrib.hf import LogitsProcessor

logger = logging.getLogger(__name__)

SEPARATORS = (",", ":")
# A ceiling for numbers the wire schema bounds only from below (depth_m > 0): far beyond any depth
# a camera can judge, and it gives the grammar a finite number of digits.
NUMBER_MAX = 1000.0
FRACTION_DIGITS = 6  # what xgrammar allows after the point for a ranged number
# The shortest a free-text field is cut to, however small the cap: a text field of a few
# characters would force even a trained model into nonsense.
MIN_TEXT_CHARS = 16
# Printable ASCII except '"' and '\\': one byte per character in the reply, and no escapes.
TEXT_CHARS = r"[ !#-\[\]-~]"
TEXT_FIRST = r"[!#-\[\]-~]"
TEXT_PATTERN = re.compile(
    r"\^(" + re.escape(TEXT_FIRST) + r")?" + re.escape(TEXT_CHARS) + r"\{(\d+),(\d+)\}\$"
)
UNUSED_TOKEN = re.compile(rb"<\|unused_\d+\|>")
# The action fields each action needs (the parser refuses a go without point and depth, a
# rotate without an angle); the others are null.
ACTION_FIELDS = {"go": ("point", "depth_m"), "rotate": ("angle_deg",)}


class UnboundedSchema(ValueError):
    """The schema admits replies of unbounded length (a keyword this module does not bound)."""


def _types(schema: dict[str, Any]) -> list[str]:
    if "anyOf" in schema:
        return ["anyOf"]
    kind = schema.get("type")
    if isinstance(kind, list):
        return [str(k) for k in kind]
    if isinstance(kind, str):
        return [kind]
    if "enum" in schema:
        return ["enum"]
    raise UnboundedSchema(f"schema node without a type: {schema}")


def _number_bytes(schema: dict[str, Any], integer: bool) -> int:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is None or high is None:
        raise UnboundedSchema(f"number without a range: {schema}")
    digits = len(str(int(max(abs(float(low)), abs(float(high))))))
    sign = 1 if float(low) < 0 else 0
    return sign + digits + (0 if integer else 1 + FRACTION_DIGITS)


def _text_pattern(min_chars: int, max_chars: int) -> str:
    """Printable ASCII text of min..max characters; a required text starts with a non-space (the
    parser strips an order and refuses an empty one)."""
    min_chars = min(min_chars, max_chars)
    if min_chars >= 1:
        return f"^{TEXT_FIRST}{TEXT_CHARS}{{{min_chars - 1},{max_chars - 1}}}$"
    return f"^{TEXT_CHARS}{{0,{max_chars}}}$"


def _text_max(schema: dict[str, Any]) -> int:
    if "maxLength" in schema:
        return int(schema["maxLength"])
    match = TEXT_PATTERN.fullmatch(schema.get("pattern", ""))
    if match is None:
        raise UnboundedSchema(f"string without a length limit: {schema}")
    return int(match.group(2)) + (1 if match.group(1) else 0)


def max_reply_bytes(schema: dict[str, Any]) -> int:
    """The longest reply (in bytes, compact separators) a bounded schema admits."""
    if "anyOf" in schema:
        return max(max_reply_bytes(case) for case in schema["anyOf"])
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    best = 0
    for kind in _types(schema):
        if kind == "null":
            size = 4
        elif kind == "boolean":
            size = 5
        elif kind == "string":
            size = 2 + _text_max(schema)
        elif kind in ("integer", "number"):
            size = _number_bytes(schema, kind == "integer")
        elif kind == "array" and "prefixItems" in schema:
            items = schema["prefixItems"]
            size = 2 + sum(max_reply_bytes(item) for item in items) + max(0, len(items) - 1)
        elif kind == "array":
            if "maxItems" not in schema:
                raise UnboundedSchema(f"array without maxItems: {schema}")
            n = int(schema["maxItems"])
            size = 2 + n * max_reply_bytes(schema["items"]) + max(0, n - 1)
        elif kind == "object":
            props = schema["properties"]
            if schema.get("additionalProperties", True) is not False:
                raise UnboundedSchema("object that allows additional properties")
            size = 2 + sum(len(json.dumps(k)) + 1 + max_reply_bytes(v) for k, v in props.items())
            size += max(0, len(props) - 1)
        else:
            raise UnboundedSchema(f"type {kind!r} is not bounded here")
        best = max(best, size)
    return best


def _walk(schema: dict[str, Any], texts: list[tuple[dict[str, Any], int]], repeat: int = 1) -> None:
    """Range the numbers in place and collect the free-text nodes with how many times each can
    occur in one reply (a text inside an array of N items occurs N times)."""
    kinds = _types(schema)
    if "number" in kinds and "maximum" not in schema and "exclusiveMaximum" not in schema:
        schema["maximum"] = NUMBER_MAX
    if "string" in kinds and "enum" not in schema:
        texts.append((schema, repeat))
    if "array" in kinds:
        _walk(schema["items"], texts, repeat * int(schema.get("maxItems", 1)))
    for value in schema.get("properties", {}).values():
        _walk(value, texts, repeat)


def _set_text_length(node: dict[str, Any], min_chars: int, max_chars: int) -> None:
    node.pop("minLength", None)
    node.pop("maxLength", None)
    node["pattern"] = _text_pattern(min_chars, max_chars)


def _only(node: dict[str, Any], kind: str) -> dict[str, Any]:
    """`node` with its type narrowed to `kind` (e.g. ["number", "null"] -> "number")."""
    if kind == "null":
        return {"type": "null"}
    out = copy.deepcopy(node)
    out["type"] = kind
    return out


def _split_actions(schema: dict[str, Any]) -> dict[str, Any]:
    """An action object as one case per action, each with the fields that action needs and the
    rest null: what the parser requires and a JSON schema without anyOf cannot state."""
    props = schema.get("properties", {})
    if isinstance(schema.get("items"), dict):
        schema["items"] = _split_actions(schema["items"])
    for key, value in props.items():
        props[key] = _split_actions(value)
    action = props.get("action")
    if not (action and "enum" in action and {"point", "depth_m", "angle_deg"} <= props.keys()):
        return schema
    kinds = {"point": "array", "depth_m": "number", "angle_deg": "number"}
    cases = []
    for name in action["enum"]:
        case = copy.deepcopy(schema)
        case["properties"]["action"] = {"type": "string", "enum": [name]}
        needed = ACTION_FIELDS.get(name, ())
        for key, kind in kinds.items():
            case["properties"][key] = _only(props[key], kind if key in needed else "null")
        cases.append(case)
    return {"anyOf": cases}


def _number_orders(schema: dict[str, Any]) -> None:
    """The commander's N orders as a fixed tuple, drone i in place i: the parser refuses two
    orders for one drone, which "N items, drone in 1..N" allows."""
    orders = schema.get("properties", {}).get("orders")
    if not orders or orders.get("type") != "array":
        return
    item = orders["items"]
    n = int(orders.get("maxItems", 0))
    drone = item.get("properties", {}).get("drone", {})
    if not n or orders.get("minItems") != n or drone.get("maximum") != n:
        return
    cases = []
    for i in range(1, n + 1):
        case = copy.deepcopy(item)
        case["properties"]["drone"] = {"type": "integer", "enum": [i]}
        cases.append(case)
    orders["prefixItems"] = cases
    orders["items"] = False


def bounded_schema(schema: dict[str, Any], max_tokens: int) -> tuple[dict[str, Any], int]:
    """A copy of `schema` whose replies always fit `max_tokens` where they can, and the number
    of new tokens to allow (`max_tokens`, or the schema's worst case when that is larger)."""
    bounded = copy.deepcopy(schema)
    texts: list[tuple[dict[str, Any], int]] = []
    _walk(bounded, texts)
    # A text without maxLength (a profile that leaves lengths out) is cut like the longest one.
    wanted = [int(node.get("maxLength", 10_000)) for node, _ in texts]
    floors = [int(node.get("minLength", 0)) for node, _ in texts]
    # The texts at zero length first: what the rest of the reply can take at most.
    for node, _ in texts:
        _set_text_length(node, 0, 0)
    fixed = max_reply_bytes(bounded) + 1  # + the stop token
    spare = max(0, max_tokens - fixed)
    weight = sum(want * repeat for want, (_, repeat) in zip(wanted, texts, strict=True))
    for (node, _), want, floor in zip(texts, wanted, floors, strict=True):
        share = spare * want // weight if weight else 0
        _set_text_length(node, floor, max(min(want, MIN_TEXT_CHARS), min(want, share)))
    _number_orders(bounded)
    bounded = _split_actions(bounded)
    need = max_reply_bytes(bounded) + 1
    return bounded, max(max_tokens, need)


class GrammarCache:
    """Compiled grammars for one tokenizer, one per (schema, cap): a schema is compiled on its
    first request only (a plan grammar takes tens of milliseconds, an action one a few)."""

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, vocab_size: int, stop_token_ids: list[int]
    ) -> None:
        import xgrammar

        info = xgrammar.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids
        )
        # A random-init tokenizer pads its vocabulary with <|unused_N|> tokens (models.random_init):
        # they decode to that literal text, which a grammar would let into free-text fields. An
        # empty entry is a special token to xgrammar, never allowed by a grammar.
        decoded = info.decoded_vocab
        if any(UNUSED_TOKEN.fullmatch(token) for token in decoded):
            info = xgrammar.TokenizerInfo(
                [b"" if UNUSED_TOKEN.fullmatch(token) else token for token in decoded],
                xgrammar.VocabType.RAW,
                vocab_size=vocab_size,
                stop_token_ids=stop_token_ids,
            )
        self._compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
        self._compiled: dict[tuple[str, int], tuple[CompiledGrammar, int]] = {}
        self._lock = threading.Lock()
        self.compiles = 0

    def get(self, schema: dict[str, Any], max_tokens: int) -> tuple[CompiledGrammar, int]:
        """(compiled grammar, max new tokens) for a request's schema and output cap."""
        key = (json.dumps(schema, sort_keys=True), max_tokens)
        with self._lock:
            hit = self._compiled.get(key)
            if hit is not None:
                return hit
            bounded, limit = bounded_schema(schema, max_tokens)
            compiled = self._compiler.compile_json_schema(
                json.dumps(bounded), any_whitespace=False, separators=SEPARATORS, strict_mode=True
            )
            self.compiles += 1
            if limit > max_tokens:
                logger.info(
                    "schema's longest reply is %d tokens, above the cap %d: allowing %d",
                    limit - 1,
                    max_tokens,
                    limit,
                )
            self._compiled[key] = (compiled, limit)
            return compiled, limit

    def logits_processor(self, compiled: CompiledGrammar) -> LogitsProcessor:
        """A fresh processor for one generate() call (xgrammar's keeps per-call matcher state)."""
        from xgrammar.contrib.hf import LogitsProcessor

        return LogitsProcessor(compiled)
