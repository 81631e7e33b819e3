"""Engine command lines from a serving profile: `vllm serve ...` and `trtllm-serve ...`.

Both are rendered from the same EngineLimits, so the two engines get equivalent settings where an
equivalent exists. trtllm-serve takes its LLM-API settings (structured-output backend, KV-cache
block reuse = prefix caching) from a YAML file named by --extra_llm_api_options; `EngineCommand`
carries that file's text and the launcher writes it next to the logs.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field

import yaml

from common.errors import ConfigError
from models.profile import ModelProfile
from models.serving.profile import Engine, ServingProfile

EXTRA_OPTIONS_PLACEHOLDER = "{extra_options_file}"


@dataclass(frozen=True)
class EngineCommand:
    engine: str
    argv: list[str]
    served_model: str
    # trtllm-serve only: the YAML the argv's {extra_options_file} placeholder must point at.
    extra_options_yaml: str | None = None
    unverified_flags: list[str] = field(default_factory=list)

    def with_options_file(self, path: str) -> list[str]:
        return [path if a == EXTRA_OPTIONS_PLACEHOLDER else a for a in self.argv]

    def shell(self) -> str:
        return shlex.join(self.argv)


def _json(value: object) -> str:
    return json.dumps(value, separators=(", ", ": "))


def vllm_argv(
    serving: ServingProfile, model: ModelProfile, checkpoint: str, host: str, port: int
) -> list[str]:
    lim = serving.limits
    argv = [
        "vllm",
        "serve",
        checkpoint,
        "--served-model-name",
        model.served_model,
        "--host",
        host,
        "--port",
        str(port),
        "--dtype",
        serving.dtype,
    ]
    if serving.quantization:
        argv += ["--quantization", serving.quantization]
    argv += [
        "--max-model-len",
        str(lim.max_model_len),
        "--gpu-memory-utilization",
        f"{lim.gpu_memory_fraction:g}",
        "--max-num-seqs",
        str(lim.max_num_seqs),
        "--enable-prefix-caching" if lim.prefix_caching else "--no-enable-prefix-caching",
        "--limit-mm-per-prompt",
        _json({"image": lim.images_per_prompt}),
        # ASSUMPTION (unverified): the model's image processor reads `max_pixels` (Qwen2/2.5-VL-style
        # processors do); one that takes size.longest_edge instead ignores it. vLLM logs the image
        # token count of the warm-up frame: check it against the frame (≈ 180-300 tokens at 640x360).
        "--mm-processor-kwargs",
        _json({"max_pixels": lim.max_pixels}),
        "--mm-processor-cache-gb",
        f"{lim.mm_processor_cache_gb:g}",
        # vLLM >= 0.11 (older releases: --guided-decoding-backend xgrammar)
        "--structured-outputs-config",
        _json({"backend": lim.structured_output_backend}),
    ]
    # usage.prompt_tokens_details.cached_tokens in replies: shows the prefix cache at work (bench-model)
    argv.append("--enable-prompt-tokens-details")
    if model.thinking_off.mechanism == "chat_template_kwargs":
        # Server-side default, so a client that forgets the per-request field still gets thinking off.
        argv += ["--default-chat-template-kwargs", _json({"enable_thinking": False})]
    if serving.trust_remote_code:
        argv.append("--trust-remote-code")
    return argv + list(serving.vllm_extra_args)


def trtllm_options(serving: ServingProfile) -> dict[str, object]:
    """The --extra_llm_api_options YAML: xgrammar (without it trtllm-serve ignores the schema) and
    KV-cache block reuse, TensorRT-LLM's prefix caching."""
    lim = serving.limits
    return {
        "guided_decoding_backend": lim.structured_output_backend,
        "kv_cache_config": {
            "enable_block_reuse": lim.prefix_caching,
            "free_gpu_memory_fraction": lim.kv_cache_free_memory_fraction,
        },
    }


def trtllm_argv(serving: ServingProfile, checkpoint: str, host: str, port: int) -> list[str]:
    lim = serving.limits
    argv = [
        "trtllm-serve",
        checkpoint,
        "--host",
        host,
        "--port",
        str(port),
        "--backend",
        serving.trtllm_backend,
        "--max_batch_size",
        str(lim.max_num_seqs),
        "--max_seq_len",
        str(lim.max_model_len),
        "--kv_cache_free_gpu_memory_fraction",
        f"{lim.kv_cache_free_memory_fraction:g}",
    ]
    if serving.trust_remote_code:
        argv.append("--trust_remote_code")
    # (unverified: some TensorRT-LLM releases name this option --config)
    argv += ["--extra_llm_api_options", EXTRA_OPTIONS_PLACEHOLDER]
    return argv + list(serving.trtllm_extra_args)


def engine_command(
    serving: ServingProfile,
    model: ModelProfile,
    engine: Engine | None = None,
    weights_dir: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
) -> EngineCommand:
    engine = engine or serving.default_engine()
    if engine not in serving.engines:
        raise ConfigError(
            f"serving profile {serving.name} supports engines {list(serving.engines)}, not {engine!r}"
        )
    checkpoint = serving.checkpoint_path(weights_dir)
    if engine == "vllm":
        argv = vllm_argv(serving, model, checkpoint, host, port)
        options = None
    else:
        argv = trtllm_argv(serving, checkpoint, host, port)
        options = yaml.safe_dump(trtllm_options(serving), sort_keys=False)
    verified = set(serving.verified_on_hardware)
    flags = [a for a in argv if a.startswith("--")]
    return EngineCommand(
        engine=engine,
        argv=argv,
        served_model=model.served_model,
        extra_options_yaml=options,
        unverified_flags=[f for f in flags if f not in verified],
    )


def override_argv(template: str, served_model: str, checkpoint: str, host: str, port: int) -> list[str]:
    """A user-given engine command (e.g. a fake engine for tests) with {python} {host} {port}
    {served_model} {checkpoint} filled in."""
    try:
        text = template.format(
            python=shlex.quote(sys.executable),
            host=shlex.quote(host),
            port=port,
            served_model=shlex.quote(served_model),
            checkpoint=shlex.quote(checkpoint),
        )
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"--command {template!r}: bad placeholder ({exc})") from None
    argv = shlex.split(text)
    if not argv:
        raise ConfigError("--command is empty")
    return argv
