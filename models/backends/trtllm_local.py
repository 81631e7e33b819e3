"""`trtllm://ENGINE_OR_CHECKPOINT` — TensorRT-LLM's LLM API in this process (optional, GPU only).

TensorRT-LLM does not install from PyPI (the package there fetches from NVIDIA's own index); the usual way to
use it is `trtllm-serve` behind the `openai://` backend. This in-process path is kept minimal: the
chat template from the engine's tokenizer, images as RGB arrays in `multi_modal_data`, and the schema
through `GuidedDecodingParams` (the LLM must be built with `guided_decoding_backend="xgrammar"`).
"""

from __future__ import annotations

import importlib
import logging
import time
from typing import TYPE_CHECKING, Any

from common.errors import ConfigError
from models.backends.base import Completion
from models.backends.images import decode_data_url, split_content
from models.backends.vllm_local import (
    chat_kwargs,
    completion_from_request_output,
    engine_errors,
    import_engine,
    load_llm,
    sampling_kwargs,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    import tensorrt_llm

    from models.request import ChatRequest

logger = logging.getLogger(__name__)


def import_trtllm() -> ModuleType:
    return import_engine(
        "trtllm",
        "tensorrt_llm",
        "it installs only from NVIDIA's index on a GPU machine. Alternatively run `trtllm-serve` and use "
        "openai://HOST:PORT/v1?model=...",
    )


def prompt_inputs(request: ChatRequest, apply_chat_template: Callable[..., str]) -> dict[str, Any]:
    """TensorRT-LLM's prompt dict: templated text plus the decoded frames in message order."""
    text_messages: list[dict[str, Any]] = []
    images: list[Any] = []
    for message in request.messages():
        text, urls = split_content(message)
        parts: list[dict[str, Any]] = [{"type": "image"} for _ in urls]
        parts.append({"type": "text", "text": text})
        text_messages.append({"role": message["role"], "content": parts if urls else text})
        images.extend(decode_data_url(u)[:, :, ::-1].copy() for u in urls)  # BGR -> RGB
    prompt = apply_chat_template(
        text_messages,
        tokenize=False,
        add_generation_prompt=True,
        **chat_kwargs(request).get("chat_template_kwargs", {}),
    )
    inputs: dict[str, Any] = {"prompt": prompt}
    if images:
        inputs["multi_modal_data"] = {"image": images}
    return inputs


class TRTLLMBackend:
    def __init__(self, engine: str, **llm_kwargs: object) -> None:
        if not engine:
            raise ConfigError(
                "trtllm:// needs an engine directory or checkpoint, e.g. trtllm:///engines/qwen3vl"
            )
        self.engine = engine
        self.llm_kwargs = {"guided_decoding_backend": "xgrammar", **llm_kwargs}
        self.name = f"trtllm:{engine}"
        self._trt: Any = None
        self._llm: Any = None

    def load(self) -> None:
        if self._llm is None:
            self._trt, self._llm = load_llm(import_trtllm, "tensorrt_llm", self.engine, self.llm_kwargs)

    def sampling_params(self, request: ChatRequest) -> tensorrt_llm.SamplingParams:
        self.load()
        sampling = importlib.import_module("tensorrt_llm.sampling_params")
        kwargs = sampling_kwargs(request)
        kwargs.pop("n", None)
        kwargs["guided_decoding"] = sampling.GuidedDecodingParams(json=request.reply.schema)
        return self._trt.SamplingParams(**kwargs)

    def complete(self, request: ChatRequest) -> Completion:
        params = self.sampling_params(request)
        inputs = prompt_inputs(request, self._llm.tokenizer.apply_chat_template)
        started = time.perf_counter()
        with engine_errors(f"tensorrt_llm {self.engine}: generation failed"):
            output = self._llm.generate(inputs, sampling_params=params)
        outputs = output if isinstance(output, list) else [output]
        return completion_from_request_output(outputs, "trtllm", self.engine, time.perf_counter() - started)

    def close(self) -> None:
        if self._llm is not None and hasattr(self._llm, "shutdown"):
            self._llm.shutdown()
        self._llm = None
