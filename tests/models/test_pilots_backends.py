"""Backends that need a GPU engine (vllm://, trtllm://) and everything around them that can be
tested here: URL parsing, engine and sampling parameters, the structured-output switch per vLLM
API generation, result handling, and the clear error when the engine package is missing. Neither
vllm nor tensorrt_llm is installed on these machines; where their API objects are needed the test
builds stand-ins of exactly those API shapes (no model output is ever faked)."""

from __future__ import annotations

import importlib.util
import sys
import types
from dataclasses import dataclass, field

import numpy as np
import pytest

from common.actions import Go, Rotate, Think
from common.errors import BackendError, ConfigError
from models.backends import open_backend, parse_backend_url
from models.backends.trtllm_local import TRTLLMBackend, prompt_inputs
from models.backends.vllm_local import (
    ENGINE_DEFAULTS,
    VLLMBackend,
    chat_kwargs,
    completion_from_request_output,
    engine_kwargs,
    sampling_kwargs,
    structured_output_kwargs,
)
from models.chat_decode import decode_chat, parse_history
from models.frames import encode_frame
from models.history import render_history
from models.pilot import ModelPilot, Observation
from models.pilot_prompt import PilotPrompt
from models.profile import load_profile
from models.templates import PromptSwitches
from tests.support.pilots import scene


def request_for(profile_name: str = "qwen3.5-2b", history=(), switches=None):
    prompt = PilotPrompt(load_profile(profile_name), switches)
    return prompt.request("go to the red car", list(history), encode_frame(scene()))


def test_url_parsing() -> None:
    url = parse_backend_url("vllm://Qwen/Qwen3-VL-2B-Instruct?dtype=bfloat16&max_model_len=4096")
    assert url.scheme == "vllm" and url.location == "Qwen/Qwen3-VL-2B-Instruct"
    assert url.params == {"dtype": "bfloat16", "max_model_len": "4096"}
    assert parse_backend_url("trtllm:///engines/qwen3vl").location == "/engines/qwen3vl"
    with pytest.raises(ConfigError, match="scheme://"):
        parse_backend_url("localhost:8000")
    with pytest.raises(ConfigError, match="given twice"):
        parse_backend_url("openai://h:1/v1?model=a&model=b")


# Every scheme's bad URL is one ConfigError from open_backend, before anything is loaded or connected.
BAD_BACKEND_URLS = [
    ("grpc://127.0.0.1:1", "unknown backend scheme"),
    ("openai://h:1/v1?model=m&timeout_s=-1", "timeout_s"),
    ("openai://h:1/v1?model=m&temperature=3", "unknown"),
    ("openai://h:notaport/v1?model=m", "bad port"),
    ("hf://m?temperature=1", "unknown"),
    ("hf://m?dtype=int4", "dtype"),
    ("hf://?profile=qwen3.5-2b", "needs a model"),
    ("hf://m?constrained=1&new_tokens=8", "new_tokens"),
    ("hf://m?constrained=maybe", "constrained"),
]


