"""Serving profiles: every built-in loads, names an existing model profile, and renders the flags the
issue asks for, for both engines; limits out of range are refused."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from common.errors import ConfigError
from models.profile import load_profile, profile_names
from models.serving.command import EXTRA_OPTIONS_PLACEHOLDER, engine_command, override_argv, trtllm_options
from models.serving.profile import (
    EngineLimits,
    ServingProfile,
    load_serving_profile,
    serving_profile_names,
)

NAMES = serving_profile_names()


def flag_value(argv: list[str], flag: str) -> str:
    assert flag in argv, f"{flag} missing from {argv}"
    return argv[argv.index(flag) + 1]


def test_the_asked_for_models_and_precisions_exist() -> None:
    profiles = [load_serving_profile(n) for n in NAMES]
    cosmos = {p.precision for p in profiles if p.model_profile.startswith("cosmos3-edge-2b")}
    assert {"bf16", "w4a16", "nvfp4"} <= cosmos
    qwen = {p.model_profile for p in profiles if p.model_profile.startswith("qwen3.5")}
    assert {"qwen3.5-0.8b", "qwen3.5-2b", "qwen3.5-4b"} <= qwen
    thor = [p for p in profiles if p.precision == "nvfp4"]
    assert thor and all(h.startswith("thor") for p in thor for h in p.hardware)


@pytest.mark.parametrize("name", NAMES)
def test_vllm_command_has_the_one_drone_settings(name: str) -> None:
    serving = load_serving_profile(name)
    assert serving.model_profile in profile_names()
    model = load_profile(serving.model_profile)
    argv = engine_command(serving, model, "vllm", "/models", "0.0.0.0", 8123).argv
    assert argv[:3] == ["vllm", "serve", f"/models/{serving.checkpoint}"]
    assert flag_value(argv, "--served-model-name") == model.served_model
    assert flag_value(argv, "--port") == "8123"
    assert "--enable-prefix-caching" in argv
    assert "--enable-prompt-tokens-details" in argv
    assert 4096 <= int(flag_value(argv, "--max-model-len")) <= 8192
    assert 0.05 <= float(flag_value(argv, "--gpu-memory-utilization")) <= 0.6
    assert flag_value(argv, "--max-num-seqs") == "1"
    assert json.loads(flag_value(argv, "--limit-mm-per-prompt")) == {"image": 1}
    # a 640-wide frame at 16:9 is 230,400 pixels: the cap must not shrink it, nor allow much more
    assert 640 * 360 <= json.loads(flag_value(argv, "--mm-processor-kwargs"))["max_pixels"] <= 640 * 480
    assert flag_value(argv, "--mm-processor-cache-gb") == "0"
    assert json.loads(flag_value(argv, "--structured-outputs-config")) == {"backend": "xgrammar"}
    if model.thinking_off.mechanism == "chat_template_kwargs":
        assert json.loads(flag_value(argv, "--default-chat-template-kwargs")) == {"enable_thinking": False}


@pytest.mark.parametrize("name", [n for n in NAMES if "trtllm" in load_serving_profile(n).engines])
def test_trtllm_equivalent(name: str) -> None:
    serving = load_serving_profile(name)
    command = engine_command(serving, load_profile(serving.model_profile), "trtllm", "/w", port=9000)
    argv = command.with_options_file("/tmp/x.yaml")
    assert argv[:2] == ["trtllm-serve", f"/w/{serving.checkpoint}"]
    assert flag_value(argv, "--max_batch_size") == "1"
    assert flag_value(argv, "--max_seq_len") == str(serving.limits.max_model_len)
    assert flag_value(argv, "--extra_llm_api_options") == "/tmp/x.yaml"
    assert EXTRA_OPTIONS_PLACEHOLDER not in argv
    options = yaml.safe_load(command.extra_options_yaml or "")
    # without xgrammar, trtllm-serve ignores response_format's schema
    assert options == trtllm_options(serving)
    assert options["guided_decoding_backend"] == "xgrammar"
    assert options["kv_cache_config"]["enable_block_reuse"] is True


def test_nothing_claims_hardware_verification_yet() -> None:
    for name in NAMES:
        serving = load_serving_profile(name)
        command = engine_command(serving, load_profile(serving.model_profile))
        assert serving.verified_on_hardware == ()
        assert "--max-model-len" in command.unverified_flags


def test_verified_flags_are_left_out_of_the_unverified_list() -> None:
    serving = load_serving_profile("qwen3.5-2b-w4a16-orin", ["verified_on_hardware=['--max-model-len']"])
    command = engine_command(serving, load_profile(serving.model_profile))
    assert "--max-model-len" not in command.unverified_flags
    assert "--enable-prefix-caching" in command.unverified_flags


def test_overrides_and_absolute_checkpoints() -> None:
    serving = load_serving_profile(
        "cosmos3-edge-2b-w4a16-orin",
        ["quantization=awq_marlin", "checkpoint=/data/awq", "limits.max_model_len=8192"],
    )
    argv = engine_command(serving, load_profile(serving.model_profile), weights_dir="/models").argv
    assert argv[2] == "/data/awq"
    assert flag_value(argv, "--quantization") == "awq_marlin"
    assert flag_value(argv, "--max-model-len") == "8192"


@pytest.mark.parametrize(
    "override, message",
    [
        ("limits.max_model_len=32768", "max_model_len=32768"),
        ("limits.max_model_len=2048", "max_model_len=2048"),
        ("limits.gpu_memory_fraction=0.99", "gpu_memory_fraction=0.99"),
        ("limits.max_pixels=100", "max_pixels=100"),
    ],
)
def test_limits_out_of_range_are_refused(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_serving_profile("qwen3.5-2b-bf16", [override])


def test_fp4_on_orin_is_refused() -> None:
    with pytest.raises(ConfigError, match="NVFP4 needs Thor"):
        ServingProfile(
            name="x",
            model_profile="qwen3.5-2b",
            checkpoint="c",
            precision="nvfp4",
            hardware=("orin-nx-16gb",),
        )


def test_engine_not_in_profile_and_unknown_profile() -> None:
    serving = ServingProfile(
        name="x", model_profile="qwen3.5-2b", checkpoint="c", precision="bf16", engines=("vllm",)
    )
    with pytest.raises(ConfigError, match="not 'trtllm'"):
        engine_command(serving, load_profile("qwen3.5-2b"), "trtllm")
    with pytest.raises(ConfigError, match="unknown serving profile"):
        load_serving_profile("no-such-profile")
    assert EngineLimits().max_pixels == 640 * 360


def test_override_argv_fills_placeholders() -> None:
    argv = override_argv("{python} -m x --port {port} --name {served_model}", "Qwen/Qwen3.5-2B", "/m", "h", 7)
    assert argv == [sys.executable, "-m", "x", "--port", "7", "--name", "Qwen/Qwen3.5-2B"]
    with pytest.raises(ConfigError, match="bad placeholder"):
        override_argv("run {nope}", "m", "/m", "h", 7)
