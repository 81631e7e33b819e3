"""Build a random-weights model directory: config, tokenizer, image processor, chat template.

- config.json: configs/NAME.json as written in the repo (no download);
- the tokenizer: byte-level BPE (as Qwen's) trained here with `tokenizers` on the project's own
  prompts, histories and replies, its vocabulary padded to the config's size with unused tokens
  and the special tokens at the ids the config names;
- the image processor: the Qwen2-VL processor's defaults, with the vision tower's patch size and
  the frame budget a 640×360 frame needs (max_pixels matched to a 640-wide frame, as in the serving
  profiles);
- RANDOM_WEIGHTS.txt, so that nobody takes the directory for a trained model.

Directories are cached under the user's cache (DRONECATS_CACHE, else ~/.cache/dronecats), keyed
by a hash of everything that goes into them, and built into a temporary directory first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.errors import ConfigError

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast, Qwen2VLImageProcessorPil

    from common.actions import Action

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
CONFIGS_DIR = HERE / "configs"
CHAT_TEMPLATE = HERE / "chat_template.jinja"
BUILD_VERSION = "1"
RANDOM_WEIGHTS_LABEL = (
    "RANDOM WEIGHTS: this model directory has no trained weights. The architecture is real and its "
    "timing is honest; its replies are noise and say nothing about a trained model."
)
# Qwen's special tokens in their order from <|endoftext|> (the config's vision_start id - 9).
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<think>",
    "</think>",
)
MAX_TRAINED_VOCAB = 16_000  # the corpus supports a few thousand merges at most
MAX_PIXELS = 640 * 360
MIN_PIXELS = 56 * 56

INSTRUCTIONS = (
    "go to the red car",
    "fly to the blue truck",
    "find the person in the yellow jacket",
    "approach the white van parked by the house",
    "go to the tree next to the black SUV",
    "land near the green bin",
    "search the yard for the orange cone",
    "go to the parked motorcycle",
)
PLAN_TEXTS = (
    "A red car is parked left of centre, about fifteen metres ahead.",
    "The target is not in view; a house and a fence fill the frame.",
    "The car is close, slightly right; one more short step should reach it.",
    "Turn right to search the other side of the street.",
    "Fly toward the car's front wheel and judge the distance again.",
    "The target is partly hidden behind a tree on the right.",
)


def architecture_names() -> list[str]:
    return sorted(p.stem for p in CONFIGS_DIR.glob("*.json"))


ARCHITECTURES = tuple(architecture_names())


def load_config_dict(name: str) -> dict[str, Any]:
    path = CONFIGS_DIR / f"{name}.json"
    if not path.is_file():
        raise ConfigError(f"unknown random-init architecture {name!r}; known: {', '.join(ARCHITECTURES)}")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def cache_root() -> Path:
    root = os.environ.get("DRONECATS_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "dronecats"


# ---- the corpus: what the model will read and write in flight -----------------------------------


def _random_action(rng: random.Random, think: bool, plan: bool) -> Action:
    from common.actions import Finished, Go, Plan, Rotate, Think

    kinds = ["go", "go", "go", "rotate", "finished"] + (["think"] if think else [])
    kind = rng.choice(kinds)
    extra = None
    if plan:
        extra = Plan(
            target_in_view=rng.choice(("yes", "partly", "no")),
            target_match=rng.choice(("confirmed", "uncertain", "wrong_target")),
            closing_in=rng.choice(("closing", "holding", "receding", "unknown")),
            current_frame=rng.choice(PLAN_TEXTS),
            action_planning=rng.choice(PLAN_TEXTS),
        )
    if kind == "go":
        depth = rng.choice((rng.randint(1, 40), round(rng.uniform(0.5, 40.0), 1)))
        return Go(point=(rng.randint(0, 1000), rng.randint(0, 1000)), depth_m=depth, plan=extra)
    if kind == "rotate":
        return Rotate(angle_deg=rng.choice((-90, -45, -30, 15, 30, 45, 90)), plan=extra)
    return Think(plan=extra) if kind == "think" else Finished(plan=extra)


def corpus(seed: int = 0) -> list[str]:
    """The project's own text: every system prompt, user messages with histories, replies."""
    from models.history import render_history
    from models.parser import reply_object
    from models.templates import (
        PromptSwitches,
        commander_system,
        commander_user,
        multi_system,
        multi_user,
        single_system,
        single_user,
    )

    rng = random.Random(seed)
    texts: list[str] = []
    for think in (True, False):
        for plan in (True, False):
            for visual in (False, True):
                switches = PromptSwitches(think=think, plan_schema=plan, visual_history=visual)
                for fmt in ("[x, y]", "[y, x]"):
                    texts.append(single_system(fmt, switches))
        for n in (2, 3, 4):
            texts.append(multi_system("[x, y]", n, PromptSwitches(think=think)))
    for n in (2, 3, 4):
        texts.append(commander_system(n))
    for _ in range(400):
        instruction = rng.choice(INSTRUCTIONS)
        think = rng.random() < 0.7
        history = [_random_action(rng, think, False) for _ in range(rng.randint(0, 5))]
        texts.append(single_user(instruction, render_history(history, "xy"), PromptSwitches(think=think)))
        reply = reply_object(_random_action(rng, think, rng.random() < 0.3))
        texts.append(json.dumps(reply, separators=(",", ":")))
        texts.append(json.dumps(reply))
    for _ in range(40):
        n = rng.randint(2, 4)
        histories = [render_history([_random_action(rng, True, False)], "xy") for _ in range(n)]
        texts.append(multi_user(rng.choice(INSTRUCTIONS), histories))
        orders = [rng.choice(PLAN_TEXTS) for _ in range(n)]
        texts.append(commander_user(rng.choice(INSTRUCTIONS), orders, rng.random() < 0.5))
    return texts


