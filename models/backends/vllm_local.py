"""`vllm://MODEL[?dtype=..&max_model_len=..]` — vLLM in this process (`vllm.LLM`, the `vllm` extra).

The same OpenAI-format messages go to `LLM.chat`; the schema is enforced with vLLM's structured
outputs: `StructuredOutputsParams` (vLLM ≥ 0.11) or `GuidedDecodingParams` (older), chosen by what
the installed version provides. vLLM is imported only in `load()`, never at import time.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from common.errors import BackendError, ConfigError
from models.backends.base import CallStats, Completion

if TYPE_CHECKING:
    from types import ModuleType

    import tensorrt_llm
    import vllm

    from models.request import ChatRequest

logger = logging.getLogger(__name__)

# URL parameters passed to vllm.LLM(...), with their types. Unknown parameters are refused.
ENGINE_PARAMS: dict[str, type] = {
    "dtype": str,
    "quantization": str,
    "max_model_len": int,
    "gpu_memory_utilization": float,
    "max_num_seqs": int,
    "tensor_parallel_size": int,
    "enforce_eager": bool,
    "enable_prefix_caching": bool,
    "trust_remote_code": bool,
    "mm_processor_cache_gb": float,
    "seed": int,
}
# Engine settings that suit one drone asking about one frame per step (docs/howto/jetson.md).
ENGINE_DEFAULTS: dict[str, Any] = {
    "max_num_seqs": 1,
    "max_model_len": 8192,
    "enable_prefix_caching": True,
    "limit_mm_per_prompt": {"image": 1},
}


def engine_kwargs(params: dict[str, str]) -> dict[str, Any]:
    """Typed vllm.LLM keyword arguments from URL parameters, on top of ENGINE_DEFAULTS."""
    out = dict(ENGINE_DEFAULTS)
    for key, raw in params.items():
        if key in ("profile", "images"):
            continue
        kind = ENGINE_PARAMS.get(key)
        if kind is None:
            raise ConfigError(f"vllm:// parameter {key!r} is not one of {sorted(ENGINE_PARAMS)}")
        try:
            if kind is bool:
                if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise ValueError(raw)
                out[key] = raw.lower() in ("1", "true", "yes")
            else:
                out[key] = kind(raw)
        except ValueError:
            raise ConfigError(f"vllm:// parameter {key}={raw!r} is not a valid {kind.__name__}") from None
    if "images" in params:
        out["limit_mm_per_prompt"] = {"image": int(params["images"])}
    return out


def import_engine(scheme: str, package: str, how_to_get_it: str) -> ModuleType:
    """An in-process engine's package, or one BackendError: what `scheme://` needs and how to get it."""
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        raise BackendError(f"{scheme}:// needs the `{package}` package ({exc}); {how_to_get_it}") from None


def import_vllm() -> ModuleType:
    return import_engine("vllm", "vllm", "install the GPU extra: pip install 'dronecats[vllm]'")


def structured_output_kwargs(vllm_module: ModuleType, schema: dict[str, Any]) -> dict[str, Any]:
    """The SamplingParams keyword that constrains the reply to `schema` on this vLLM version."""
    sampling = importlib.import_module(f"{vllm_module.__name__}.sampling_params")
    if hasattr(sampling, "StructuredOutputsParams"):
        return {"structured_outputs": sampling.StructuredOutputsParams(json=schema)}
    if hasattr(sampling, "GuidedDecodingParams"):
        return {"guided_decoding": sampling.GuidedDecodingParams(json=schema)}
    raise BackendError(
        f"vllm {getattr(vllm_module, '__version__', '?')} offers neither StructuredOutputsParams nor "
        "GuidedDecodingParams: cannot constrain replies to the schema"
    )


def sampling_kwargs(request: ChatRequest) -> dict[str, Any]:
    """SamplingParams keywords from the request's decoding settings and output cap."""
    out: dict[str, Any] = {"max_tokens": request.max_tokens, "n": 1}
    for key, value in msgspec.structs.asdict(request.decoding).items():
        if value is not None:
            out[key] = value
    return out


