"""Pilots: the Pilot interface (observation in, decision out) and the prompt-based ModelPilot
(prompt + backend + parser), plus the N-drone call and the commander call as library functions
that the ground station and the episode runner share.

A reply that cannot be used (backend error, malformed text) is never an exception here: it comes
back as a decision with `action=None` (the drone holds) and the reason, as AGENT.md §2 requires.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from common.actions import Action, Think
from common.camera import CameraProfile
from common.errors import BackendError, MalformedReply
from models.backends.base import CallStats, ModelBackend
from models.frames import encode_frame, encode_history_view
from models.history import HISTORY_LENGTH, compact, render_history
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


@dataclass(frozen=True)
class Observation:
    """What a pilot sees at one step.

    `image` is the current frame (BGR uint8, any size); `history` the executed actions, oldest
    first; `history_images` the views those actions were chosen from (visual history, optional).
    `delta_m` is the episode's arrival radius δ for pilots that judge arrival by a number; a model
    pilot judges it from the prompt and ignores it.
    """

    image: Any
    instruction: str
    history: Sequence[Action] = ()
    history_images: Sequence[Any] = ()
    camera: CameraProfile | None = None
    delta_m: float | None = None
    think: bool = True
    plan: bool | None = None  # the reply must carry the plan fields; None: after a think (AGENT.md §4)

    @property
    def plan_step(self) -> bool:
        """True when the reply uses the plan schema: by default on the call after a think."""
        if self.plan is not None:
            return self.plan
        return self.think and bool(self.history) and isinstance(self.history[-1], Think)


@dataclass(frozen=True)
class Decision:
    """A pilot's answer: the parsed action (None when the reply was malformed, i.e. a hold),
    the raw text, why it was malformed, and the call's measurements."""

    action: Action | None
    raw: str
    stats: CallStats | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Pilot(Protocol):
    name: str

    def decide(self, observation: Observation) -> Decision: ...

    def close(self) -> None: ...


# ---- the prompt-based model pilot ----------------------------------------------------------------


def _image_part(image_bgr: Any) -> ImagePart:
    return ImagePart(encode_frame(image_bgr).data_url())


class ModelPilot:
    """prompt + backend + parser. The system message is built once (byte-identical every call)."""

    def __init__(
        self,
        backend: ModelBackend,
        profile: ModelProfile,
        switches: PromptSwitches | None = None,
        name: str | None = None,
    ) -> None:
        self.backend = backend
        self.profile = profile
        self.switches = switches or PromptSwitches()
        self.system = single_system(profile.point_fmt, self.switches)
        self.name = name or f"model:{profile.name}"

    def build_request(self, observation: Observation) -> ChatRequest:
        history = render_history(observation.history, self.profile.point_order)
        parts: list[ContentPart] = [TextPart(single_user(observation.instruction, history, self.switches))]
        if self.switches.visual_history:
            views = list(observation.history_images)[-HISTORY_LENGTH:]
            first = len(list(observation.history)[-HISTORY_LENGTH:]) - len(views) + 1
            for number, view in enumerate(views, start=first):
                parts.append(TextPart(f"View before action {number}:"))
                parts.append(ImagePart(encode_history_view(view).data_url()))
            parts.append(TextPart("Current view:"))
        parts.append(_image_part(observation.image))
        plan = (
            self.switches.uses_plan
            and bool(observation.history)
            and isinstance(observation.history[-1], Think)
        )
        reply = ReplySpec(
            SchemaKind.PLAN if plan else SchemaKind.ACTION, self.profile.point_order, self.switches.think
        )
        return build_request(self.profile, self.system, tuple(parts), reply)

    def decide(self, observation: Observation) -> Decision:
        request = self.build_request(observation)
        try:
            completion = self.backend.complete(request)
        except BackendError as exc:
            return Decision(action=None, raw="", error=f"backend: {exc}")
        try:
            action = request.reply.parse_action(completion.text)
        except MalformedReply as exc:
            return Decision(action=None, raw=completion.text, stats=completion.stats, error=exc.reason)
        return Decision(action=action, raw=completion.text, stats=completion.stats)

    def close(self) -> None:
        self.backend.close()


# ---- several drones in one context, and the commander (AGENT.md §5) -------------------------------


@dataclass(frozen=True)
class MultiDecision:
    """N actions in drone order; all None (every drone holds) when the reply was malformed."""

    actions: tuple[Action | None, ...]
    raw: str
    stats: CallStats | None = None
    error: str | None = None


@dataclass(frozen=True)
class CommanderDecision:
    """One text order per drone in drone order, or None when the reply was malformed."""

    orders: tuple[str, ...] | None
    raw: str
    stats: CallStats | None = None
    error: str | None = None


