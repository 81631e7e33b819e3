"""`dronecats quantize` on the tiny Qwen3.5 architecture (RANDOM WEIGHTS) on CPU, run as the command
runs: GPTQ W4A16 calibrated on simulator frames from the suite and the pilot's prompts, written as
a compressed-tensors checkpoint with a serving profile. Checked independently of the command:
the checkpoint's config names the scheme, transformers reloads it, the vision tower and lm_head
are untouched, every quantised weight lies on its group's 4-bit grid, round-to-nearest keeps
every weight within half a step of the original (GPTQ by design moves weights to cancel error,
so for it the share within half a step is reported), and the held-out logits' error is reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("llmcompressor")
pytest.importorskip("pybullet")

from models.serving.profile import load_serving_profile  # noqa: E402
from tests.support.models_hf import tiny_model_dir  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GROUP = 32  # the tiny model's layers are 64 wide: groups of 128 would not fit


def run_quantize(out: Path, cache: Path, method: str) -> dict:
    cmd = [sys.executable, "-m", "dronecats", "quantize", "--model", "qwen3.5-tiny", "--random-init"]
    cmd += ["--out", str(out), "--group-size", str(GROUP), "--samples", "5", "--dtype", "float32"]
    cmd += ["--method", method]
    env = {**os.environ, "DRONECATS_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def original_model(directory: Path):
    """The same random weights the command started from (seed 0, the same config), built here."""
    torch.manual_seed(0)
    config = transformers.AutoConfig.from_pretrained(directory)
    return transformers.AutoModelForImageTextToText.from_config(config, dtype=torch.float32)


def steps_from_original(out: Path, original) -> tuple[list[float], int]:
    """Per quantised weight: |dequantised - original| in quantisation steps of its group."""
    from safetensors.torch import load_file
    from transformers import CompressedTensorsConfig

    reloaded = transformers.AutoModelForImageTextToText.from_pretrained(
        out, dtype=torch.float32, quantization_config=CompressedTensorsConfig(dequantize=True)
    )
    params = dict(reloaded.named_parameters())
    first = dict(original.named_parameters())
    tensors = load_file(str(out / "model.safetensors"))
    errors: list[float] = []
    checked = 0
    for key, scale in tensors.items():
        if not key.endswith(".weight_scale"):
            continue
        name = key[: -len("_scale")]
        deq, orig = params[name].detach(), first[name].detach()
        scale = scale.float().unsqueeze(-1)
        grid = deq.reshape(deq.shape[0], -1, GROUP) / scale
        assert torch.allclose(grid, grid.round(), atol=1e-3), f"{name} is not on its 4-bit grid"
        assert grid.min() >= -8 - 1e-3 and grid.max() <= 7 + 1e-3
        errors += ((deq - orig).abs().reshape(grid.shape) / scale).flatten().tolist()
        checked += 1
    for name, value in first.items():  # kept 16-bit: bit for bit what it was
        if ".visual." in name or name.startswith("lm_head"):
            assert torch.equal(params[name].detach(), value.detach()), name
    return errors, checked


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return tiny_model_dir(str(tmp_path_factory.getbasetemp()))


def test_gptq_w4a16_checkpoint_config_reload_grid_and_logit_error(
    tmp_path: Path, cache: Path, tiny_dir: Path
) -> None:
    out = tmp_path / "tiny-w4a16"
    report = run_quantize(out, cache, "gptq")
    assert report["scheme"] == "W4A16" and report["method"] == "gptq" and report["random_weights"]
    assert report["samples"] == 3 and report["calibration_tokens"] > 3 * 500
    assert "lm_head" in report["kept_16bit"] and any("vision tower" in k for k in report["kept_16bit"])
    config = json.loads((out / "config.json").read_text())["quantization_config"]
    assert config["quant_method"] == "compressed-tensors" and config["format"] == "pack-quantized"
    weights = config["config_groups"]["group_0"]["weights"]
    assert (weights["num_bits"], weights["type"], weights["strategy"], weights["group_size"]) == (
        4,
        "int",
        "group",
        GROUP,
    )
    assert "lm_head" in config["ignore"] and any(".visual." in m for m in config["ignore"])
    serving = load_serving_profile(out / "serving-profile.yaml")
    assert serving.precision == "w4a16" and serving.checkpoint == str(out.resolve())
    assert "vision tower" in serving.notes and "RANDOM WEIGHTS" in serving.notes
    assert (out / "RANDOM_WEIGHTS.txt").is_file()

    errors, checked = steps_from_original(out, original_model(tiny_dir))
    assert checked == report["quantized_modules"]
    within = sum(e <= 0.5 + 1e-3 for e in errors) / len(errors)
    print(
        f"\nGPTQ W4A16 (tiny, random weights): held-out logits relative error "
        f"{report['logits_relative_error']}; weights within half a step of the original: "
        f"{100 * within:.1f}%, largest {max(errors):.2f} steps"
    )
    assert 0 < report["logits_relative_error"] < 1.0


def test_round_to_nearest_keeps_every_weight_within_half_a_step(
    tmp_path: Path, cache: Path, tiny_dir: Path
) -> None:
    out = tmp_path / "tiny-rtn"
    report = run_quantize(out, cache, "rtn")
    errors, checked = steps_from_original(out, original_model(tiny_dir))
    assert checked == report["quantized_modules"] > 0
    assert max(errors) <= 0.5 + 1e-3
    print(f"\nRTN W4A16 (tiny): logits relative error {report['logits_relative_error']}")


def test_a_group_size_that_does_not_fit_the_layers_is_refused_before_calibrating(tmp_path: Path) -> None:
    """The default group size (128) on the tiny model's 64-wide layers: refused in one line naming a
    layer and the size that fits, before any calibration (it used to die after 50 s of it)."""
    cmd = [sys.executable, "-m", "dronecats", "quantize", "--model", "qwen3.5-tiny", "--random-init"]
    cmd += ["--out", str(tmp_path / "q"), "--samples", "5", "--dtype", "float32"]
    env = {**os.environ, "DRONECATS_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("quantize: group size 128 does not divide the input width of "), proc.stderr[
        -2000:
    ]
    assert f"--group-size {GROUP} fits every layer" in line and "Traceback" not in proc.stderr, line
    assert not (tmp_path / "q").exists()
