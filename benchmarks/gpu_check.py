"""One-command GPU check of the model path on real tensors. Prints a table; asserts nothing.

    python benchmarks/gpu_check.py                       # a GPU: qwen3.5-2b, bf16; else CPU: tiny, fp32
    python benchmarks/gpu_check.py --arch qwen3.5-0.8b --steps 20 --out gpu_check.json

No downloads, no files from anywhere: the Qwen3.5 architecture is built from its config in the
repo with RANDOM WEIGHTS (models.random_init), so every figure is timing only; replies are
noise, constrained to the schema. Each step is the pilot's real request (its system prompt,
history, a real simulator frame) through `hf://` exactly as in flight: frame encoding, chat
template, image processor, vision tower + prefill, constrained decode, parse. Reported:

- TTFT: inputs ready -> first token's logits (vision tower + prefill of ≈1.1k tokens);
- decode tokens/s and tokens per action (constrained: where the grammar ended the reply);
- step latency p50/p95 (the first step, with CUDA/grammar warm-up, is reported apart);
- decode time per token over the memory-bandwidth floor: every decoded token reads the language
  model's weights once (the vision tower is not read during decode), so
  floor = weight bytes / the GPU's memory bandwidth (a table of known GPUs; --bandwidth-gbs);
- an unconstrained pass (`new_tokens`, min = max) for pure decode speed, and the only pass
  when xgrammar is missing.

Frames: rendered by the built-in simulator when it imports, else --frames DIR (JPEGs saved
by `dronecats bench-model --save-frames DIR` on a machine that has it), else the repo's one
simulator frame (models/serving/warmup_frame.jpg).

A GPU machine without the project's small dependencies (msgspec, pyyaml, opencv-python-headless,
xgrammar + apache-tvm-ffi) and without network: carry a wheel folder built elsewhere for its
Python and platform (63 MiB, opencv most of it; docs/model-path.md has the commands). Never
commit the wheels.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# GB/s (10^9 bytes/s), peak DRAM bandwidth from the vendors' data sheets; matched in order
# against torch.cuda.get_device_name(), so the more specific names come first.
GPU_BANDWIDTH_GBS: tuple[tuple[str, float], ...] = (
    ("H200", 4800.0),
    ("GH200", 4000.0),
    ("H100 NVL", 3900.0),
    ("H100 PCIe", 2000.0),
    ("H100", 3350.0),  # SXM5
    ("H20", 4000.0),
    ("B200", 8000.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100", 1555.0),  # 40 GB
    ("L40S", 864.0),
    ("L40", 864.0),
    ("L4", 300.0),
    ("A10G", 600.0),
    ("A10", 600.0),
    ("RTX 6000 Ada", 960.0),
    ("RTX 4090", 1008.0),
    ("RTX 3090", 936.0),
    ("T4", 320.0),
    ("Thor", 273.0),
    ("Orin NX", 102.4),  # 16 GB
    ("Orin Nano", 68.0),  # 8 GB
    ("Orin", 204.8),  # AGX Orin
)


def known_bandwidth_gbs(device_name: str) -> float | None:
    for key, gbs in GPU_BANDWIDTH_GBS:
        if key.lower() in device_name.lower():
            return gbs
    return None


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def decode_weight_bytes(model: Any) -> int:
    """Bytes of the parameters one decoded token reads: the language model and lm_head (tied
    embeddings counted once), not the vision tower."""
    seen: set[int] = set()
    total = 0
    parts = [model.model.language_model, model.get_output_embeddings()]
    for part in parts:
        for p in part.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                total += p.numel() * p.element_size()
    return total


def load_frames(args: argparse.Namespace) -> tuple[list[Any], str]:
    import cv2

    if args.frames:
        paths = sorted(
            p for p in Path(args.frames).glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png")
        )
        frames = [f for f in (cv2.imread(str(p)) for p in paths) if f is not None]
        if not frames:
            raise SystemExit(f"gpu_check: no JPEG/PNG frames in {args.frames}")
        return frames, f"{len(frames)} frames from {args.frames}"
    if importlib.util.find_spec("pybullet") is not None:
        from dronecats.cli_bench_model import sim_frames

        return sim_frames(
            args.steps, args.scene
        ), f"{args.steps} frames rendered by the simulator ({args.scene})"
    frame = cv2.imread(str(ROOT / "models" / "serving" / "warmup_frame.jpg"))
    return [frame], "the repo's one simulator frame (no simulator here)"


def fast_linear_attention() -> str:
    """Qwen3.5's Gated DeltaNet layers use flash-linear-attention / causal-conv1d kernels when
    installed, else transformers' reference PyTorch code (correct, much slower on a GPU)."""
    have = [m for m in ("fla", "causal_conv1d") if importlib.util.find_spec(m) is not None]
    return ", ".join(have) if have else "none (reference PyTorch implementation)"


