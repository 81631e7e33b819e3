"""The pilot protocol in one place: profile + switches -> requests for a step, replies -> actions.

    prompt = PilotPrompt(load_profile("qwen3.5-2b"), PromptSwitches())
    conv = Conversation(prompt, "go to the black SUV")
    request = conv.request(frame.image)          # ChatRequest; request.to_body() for HTTP
    action = conv.parse(reply_text, request)     # Action, or raises MalformedReply (hold)
    conv.record(action)                          # only once it was executed

`PilotPrompt` is stateless apart from its fixed system message; `Conversation` holds one drone's
instruction and history. `MultiDronePrompt` and `CommanderPrompt` do the same for several drones
(docs/protocol.md#several-drones).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from common.actions import Action, Think
from models.frames import EncodedFrame, encode_frame, encode_frame_and_view, jpeg_data_url
from models.history import ActionHistory, HistoryEntry, compact, render_history
from models.identity import PromptIdentity, prompt_identity
from models.parser import ParsedOrder
from models.profile import ModelProfile
from models.request import ChatRequest, ContentPart, ImagePart, ReplySpec, TextPart, build_request
from models.schemas import SchemaKind
from models.templates import (
    PromptSwitches,
    commander_system,
    commander_user,
    multi_system,
    multi_user,
    single_system,
    single_user,
)


class PilotPrompt:
    """Single-drone requests for one (profile, switches); the system message is built once."""

    def __init__(self, profile: ModelProfile, switches: PromptSwitches | None = None) -> None:
        self.profile = profile
        self.switches = switches or PromptSwitches()
        self.system = single_system(profile.point_fmt, self.switches)
        self._identity: PromptIdentity | None = None

    def identity(self) -> PromptIdentity:
        if self._identity is None:
            self._identity = prompt_identity(self.profile, self.switches, "single")
        return self._identity

    def reply_spec(self, previous_was_think: bool) -> ReplySpec:
        plan = previous_was_think and self.switches.uses_plan
        return ReplySpec(
            kind=SchemaKind.PLAN if plan else SchemaKind.ACTION,
            point_order=self.profile.point_order,
            think=self.switches.think,
        )

    def request(
        self,
        instruction: str,
        history: Iterable[Action] | ActionHistory,
        frame: EncodedFrame,
        previous_was_think: bool | None = None,
        history_views: Sequence[bytes | None] = (),
    ) -> ChatRequest:
        """One step's request. `previous_was_think` defaults to "the last history action is think";
        `history_views` (visual history) are the encoded views of the history's actions, in order.
        """
        if isinstance(history, ActionHistory):
            entries = list(history)
            actions = [e.action for e in entries]
            if not history_views:
                history_views = [e.view_jpeg for e in entries]
        else:
            actions = list(history)[-5:]
        if previous_was_think is None:
            previous_was_think = bool(actions) and isinstance(actions[-1], Think)
        text = single_user(instruction, render_history(actions, self.profile.point_order), self.switches)
        parts: list[ContentPart] = [TextPart(text)]
        if self.switches.visual_history:
            views = list(history_views)[-len(actions) :] if actions else []
            first_number = len(actions) - len(views) + 1
            for number, view in enumerate(views, start=first_number):
                if view is not None:
                    parts.append(TextPart(f"View before action {number}:"))
                    parts.append(ImagePart(jpeg_data_url(view)))
            parts.append(TextPart("Current view:"))
        parts.append(ImagePart(frame.data_url()))
        return build_request(self.profile, self.system, tuple(parts), self.reply_spec(previous_was_think))

    def parse(self, text: str, request: ChatRequest) -> Action:
        """The reply to `request` as an Action; MalformedReply otherwise (execute as a hold)."""
        return request.reply.parse_action(text)


class Conversation:
    """One drone's episode: instruction, executed-action history and (visual history) their views."""

    def __init__(self, prompt: PilotPrompt, instruction: str) -> None:
        self.prompt = prompt
        self.instruction = instruction
        self.history = ActionHistory()
        self._pending_view: bytes | None = None

    def set_instruction(self, instruction: str) -> None:
        """A new order for a sub-agent; the history of what the drone did stays."""
        self.instruction = instruction

    def request(self, image_bgr: np.ndarray) -> ChatRequest:
        if self.prompt.switches.visual_history:
            frame, view = encode_frame_and_view(image_bgr)
            self._pending_view = view.jpeg
        else:
            frame = encode_frame(image_bgr)
        return self.request_encoded(frame)

    def request_encoded(self, frame: EncodedFrame, view_jpeg: bytes | None = None) -> ChatRequest:
        """As `request`, for a frame already encoded (e.g. received as JPEG from the drone)."""
        if view_jpeg is not None:
            self._pending_view = view_jpeg
        return self.prompt.request(self.instruction, self.history, frame)

    def parse(self, text: str, request: ChatRequest) -> Action:
        return self.prompt.parse(text, request)

    def record(self, action: Action) -> None:
        """Append an executed action (with the view it was chosen from, under visual history)."""
        self.history.append(action, self._pending_view)
        self._pending_view = None

    @property
    def entries(self) -> list[HistoryEntry]:
        return list(self.history)