def chat_kwargs(request: ChatRequest) -> dict[str, Any]:
    """LLM.chat keywords from the request's engine fields (e.g. the thinking-off template switch)."""
    out: dict[str, Any] = {}
    template_kwargs = request.extra_body.get("chat_template_kwargs")
    if template_kwargs:
        out["chat_template_kwargs"] = dict(template_kwargs)
    return out


class VLLMBackend:
    def __init__(self, model: str, **engine: object) -> None:
        if not model:
            raise ConfigError("vllm:// needs a model id or path, e.g. vllm://Qwen/Qwen3-VL-2B-Instruct")
        self.model = model
        self.engine = engine or dict(ENGINE_DEFAULTS)
        self.name = f"vllm:{model}"
        self._vllm: Any = None
        self._llm: Any = None

    def load(self) -> None:
        """Load the weights (slow: seconds to minutes). complete() calls this on first use."""
        if self._llm is None:
            logger.info("loading %s in-process with %s", self.model, self.engine)
            self._vllm, self._llm = load_llm(import_vllm, "vllm", self.model, self.engine)

    def sampling_params(self, request: ChatRequest) -> vllm.SamplingParams:
        self.load()
        kwargs = sampling_kwargs(request)
        kwargs.update(structured_output_kwargs(self._vllm, request.reply.schema))
        return self._vllm.SamplingParams(**kwargs)

    def complete(self, request: ChatRequest) -> Completion:
        params = self.sampling_params(request)
        started = time.perf_counter()
        with engine_errors(f"vllm {self.model}: generation failed"):
            outputs = self._llm.chat(
                request.messages(), sampling_params=params, use_tqdm=False, **chat_kwargs(request)
            )
        return completion_from_request_output(outputs, "vllm", self.model, time.perf_counter() - started)

    def close(self) -> None:
        self._llm = None


def load_llm(
    import_engine: Callable[[], ModuleType], label: str, model: str, kwargs: dict[str, Any]
) -> tuple[ModuleType, vllm.LLM | tensorrt_llm.LLM]:
    """The engine package and its `LLM(model=model, **kwargs)` (vLLM's and TensorRT-LLM's offline API
    alike), a failure to build it as one BackendError."""
    module = import_engine()
    with engine_errors(f"{label} could not load {model}"):
        return module, module.LLM(model=model, **kwargs)


@contextlib.contextmanager
def engine_errors(what: str) -> Iterator[None]:
    """Whatever an in-process engine raises in the block as one BackendError `WHAT: TYPE: MESSAGE`:
    vLLM and TensorRT-LLM raise many types (CUDA, config, download errors), none of them ours."""
    try:
        yield
    except Exception as exc:
        raise BackendError(f"{what}: {type(exc).__name__}: {exc}") from exc


class EngineSample(Protocol):
    """What a reply is read from: vLLM's CompletionOutput, TensorRT-LLM's alike (token_ids and
    finish_reason are read where present)."""

    @property
    def text(self) -> str: ...


class EngineRequestOutput(Protocol):
    """vLLM's RequestOutput, TensorRT-LLM's alike (prompt_token_ids read where present)."""

    @property
    def outputs(self) -> Sequence[EngineSample]: ...


def completion_from_request_output(
    outputs: Sequence[EngineRequestOutput], backend: str, model: str, latency_s: float
) -> Completion:
    """vLLM and TensorRT-LLM both return RequestOutput-like objects: .outputs[0].text/.token_ids."""
    try:
        first = outputs[0]
        sample = first.outputs[0]
        text = sample.text
    except (IndexError, AttributeError, TypeError):
        raise BackendError(f"{backend} {model}: no output in the result ({type(outputs).__name__})") from None
    prompt_ids = getattr(first, "prompt_token_ids", None)
    token_ids = getattr(sample, "token_ids", None)
    stats = CallStats(
        backend=backend,
        model=model,
        latency_s=latency_s,
        prompt_tokens=len(prompt_ids) if prompt_ids is not None else None,
        completion_tokens=len(token_ids) if token_ids is not None else None,
        finish_reason=getattr(sample, "finish_reason", None),
    )
    return Completion(text=str(text), stats=stats)
