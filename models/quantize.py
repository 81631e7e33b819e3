"""W4A16 quantisation for the onboard model (`dronecats quantize`), calibrated on flight-domain samples.

GPTQ from llm-compressor (the `hf` extra), compressed-tensors output (`pack-quantized`, which vLLM
reads from the checkpoint's config): the language model's linear layers get 4-bit integer weights
in groups (symmetric, 16-bit scales), activations stay 16-bit; the vision tower and lm_head stay
16-bit. `method="rtn"` is plain round-to-nearest with the same scheme, for comparison: GPTQ moves
the not-yet-quantised weights of a layer to cancel the error of those already quantised, so its
weights are not within half a step of the originals, round-to-nearest's are.

Calibration is what the model will see in flight, prepared exactly as in flight: frames from the
simulator (the caller renders them: `models` does not import the simulator), the pilot prompts
(models.pilot_prompt) with plausible histories, action and plan steps, through the same
chat-template and image-processor path as `hf://` (models.backends.hf_inputs).

NVFP4 (ModelOpt) is the Jetson Thor path only: Orin has no FP4, and an NVFP4 checkpoint can be
neither made nor checked on these machines (no Blackwell GPU); it is not implemented here.
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from common.errors import ConfigError
from models.frames import encode_frame
from models.pilot_prompt import PilotPrompt
from models.profile import ModelProfile
from models.request import ChatRequest

if TYPE_CHECKING:
    import numpy as np
    import torch
    from llmcompressor.modifiers.quantization import GPTQModifier, QuantizationModifier
    from transformers import PreTrainedModel

    from models.backends.hf_inputs import ModelInputs

logger = logging.getLogger(__name__)

SCHEME = "W4A16"
METHODS = ("gptq", "rtn")
# Not quantised: the vision tower (its activations are not a language model's; vLLM keeps it
# 16-bit too) and lm_head (the output distribution is the most sensitive to weight error).
IGNORE = ("lm_head", "re:.*visual.*")
COPIED_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "preprocessor_config.json",
    "processor_config.json",
    "video_preprocessor_config.json",
    "generation_config.json",
    "special_tokens_map.json",
    "RANDOM_WEIGHTS.txt",
)


@dataclass(frozen=True)
class FlightView:
    """One calibration frame: a BGR image from the simulator and the episode's instruction."""

    image: np.ndarray
    instruction: str


class QuantizeReport(msgspec.Struct):
    scheme: str
    method: str
    group_size: int
    samples: int  # calibrated on; the held_out ones more were drawn to measure the error
    calibration_tokens: int
    quantized_modules: int
    kept_16bit: list[str]
    random_weights: bool
    seconds: float
    logits_relative_error: float | None = None
    notes: list[str] = msgspec.field(default_factory=list)
    held_out: int = 0


def quantized_linears(model: torch.nn.Module) -> list[tuple[str, torch.nn.Linear]]:
    """The linear layers the recipe quantises: all but IGNORE (lm_head, the vision tower)."""
    import torch

    exact = {p for p in IGNORE if not p.startswith("re:")}
    patterns = [re.compile(p[3:]) for p in IGNORE if p.startswith("re:")]
    return [
        (name, module)
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear)
        and name.rsplit(".", 1)[-1] not in exact
        and name not in exact
        and not any(p.fullmatch(name) for p in patterns)
    ]


def check_group_size(model: torch.nn.Module, group_size: int) -> None:
    """Before any calibration: every quantised layer's input width must be a multiple of the group
    size (a group never spans two rows), else a ConfigError names the layers and the group size that
    fits (llm-compressor would fail after calibrating, on an unflatten of the first such layer)."""
    layers = quantized_linears(model)
    misfits = [(name, m.in_features) for name, m in layers if m.in_features % group_size]
    if not misfits:
        return
    common = math.gcd(*(m.in_features for _, m in layers))
    fits = 1 << ((common & -common).bit_length() - 1)  # the largest power of two dividing them all
    hint = (
        f"--group-size {fits} fits every layer" if fits >= 8 else "no group size of 8 or more fits them all"
    )
    name, width = misfits[0]
    raise ConfigError(
        f"group size {group_size} does not divide the input width of {len(misfits)} of "
        f"{len(layers)} layers (e.g. {name}: {width}); {hint}"
    )


