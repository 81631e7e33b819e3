"""OpenAI-style chat requests, typed, with `.to_body()` for the wire (docs/protocol.md, A.5 of 002).

messages = [system (byte-identical for a profile and switches), user (text, then the image(s) as
`data:image/jpeg;base64,...` image_url parts)]; the reply schema as
`response_format = {"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}`;
the schema's output cap; the profile's decoding settings and thinking-off fields. Never tools.
"""

from __future__ import annotations

from typing import Any

import msgspec

from common.actions import Action
from models.parser import ParsedOrder, PointOrder, parse_action, parse_commander, parse_multi
from models.profile import Decoding, ModelProfile
from models.schemas import SchemaKind, schema_for, schema_name


class TextPart(msgspec.Struct, frozen=True):
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


class ImagePart(msgspec.Struct, frozen=True):
    url: str  # a data: URL (or any URL the server can fetch)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": self.url}}


ContentPart = TextPart | ImagePart


class ReplySpec(msgspec.Struct, frozen=True):
    """What a reply to a request must look like, and how to read it."""

    kind: SchemaKind
    point_order: PointOrder = "xy"
    think: bool = True
    n_drones: int = 1
    string_lengths: bool = True  # maxLength/minLength in the schema (see models.schemas)

    def parse_action(self, text: str) -> Action:
        if self.kind not in (SchemaKind.ACTION, SchemaKind.PLAN):
            raise ValueError(f"a {self.kind.value} reply is not a single action")
        return parse_action(text, self.point_order, self.think, plan=self.kind is SchemaKind.PLAN)

    def parse_multi(self, text: str) -> tuple[Action, ...]:
        if self.kind is not SchemaKind.MULTI:
            raise ValueError(f"a {self.kind.value} reply is not a multi-drone reply")
        return parse_multi(text, self.n_drones, self.point_order, self.think)

    def parse_orders(self, text: str) -> tuple[ParsedOrder, ...]:
        if self.kind is not SchemaKind.COMMANDER:
            raise ValueError(f"a {self.kind.value} reply is not a commander reply")
        return parse_commander(text, self.n_drones)

    @property
    def schema(self) -> dict[str, Any]:
        return schema_for(self.kind, self.think, self.n_drones, self.string_lengths)

    @property
    def schema_name(self) -> str:
        return schema_name(self.kind, self.think, self.n_drones)


class ChatRequest(msgspec.Struct, frozen=True):
    model: str
    system: str
    user: tuple[ContentPart, ...]
    reply: ReplySpec
    max_tokens: int
    max_tokens_field: str = "max_tokens"
    decoding: Decoding = Decoding()
    extra_body: dict[str, Any] = {}  # e.g. the thinking-off fields
    # Seconds the reply may take (the step's staleness bound: a later reply is discarded anyway);
    # never sent. None: the backend's own bound.
    deadline_s: float | None = None

    def messages(self) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": [part.to_dict() for part in self.user]},
        ]

    def response_format(self) -> dict[str, Any]:
        return {
            "type": "json_schema",
            "json_schema": {"name": self.reply.schema_name, "schema": self.reply.schema, "strict": True},
        }

    def to_body(self) -> dict[str, Any]:
        """The JSON body of POST /v1/chat/completions (the schema dict is shared: do not mutate)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.messages(),
            "response_format": self.response_format(),
            self.max_tokens_field: self.max_tokens,
        }
        for key, value in msgspec.structs.asdict(self.decoding).items():
            if value is not None:
                body[key] = value
        body.update(self.extra_body)
        return body


def build_request(
    profile: ModelProfile, system: str, user: tuple[ContentPart, ...], reply: ReplySpec
) -> ChatRequest:
    caps = profile.max_tokens
    if reply.string_lengths != profile.schema_string_lengths:
        reply = msgspec.structs.replace(reply, string_lengths=profile.schema_string_lengths)
    if reply.kind is SchemaKind.ACTION:
        max_tokens = caps.action
    elif reply.kind is SchemaKind.PLAN:
        max_tokens = caps.plan
    elif reply.kind is SchemaKind.MULTI:
        max_tokens = caps.multi_per_drone * reply.n_drones
    else:
        max_tokens = caps.commander
    return ChatRequest(
        model=profile.served_model,
        system=system,
        user=user,
        reply=reply,
        max_tokens=max_tokens,
        max_tokens_field=profile.max_tokens_field,
        decoding=profile.decoding,
        extra_body=profile.thinking_off.body(),
    )
