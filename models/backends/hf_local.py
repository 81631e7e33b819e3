"""`hf://MODEL_OR_DIR[?dtype=bfloat16&device=cuda&...]` — a Hugging Face transformers VLM in this process.

For a workstation GPU without a serving engine (the `hf` extra: transformers, torch, xgrammar).
transformers and torch are imported in `load()` only, never at import time. Nothing is
downloaded: MODEL is a local directory (or already in the local Hugging Face cache).

Parameters:
- `dtype` bfloat16 (default) | float16 | float32; `device` cuda (default) | cpu | cuda:N
- `random_init=1` builds the architecture from its config with RANDOM WEIGHTS (no weight files):
  per-step timing does not depend on weight values, so this gives honest latency figures for a
  real architecture when its weights cannot be had; its replies are noise and say nothing about
  a trained model's quality. MODEL may then be one of models.random_init's architectures
  (`hf://qwen3.5-2b?random_init=1`): its config, a tokenizer trained here and the image
  processor are built on first use, with no files from anywhere. `config=DIR` names where
  config.json, the tokenizer and the processor files are when MODEL is not that directory.
- `constrained=1` (the default): the reply is constrained to the request's JSON schema by
  xgrammar's logits processor (models.backends.hf_grammar), the grammar compiled once per schema
  and bounded so that the reply ends within the output cap: every reply parses, even a random
  model's. `constrained=0` leaves the parser's checks as the only ones.
- `new_tokens=N` forces exactly N output tokens (min = max), for unconstrained timing (a random
  model then decodes as long as a real action would); it implies `constrained=0`, since with a
  grammar the grammar decides where a reply ends.
- `attn` the attention implementation (sdpa default, flash_attention_2, eager).

`last_timing` holds the last call's stages (input preparation, time to first token, decode).
"""

from __future__ import annotations

import importlib
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from common.errors import BackendError, ConfigError
from models.backends.base import CallStats, Completion
from models.backends.images import decode_data_url, split_content

if TYPE_CHECKING:
    from types import ModuleType

    import PIL.Image
    import torch

    from models.backends.hf_grammar import GrammarCache
    from models.backends.url import BackendURL
    from models.request import ChatRequest

logger = logging.getLogger(__name__)

PARAMS = frozenset(
    {"profile", "dtype", "device", "random_init", "config", "new_tokens", "attn", "seed", "constrained"}
)
DTYPES = ("bfloat16", "float16", "float32")


def open_hf(url: BackendURL) -> HFBackend:
    unknown = set(url.params) - PARAMS
    if unknown:
        raise ConfigError(f"hf:// parameters {sorted(unknown)} unknown; known: {sorted(PARAMS)}")
    dtype = url.get_str("dtype", "bfloat16") or "bfloat16"
    if dtype not in DTYPES:
        raise ConfigError(f"hf:// dtype={dtype!r} must be one of {DTYPES}")
    random_init = (url.get_str("random_init", "0") or "0").lower()
    if random_init not in ("0", "1", "true", "false"):
        raise ConfigError(f"hf:// random_init={random_init!r} must be 0/1/true/false")
    new_tokens = url.get_int("new_tokens", 0, minimum=0)
    constrained_raw = (url.get_str("constrained") or "").lower()
    if constrained_raw not in ("", "0", "1", "true", "false"):
        raise ConfigError(f"hf:// constrained={constrained_raw!r} must be 0/1/true/false")
    if constrained_raw in ("1", "true") and new_tokens:
        raise ConfigError("hf:// new_tokens= forces a reply length, which a grammar can't: use constrained=0")
    constrained = constrained_raw in ("1", "true") or (not constrained_raw and not new_tokens)
    return HFBackend(
        url.location,
        dtype=dtype,
        device=url.get_str("device", "cuda") or "cuda",
        random_init=random_init in ("1", "true"),
        config_dir=url.get_str("config"),
        new_tokens=new_tokens or None,
        attn=url.get_str("attn", "sdpa") or "sdpa",
        seed=url.get_int("seed", 0),
        constrained=constrained,
    )


def import_hf() -> tuple[ModuleType, ModuleType]:
    try:
        return importlib.import_module("torch"), importlib.import_module("transformers")
    except ImportError as exc:
        raise BackendError(
            f"hf:// needs torch and transformers ({exc}); install the extra: pip install 'dronecats[hf]'"
        ) from None