class MultiDronePrompt:
    """N drones in one context (docs/protocol.md#several-drones): N frames in order, reply {"drones": [...]}.

    A `think` here holds that drone for the step; the multi-drone schema has no plan variant.
    """

    def __init__(self, profile: ModelProfile, n_drones: int, switches: PromptSwitches | None = None) -> None:
        if n_drones < 1:
            raise ValueError(f"n_drones={n_drones} must be >= 1")
        self.profile = profile
        self.n_drones = n_drones
        self.switches = switches or PromptSwitches()
        self.system = multi_system(profile.point_fmt, n_drones, self.switches)
        self.reply = ReplySpec(SchemaKind.MULTI, profile.point_order, self.switches.think, n_drones)

    def identity(self) -> PromptIdentity:
        return prompt_identity(self.profile, self.switches, "multi", self.n_drones)

    def request(
        self, instruction: str, histories: Sequence[Iterable[Action]], frames: Sequence[EncodedFrame]
    ) -> ChatRequest:
        if len(histories) != self.n_drones or len(frames) != self.n_drones:
            raise ValueError(
                f"{len(histories)} histories and {len(frames)} frames given; expected {self.n_drones} of each"
            )
        rendered = [render_history(list(h), self.profile.point_order) for h in histories]
        parts: list[ContentPart] = [TextPart(multi_user(instruction, rendered))]
        for i, frame in enumerate(frames, start=1):
            parts.append(TextPart(f"Drone {i}:"))
            parts.append(ImagePart(frame.data_url()))
        return build_request(self.profile, self.system, tuple(parts), self.reply)

    def parse(self, text: str, request: ChatRequest) -> tuple[Action, ...]:
        return request.reply.parse_multi(text)


class CommanderPrompt:
    """The commander (docs/protocol.md#several-drones): N frames, each sub-agent's last action, optional
    top-down map; reply {"orders": [{"drone": i, "order": text}, ...]}."""

    def __init__(self, profile: ModelProfile, n_drones: int) -> None:
        if n_drones < 1:
            raise ValueError(f"n_drones={n_drones} must be >= 1")
        self.profile = profile
        self.n_drones = n_drones
        self.system = commander_system(n_drones)
        self.reply = ReplySpec(SchemaKind.COMMANDER, profile.point_order, True, n_drones)

    def identity(self) -> PromptIdentity:
        return prompt_identity(self.profile, PromptSwitches(), "commander", self.n_drones)

    def request(
        self,
        instruction: str,
        last_actions: Sequence[Action | None],
        frames: Sequence[EncodedFrame],
        map_image: EncodedFrame | None = None,
    ) -> ChatRequest:
        if len(last_actions) != self.n_drones or len(frames) != self.n_drones:
            raise ValueError(
                f"{len(last_actions)} last actions and {len(frames)} frames given;"
                f" expected {self.n_drones} of each"
            )
        lines = [
            compact(a, self.profile.point_order) if a is not None else "(none yet)" for a in last_actions
        ]
        parts: list[ContentPart] = [TextPart(commander_user(instruction, lines, map_image is not None))]
        for i, frame in enumerate(frames, start=1):
            parts.append(TextPart(f"Drone {i}:"))
            parts.append(ImagePart(frame.data_url()))
        if map_image is not None:
            parts.append(TextPart("Top-down map:"))
            parts.append(ImagePart(map_image.data_url()))
        return build_request(self.profile, self.system, tuple(parts), self.reply)

    def parse(self, text: str, request: ChatRequest) -> tuple[ParsedOrder, ...]:
        return request.reply.parse_orders(text)
