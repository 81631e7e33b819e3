"""Model profiles: everything about one served model that the pilot protocol needs, as data.

A profile is a YAML file under models/profiles/ (or any path): served model name, point order,
decoding settings, how to turn extended reasoning off, depth convention, output caps per schema.

    profile = load_profile("qwen3.5-2b", overrides=["decoding.temperature=0.2"])
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import msgspec

from common.config import load_config
from common.errors import ConfigError

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"


class Decoding(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Sampling settings; a field left null is not sent (some APIs reject e.g. temperature)."""

    temperature: float | None = 0.4
    top_p: float | None = None
    top_k: int | None = None  # not an OpenAI field; vLLM and trtllm-serve accept it
    repetition_penalty: float | None = None
    seed: int | None = None


class ThinkingOff(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How a request keeps extended reasoning at the lowest level the backend allows
    (docs/protocol.md#think-and-the-plan-schema).

    - chat_template_kwargs: {"chat_template_kwargs": {"enable_thinking": false}} (Qwen3/3.5 on vLLM)
    - reasoning_effort: {"reasoning_effort": <reasoning_effort>} (hosted reasoning models)
    - none: the model does not reason unless asked; nothing is sent
    """

    mechanism: Literal["chat_template_kwargs", "reasoning_effort", "none"] = "none"
    reasoning_effort: str = "minimal"

    def body(self) -> dict[str, Any]:
        if self.mechanism == "chat_template_kwargs":
            return {"chat_template_kwargs": {"enable_thinking": False}}
        if self.mechanism == "reasoning_effort":
            return {"reasoning_effort": self.reasoning_effort}
        return {}


class DepthConvention(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Metric planar depth, or depth in a canonical camera of focal length f_c
    (docs/controller.md#the-camera-model).

    A focal length in pixels only means something at a given image width, so f_c comes with the
    width it is measured at (`canonical_width_px`); `scale` converts the real camera's fx to that
    width first. With the same width on both sides this is exactly the controller's d·fx/f_c.
    """

    convention: Literal["metric", "canonical"] = "metric"
    canonical_focal_px: float | None = None
    canonical_width_px: int | None = None

    def __post_init__(self) -> None:
        if self.convention == "canonical":
            if not (self.canonical_focal_px and self.canonical_focal_px > 0):
                raise ConfigError(
                    f"canonical depth needs canonical_focal_px > 0, got {self.canonical_focal_px}"
                )
            if not (self.canonical_width_px and self.canonical_width_px > 0):
                raise ConfigError(
                    f"canonical depth needs canonical_width_px > 0, got {self.canonical_width_px}"
                )

    def scale(self, fx_px: float, width_px: int) -> float:
        """Factor from the model's depth to metric planar depth, for a camera (fx_px, width_px)."""
        if self.convention != "canonical" or not self.canonical_focal_px or not self.canonical_width_px:
            return 1.0
        fx_at_canonical_width = fx_px * self.canonical_width_px / width_px
        return fx_at_canonical_width / self.canonical_focal_px


class MaxTokens(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Output caps per schema (docs/protocol.md#the-reply-format); multi is per drone, times N."""

    action: int = 64
    plan: int = 768
    multi_per_drone: int = 64
    commander: int = 512

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            if getattr(self, name) < 1:
                raise ConfigError(f"max_tokens.{name}={getattr(self, name)} must be >= 1")


class ModelProfile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    served_model: str  # the `model` field of a request (vLLM --served-model-name, or the API id)
    point_order: Literal["xy", "yx"] = "xy"
    decoding: Decoding = Decoding()
    thinking_off: ThinkingOff = ThinkingOff()
    depth: DepthConvention = DepthConvention()
    max_tokens: MaxTokens = MaxTokens()
    # Hosted reasoning models take `max_completion_tokens`; most servers take `max_tokens`.
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    # False for APIs whose strict mode rejects maxLength/minLength (OpenAI lists none for strings);
    # the parser still enforces the limits.
    schema_string_lengths: bool = True
    description: str = ""

    @property
    def point_fmt(self) -> str:
        return "[x, y]" if self.point_order == "xy" else "[y, x]"


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def resolve_profile_path(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".toml") or path.exists():
        if not path.is_file():
            raise ConfigError(f"model profile file {path} does not exist")
        return path
    builtin = PROFILES_DIR / f"{name_or_path}.yaml"
    if not builtin.is_file():
        raise ConfigError(f"unknown model profile {name_or_path!r}; built-in: {', '.join(profile_names())}")
    return builtin


def load_profile(name_or_path: str | Path, overrides: Iterable[str] = ()) -> ModelProfile:
    """A built-in profile by name (e.g. "qwen3.5-2b") or a YAML/TOML file, with dotted overrides."""
    return load_config(ModelProfile, resolve_profile_path(name_or_path), overrides)
