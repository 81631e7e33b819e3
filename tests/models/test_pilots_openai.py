"""openai:// end to end: the real backend against `dronecats serve-pilot` in another process, the
official `openai` client against it, and test peers at the wire for the failures no real server
produces on demand (garbage, refusals, timeouts, nothing listening)."""

from __future__ import annotations

import json
import time

import httpx
import msgspec
import pytest

from common.actions import Finished, Go, Rotate, Think
from common.errors import BackendError, ConfigError
from models.backends import open_backend
from models.backends.openai_http import OpenAIBackend
from models.pilot import (
    ModelPilot,
    Observation,
    command,
    decide_multi,
    model_pilot_from_url,
    profile_for_url,
)
from models.pilot_prompt import CommanderPrompt, MultiDronePrompt
from models.profile import load_profile
from tests.support.pilots import RawPeer, RecordingPeer, draw_box, scene, serve_pilot_process
from tests.support.ports import free_port


@pytest.fixture(scope="module")
def baseline_server() -> str:
    with serve_pilot_process("--pilot", "baseline") as hostport:
        yield hostport


def car_frame():
    image = scene()
    draw_box(image, 400, 200, 144, 48)  # a red car about 8 m ahead, right of centre
    return image


def test_model_pilot_over_http_gets_baseline_actions(baseline_server: str) -> None:
    pilot = model_pilot_from_url(f"openai://{baseline_server}/v1?profile=qwen3.5-2b&timeout_s=10")
    try:
        decision = pilot.decide(Observation(car_frame(), "go to the red car"))
        assert decision.error is None
        assert isinstance(decision.action, Go)
        x, y = decision.action.point
        assert 625 <= x <= 850 and 555 <= y <= 690  # inside the drawn box, in 0-1000 units
        assert decision.stats is not None and decision.stats.latency_s > 0
        assert decision.stats.attempts == 1 and decision.stats.backend == "openai"

        # After a think the request asks for the plan schema, and the reply carries the plan.
        planned = pilot.decide(Observation(car_frame(), "go to the red car", (Think(),)))
        assert isinstance(planned.action, Go) and planned.action.plan is not None
        assert planned.action.plan.target_in_view == "yes"

        empty = pilot.decide(Observation(scene(), "go to the red car", (Rotate(angle_deg=-60),)))
        assert empty.action == Rotate(angle_deg=-60.0)  # keeps searching the same way
    finally:
        pilot.close()


def test_multi_and_commander_calls_over_http(baseline_server: str) -> None:
    url = f"openai://{baseline_server}/v1?profile=qwen3.5-2b"
    backend = open_backend(url)
    profile = profile_for_url(url)
    try:
        frames = [car_frame(), scene()]
        multi = decide_multi(
            backend, MultiDronePrompt(profile, 2), "go to the red car", frames, [(), (Rotate(angle_deg=45),)]
        )
        assert multi.error is None
        assert isinstance(multi.actions[0], Go) and multi.actions[1] == Rotate(angle_deg=60.0)
        orders = command(backend, CommanderPrompt(profile, 2), "find the red car", frames, [None, Finished()])
        assert orders.error is None and orders.orders == ("find the red car", "find the red car")
    finally:
        backend.close()


def test_yx_profile_round_trips_the_point_order(baseline_server: str, tmp_path) -> None:
    # The baseline behind serve-pilot reads the point order from the system prompt's {point_fmt}.
    pilot = model_pilot_from_url(f"openai://{baseline_server}/v1?profile=cosmos3-edge-2b-ft")
    try:
        assert pilot.profile.point_order == "yx"
        decision = pilot.decide(Observation(car_frame(), "go to the red car"))
        assert isinstance(decision.action, Go) and 625 <= decision.action.point[0] <= 850
    finally:
        pilot.close()


class ImpossibleEnumBackend(OpenAIBackend):
    """The real backend, sending a schema whose action enum no pilot can satisfy."""

    def build_body(self, request):
        body = super().build_body(request)
        schema = json.loads(json.dumps(body["response_format"]["json_schema"]["schema"]))
        schema["properties"]["action"]["enum"] = ["teleport"]
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
        return body


def test_server_refuses_a_schema_the_pilot_cannot_satisfy(baseline_server: str) -> None:
    backend = ImpossibleEnumBackend(f"http://{baseline_server}/v1", retries=2, backoff_s=0.01)
    pilot = ModelPilot(backend, load_profile("qwen3.5-2b"))
    try:
        decision = pilot.decide(Observation(car_frame(), "go to the red car"))
        assert decision.action is None
        assert "HTTP 400" in decision.error and "cannot satisfy" in decision.error
        assert "1 attempt" in decision.error  # a 400 is not retried
    finally:
        pilot.close()


