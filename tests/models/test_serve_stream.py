"""serve-pilot with `stream: true`: server-sent events in OpenAI's chat.completion.chunk format, read
by the official `openai` client and by bench-model's streaming client, on the flight request a
ModelPilot builds; what is refused stays a plain JSON error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from models.pilot import Observation, model_pilot_from_url
from models.serve import make_pilot, reply_pieces, start_server
from models.serving.bench import stream_once
from tests.support.pilots import draw_box, scene

REPLY = '{"action": "go", "point": [512, 480], "depth_m": 12.5, "angle_deg": null}'


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """serve-pilot over a scripted peer that says REPLY every time, and a real flight request body."""
    script = tmp_path / "script.jsonl"
    script.write_text((REPLY + "\n") * 8)
    server, thread = start_server(make_pilot(f"scripted:{script}"))
    base = f"http://127.0.0.1:{server.port}/v1"
    pilot = model_pilot_from_url(f"openai://127.0.0.1:{server.port}/v1?profile=qwen3.5-2b")
    image = scene()
    draw_box(image, 300, 200, 60, 30)
    body = pilot.backend.build_body(pilot.build_request(Observation(image, "go to the red car", plan=False)))
    try:
        yield base, body
    finally:
        pilot.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_pieces_join_back_to_the_reply() -> None:
    for text in (
        REPLY,
        '{"a":"x\\"y é","n":-1.5e-3,"t":true,"z":null}',
        '{"drones":[{"action":"finished"}]}',
    ):
        pieces = reply_pieces(text)
        assert "".join(pieces) == text and len(pieces) > 5
    assert '"depth_m"' in reply_pieces(REPLY) and "12.5" in reply_pieces(REPLY)


def test_the_openai_client_reads_the_stream(scripted) -> None:
    openai = pytest.importorskip("openai")
    base, body = scripted
    typed = ("model", "messages", "response_format", "max_tokens", "temperature", "top_p", "n", "seed")
    client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0)
    try:
        chunks = list(
            client.chat.completions.create(
                **{k: body[k] for k in typed if k in body},
                stream=True,
                stream_options={"include_usage": True},
                extra_body={k: v for k, v in body.items() if k not in typed and k != "stream"},
            )
        )
    finally:
        client.close()
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == REPLY
    assert len(chunks) > 10  # the reply in pieces, not one event
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert {c.object for c in chunks} == {"chat.completion.chunk"} and len({c.id for c in chunks}) == 1
    assert all(c.usage is None for c in chunks)  # no tokenizer: no invented token counts


def test_bench_stream_client_and_keep_alive(scripted) -> None:
    base, body = scripted
    with httpx.Client(base_url=base, timeout=10) as client:
        first = stream_once(client, body)
        # chunked framing: the same keep-alive connection then carries a plain request and a stream
        plain = client.post("/chat/completions", json=body)
        second = stream_once(client, body)
    assert first.text == second.text == REPLY == plain.json()["choices"][0]["message"]["content"]
    assert 0 < first.ttft_s <= first.last_token_s <= first.total_s
    assert first.completion_tokens is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"stream": "yes"}, "stream='yes' must be true or false"),
        ({"stream": False, "stream_options": {"include_usage": True}}, "only allowed with stream=true"),
        ({"stream": True, "stream_options": [1]}, "stream_options must be an object"),
        ({"stream": True, "tools": [{"type": "function"}]}, "tools/function calling are not supported"),
    ],
)
def test_refused_streams_are_plain_json_errors(scripted, change: dict[str, Any], message: str) -> None:
    base, body = scripted
    response = httpx.post(f"{base}/chat/completions", json={**body, **change}, timeout=10)
    assert response.status_code == 400 and response.headers["content-type"] == "application/json"
    assert message in response.json()["error"]["message"]


def test_a_reply_off_schema_is_refused_before_any_event(tmp_path: Path) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_text(json.dumps({"action": "fly"}) + "\n")
    server, thread = start_server(make_pilot(f"scripted:{script}"))
    pilot = model_pilot_from_url(f"openai://127.0.0.1:{server.port}/v1?profile=qwen3.5-2b")
    try:
        body = pilot.backend.build_body(pilot.build_request(Observation(scene(), "go to the red car")))
        response = httpx.post(
            f"http://127.0.0.1:{server.port}/v1/chat/completions", json={**body, "stream": True}, timeout=10
        )
    finally:
        pilot.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert response.status_code == 400 and "cannot satisfy the requested response_format" in response.text