@pytest.mark.parametrize(("url", "match"), BAD_BACKEND_URLS)
def test_bad_backend_urls_are_config_errors(url: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        open_backend(url)


def test_vllm_engine_kwargs_are_typed_and_checked() -> None:
    kwargs = engine_kwargs(
        {"dtype": "bfloat16", "max_model_len": "4096", "enforce_eager": "true", "images": "2"}
    )
    assert kwargs["max_model_len"] == 4096 and kwargs["enforce_eager"] is True
    assert (
        kwargs["limit_mm_per_prompt"] == {"image": 2}
        and kwargs["max_num_seqs"] == ENGINE_DEFAULTS["max_num_seqs"]
    )
    with pytest.raises(ConfigError, match="not one of"):
        engine_kwargs({"tensor_paralel_size": "2"})
    with pytest.raises(ConfigError, match="not a valid int"):
        engine_kwargs({"max_model_len": "lots"})
    with pytest.raises(ConfigError, match="not a valid bool"):
        engine_kwargs({"enforce_eager": "maybe"})


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_is_a_clear_backend_error() -> None:
    backend = open_backend("vllm://Qwen/Qwen3-VL-2B-Instruct?dtype=bfloat16")
    assert isinstance(backend, VLLMBackend) and backend.engine["dtype"] == "bfloat16"
    with pytest.raises(BackendError, match=r"needs the `vllm` package.*dronecats\[vllm\]"):
        backend.complete(request_for())
    # Through a pilot it is a hold with the reason, never a crash.
    pilot = ModelPilot(backend, load_profile("qwen3.5-2b"))
    decision = pilot.decide(Observation(scene(), "go to the red car"))
    assert decision.action is None and "vllm" in decision.error


@pytest.mark.skipif(importlib.util.find_spec("tensorrt_llm") is not None, reason="tensorrt_llm is installed")
def test_missing_tensorrt_llm_is_a_clear_backend_error() -> None:
    backend = open_backend("trtllm:///engines/qwen3vl")
    assert isinstance(backend, TRTLLMBackend) and backend.engine == "/engines/qwen3vl"
    with pytest.raises(BackendError, match=r"needs the `tensorrt_llm` package.*trtllm-serve"):
        backend.complete(request_for())
    with pytest.raises(ConfigError, match="only profile"):
        open_backend("trtllm:///engines/x?dtype=fp16")


def test_sampling_parameters_come_from_the_request() -> None:
    request = request_for()
    kwargs = sampling_kwargs(request)
    assert kwargs["max_tokens"] == 64 and kwargs["temperature"] == 0.4 and kwargs["n"] == 1
    assert chat_kwargs(request) == {"chat_template_kwargs": {"enable_thinking": False}}
    plan = request_for(history=[Think()])
    assert sampling_kwargs(plan)["max_tokens"] == 768
    assert "target_in_view" in plan.reply.schema["properties"]


def _fake_vllm(generation: str) -> types.ModuleType:
    """A module with the shape of vllm's API of one generation (for the version switch only)."""

    @dataclass
    class StructuredOutputsParams:
        json: dict

    @dataclass
    class GuidedDecodingParams:
        json: dict

    module = types.ModuleType("fake_vllm")
    sampling = types.ModuleType("fake_vllm.sampling_params")
    if generation == "new":
        sampling.StructuredOutputsParams = StructuredOutputsParams  # type: ignore[attr-defined]
    elif generation == "old":
        sampling.GuidedDecodingParams = GuidedDecodingParams  # type: ignore[attr-defined]
    module.sampling_params = sampling  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize(("generation", "key"), [("new", "structured_outputs"), ("old", "guided_decoding")])
def test_structured_outputs_follow_the_vllm_api_generation(monkeypatch, generation: str, key: str) -> None:
    module = _fake_vllm(generation)
    monkeypatch.setitem(sys.modules, "fake_vllm", module)
    monkeypatch.setitem(sys.modules, "fake_vllm.sampling_params", module.sampling_params)
    schema = request_for().reply.schema
    kwargs = structured_output_kwargs(module, schema)
    assert list(kwargs) == [key] and kwargs[key].json is schema


def test_vllm_without_any_structured_output_api_refuses(monkeypatch) -> None:
    module = _fake_vllm("none")
    monkeypatch.setitem(sys.modules, "fake_vllm", module)
    monkeypatch.setitem(sys.modules, "fake_vllm.sampling_params", module.sampling_params)
    with pytest.raises(BackendError, match="cannot constrain"):
        structured_output_kwargs(module, {"type": "object"})


@dataclass
class _Sample:
    text: str
    token_ids: list[int]
    finish_reason: str = "stop"


@dataclass
class _RequestOutput:
    outputs: list[_Sample]
    prompt_token_ids: list[int] = field(default_factory=list)


def test_request_output_handling() -> None:
    output = [_RequestOutput([_Sample('{"action": "finished"}', [1, 2, 3])], list(range(250)))]
    completion = completion_from_request_output(output, "vllm", "m", 0.42)
    assert completion.text == '{"action": "finished"}'
    assert (completion.stats.prompt_tokens, completion.stats.completion_tokens) == (250, 3)
    assert completion.stats.latency_s == 0.42 and completion.stats.finish_reason == "stop"
    with pytest.raises(BackendError, match="no output"):
        completion_from_request_output([], "vllm", "m", 0.1)


def test_trtllm_prompt_carries_the_template_text_and_rgb_frames() -> None:
    request = request_for()
    seen = {}

    def apply_chat_template(messages, tokenize, add_generation_prompt, **kwargs):
        seen.update(messages=messages, kwargs=kwargs, tokenize=tokenize, gen=add_generation_prompt)
        return "<templated>"

    inputs = prompt_inputs(request, apply_chat_template)
    assert inputs["prompt"] == "<templated>" and seen["tokenize"] is False and seen["gen"] is True
    assert seen["kwargs"] == {"enable_thinking": False}
    assert seen["messages"][0] == {"role": "system", "content": request.system}
    user = seen["messages"][1]["content"]
    assert user[0] == {"type": "image"} and "go to the red car" in user[1]["text"]
    (image,) = inputs["multi_modal_data"]["image"]
    assert image.shape == (360, 640, 3)
    # RGB order: the sky (BGR 235, 206, 135) reads back red-last.
    assert np.allclose(image[10, 10], (135, 206, 235), atol=6)


@pytest.mark.parametrize("point_order", ["xy", "yx"])
def test_history_text_round_trips_through_chat_decode(point_order: str) -> None:
    history = [
        Go(point=(612, 430), depth_m=9.0),
        Rotate(angle_deg=-45.0),
        Think(),
        Go(point=(5, 999), depth_m=2.5),
    ]
    assert parse_history(render_history(history, point_order)) == history


def test_chat_decode_reads_back_a_pilot_request() -> None:
    switches = PromptSwitches(think=False, visual_history=True)
    pilot = ModelPilot(
        open_backend("openai://127.0.0.1:9/v1?model=m"), load_profile("cosmos3-edge-2b-ft"), switches
    )
    views = [scene(), scene()]
    history = (Rotate(angle_deg=30.0), Go(point=(100, 700), depth_m=7.0))
    request = pilot.build_request(Observation(scene(), "find the red car", history, history_images=views))
    pilot.close()
    body = request.to_body()
    chat = decode_chat(body, body["response_format"]["json_schema"]["schema"])
    assert chat.kind == "action" and chat.think is False and chat.point_order == "yx"
    assert chat.instruction == "find the red car" and chat.histories == [list(history)]
    # Visual history: two half-width views, then the current frame last.
    assert [image.shape[1] for image in chat.images] == [320, 320, 640]