def multi_request(
    profile: ModelProfile,
    instruction: str,
    images: Sequence[Any],
    histories: Sequence[Sequence[Action]],
    switches: PromptSwitches | None = None,
) -> ChatRequest:
    """One request for N drones: the frames in drone order, each labelled, after the text."""
    switches = switches or PromptSwitches()
    n = len(images)
    if n < 1 or len(histories) != n:
        raise ValueError(
            f"multi-drone call needs one history per image: {n} images, {len(histories)} histories"
        )
    system = multi_system(profile.point_fmt, n, switches)
    text = multi_user(instruction, [render_history(h, profile.point_order) for h in histories])
    parts: list[ContentPart] = [TextPart(text)]
    for i, image in enumerate(images, start=1):
        parts += [TextPart(f"Drone {i}:"), _image_part(image)]
    reply = ReplySpec(SchemaKind.MULTI, profile.point_order, switches.think, n_drones=n)
    return build_request(profile, system, tuple(parts), reply)


def decide_multi(
    backend: ModelBackend,
    profile: ModelProfile,
    instruction: str,
    images: Sequence[Any],
    histories: Sequence[Sequence[Action]],
    switches: PromptSwitches | None = None,
) -> MultiDecision:
    request = multi_request(profile, instruction, images, histories, switches)
    holds: tuple[Action | None, ...] = (None,) * len(images)
    try:
        completion = backend.complete(request)
    except BackendError as exc:
        return MultiDecision(holds, "", error=f"backend: {exc}")
    try:
        actions = request.reply.parse_multi(completion.text)
    except MalformedReply as exc:
        return MultiDecision(holds, completion.text, completion.stats, exc.reason)
    return MultiDecision(tuple(actions), completion.text, completion.stats)


def last_action_text(action: Action | None) -> str:
    return "none yet" if action is None else compact(action)


def commander_request(
    profile: ModelProfile,
    instruction: str,
    images: Sequence[Any],
    last_actions: Sequence[Action | None],
    map_image: Any | None = None,
) -> ChatRequest:
    """The commander's request: N labelled frames in drone order, then the optional map."""
    n = len(images)
    if n < 1 or len(last_actions) != n:
        raise ValueError(
            f"commander call needs one last action per image: {n} images, {len(last_actions)} actions"
        )
    system = commander_system(n)
    text = commander_user(instruction, [last_action_text(a) for a in last_actions], map_image is not None)
    parts: list[ContentPart] = [TextPart(text)]
    for i, image in enumerate(images, start=1):
        parts += [TextPart(f"Drone {i}:"), _image_part(image)]
    if map_image is not None:
        parts += [TextPart("Top-down map:"), _image_part(map_image)]
    return build_request(profile, system, tuple(parts), ReplySpec(SchemaKind.COMMANDER, n_drones=n))


def command(
    backend: ModelBackend,
    profile: ModelProfile,
    instruction: str,
    images: Sequence[Any],
    last_actions: Sequence[Action | None],
    map_image: Any | None = None,
) -> CommanderDecision:
    request = commander_request(profile, instruction, images, last_actions, map_image)
    try:
        completion = backend.complete(request)
    except BackendError as exc:
        return CommanderDecision(None, "", error=f"backend: {exc}")
    try:
        orders = request.reply.parse_orders(completion.text)
    except MalformedReply as exc:
        return CommanderDecision(None, completion.text, completion.stats, exc.reason)
    return CommanderDecision(tuple(o.order for o in orders), completion.text, completion.stats)


def profile_for_url(url: str) -> ModelProfile:
    """The URL's `profile=` (a built-in name or a file), else a plain profile serving `model=`."""
    from common.errors import ConfigError
    from models.backends.url import parse_backend_url
    from models.profile import load_profile

    parsed = parse_backend_url(url)
    profile_name = parsed.get_str("profile")
    if profile_name:
        return load_profile(profile_name)
    model = parsed.get_str("model")
    if not model and parsed.scheme in ("vllm", "trtllm"):
        model = parsed.location
    if not model:
        raise ConfigError(f"{url}: give ?profile=NAME or ?model=NAME")
    return ModelProfile(name="generic", served_model=model)


def model_pilot_from_url(url: str, switches: PromptSwitches | None = None) -> ModelPilot:
    """A ModelPilot on the backend at `url` (openai://, openais://, vllm://, trtllm://)."""
    from models.backends import open_backend

    profile = profile_for_url(url)
    return ModelPilot(open_backend(url), profile, switches)
