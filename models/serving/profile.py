"""Serving profiles: how to start an engine (vLLM or trtllm-serve) for one model on one board, as data.

A serving profile names a model profile (models/profiles/NAME.yaml: served model name, point order,
thinking-off mechanism), a checkpoint (a directory under the weights volume, or a Hugging Face id),
its precision, and the engine limits that suit one drone asking about one 640-wide frame per step
(docs/howto/jetson.md). models.serving.command renders the limits into `vllm serve` or `trtllm-serve`
arguments; `verified_on_hardware` lists the flags that were checked on a real board (none yet).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from common.config import load_config
from common.errors import ConfigError

SERVING_DIR = Path(__file__).resolve().parent / "profiles"

Engine = Literal["vllm", "trtllm"]
# Prompt (system + schema ≈ 1k tokens) + one frame (≈ 180-300 image tokens) + a plan reply (768)
# fits well inside 4k; more than 8k only buys KV-cache memory the Jetson does not have.
MIN_MODEL_LEN = 4096
MAX_MODEL_LEN = 8192


class EngineLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    max_model_len: int = 6144
    # vLLM: fraction of (unified) memory the engine may take, weights + KV cache. A 16 GB Orin NX
    # also holds the OS, the onboard runtime and the camera buffers.
    gpu_memory_fraction: float = 0.45
    # trtllm-serve sizes its KV cache from the memory left after the weights instead.
    kv_cache_free_memory_fraction: float = 0.3
    max_num_seqs: int = 1  # one drone, one request at a time
    images_per_prompt: int = 1  # 6 with visual history (docs/protocol.md#think-and-the-plan-schema)
    max_pixels: int = 640 * 360  # a 640-wide 16:9 frame, as models.frames sends it
    prefix_caching: bool = True
    structured_output_backend: Literal["xgrammar", "guidance"] = "xgrammar"
    mm_processor_cache_gb: float = 0.0  # only helps repeated identical images; costs shared RAM

    def __post_init__(self) -> None:
        if not MIN_MODEL_LEN <= self.max_model_len <= MAX_MODEL_LEN:
            raise ConfigError(
                f"limits.max_model_len={self.max_model_len} outside {MIN_MODEL_LEN}-{MAX_MODEL_LEN}"
            )
        for name in ("gpu_memory_fraction", "kv_cache_free_memory_fraction"):
            value = getattr(self, name)
            if not 0.05 <= value <= 0.95:
                raise ConfigError(f"limits.{name}={value} outside 0.05-0.95")
        if self.max_num_seqs < 1 or self.images_per_prompt < 1:
            raise ConfigError(
                f"limits.max_num_seqs={self.max_num_seqs} and images_per_prompt={self.images_per_prompt} "
                "must be >= 1"
            )
        if self.max_pixels < 28 * 28:
            raise ConfigError(f"limits.max_pixels={self.max_pixels} is below one 28x28 patch")
        if self.mm_processor_cache_gb < 0:
            raise ConfigError(f"limits.mm_processor_cache_gb={self.mm_processor_cache_gb} must be >= 0")


class ServingProfile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    model_profile: str  # models/profiles/<model_profile>.yaml: served name, thinking off, point order
    checkpoint: str  # relative: under the weights directory (DRONECATS_WEIGHTS); else a path or HF id
    precision: Literal["bf16", "fp16", "w4a16", "awq", "nvfp4"]
    engines: tuple[Engine, ...] = ("vllm",)
    hardware: tuple[str, ...] = ()  # boards this profile is sized for, e.g. "orin-nx-16gb"
    dtype: Literal["bfloat16", "float16", "auto"] = "bfloat16"
    # vLLM's --quantization; None lets vLLM read it from the checkpoint's config (compressed-tensors,
    # modelopt). trtllm-serve always reads it from the checkpoint.
    quantization: str | None = None
    trust_remote_code: bool = False
    limits: EngineLimits = EngineLimits()
    vllm_extra_args: tuple[str, ...] = ()
    trtllm_extra_args: tuple[str, ...] = ()
    trtllm_backend: Literal["pytorch", "tensorrt"] = "pytorch"
    # Flags (as rendered, e.g. "--max-model-len") that someone ran on real hardware with this profile.
    verified_on_hardware: tuple[str, ...] = ()
    description: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.engines:
            raise ConfigError(f"serving profile {self.name}: engines must name vllm and/or trtllm")
        if self.precision == "nvfp4" and any(h.startswith("orin") for h in self.hardware):
            raise ConfigError(f"serving profile {self.name}: NVFP4 needs Thor (Blackwell); Orin has no FP4")

    def default_engine(self) -> Engine:
        return self.engines[0]

    def checkpoint_path(self, weights_dir: str | Path | None) -> str:
        """The model argument of the engine: `checkpoint` under `weights_dir` when it is relative."""
        path = Path(self.checkpoint)
        if path.is_absolute() or weights_dir is None:
            return self.checkpoint
        return str(Path(weights_dir) / path)


def serving_profile_names() -> list[str]:
    return sorted(p.stem for p in SERVING_DIR.glob("*.yaml"))


def load_serving_profile(name_or_path: str | Path, overrides: Iterable[str] = ()) -> ServingProfile:
    """A built-in serving profile by name (models/serving/profiles/NAME.yaml) or a YAML/TOML file."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml", ".toml"):
        path = SERVING_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            raise ConfigError(
                f"unknown serving profile {name_or_path!r}; built-in: {', '.join(serving_profile_names())}"
            )
    return load_config(ServingProfile, path, overrides)