# ---- the tokenizer ---------------------------------------------------------------------------


def train_tokenizer(config: dict[str, Any], texts: list[str]) -> Tokenizer:
    """A byte-level BPE tokenizer with exactly config vocab_size ids, specials at the config's ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    vocab_size = int(config["text_config"]["vocab_size"])
    base = int(config["vision_start_token_id"]) - SPECIAL_TOKENS.index("<|vision_start|>")
    if base < 256 + len(SPECIAL_TOKENS) or base + len(SPECIAL_TOKENS) > vocab_size:
        raise ConfigError(f"special-token ids from {base} do not fit a vocabulary of {vocab_size}")
    for key, token in (
        ("image_token_id", "<|image_pad|>"),
        ("video_token_id", "<|video_pad|>"),
        ("vision_end_token_id", "<|vision_end|>"),
    ):
        if int(config[key]) != base + SPECIAL_TOKENS.index(token):
            raise ConfigError(f"config {key}={config[key]} is not where {token} goes (base {base})")

    # Qwen's pre-tokenizer splits on its regex then maps bytes; ByteLevel's own regex is GPT-2's.
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=min(base, MAX_TRAINED_VOCAB),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre
    trained.train_from_iterator(texts, trainer)
    learned = trained.get_vocab()
    merges = json.loads(trained.to_str())["model"]["merges"]

    vocab: dict[str, int] = dict(learned)
    special_ids = {token: base + i for i, token in enumerate(SPECIAL_TOKENS)}
    used = set(vocab.values()) | set(special_ids.values())
    for token, idx in special_ids.items():
        vocab[token] = idx
    # The rest of the ids exist in the model's embedding: give them unused tokens that no
    # merge produces (so they never appear in encoded text) but that decode to something.
    for idx in range(vocab_size):
        if idx not in used:
            vocab[f"<|unused_{idx}|>"] = idx
    if len(vocab) != vocab_size:
        raise RuntimeError(f"tokenizer has {len(vocab)} ids, config wants {vocab_size}")
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m) for m in merges]))
    tokenizer.pre_tokenizer = pre
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS[:14]))
    tokenizer.add_tokens(list(SPECIAL_TOKENS[14:]))
    return tokenizer


def _fast_tokenizer(tokenizer: Tokenizer) -> PreTrainedTokenizerFast:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=32768,
        extra_special_tokens={
            "image_token": "<|image_pad|>",
            "video_token": "<|video_pad|>",
            "vision_start_token": "<|vision_start|>",
            "vision_end_token": "<|vision_end|>",
        },
    )


def image_processor(config: dict[str, Any]) -> Qwen2VLImageProcessorPil:
    """The Qwen2-VL image processor's defaults, sized for this vision tower and a 640-wide frame.

    The PIL variant: torchvision (the default backend) cannot be installed beside the CPU torch."""
    from transformers import Qwen2VLImageProcessorPil

    vision = config["vision_config"]
    return Qwen2VLImageProcessorPil(
        patch_size=int(vision["patch_size"]),
        merge_size=int(vision["spatial_merge_size"]),
        temporal_patch_size=int(vision["temporal_patch_size"]),
        image_mean=[0.5, 0.5, 0.5],  # Qwen3-VL's vision tower normalises to [-1, 1]
        image_std=[0.5, 0.5, 0.5],
        size={"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS},
    )


# ---- the directory ---------------------------------------------------------------------------


def _fingerprint(name: str) -> str:
    parts = [BUILD_VERSION, name, (CONFIGS_DIR / f"{name}.json").read_text(), CHAT_TEMPLATE.read_text()]
    parts += corpus()  # the prompts and replies the tokenizer is trained on
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def build_model_dir(name: str, out_dir: str | Path | None = None) -> Path:
    """The directory for architecture `name` (built on first use; cached by content)."""
    config = load_config_dict(name)
    target = Path(out_dir) if out_dir else cache_root() / "random-init" / f"{name}-{_fingerprint(name)}"
    if (target / "RANDOM_WEIGHTS.txt").is_file():
        return target
    from transformers import AutoConfig

    logger.info("building the random-weights directory %s (tokenizer trained here)", target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        AutoConfig.for_model(**config).save_pretrained(tmp)
        tokenizer = _fast_tokenizer(train_tokenizer(config, corpus()))
        tokenizer.chat_template = CHAT_TEMPLATE.read_text()
        tokenizer.save_pretrained(tmp)
        # No processor_config.json: transformers' Qwen3-VL processor insists on a video processor,
        # which needs torchvision; models.backends.hf_inputs composes tokenizer + image processor.
        image_processor(config).save_pretrained(tmp)
        (tmp / "RANDOM_WEIGHTS.txt").write_text(RANDOM_WEIGHTS_LABEL + f"\narchitecture: {name}\n")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def is_random_weights_dir(path: str | Path) -> bool:
    return (Path(path) / "RANDOM_WEIGHTS.txt").is_file()
