"""Real model architectures with RANDOM WEIGHTS, built on this machine from files in the repo.

No weights, tokenizer or processor can be downloaded here, but an architecture built from its
config runs the same kernels on the same tensor shapes as the trained model, so its step timing
is honest. Its replies are noise: timing only, never a pilot's quality. Everything it builds
says so (the directory's RANDOM_WEIGHTS.txt, the backend's name, the logs).

    path = build_model_dir("qwen3.5-tiny")      # config + trained tokenizer + image processor
    hf://qwen3.5-2b?random_init=1&device=cuda   # the hf:// backend builds it on first use

configs/NAME.json are the Qwen3.5 family (`qwen3_5`, hybrid Gated-DeltaNet linear attention with
a full-attention layer every fourth) at the profiles' sizes, and a tiny variant for CPU tests.
"""

from models.random_init.build import ARCHITECTURES, RANDOM_WEIGHTS_LABEL, architecture_names, build_model_dir

__all__ = ["ARCHITECTURES", "RANDOM_WEIGHTS_LABEL", "architecture_names", "build_model_dir"]
