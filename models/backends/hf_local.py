"""`hf://MODEL_OR_DIR[?dtype=bfloat16&device=cuda&...]` — a Hugging Face transformers VLM in this process.

For a workstation GPU without a serving engine (the `hf` extra: transformers, torch, accelerate).
transformers and torch are imported in `load()` only, never at import time.

Parameters:
- `dtype` bfloat16 (default) | float16 | float32; `device` cuda (default) | cpu | cuda:N
- `random_init=1` builds the architecture from its config with random weights (no weight files):
  per-step timing does not depend on weight values, so this gives honest latency figures for a
  real architecture when its weights cannot be had; its replies are noise (mostly malformed) and
  say nothing about a trained model's quality. `config=DIR` names where config.json, the tokenizer
  and the processor files are when MODEL is not that directory.
- `new_tokens=N` forces exactly N output tokens (min = max), so a random model decodes as long
  as a real action would; default: the request's cap, stopping at end-of-sequence.
- `attn` the attention implementation (sdpa default, flash_attention_2, eager).

transformers has no schema-constrained decoding: the reply is not constrained to the schema, so
the parser's checks are the only ones (a malformed reply is a hold, as for any backend).
"""

from __future__ import annotations

import importlib
import logging
import time
from typing import TYPE_CHECKING, Any

from common.errors import BackendError, ConfigError
from models.backends.base import CallStats, Completion
from models.backends.images import decode_data_url, split_content

if TYPE_CHECKING:
    from models.backends.url import BackendURL
    from models.request import ChatRequest

logger = logging.getLogger(__name__)

PARAMS = frozenset({"profile", "dtype", "device", "random_init", "config", "new_tokens", "attn", "seed"})
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
    return HFBackend(
        url.location,
        dtype=dtype,
        device=url.get_str("device", "cuda") or "cuda",
        random_init=random_init in ("1", "true"),
        config_dir=url.get_str("config"),
        new_tokens=new_tokens or None,
        attn=url.get_str("attn", "sdpa") or "sdpa",
        seed=url.get_int("seed", 0),
    )


def import_hf() -> tuple[Any, Any]:
    try:
        return importlib.import_module("torch"), importlib.import_module("transformers")
    except ImportError as exc:
        raise BackendError(
            f"hf:// needs torch and transformers ({exc}); install the extra: pip install 'dronecats[hf]'"
        ) from None


def hf_messages(request: ChatRequest) -> tuple[list[dict[str, Any]], list[Any]]:
    """The request's messages in the transformers chat-template form ({"type": "image"} parts in
    place of the data URLs), and the images as RGB PIL images in the same order."""
    from PIL import Image

    messages: list[dict[str, Any]] = []
    images: list[Any] = []
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


class HFBackend:
    def __init__(
        self,
        model: str,
        dtype: str = "bfloat16",
        device: str = "cuda",
        random_init: bool = False,
        config_dir: str | None = None,
        new_tokens: int | None = None,
        attn: str = "sdpa",
        seed: int = 0,
    ) -> None:
        if not model:
            raise ConfigError("hf:// needs a model id or directory, e.g. hf:///models/qwen3.5-2b")
        self.model_id = model
        self.dtype = dtype
        self.device = device
        self.random_init = random_init
        self.config_dir = config_dir or model
        self.new_tokens = new_tokens
        self.attn = attn
        self.seed = seed
        self.name = f"hf:{model}" + (" (random weights)" if random_init else "")
        self._torch: Any = None
        self._model: Any = None
        self._processor: Any = None

    def load(self) -> None:
        """Build the processor and the model (slow). complete() calls this on first use."""
        if self._model is not None:
            return
        torch, transformers = import_hf()
        self._torch = torch
        dtype = getattr(torch, self.dtype)
        try:
            self._processor = transformers.AutoProcessor.from_pretrained(self.config_dir)
            auto = transformers.AutoModelForImageTextToText
            if self.random_init:
                torch.manual_seed(self.seed)
                config = transformers.AutoConfig.from_pretrained(self.config_dir)
                model = auto.from_config(config, torch_dtype=dtype, attn_implementation=self.attn)
            else:
                model = auto.from_pretrained(self.model_id, torch_dtype=dtype, attn_implementation=self.attn)
            self._model = model.to(self.device).eval()
        except Exception as exc:  # transformers raises OSError, ValueError, ImportError, CUDA errors ...
            raise BackendError(f"hf:// could not load {self.model_id}: {type(exc).__name__}: {exc}") from exc
        logger.info("loaded %s on %s (%s)", self.name, self.device, self.dtype)

    def complete(self, request: ChatRequest) -> Completion:
        self.load()
        torch = self._torch
        messages, images = hf_messages(request)
        template_kwargs = dict(request.extra_body.get("chat_template_kwargs") or {})
        started = time.perf_counter()
        try:
            text = self._processor.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False, **template_kwargs
            )
            inputs = self._processor(text=[text], images=images or None, return_tensors="pt").to(self.device)
            prompt_len = int(inputs["input_ids"].shape[1])
            with torch.inference_mode():
                output = self._model.generate(**inputs, **generate_kwargs(request, self.new_tokens))
            new = output[0, prompt_len:]
            reply = self._processor.decode(new, skip_special_tokens=True)
        except Exception as exc:
            raise BackendError(
                f"hf:// {self.model_id}: generation failed: {type(exc).__name__}: {exc}"
            ) from exc
        stats = CallStats(
            backend="hf",
            model=self.model_id,
            latency_s=time.perf_counter() - started,
            prompt_tokens=prompt_len,
            completion_tokens=int(new.shape[0]),
        )
        return Completion(text=reply, stats=stats)

    def close(self) -> None:
        self._model = None
        self._processor = None