def calibration_requests(
    profile: ModelProfile, views: Sequence[FlightView], seed: int = 0
) -> list[ChatRequest]:
    """The pilot's requests for each view, with plausible histories; every fourth a plan step."""
    from models.random_init.build import _random_action

    rng = random.Random(seed)
    prompt = PilotPrompt(profile)
    requests = []
    for i, view in enumerate(views):
        history = [_random_action(rng, True, False) for _ in range(rng.randint(0, 5))]
        requests.append(
            prompt.request(view.instruction, history, encode_frame(view.image), previous_was_think=i % 4 == 3)
        )
    return requests


def model_inputs(inputs: ModelInputs, request: ChatRequest) -> dict[str, Any]:
    """A request as the model's input tensors, through the same path as hf:// in flight."""
    from models.backends.hf_local import hf_messages

    messages, images = hf_messages(request)
    kwargs = dict(request.extra_body.get("chat_template_kwargs") or {})
    text = inputs.apply_chat_template(messages, add_generation_prompt=True, **kwargs)
    return dict(inputs(text, images))


@dataclass
class LoadedModel:
    model: PreTrainedModel
    inputs: ModelInputs
    source_dir: Path
    random_weights: bool
    notes: list[str] = field(default_factory=list)


def load_for_quantization(model: str, random_init: bool, dtype: str, seed: int = 0) -> LoadedModel:
    """A model directory with weights, or (random_init) a random-init architecture or directory."""
    import llmcompressor  # noqa: F401 - imported first: see dronecats.cli_quantize
    import torch
    import transformers

    from models.backends.hf_inputs import ProcessorInputs, VLInputs
    from models.random_init.build import ARCHITECTURES, build_model_dir, is_random_weights_dir

    if random_init and model in ARCHITECTURES:
        source = build_model_dir(model)
    elif Path(model).is_dir():
        source = Path(model)
    else:
        raise ConfigError(
            f"quantize: {model!r} is not a directory (nor, with --random-init, one of {ARCHITECTURES})"
        )
    inputs = (
        VLInputs.from_dir(source)
        if is_random_weights_dir(source)
        else ProcessorInputs(transformers.AutoProcessor.from_pretrained(source, local_files_only=True))
    )
    auto = transformers.AutoModelForImageTextToText
    torch_dtype = getattr(torch, dtype)
    if random_init:
        torch.manual_seed(seed)
        config = transformers.AutoConfig.from_pretrained(source, local_files_only=True)
        net = auto.from_config(config, dtype=torch_dtype)
    else:
        net = auto.from_pretrained(source, dtype=torch_dtype, local_files_only=True)
    return LoadedModel(net.eval(), inputs, source, random_init or is_random_weights_dir(source))


def check_recipe(method: str, group_size: int) -> None:
    if method not in METHODS:
        raise ConfigError(f"method {method!r} must be one of {METHODS}")
    if group_size < 8 or group_size & (group_size - 1):
        raise ConfigError(f"group size {group_size} must be a power of two >= 8")


def recipe(method: str, group_size: int) -> GPTQModifier | QuantizationModifier:
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme

    check_recipe(method, group_size)
    weights = QuantizationArgs(
        num_bits=4, type="int", symmetric=True, strategy="group", group_size=group_size
    )
    groups = {"group_0": QuantizationScheme(targets=["Linear"], weights=weights)}
    if method == "gptq":
        from llmcompressor.modifiers.quantization import GPTQModifier

        return GPTQModifier(config_groups=groups, ignore=list(IGNORE))
    from llmcompressor.modifiers.quantization import QuantizationModifier

    return QuantizationModifier(config_groups=groups, ignore=list(IGNORE))


def last_logits(model: PreTrainedModel, sample: dict[str, Any], positions: int = 16) -> torch.Tensor:
    import torch

    with torch.inference_mode():
        return model(**sample, logits_to_keep=positions).logits.float()


