"""The hf:// transformers backend without its extra (none here, and no GPU): URL parsing, lazy
imports, the message conversion a chat template needs, decoding settings, and a clean error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from common.errors import BackendError
from models.backends import open_backend
from models.backends.hf_local import HFBackend, generate_kwargs, hf_messages
from models.frames import encode_frame
from models.pilot import Observation, model_pilot_from_url
from models.pilot_prompt import PilotPrompt
from models.profile import load_profile
from tests.support.pilots import RED_BGR, draw_box, scene

ROOT = Path(__file__).resolve().parents[2]


def test_url_parameters() -> None:
    backend = open_backend(
        "hf:///models/qwen3.5-2b?profile=qwen3.5-2b&random_init=1&new_tokens=12&device=cpu"
    )
    assert isinstance(backend, HFBackend)
    assert (backend.model_id, backend.device, backend.random_init, backend.new_tokens) == (
        "/models/qwen3.5-2b",
        "cpu",
        True,
        12,
    )
    assert "RANDOM WEIGHTS" in backend.name
    # nothing loaded yet: checked in a fresh interpreter (other tests here may have loaded torch)
    lazy = (
        "import sys; from models.backends import open_backend;"
        "open_backend('hf://m?random_init=1&device=cpu');"
        "sys.exit(int('torch' in sys.modules or 'transformers' in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", lazy], cwd=ROOT, timeout=60).returncode == 0
    # constrained decoding is the default; a fixed length (new_tokens) is unconstrained timing (bad
    # hf:// parameters: tests/models/test_pilots_backends.py's table of bad backend URLs)
    assert open_backend("hf://m").constrained and not backend.constrained


def test_messages_for_a_chat_template() -> None:
    image = scene(1280, 720)
    draw_box(image, 600, 400, 80, 40, RED_BGR)
    prompt = PilotPrompt(load_profile("qwen3.5-2b"))
    request = prompt.request("go to the red car", [], encode_frame(image))
    messages, images = hf_messages(request)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == [{"type": "text", "text": request.system}]
    kinds = [p["type"] for p in messages[1]["content"]]
    assert kinds.count("image") == 1 and "text" in kinds
    assert len(images) == 1 and images[0].size == (640, 360) and images[0].mode == "RGB"
    r, g, b = np.asarray(images[0])[210, 320]  # the red box, now in RGB order
    assert r > 150 and g < 80 and b < 80


def test_generate_settings() -> None:
    request = PilotPrompt(load_profile("qwen3.5-2b")).request("x", [], encode_frame(scene()))
    kwargs = generate_kwargs(request, None)
    assert kwargs == {"max_new_tokens": 64, "do_sample": True, "temperature": 0.4}
    fixed = generate_kwargs(request, 12)
    assert fixed["max_new_tokens"] == fixed["min_new_tokens"] == 12


def test_without_the_extra_a_step_is_a_hold_not_a_crash() -> None:
    try:
        import transformers  # noqa: F401

        pytest.skip("transformers is installed here")
    except ImportError:
        pass
    with pytest.raises(BackendError, match=r"dronecats\[hf\]"):
        HFBackend("m", device="cpu").load()
    pilot = model_pilot_from_url("hf://m?profile=qwen3.5-2b&device=cpu")
    decision = pilot.decide(Observation(scene(), "go to the red car"))
    assert decision.action is None and "dronecats[hf]" in (decision.error or "")