def hf_messages(request: ChatRequest) -> tuple[list[dict[str, Any]], list[PIL.Image.Image]]:
    """The request's messages in the transformers chat-template form ({"type": "image"} parts in
    place of the data URLs), and the images as RGB PIL images in the same order."""
    from PIL import Image

    messages: list[dict[str, Any]] = []
    images: list[PIL.Image.Image] = []
    for message in request.messages():
        content = message["content"]
        if isinstance(content, str):
            messages.append({"role": message["role"], "content": [{"type": "text", "text": content}]})
            continue
        parts: list[dict[str, Any]] = []
        for part in content:
            if part.get("type") == "image_url":
                _, urls = split_content({"content": [part]})
                for url in urls:
                    images.append(Image.fromarray(decode_data_url(url)[:, :, ::-1].copy()))
                    parts.append({"type": "image"})
            elif part.get("type") == "text":
                parts.append({"type": "text", "text": part["text"]})
        messages.append({"role": message["role"], "content": parts})
    return messages, images


def generate_kwargs(request: ChatRequest, new_tokens: int | None) -> dict[str, Any]:
    """model.generate keywords from the request's decoding settings and output cap."""
    decoding = request.decoding
    out: dict[str, Any] = {"max_new_tokens": new_tokens or request.max_tokens}
    if new_tokens:
        out["min_new_tokens"] = new_tokens
    temperature = decoding.temperature
    if temperature is not None and temperature > 0:
        out.update(do_sample=True, temperature=temperature)
        if decoding.top_p is not None:
            out["top_p"] = decoding.top_p
        if decoding.top_k is not None:
            out["top_k"] = decoding.top_k
    else:
        out["do_sample"] = False
    if decoding.repetition_penalty is not None:
        out["repetition_penalty"] = decoding.repetition_penalty
    return out


class TokenClock:
    """A logits processor that only notes when each token's logits are ready: the first call
    comes right after the prefill (time to first token), the rest once per decoded token."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.times.append(time.perf_counter())
        return scores


class HFTiming(msgspec.Struct):
    """One call's stages, in seconds: inputs (chat template, image processor, tokenizer), time
    to the first token's logits (vision tower + prefill), decode (the rest), and the counts."""

    inputs_s: float
    ttft_s: float | None
    decode_s: float
    prompt_tokens: int
    new_tokens: int
    image_tokens: int
    constrained: bool


