"""What every model backend shares: the completion and per-call stats it returns, and its protocol.

A backend turns one models.request.ChatRequest (system + user message, reply schema, output cap,
the profile's decoding settings) into the model's raw text. It never parses the action: that is
the parser's job (ReplySpec), so every backend is judged by the same parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import msgspec

if TYPE_CHECKING:
    from models.request import ChatRequest


class CallStats(msgspec.Struct):
    """Measured per call; token counts are None when the engine did not report them."""

    backend: str
    model: str
    latency_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int = 1
    finish_reason: str | None = None


class Completion(msgspec.Struct):
    text: str
    stats: CallStats


@runtime_checkable
class ModelBackend(Protocol):
    """A model that answers chat requests. Implementations raise common.errors.BackendError."""

    name: str

    def complete(self, request: ChatRequest) -> Completion: ...

    def close(self) -> None: ...
