"""Real architectures without downloads (the `hf` extra): the Qwen3.5 configs in the repo build
models of their nominal sizes, the locally trained tokenizer puts the special tokens where the
config says, and `hf://qwen3.5-tiny?random_init=1` answers every kind of request the project
sends (action, plan, N drones, commander) with a reply the parser accepts, in this process."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("xgrammar")

from common.errors import ConfigError  # noqa: E402
from models.backends import open_backend  # noqa: E402
from models.backends.hf_local import HFBackend  # noqa: E402
from models.frames import encode_frame  # noqa: E402
from models.pilot_prompt import CommanderPrompt, MultiDronePrompt, PilotPrompt  # noqa: E402
from models.profile import load_profile  # noqa: E402
from models.random_init.build import ARCHITECTURES, load_config_dict  # noqa: E402
from tests.support.models_hf import parse_reply, tiny_model_dir  # noqa: E402
from tests.support.pilots import RED_BGR, draw_box, scene  # noqa: E402

NOMINAL_B = {"qwen3.5-0.8b": 0.8, "qwen3.5-2b": 2.0, "qwen3.5-4b": 4.0}


@pytest.mark.parametrize("name", sorted(NOMINAL_B))
def test_the_configs_build_the_nominal_sizes(name: str) -> None:
    config = transformers.AutoConfig.for_model(**load_config_dict(name))
    with torch.device("meta"):  # shapes only: no memory, no time
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert type(model).__name__ == "Qwen3_5ForConditionalGeneration"
    billions = sum(p.numel() for p in model.parameters()) / 1e9
    assert NOMINAL_B[name] <= billions <= NOMINAL_B[name] * 1.2, billions
    layers = config.text_config.layer_types
    assert layers.count("full_attention") * 4 == len(layers)  # hybrid: one full layer in four
    assert config.text_config.vocab_size == 248320


def test_the_tokenizer_is_padded_to_the_config_with_specials_at_its_ids(tmp_path_factory) -> None:
    directory = tiny_model_dir(str(tmp_path_factory.getbasetemp()))
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    config = transformers.AutoConfig.from_pretrained(directory)
    assert len(tokenizer) == config.text_config.vocab_size
    assert tokenizer.convert_tokens_to_ids("<|image_pad|>") == config.image_token_id
    assert tokenizer.convert_tokens_to_ids("<|vision_start|>") == config.vision_start_token_id
    reply = '{"action":"go","point":[512,300],"depth_m":12,"angle_deg":null}'
    ids = tokenizer.encode(reply, add_special_tokens=False)
    assert tokenizer.decode(ids) == reply and len(ids) < len(reply) / 2  # trained on such replies
    assert "RANDOM WEIGHTS" in (directory / "RANDOM_WEIGHTS.txt").read_text()


def test_an_unknown_architecture_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="built-in architecture"):
        HFBackend("qwen9-nano", device="cpu", random_init=True).load()
    assert set(ARCHITECTURES) >= {"qwen3.5-tiny", *NOMINAL_B}


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    directory = tiny_model_dir(str(tmp_path_factory.getbasetemp()))
    url = f"hf://qwen3.5-tiny?random_init=1&device=cpu&dtype=float32&config={directory}"
    backend = open_backend(url)
    yield backend
    backend.close()


def requests():
    profile = load_profile("qwen3.5-2b")
    image = scene(1280, 720)
    draw_box(image, 600, 400, 80, 40, RED_BGR)
    frame = encode_frame(image)
    single = PilotPrompt(profile)
    yield "action", single.request("go to the red car", [], frame)
    yield "plan", single.request("go to the red car", [], frame, previous_was_think=True)
    yield "multi", MultiDronePrompt(profile, 2).request("find the red car", [[], []], [frame, frame])
    yield "commander", CommanderPrompt(profile, 2).request("search the street", [None, None], [frame, frame])


@pytest.mark.parametrize(
    ("kind", "request_"), list(requests()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_kind_of_request_gets_a_reply_the_parser_accepts(backend, kind, request_) -> None:
    completion = backend.complete(request_)
    parse_reply(request_, completion.text)  # raises MalformedReply if not
    timing = backend.last_timing
    assert timing.constrained and timing.new_tokens == completion.stats.completion_tokens
    assert completion.stats.finish_reason == "stop"  # the grammar ended it, within the cap
    assert timing.image_tokens == 220 * (1 if kind in ("action", "plan") else 2)
    assert "random weights" in completion.stats.model
