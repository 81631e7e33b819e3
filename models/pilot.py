"""Pilots: the Pilot interface (observation in, decision out) and the prompt-based ModelPilot
(prompt + backend + parser), plus the N-drone call and the commander call as library functions
that the ground station and the episode runner share.

A reply that cannot be used (backend error, malformed text) is never an exception here: it comes
back as a decision with `action=None` (the drone holds) and the reason (docs/protocol.md#malformed-replies).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import msgspec

from common.actions import Action, Think
from common.camera import CameraProfile
from common.capabilities import RandomWeights
from common.errors import BackendError, MalformedReply
from common.pose import LEVEL_CAMERA, CameraAttitude
from models.backends.base import CallStats, ModelBackend
from models.excerpt import logged_reply
from models.frames import encode_frame, encode_history_view
from models.identity import PromptIdentity
from models.pilot_prompt import CommanderPrompt, MultiDronePrompt, PilotPrompt
from models.profile import ModelProfile
from models.request import ChatRequest
from models.templates import PromptSwitches

Parsed = TypeVar("Parsed")


@dataclass(frozen=True)
class Observation:
    """What a pilot sees at one step.

    `image` is the current frame (BGR uint8, any size); `history` the executed actions, oldest
    first; `history_images` the views those actions were chosen from (visual history, optional).
    `delta_m` is the episode's arrival radius δ for pilots that judge arrival by a number; a model
    pilot judges it from the prompt and ignores it. `think` and `plan` tell a pilot without prompt
    switches of its own (the baseline, or any pilot behind serve-pilot) whether `think` is allowed
    and whether this reply must carry the plan fields; a ModelPilot follows its PromptSwitches.
    """

    image: Any
    instruction: str
    history: Sequence[Action] = ()
    history_images: Sequence[Any] = ()
    camera: CameraProfile | None = None
    delta_m: float | None = None
    think: bool = True
    plan: bool | None = None  # the reply must carry the plan fields; None: after a think (docs/protocol.md)
    # How the camera pointed when `image` was taken (a body-fixed camera pitches and rolls with the
    # drone): for pilots that reason about the image's geometry (the baseline); models see the image.
    camera_attitude: CameraAttitude = LEVEL_CAMERA
    # The pre-arm check's call: a server's first request may still warm up (graphs, caches), and
    # nothing flies on its answer, so it is given the longest of the step deadlines.
    prearm: bool = False

    @property
    def plan_step(self) -> bool:
        """True when the reply uses the plan schema: by default on the call after a think."""
        if self.plan is not None:
            return self.plan
        return self.think and bool(self.history) and isinstance(self.history[-1], Think)


class FailureKind(enum.Enum):
    """Why a decision carries no action: the backend failed (no reply: network, server, timeout) or
    the reply (or the pilot itself) gave nothing usable. The runtime counts and logs them apart."""

    BACKEND = "backend"
    MALFORMED = "malformed"


@dataclass(frozen=True)
class Decision:
    """A pilot's answer: the parsed action (None when the reply was malformed, i.e. a hold),
    the raw text, why it was malformed (`error`, for people; `failure`, its kind, for code), and the
    call's measurements."""

    action: Action | None
    raw: str
    stats: CallStats | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Seconds of the pilot's own work around the model call, when it measures them: building the
    # request (frame encoding, prompt) and parsing the reply. The runtime logs them as stages.
    preprocess_s: float | None = None
    parse_s: float | None = None
    failure: FailureKind | None = None  # None with an action; None without one reads as MALFORMED

    @property
    def logged_raw(self) -> str:
        """`raw` as logs and the link carry it (models.excerpt): a valid short reply whole, any other
        as its bounded excerpt."""
        return logged_reply(self.raw, usable=self.action is not None)

    @property
    def failure_kind(self) -> FailureKind | None:
        """None when the decision has an action, else why not (MALFORMED unless the pilot said)."""
        if self.action is not None:
            return None
        return self.failure or FailureKind.MALFORMED


@runtime_checkable
class Pilot(Protocol):
    name: str

    def decide(self, observation: Observation) -> Decision: ...

    def identity(self) -> PromptIdentity | None:
        """The prompt identity (prompt file hashes, profile, switches); None for a pilot without
        prompts (the baseline). Recorded with every run."""
        ...

    def canonical_focal_px(self, camera: CameraProfile) -> float | None:
        """f_c at `camera`'s width when the pilot's depths are in a canonical camera (a model
        profile's depth convention), else None (metric depth)."""
        ...

    def close(self) -> None: ...


# ---- the prompt-based model pilot ----------------------------------------------------------------


@dataclass(frozen=True)
class StepDeadlines:
    """How old a reply may be before the runtime discards it (its staleness bounds): the model call
    is cut there too, so a slow server never holds a step longer than its reply would be worth."""

    action_s: float
    plan_s: float

    def for_observation(self, observation: Observation) -> float:
        if observation.prearm:
            return max(self.plan_s, self.action_s)
        return self.plan_s if observation.plan_step else self.action_s