@dataclass(eq=False)
class HFBackend:
    """hf://'s settings (open_hf checks them), and the model they load on first use."""

    model_id: str
    dtype: str = "bfloat16"
    device: str = "cuda"
    random_init: bool = False
    config_dir: str | None = None
    new_tokens: int | None = None
    attn: str = "sdpa"
    seed: int = 0
    constrained: bool = True

    def __post_init__(self) -> None:
        if not self.model_id:
            raise ConfigError("hf:// needs a model id or directory, e.g. hf:///models/qwen3.5-2b")
        self.name = f"hf:{self.model_id}" + (" (RANDOM WEIGHTS, timing only)" if self.random_init else "")
        self._torch: Any = None
        self._model: Any = None
        self._inputs: Any = None
        self._grammars: GrammarCache | None = None
        self._stop_ids: list[int] = []
        self.last_timing: HFTiming | None = None

    def _resolve_dir(self) -> str:
        """Where config, tokenizer and processor are: config=, a random-init architecture, MODEL."""
        if self.config_dir:
            return self.config_dir
        from models.random_init.build import ARCHITECTURES, build_model_dir

        if self.random_init and self.model_id in ARCHITECTURES:
            return str(build_model_dir(self.model_id))
        if self.random_init and not Path(self.model_id).is_dir():
            raise ConfigError(
                f"hf://{self.model_id}?random_init=1: neither a directory nor a built-in architecture "
                f"({', '.join(ARCHITECTURES)})"
            )
        return self.model_id

    def load(self) -> None:
        """Build the processor and the model (slow). complete() calls this on first use."""
        if self._model is not None:
            return
        torch, transformers = import_hf()
        self._torch = torch
        dtype = getattr(torch, self.dtype)
        from models.backends.hf_inputs import ProcessorInputs, VLInputs
        from models.random_init.build import is_random_weights_dir

        try:
            config_dir = self._resolve_dir()
            if is_random_weights_dir(config_dir):
                self._inputs = VLInputs.from_dir(config_dir)
            else:
                self._inputs = ProcessorInputs(
                    transformers.AutoProcessor.from_pretrained(config_dir, local_files_only=True)
                )
            auto = transformers.AutoModelForImageTextToText
            if self.random_init:
                torch.manual_seed(self.seed)
                config = transformers.AutoConfig.from_pretrained(config_dir, local_files_only=True)
                # Initialised where it runs: a 2B model's random init on the host takes a minute.
                with torch.device(self.device):
                    model = auto.from_config(config, dtype=dtype, attn_implementation=self.attn)
            else:
                model = auto.from_pretrained(
                    self.model_id, dtype=dtype, attn_implementation=self.attn, local_files_only=True
                )
            self._model = model.to(self.device).eval()
            tokenizer = self._inputs.tokenizer
            self._stop_ids = sorted(
                {
                    int(i)
                    for i in (tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>"))
                    if i is not None and i != tokenizer.unk_token_id
                }
                | ({int(tokenizer.eos_token_id)} if tokenizer.eos_token_id is not None else set())
            )
            if self.constrained:
                from models.backends.hf_grammar import GrammarCache

                vocab_size = int(self._model.get_output_embeddings().weight.shape[0])
                self._grammars = GrammarCache(tokenizer, vocab_size, self._stop_ids)
        except ConfigError:
            raise
        except ImportError as exc:
            raise BackendError(
                f"hf:// {self.model_id}: {exc}; install the extra: pip install 'dronecats[hf]'"
            ) from exc
        except Exception as exc:  # transformers raises OSError, ValueError, ImportError, CUDA errors ...
            first_line = (str(exc).strip().splitlines() or [""])[0]
            raise BackendError(
                f"hf:// could not load {self.model_id}: {type(exc).__name__}: {first_line}"
            ) from exc
        if self.random_init:
            logger.warning(
                "%s: its replies are noise%s",
                self.name,
                " (constrained to the schema, so they parse)" if self.constrained else "",
            )
        logger.info("loaded %s on %s (%s)", self.name, self.device, self.dtype)

    def complete(self, request: ChatRequest) -> Completion:
        self.load()
        torch = self._torch
        messages, images = hf_messages(request)
        template_kwargs = dict(request.extra_body.get("chat_template_kwargs") or {})
        started = time.perf_counter()
        try:
            kwargs = generate_kwargs(request, self.new_tokens)
            clock = TokenClock()
            processors: list[Any] = []
            if self._grammars is not None:
                compiled, limit = self._grammars.get(request.reply.schema, request.max_tokens)
                kwargs["max_new_tokens"] = limit
                processors.append(self._grammars.logits_processor(compiled))
            processors.append(clock)
            text = self._inputs.apply_chat_template(messages, add_generation_prompt=True, **template_kwargs)
            inputs = self._inputs(text, images)
            inputs = {k: v.to(self.device) if hasattr(v, "to") else v for k, v in inputs.items()}
            prompt_len = int(inputs["input_ids"].shape[1])
            t_inputs = time.perf_counter()
            with torch.inference_mode():
                output = self._model.generate(
                    **inputs,
                    **kwargs,
                    logits_processor=processors,
                    eos_token_id=self._stop_ids or None,
                    pad_token_id=self._stop_ids[0] if self._stop_ids else None,
                )
            t_done = time.perf_counter()
            new = output[0, prompt_len:]
            ended = bool(new.shape[0]) and int(new[-1]) in self._stop_ids
            reply = self._inputs.decode(new)
        except Exception as exc:
            raise BackendError(
                f"hf:// {self.model_id}: generation failed: {type(exc).__name__}: {exc}"
            ) from exc
        image_token = getattr(self._inputs, "image_token_id", None)
        self.last_timing = HFTiming(
            inputs_s=t_inputs - started,
            ttft_s=clock.times[0] - t_inputs if clock.times else None,
            decode_s=t_done - (clock.times[0] if clock.times else t_inputs),
            prompt_tokens=prompt_len,
            new_tokens=int(new.shape[0]),
            image_tokens=int((inputs["input_ids"] == image_token).sum()) if image_token is not None else 0,
            constrained=self._grammars is not None,
        )
        stats = CallStats(
            backend="hf",
            model=self.model_id + (" (random weights)" if self.random_init else ""),
            latency_s=t_done - started,
            prompt_tokens=prompt_len,
            completion_tokens=int(new.shape[0]),
            finish_reason="stop" if ended else "length",
        )
        return Completion(text=reply, stats=stats)

    def sibling(self, new_tokens: int | None) -> HFBackend:
        """A backend on this one's loaded model (no second copy in memory) that decodes exactly
        `new_tokens` unconstrained, or with None constrained as this one does: for benchmarks
        that compare the two."""
        self.load()
        constrained = new_tokens is None and self.constrained
        other = replace(self, new_tokens=new_tokens, constrained=constrained)  # not loaded: takes this one's
        other._torch, other._model, other._inputs = self._torch, self._model, self._inputs
        other._stop_ids = self._stop_ids
        other._grammars = self._grammars if other.constrained else None
        return other

    def close(self) -> None:
        self._model = None
        self._inputs = None
        self._grammars = None
