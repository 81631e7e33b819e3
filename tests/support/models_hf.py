"""Shared by the tests of the model path on real tensors (the `hf` extra): the schemas the project
sends, and the tiny random-weights architecture's directory, built once per test session."""

from __future__ import annotations

import contextlib
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from models.frames import encode_frame
from models.pilot_prompt import CommanderPrompt, MultiDronePrompt, PilotPrompt
from models.profile import load_profile, profile_names
from models.request import ChatRequest
from models.templates import PromptSwitches

# triton (loaded by torch and transformers) and the simulator's Mesa renderer each bring an LLVM:
# triton loaded after Mesa crashes the process, the other order works. pytest imports every test
# module before it runs any test, so importing triton here puts it first in a whole-suite run.
with contextlib.suppress(ImportError):
    import triton  # noqa: F401

FLEET_SIZES = range(1, 9)


def sent_requests() -> list[ChatRequest]:
    """One request per distinct schema the project sends: every profile, every switch setting,
    plan and action steps, N drones in one context and the commander for N = 1..8."""
    frame = encode_frame(np.zeros((90, 160, 3), np.uint8))
    seen: dict[str, ChatRequest] = {}

    def add(request: ChatRequest) -> None:
        seen.setdefault(request.reply.schema_name + str(request.reply.string_lengths), request)

    for name in profile_names():
        profile = load_profile(name)
        for think in (True, False):
            for plan_schema in (True, False):
                prompt = PilotPrompt(profile, PromptSwitches(think=think, plan_schema=plan_schema))
                for previous_was_think in (False, True):
                    add(prompt.request("go to the red car", [], frame, previous_was_think=previous_was_think))
            for n in FLEET_SIZES:
                multi = MultiDronePrompt(profile, n, PromptSwitches(think=think))
                add(multi.request("search the yard", [[]] * n, [frame] * n))
        for n in FLEET_SIZES:
            add(CommanderPrompt(profile, n).request("search the yard", [None] * n, [frame] * n))
    return list(seen.values())


@cache
def tiny_model_dir(root: str) -> Path:
    from models.random_init import build_model_dir

    return build_model_dir("qwen3.5-tiny", Path(root) / "qwen3.5-tiny")


def parse_reply(request: ChatRequest, text: str) -> Any:
    from models.schemas import SchemaKind

    kind = request.reply.kind
    if kind is SchemaKind.MULTI:
        return request.reply.parse_multi(text)
    if kind is SchemaKind.COMMANDER:
        return request.reply.parse_orders(text)
    return request.reply.parse_action(text)