def quantize(
    loaded: LoadedModel,
    requests: Sequence[ChatRequest],
    out_dir: str | Path,
    method: str = "gptq",
    group_size: int = 128,
    held_out: int = 2,
) -> QuantizeReport:
    """Calibrate on `requests` (minus `held_out`, kept to measure the logits' error), quantise,
    and write the compressed-tensors checkpoint with the tokenizer/processor files to `out_dir`."""
    import torch
    from llmcompressor import oneshot
    from transformers import AutoModelForImageTextToText, CompressedTensorsConfig

    if len(requests) < held_out + 1:
        raise ConfigError(f"{len(requests)} samples; need more than the {held_out} held out")
    check_recipe(method, group_size)  # a bad method or group size is refused before anything runs
    check_group_size(loaded.model, group_size)
    out = Path(out_dir)
    started = time.perf_counter()
    samples = [model_inputs(loaded.inputs, r) for r in requests]
    calibration, check = samples[held_out:], samples[:held_out]
    reference = [last_logits(loaded.model, s) for s in check]
    n_linear = sum(1 for m in loaded.model.modules() if isinstance(m, torch.nn.Linear))
    # One sample a batch, already tensors: what oneshot iterates over instead of a dataset.
    loader: torch.utils.data.DataLoader[dict[str, Any]] = torch.utils.data.DataLoader(
        calibration,  # type: ignore[arg-type, unused-ignore]  # (torch stubs only with the hf extra)
        batch_size=None,
        collate_fn=lambda x: x,
    )
    # processor=: llm-compressor wants one for a dataset, and transformers' Qwen3-VL processor
    # needs torchvision; the tokenizer does (the samples are already tensors).
    oneshot(
        model=loaded.model,
        processor=loaded.inputs.tokenizer,
        dataset=loader,
        recipe=recipe(method, group_size),
        num_calibration_samples=len(calibration),
        pipeline="basic",
    )
    out.mkdir(parents=True, exist_ok=True)
    loaded.model.save_pretrained(out, save_compressed=True)
    for name in COPIED_FILES:
        if (loaded.source_dir / name).is_file():
            shutil.copy2(loaded.source_dir / name, out / name)
    config = json.loads((out / "config.json").read_text())
    qconfig = config.get("quantization_config", {})
    ignored = list(qconfig.get("ignore", []))
    visual = [m for m in ignored if ".visual." in m or m.startswith("visual.")]
    kept = [m for m in ignored if m not in visual] + (
        [f"the vision tower ({len(visual)} linear layers)"] if visual else []
    )
    reloaded = AutoModelForImageTextToText.from_pretrained(
        out, dtype=loaded.model.dtype, quantization_config=CompressedTensorsConfig(dequantize=True)
    ).eval()
    errors = []
    for sample, ref in zip(check, reference, strict=True):
        got = last_logits(reloaded, sample)
        errors.append(float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref)))
    notes = list(loaded.notes)
    if loaded.random_weights:
        notes.append("RANDOM WEIGHTS: the source model is untrained; this checkpoint is for timing only")
    report = QuantizeReport(
        scheme=SCHEME,
        method=method,
        group_size=group_size,
        samples=len(calibration),
        calibration_tokens=sum(int(s["input_ids"].shape[1]) for s in calibration),
        quantized_modules=n_linear - len(ignored),
        kept_16bit=kept,
        random_weights=loaded.random_weights,
        seconds=round(time.perf_counter() - started, 1),
        logits_relative_error=round(sum(errors) / len(errors), 5),
        notes=notes,
        held_out=held_out,
    )
    (out / "quantize_report.json").write_text(json.dumps(msgspec.to_builtins(report), indent=2) + "\n")
    return report


def write_serving_profile(out_dir: str | Path, name: str, model_profile: str, report: QuantizeReport) -> Path:
    """A serving profile (models.serving.profile) for the checkpoint, stating what was quantised."""
    from models.serving.profile import load_serving_profile

    out = Path(out_dir).resolve()
    label = " RANDOM WEIGHTS (timing only)." if report.random_weights else ""
    vision = "kept 16-bit" if any("vision tower" in m for m in report.kept_16bit) else "none found"
    notes = (
        f"{report.scheme} ({report.method.upper()}, int4 symmetric, group {report.group_size}, "
        f"compressed-tensors pack-quantized): the language model's linear layers; the vision tower "
        f"({vision}) and lm_head kept 16-bit. Calibrated on {report.samples} flight-domain samples "
        f"({report.calibration_tokens} tokens: simulator frames, the pilot's prompts and histories). "
        f"Held-out logits relative error {report.logits_relative_error}.{label}"
    )
    profile = {
        "name": name,
        "description": f"{model_profile}, {report.scheme} ({report.method}) by dronecats quantize{label}",
        "model_profile": model_profile,
        "checkpoint": str(out),
        "precision": "w4a16",
        "dtype": "float16",
        "quantization": None,  # vLLM reads compressed-tensors from the checkpoint's config
        "engines": ["vllm"],
        "hardware": ["orin-nx-16gb", "agx-orin-32gb"],
        "verified_on_hardware": [],
        "notes": notes,
    }
    import yaml

    path = out / "serving-profile.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    load_serving_profile(path)  # it must load as any serving profile does
    return path