def test_server_rejects_an_invalid_schema_and_garbage_bodies(baseline_server: str) -> None:
    with httpx.Client(base_url=f"http://{baseline_server}") as client:
        bad_schema = {
            "model": "m",
            "messages": [{"role": "user", "content": "Instruction: go to the red car"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 7}}},
        }
        r = client.post("/v1/chat/completions", json=bad_schema)
        assert r.status_code == 400 and "not a valid JSON schema" in r.json()["error"]["message"]
        r = client.post("/v1/chat/completions", content=b"{not json")
        assert r.status_code == 400
        no_image = {"model": "m", "messages": [{"role": "user", "content": "Instruction: go to the red car"}]}
        r = client.post("/v1/chat/completions", json=no_image)
        assert r.status_code == 400 and "image" in r.json()["error"]["message"]
        assert client.get("/health").json()["status"] == "ok"
        assert client.get("/v1/models").json()["data"][0]["id"] == "baseline"


def test_official_openai_client_talks_to_serve_pilot(baseline_server: str) -> None:
    import openai

    from models.frames import encode_frame
    from models.schemas import action_schema
    from models.templates import PromptSwitches, single_system

    client = openai.OpenAI(
        base_url=f"http://{baseline_server}/v1", api_key="unused", max_retries=0, timeout=10
    )
    try:
        assert [m.id for m in client.models.list()] == ["baseline"]
        response = client.chat.completions.create(
            model="baseline",
            messages=[
                {"role": "system", "content": single_system("[x, y]", PromptSwitches())},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "Instruction: go to the red car\n\nRecent actions:\n(none yet)",
                        },
                        {"type": "image_url", "image_url": {"url": encode_frame(car_frame()).data_url()}},
                    ],
                },
            ],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "dronecats_action", "schema": action_schema(True), "strict": True},
            },
            max_tokens=64,
            temperature=0.0,
        )
        reply = json.loads(response.choices[0].message.content)
        assert reply["action"] == "go" and reply["angle_deg"] is None
        assert response.choices[0].finish_reason == "stop"
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(
                model="baseline",
                messages=[{"role": "user", "content": "Instruction: go to the red car"}],
            )
    finally:
        client.close()


def test_slow_server_times_out_without_retrying() -> None:
    with serve_pilot_process("--pilot", "baseline", "--latency-s", "3") as hostport:
        pilot = model_pilot_from_url(f"openai://{hostport}/v1?model=baseline&timeout_s=0.5&retries=2")
        try:
            started = time.monotonic()
            decision = pilot.decide(Observation(car_frame(), "go to the red car"))
            elapsed = time.monotonic() - started
        finally:
            pilot.close()
    assert decision.action is None
    assert "timed out: the total deadline (0.50 s) passed" in decision.error
    assert "1 attempt" in decision.error
    assert elapsed < 2.5


def test_server_that_is_down_fails_after_bounded_retries() -> None:
    port = free_port()
    backend = open_backend(f"openai://127.0.0.1:{port}/v1?model=m&retries=3&backoff_s=0.01")
    pilot = ModelPilot(backend, load_profile("qwen3.5-2b"))
    started = time.monotonic()
    decision = pilot.decide(Observation(car_frame(), "go to the red car"))
    assert time.monotonic() - started < 3.0
    assert decision.action is None and "connection failed" in decision.error
    assert "after 4 attempt(s)" in decision.error
    pilot.close()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\nnot json!",
            "not JSON",
        ),
        (b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{"choices":1', "not JSON"),
        (b'HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{"choices": []}', "no choices[0]"),
        (b"garbage that is not http at all\r\n\r\n", "connection failed"),
        (b"", "connection failed"),  # the peer closes without a byte
    ],
)
def test_garbage_from_the_server_is_a_backend_error(reply: bytes, expected: str) -> None:
    with RawPeer(reply) as peer:
        backend = OpenAIBackend(
            f"http://127.0.0.1:{peer.port}/v1", "m", retries=1, backoff_s=0.01, timeout_s=3
        )
        pilot = ModelPilot(backend, load_profile("qwen3.5-2b"))
        decision = pilot.decide(Observation(car_frame(), "go to the red car"))
        pilot.close()
    assert decision.action is None and expected in decision.error