class ModelPilot:
    """prompt + backend + parser: models.pilot_prompt builds the request (its system message is
    built once, byte-identical every call), the backend answers, the request's ReplySpec parses."""

    def __init__(
        self,
        backend: ModelBackend,
        profile: ModelProfile,
        switches: PromptSwitches | None = None,
        name: str | None = None,
        deadlines: StepDeadlines | None = None,
    ) -> None:
        self.backend = backend
        self.deadlines = deadlines  # None: the backend's own bound on each call
        self.prompt = PilotPrompt(profile, switches)
        self.name = name or f"model:{profile.name}"
        if isinstance(backend, RandomWeights) and backend.random_init and "RANDOM WEIGHTS" not in self.name:
            self.name += " [RANDOM WEIGHTS: timing only]"  # never mistaken for a trained pilot

    @property
    def profile(self) -> ModelProfile:
        return self.prompt.profile

    def identity(self) -> PromptIdentity:
        return self.prompt.identity()

    def canonical_focal_px(self, camera: CameraProfile) -> float | None:
        depth = self.profile.depth
        if depth.convention != "canonical":
            return None
        assert depth.canonical_focal_px is not None and depth.canonical_width_px is not None
        return float(depth.canonical_focal_px * camera.width_px / depth.canonical_width_px)

    def build_request(self, observation: Observation) -> ChatRequest:
        history = list(observation.history)
        views: list[bytes | None] = []
        if self.prompt.switches.visual_history:
            views = [encode_history_view(image).jpeg for image in observation.history_images]
        request = self.prompt.request(
            observation.instruction,
            history,
            encode_frame(observation.image),
            previous_was_think=observation.plan,
            history_views=views,
        )
        if self.deadlines is None:
            return request
        return msgspec.structs.replace(request, deadline_s=self.deadlines.for_observation(observation))

    def decide(self, observation: Observation) -> Decision:
        t0 = time.perf_counter()
        request = self.build_request(observation)
        preprocess_s = time.perf_counter() - t0
        try:
            completion = self.backend.complete(request)
        except BackendError as exc:
            return Decision(
                action=None,
                raw="",
                error=f"backend: {exc}",
                preprocess_s=preprocess_s,
                failure=FailureKind.BACKEND,
            )
        t2 = time.perf_counter()
        try:
            action = self.prompt.parse(completion.text, request)
        except MalformedReply as exc:
            return Decision(
                action=None,
                raw=completion.text,
                stats=completion.stats,
                error=exc.reason,
                preprocess_s=preprocess_s,
                parse_s=time.perf_counter() - t2,
                failure=FailureKind.MALFORMED,
            )
        return Decision(
            action=action,
            raw=completion.text,
            stats=completion.stats,
            preprocess_s=preprocess_s,
            parse_s=time.perf_counter() - t2,
        )

    def close(self) -> None:
        self.backend.close()


# ---- several drones in one context, and the commander (docs/protocol.md#several-drones) ----------------


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


@dataclass(frozen=True)
class _Reply(Generic[Parsed]):
    """One model call of the N-drone and commander calls: the parsed reply, or None and why not."""

    parsed: Parsed | None
    raw: str
    stats: CallStats | None = None
    error: str | None = None


def _ask(
    backend: ModelBackend, request: ChatRequest, parse: Callable[[str, ChatRequest], Parsed]
) -> _Reply[Parsed]:
    """Send `request` and parse the reply; a backend error or a malformed reply is the error."""
    try:
        completion = backend.complete(request)
    except BackendError as exc:
        return _Reply(None, "", error=f"backend: {exc}")
    try:
        parsed = parse(completion.text, request)
    except MalformedReply as exc:
        return _Reply(None, completion.text, completion.stats, exc.reason)
    return _Reply(parsed, completion.text, completion.stats)


def decide_multi(
    backend: ModelBackend,
    prompt: MultiDronePrompt,
    instruction: str,
    images: Sequence[Any],
    histories: Sequence[Sequence[Action]],
) -> MultiDecision:
    """One call for N drones: the frames in drone order, N actions back (all holds if malformed)."""
    request = prompt.request(instruction, histories, [encode_frame(image) for image in images])
    reply = _ask(backend, request, prompt.parse)
    if reply.parsed is None:
        return MultiDecision((None,) * prompt.n_drones, reply.raw, reply.stats, reply.error)
    return MultiDecision(tuple(reply.parsed), reply.raw, reply.stats)


def command(
    backend: ModelBackend,
    prompt: CommanderPrompt,
    instruction: str,
    images: Sequence[Any],
    last_actions: Sequence[Action | None],
    map_image: Any | None = None,
) -> CommanderDecision:
    """The commander call: N frames, each sub-agent's last action, optional map -> one order each."""
    frames = [encode_frame(image) for image in images]
    request = prompt.request(
        instruction, last_actions, frames, encode_frame(map_image) if map_image is not None else None
    )
    reply = _ask(backend, request, prompt.parse)
    if reply.parsed is None:
        return CommanderDecision(None, reply.raw, reply.stats, reply.error)
    return CommanderDecision(tuple(o.order for o in reply.parsed), reply.raw, reply.stats)


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


def model_pilot_from_url(
    url: str, switches: PromptSwitches | None = None, deadlines: StepDeadlines | None = None
) -> ModelPilot:
    """A ModelPilot on the backend at `url` (openai://, openais://, vllm://, trtllm://)."""
    from models.backends import open_backend

    profile = profile_for_url(url)
    return ModelPilot(open_backend(url), profile, switches, deadlines=deadlines)