def run_steps(pilot: Any, frames: list[Any], steps: int, instruction: str) -> list[dict[str, Any]]:
    from models.pilot import Observation

    out = []
    history: list[Any] = []
    for i in range(steps):
        t0 = time.perf_counter()
        decision = pilot.decide(
            Observation(frames[i % len(frames)], instruction, history=history[-5:], plan=False)
        )
        wall = time.perf_counter() - t0
        timing = pilot.backend.last_timing
        if decision.action is not None:
            history.append(decision.action)
        out.append(
            {
                "step_s": wall,
                "valid": decision.action is not None,
                "error": decision.error,
                "inputs_s": timing.inputs_s if timing else None,
                "ttft_s": timing.ttft_s if timing else None,
                "decode_s": timing.decode_s if timing else None,
                "new_tokens": timing.new_tokens if timing else None,
                "prompt_tokens": timing.prompt_tokens if timing else None,
                "image_tokens": timing.image_tokens if timing else None,
            }
        )
    return out


def summarise(rows: list[dict[str, Any]], floor_s: float | None) -> dict[str, Any]:
    warm = rows[1:] if len(rows) > 1 else rows
    per_token = [
        r["decode_s"] / (r["new_tokens"] - 1)
        for r in warm
        if r["decode_s"] is not None and r["new_tokens"] > 1
    ]
    decode_token_s = statistics.median(per_token) if per_token else None
    ttft = [r["ttft_s"] for r in warm if r["ttft_s"] is not None]
    return {
        "steps": len(rows),
        "valid_replies": sum(r["valid"] for r in rows),
        "first_step_s": rows[0]["step_s"],
        "step_p50_s": pct([r["step_s"] for r in warm], 50),
        "step_p95_s": pct([r["step_s"] for r in warm], 95),
        "ttft_p50_s": statistics.median(ttft) if ttft else None,
        "inputs_p50_s": statistics.median([r["inputs_s"] for r in warm]),
        "tokens_per_reply": statistics.mean(r["new_tokens"] for r in warm),
        "decode_tokens_per_s": 1.0 / decode_token_s if decode_token_s else None,
        "decode_ms_per_token": 1000.0 * decode_token_s if decode_token_s else None,
        "ratio_to_bandwidth_floor": decode_token_s / floor_s if decode_token_s and floor_s else None,
        "prompt_tokens": warm[0]["prompt_tokens"],
        "image_tokens": warm[0]["image_tokens"],
    }


def fmt(value: Any, unit: str = "", scale: float = 1.0, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value * scale:.{digits}f}{unit}"
    return f"{value}{unit}"


def print_table(header: dict[str, Any], passes: dict[str, dict[str, Any]]) -> None:
    print("=" * 78)
    print("DroneCATS GPU check — RANDOM WEIGHTS: timing only, replies are noise")
    for key, value in header.items():
        print(f"  {key:28s} {value}")
    print("-" * 78)
    names = list(passes)
    print(f"  {'':34s}" + "".join(f"{n:>21s}" for n in names))
    rows = [
        ("steps (valid replies)", lambda s: f"{s['steps']} ({s['valid_replies']})"),
        ("prompt tokens (image tokens)", lambda s: f"{s['prompt_tokens']} ({s['image_tokens']})"),
        ("first step (warm-up)", lambda s: fmt(s["first_step_s"], " ms", 1000)),
        ("step latency p50", lambda s: fmt(s["step_p50_s"], " ms", 1000)),
        ("step latency p95", lambda s: fmt(s["step_p95_s"], " ms", 1000)),
        ("inputs (template, image proc.)", lambda s: fmt(s["inputs_p50_s"], " ms", 1000)),
        ("TTFT (vision + prefill) p50", lambda s: fmt(s["ttft_p50_s"], " ms", 1000)),
        ("tokens per reply", lambda s: fmt(float(s["tokens_per_reply"]))),
        ("decode tokens/s", lambda s: fmt(s["decode_tokens_per_s"])),
        ("decode ms/token", lambda s: fmt(s["decode_ms_per_token"], "", 1.0, 2)),
        ("ratio to bandwidth floor", lambda s: fmt(s["ratio_to_bandwidth_floor"], "x", 1.0, 2)),
    ]
    for label, cell in rows:
        print(f"  {label:34s}" + "".join(f"{cell(passes[n]):>21s}" for n in names))
    print("=" * 78)