def test_5xx_is_retried_then_reported() -> None:
    answers = iter([(503, b'{"error": {"message": "warming up"}}')] * 2)

    def respond(body: bytes) -> tuple[int, bytes]:
        content = '{"action": "finished", "point": null, "depth_m": null, "angle_deg": null}'
        ok: dict = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
        ok["usage"] = {"prompt_tokens": 321, "completion_tokens": 7}
        return next(answers, (200, json.dumps(ok).encode()))

    with RecordingPeer(respond) as peer:
        backend = OpenAIBackend(f"http://127.0.0.1:{peer.port}/v1", retries=2, backoff_s=0.01)
        decision = ModelPilot(backend, load_profile("qwen3.5-2b")).decide(Observation(car_frame(), "go to x"))
        backend.close()
    # Three requests: two 503s, then the answer; tokens and attempts recorded.
    assert len(peer.requests) == 3
    assert decision.action == Finished() and decision.error is None
    assert decision.stats is not None and decision.stats.attempts == 3
    assert decision.stats.prompt_tokens == 321 and decision.stats.completion_tokens == 7

    answers = iter([(500, b"boom")] * 10)
    with RecordingPeer(lambda body: next(answers)) as peer:
        backend = OpenAIBackend(f"http://127.0.0.1:{peer.port}/v1", retries=2, backoff_s=0.01)
        with pytest.raises(BackendError, match=r"HTTP 500: boom after 3 attempt"):
            backend.complete(
                ModelPilot(backend, load_profile("qwen3.5-2b")).build_request(
                    Observation(car_frame(), "go to the red car")
                )
            )
        backend.close()
    assert len(peer.requests) == 3


def test_system_text_and_schema_are_byte_identical_every_call(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    reply = {
        "choices": [
            {"message": {"content": '{"action":"rotate","point":null,"depth_m":null,"angle_deg":30}'}}
        ]
    }
    with RecordingPeer(lambda body: (200, json.dumps(reply).encode())) as peer:
        pilot = model_pilot_from_url(f"openai://127.0.0.1:{peer.port}/v1?profile=qwen3.5-2b")
        frames = [car_frame(), scene(), scene(320, 180)]
        histories = [(), (Rotate(angle_deg=30),), (Go(point=(500, 500), depth_m=9.0), Rotate(angle_deg=30))]
        for frame, history in zip(frames, histories, strict=True):
            assert pilot.decide(Observation(frame, f"go to the red car {len(history)}", history)).action
        pilot.close()
    bodies = [body for _, body in peer.requests]
    assert len(bodies) == 3
    # Everything before the user message (model, system text) is the same bytes every call...
    prefixes = {body[: body.index(b'{"role":"user"')] for body in bodies}
    assert len(prefixes) == 1 and b'"role":"system"' in next(iter(prefixes))
    # ...and so is the schema with its name, while the user text and image differ.
    formats = {body[body.index(b'"response_format":') : body.index(b'"max_tokens"')] for body in bodies}
    assert len(formats) == 1
    assert len({body[body.index(b'{"role":"user"') :] for body in bodies}) == 3
    sent = json.loads(bodies[0])
    assert sent["response_format"]["type"] == "json_schema" and "guided_json" not in sent
    assert sent["max_tokens"] == 64 and sent["chat_template_kwargs"] == {"enable_thinking": False}
    assert "tools" not in sent and sent["model"] == "Qwen/Qwen3.5-2B"
    assert all(headers.get("Authorization") == "Bearer sk-test-key" for headers, _ in peer.requests)


def test_plan_call_uses_the_plan_cap_and_a_named_key_variable(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MY_PROVIDER_KEY", "sk-named")
    reply = {"choices": [{"message": {"content": "{}"}}]}
    with RecordingPeer(lambda body: (200, json.dumps(reply).encode())) as peer:
        url = f"openai://127.0.0.1:{peer.port}/v1?profile=qwen3.5-2b&api_key_env=MY_PROVIDER_KEY&model=served"
        pilot = model_pilot_from_url(url)
        decision = pilot.decide(Observation(scene(), "go to the red car", (Think(),)))
        pilot.close()
    assert decision.action is None and decision.raw == "{}"  # malformed: a hold, with the raw text
    headers, body = peer.requests[0]
    sent = json.loads(body)
    assert headers["Authorization"] == "Bearer sk-named"
    # Without api_key_env, the profile's own variable comes before OPENAI_API_KEY.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-generic")
    monkeypatch.setenv("QWEN3_5_2B_API_KEY", "sk-profile")
    backend = open_backend("openai://127.0.0.1:9/v1?profile=qwen3.5-2b")
    assert backend._api_key == "sk-profile"  # type: ignore[attr-defined]
    backend.close()
    assert sent["max_tokens"] == 768 and sent["model"] == "served"
    assert "target_in_view" in sent["response_format"]["json_schema"]["schema"]["properties"]


def test_scripted_pilot_replies_in_order_then_refuses(tmp_path) -> None:
    from models.serve import make_pilot, start_server

    script = tmp_path / "script.jsonl"
    script.write_text(
        "# a scripted test peer\n"
        '{"action": "rotate", "point": null, "depth_m": null, "angle_deg": 45}\n'
        '{"action": "go", "point": [100, 900], "depth_m": 4, "angle_deg": null}\n'
    )
    server, thread = start_server(make_pilot(f"scripted:{script}"))
    try:
        pilot = model_pilot_from_url(f"openai://127.0.0.1:{server.port}/v1?model=scripted&retries=0")
        obs = Observation(scene(), "go to the red car")
        assert pilot.decide(obs).action == Rotate(angle_deg=45.0)
        assert pilot.decide(obs).action == Go(point=(100, 900), depth_m=4.0)
        exhausted = pilot.decide(obs)
        assert exhausted.action is None and "all 2 replies used" in exhausted.error
        pilot.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_backend_url_errors_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"give \?profile=NAME or \?model=NAME"):
        model_pilot_from_url("openai://127.0.0.1:8000/v1?timeout_s=1")
    # (bad openai:// parameters: tests/models/test_pilots_backends.py's table of bad backend URLs)
    backend = open_backend("openais://api.example.com/v1?model=m")
    assert isinstance(backend, OpenAIBackend) and backend.base_url == "https://api.example.com/v1"
    backend.close()
    assert msgspec.to_builtins(profile_for_url("openai://h:1/v1?model=abc"))["served_model"] == "abc"


def test_think_off_and_visual_history_switches_over_http(baseline_server: str) -> None:
    from models.templates import PromptSwitches

    switches = PromptSwitches(think=False, visual_history=True)
    pilot = model_pilot_from_url(f"openai://{baseline_server}/v1?profile=qwen3.5-2b", switches)
    try:
        request = pilot.build_request(
            Observation(
                car_frame(), "go to the red car", (Rotate(angle_deg=60.0),), history_images=(scene(),)
            )
        )
        body = request.to_body()
        assert "think" not in body["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"]
        images = [p for p in body["messages"][1]["content"] if p["type"] == "image_url"]
        assert len(images) == 2  # the view before the rotate, then the current frame
        decision = pilot.decide(
            Observation(
                car_frame(), "go to the red car", (Rotate(angle_deg=60.0),), history_images=(scene(),)
            )
        )
        assert isinstance(decision.action, Go) and decision.error is None
    finally:
        pilot.close()


def test_serve_pilot_in_front_of_a_model_pilot(baseline_server: str) -> None:
    from models.serve import make_pilot, start_server

    proxy, thread = start_server(make_pilot(f"openai://{baseline_server}/v1?model=baseline"))
    try:
        pilot = model_pilot_from_url(f"openai://127.0.0.1:{proxy.port}/v1?profile=qwen3.5-2b")
        decision = pilot.decide(Observation(car_frame(), "go to the red car"))
        pilot.close()
        assert isinstance(decision.action, Go)
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(timeout=5)


def test_scripted_fleet_replies_through_serve_pilot(tmp_path) -> None:
    script = tmp_path / "fleet.json"
    go = {"action": "go", "point": [500, 600], "depth_m": 7, "angle_deg": None}
    turn = {"action": "rotate", "point": None, "depth_m": None, "angle_deg": -90}
    orders = {"orders": [{"drone": 1, "order": "look left"}, {"drone": 2, "order": "go to the red car"}]}
    script.write_text(json.dumps([{"drones": [go, turn]}, orders, {"drones": [go]}]))
    with serve_pilot_process("--pilot", f"scripted:{script}") as hostport:
        url = f"openai://{hostport}/v1?profile=qwen3.5-2b&retries=0"
        backend = open_backend(url)
        profile = profile_for_url(url)
        frames = [scene(), scene()]
        try:
            multi = decide_multi(backend, MultiDronePrompt(profile, 2), "find the red car", frames, [(), ()])
            assert multi.actions == (Go(point=(500, 600), depth_m=7.0), Rotate(angle_deg=-90.0))
            told = command(backend, CommanderPrompt(profile, 2), "find the red car", frames, [None, None])
            assert told.orders == ("look left", "go to the red car")
            # A reply with the wrong count violates the 2-drone schema: the server refuses it.
            wrong = decide_multi(backend, MultiDronePrompt(profile, 2), "find the red car", frames, [(), ()])
            assert wrong.actions == (None, None) and "cannot satisfy" in (wrong.error or "")
        finally:
            backend.close()