def choose_device(asked: str, torch: Any) -> str | None:
    """The device to measure on; None (after one line) when a GPU was asked for and none is there.
    `auto` falls back to the CPU loudly: a CPU figure must never pass for a GPU check."""
    available = torch.cuda.is_available()
    if asked == "auto":
        if available:
            return "cuda"
        print(
            "gpu_check: WARNING: no CUDA device visible (torch.cuda.is_available() is False): "
            "measuring the tiny model on the CPU, not a GPU",
            file=sys.stderr,
        )
        return "cpu"
    if asked.startswith("cuda"):
        suffix = asked.partition(":")[2] or "0"
        if asked[4:5] not in ("", ":") or not suffix.isdigit():
            print(f"gpu_check: --device {asked}: expected cuda or cuda:N", file=sys.stderr)
            return None
        if not available:
            print(f"gpu_check: --device {asked}: no CUDA device visible to torch here", file=sys.stderr)
            return None
        if int(suffix) >= torch.cuda.device_count():
            count = torch.cuda.device_count()
            print(f"gpu_check: --device {asked}: only {count} CUDA device(s)", file=sys.stderr)
            return None
    return asked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--arch", default=None, help="random-init architecture (default: 2b on a GPU, tiny on CPU)"
    )
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cuda, cuda:N, cpu")
    parser.add_argument("--dtype", default=None, help="default bfloat16 on a GPU, float32 on CPU")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--new-tokens", type=int, default=32, help="the unconstrained pass's fixed length")
    parser.add_argument("--frames", default=None)
    parser.add_argument("--scene", default="residential")
    parser.add_argument("--instruction", default="go to the red car")
    parser.add_argument("--profile", default="qwen3.5-2b", help="model profile: prompts, caps, decoding")
    parser.add_argument(
        "--bandwidth-gbs", type=float, default=None, help="memory bandwidth, if not in the table"
    )
    parser.add_argument("--out", default=None, help="also write the figures as JSON")
    args = parser.parse_args()
    if args.steps < 2:
        print("gpu_check: --steps must be >= 2 (the first is the warm-up)", file=sys.stderr)
        return 2

    try:
        import torch
        import transformers
    except ImportError as exc:
        print(f"gpu_check: needs torch and transformers ({exc})", file=sys.stderr)
        return 2
    device = choose_device(args.device, torch)
    if device is None:
        return 2
    on_gpu = device.startswith("cuda")
    arch = args.arch or ("qwen3.5-2b" if on_gpu else "qwen3.5-tiny")
    dtype = args.dtype or ("bfloat16" if on_gpu else "float32")
    constrained = importlib.util.find_spec("xgrammar") is not None

    from models.pilot import ModelPilot, model_pilot_from_url

    url = f"hf://{arch}?random_init=1&device={device}&dtype={dtype}&profile={args.profile}"
    if not constrained:
        url += f"&new_tokens={args.new_tokens}"
    main_pilot = model_pilot_from_url(url)
    t0 = time.perf_counter()
    main_pilot.backend.load()  # the model first, the simulator after (triton's LLVM vs Mesa's)
    load_s = time.perf_counter() - t0
    model = main_pilot.backend._model
    pilots = {("constrained" if constrained else f"fixed {args.new_tokens} tokens"): main_pilot}
    if constrained:  # the same model, unconstrained at a fixed length: pure decode speed
        fixed = main_pilot.backend.sibling(new_tokens=args.new_tokens)
        pilots[f"fixed {args.new_tokens} tokens"] = ModelPilot(fixed, main_pilot.profile)
    frames, frames_note = load_frames(args)
    passes: dict[str, dict[str, Any]] = {}

    if on_gpu:
        name = torch.cuda.get_device_name(torch.device(device))
        bandwidth = args.bandwidth_gbs or known_bandwidth_gbs(name)
    else:
        name = f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
        bandwidth = args.bandwidth_gbs
    weight_bytes = decode_weight_bytes(model)
    floor_s = weight_bytes / (bandwidth * 1e9) if bandwidth else None
    params = sum(p.numel() for p in model.parameters())
    for label, pilot in pilots.items():
        rows = run_steps(pilot, frames, args.steps, args.instruction)
        if on_gpu:
            torch.cuda.synchronize()
        passes[label] = summarise(rows, floor_s)
    header = {
        "architecture": f"{arch} ({params / 1e9:.3f} B parameters, {type(model).__name__})",
        "device": name,
        "dtype": dtype,
        "torch / transformers": f"{torch.__version__} / {transformers.__version__}",
        "constrained decoding": "xgrammar"
        if constrained
        else "unavailable (xgrammar missing): fixed length only",
        "linear-attention kernels": fast_linear_attention(),
        "frames": frames_note,
        "model build + load": f"{load_s:.1f} s",
        "decode weight bytes": f"{weight_bytes / 1e9:.3f} GB",
        "memory bandwidth": f"{bandwidth:.0f} GB/s" if bandwidth else "unknown (give --bandwidth-gbs)",
        "bandwidth floor per token": fmt(floor_s, " ms", 1000, 3),
    }
    if on_gpu:
        header["peak GPU memory"] = f"{torch.cuda.max_memory_allocated(torch.device(device)) / 2**30:.2f} GiB"
    print_table(header, passes)
    if args.out:
        Path(args.out).write_text(json.dumps({"header": header, "passes": passes}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
