"""Requests (docs/protocol.md): a byte-identical system message, identical schemas per kind,
the OpenAI body shape, the switches, N-drone and commander requests, and prompt identities."""

from __future__ import annotations

import base64
import contextlib
import json

import cv2
import numpy as np
import pytest

from common.actions import Finished, Go, Rotate, Think
from common.errors import ConfigError, MalformedReply
from models.frames import encode_frame
from models.history import EMPTY_HISTORY
from models.identity import prompt_identity
from models.parser import ParsedOrder
from models.pilot_prompt import CommanderPrompt, Conversation, MultiDronePrompt, PilotPrompt
from models.profile import load_profile, profile_names
from models.schemas import SchemaKind
from models.templates import PROMPTS_DIR, PromptSwitches, read_prompt


def _frame(seed: int, width: int = 1280, height: int = 720) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.zeros((height, width, 3), np.uint8)
    img[:] = rng.integers(0, 255, 3, dtype=np.uint8)
    cv2.rectangle(img, (int(rng.integers(0, width // 2)), 100), (width - 50, height - 60), (20, 20, 20), -1)
    return img


def _episode(prompt: PilotPrompt, instruction: str, seed: int, replies: list[str]) -> list[dict]:
    conv = Conversation(prompt, instruction)
    bodies = []
    for i, reply in enumerate(replies):
        request = conv.request(_frame(seed + i))
        bodies.append(request.to_body())
        # a malformed reply is discarded: logged by the runner, never added to the history
        with contextlib.suppress(MalformedReply):
            conv.record(conv.parse(reply, request))
    return bodies


REPLIES = [
    '{"action": "rotate", "point": null, "depth_m": null, "angle_deg": 45}',
    '{"action": "go", "point": [612, 430], "depth_m": 9, "angle_deg": null}',
    "not json at all",
    '{"action": "think", "point": null, "depth_m": null, "angle_deg": null}',
    json.dumps(
        {
            "target_in_view": "yes",
            "target_match": "confirmed",
            "closing_in": "closing",
            "current_frame": "car ahead",
            "action_planning": "go",
            "action": "go",
            "point": [500, 700],
            "depth_m": 4,
            "angle_deg": None,
        }
    ),
    '{"action": "finished", "point": null, "depth_m": null, "angle_deg": null}',
    '{"action": "rotate", "point": null, "depth_m": null, "angle_deg": -90}',
]


@pytest.mark.parametrize("name", ["qwen3.5-2b", "cosmos3-edge-2b-ft", "openai-hosted"])
@pytest.mark.parametrize(
    "switches", [PromptSwitches(), PromptSwitches(think=False), PromptSwitches(visual_history=True)]
)
def test_system_message_is_byte_identical_across_steps_and_episodes(
    name: str, switches: PromptSwitches
) -> None:
    profile = load_profile(name)
    episodes = [
        _episode(PilotPrompt(profile, switches), "go to the black SUV", 1, REPLIES),
        _episode(
            PilotPrompt(profile, switches),
            "fly to the bench beside the {history} trash can",
            50,
            REPLIES[::-1],
        ),
    ]
    bodies = [b for episode in episodes for b in episode]
    systems = {json.dumps(b["messages"][0]).encode() for b in bodies}
    assert len(systems) == 1
    system = bodies[0]["messages"][0]
    assert system["role"] == "system" and isinstance(system["content"], str)
    # what changes lives in the user message
    users = {json.dumps(b["messages"][1]) for b in bodies}
    assert len(users) == len(bodies)
    # the same schema kind always sends the same response_format bytes
    by_kind: dict[str, set[str]] = {}
    for b in bodies:
        fmt = b["response_format"]
        by_kind.setdefault(fmt["json_schema"]["name"], set()).add(json.dumps(fmt, sort_keys=False))
    assert all(len(v) == 1 for v in by_kind.values())
    expected_kinds = {"dronecats_action"} if switches.think else {"dronecats_action_nothink"}
    if switches.think:
        expected_kinds.add("dronecats_plan")
    assert set(by_kind) == expected_kinds


def test_system_differs_only_by_point_order_and_switches() -> None:
    xy = PilotPrompt(load_profile("qwen3.5-2b")).system
    yx = PilotPrompt(load_profile("cosmos3-edge-2b-ft")).system
    assert "[x, y]" in xy and "[y, x]" not in xy
    assert "[y, x]" in yx and "[x, y]" not in yx
    assert xy.replace("[x, y]", "[y, x]") == yx
    assert "{point_fmt}" not in xy
    # arrival is described so a model knows when to declare
    assert "finished" in xy and "lower third" in xy and "large" in xy


def test_first_step_user_message_and_image_part() -> None:
    prompt = PilotPrompt(load_profile("qwen3.5-2b"))
    request = Conversation(prompt, "go to the black SUV").request(_frame(3))
    body = request.to_body()
    content = body["messages"][1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url"]
    assert "Instruction: go to the black SUV" in content[0]["text"]
    assert EMPTY_HISTORY in content[0]["text"]
    url = content[1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    image = cv2.imdecode(np.frombuffer(base64.b64decode(url.split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR)
    assert image.shape == (360, 640, 3)


def test_body_fields_from_profile() -> None:
    qwen = PilotPrompt(load_profile("qwen3.5-2b"))
    body = Conversation(qwen, "x").request(_frame(0)).to_body()
    assert body["model"] == "Qwen/Qwen3.5-2B"
    assert body["max_tokens"] == 64
    assert body["temperature"] == 0.4
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert not {"tools", "functions", "tool_choice", "function_call"} & body.keys()
    json.dumps(body)  # serialisable as is

    hosted = PilotPrompt(load_profile("openai-hosted"))
    body = Conversation(hosted, "x").request(_frame(0)).to_body()
    assert "temperature" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 512 and body["reasoning_effort"] == "minimal"


def test_plan_schema_after_think_only() -> None:
    prompt = PilotPrompt(load_profile("qwen3.5-2b"))
    conv = Conversation(prompt, "x")
    conv.record(Think())
    request = conv.request(_frame(0))
    assert request.reply.kind is SchemaKind.PLAN and request.max_tokens == 768
    schema = request.to_body()["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"])[:5] == [
        "target_in_view",
        "target_match",
        "closing_in",
        "current_frame",
        "action_planning",
    ]
    assert schema["required"] == list(schema["properties"])
    assert schema["properties"]["current_frame"]["maxLength"] == 1200
    conv.record(Go(point=(500, 500), depth_m=5.0))
    assert conv.request(_frame(0)).reply.kind is SchemaKind.ACTION
    # plan schema switched off: think then a plain action
    no_plan = Conversation(PilotPrompt(load_profile("qwen3.5-2b"), PromptSwitches(plan_schema=False)), "x")
    no_plan.record(Think())
    assert no_plan.request(_frame(0)).reply.kind is SchemaKind.ACTION
    assert read_prompt("plan_rule.txt") in prompt.system
    assert read_prompt("plan_rule.txt") not in no_plan.prompt.system


def test_think_off_removes_think_from_prompt_and_schema() -> None:
    prompt = PilotPrompt(load_profile("qwen3.5-2b"), PromptSwitches(think=False))
    body = Conversation(prompt, "x").request(_frame(0)).to_body()
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["go", "rotate", "finished"]
    assert "think" not in prompt.system.lower().replace("nothing", "")
    assert "rotate to look in a new direction" in prompt.system


def test_visual_history_sends_past_views_at_half_width() -> None:
    prompt = PilotPrompt(load_profile("qwen3.5-2b"), PromptSwitches(visual_history=True))
    conv = Conversation(prompt, "x")
    for i, action in enumerate([Rotate(angle_deg=30.0), Go(point=(1, 2), depth_m=3.0)]):
        conv.request(_frame(i))
        conv.record(action)
    content = conv.request(_frame(9)).to_body()["messages"][1]["content"]
    images = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
    assert len(images) == 3
    sizes = []
    for url in images:
        img = cv2.imdecode(np.frombuffer(base64.b64decode(url.split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR)
        sizes.append(img.shape[:2])
    assert sizes == [(180, 320), (180, 320), (360, 640)]
    texts = [p["text"] for p in content if p["type"] == "text"]
    assert texts[1:] == ["View before action 1:", "View before action 2:", "Current view:"]


def test_yx_model_sees_its_history_in_its_own_order() -> None:
    conv = Conversation(PilotPrompt(load_profile("cosmos3-edge-2b-ft")), "x")
    conv.record(conv.parse('{"action": "go", "point": [430, 612], "depth_m": 9}', conv.request(_frame(0))))
    assert conv.history.last_action == Go(point=(612, 430), depth_m=9.0)
    text = conv.request(_frame(1)).to_body()["messages"][1]["content"][0]["text"]
    assert "GO y=430 x=612 depth=9m" in text


def test_multi_drone_request_and_reply() -> None:
    profile = load_profile("qwen3.5-4b")
    prompt = MultiDronePrompt(profile, 3)
    frames = [encode_frame(_frame(i)) for i in range(3)]
    histories = [[], [Rotate(angle_deg=90.0)], [Go(point=(1, 2), depth_m=3.0), Finished()]]
    request = prompt.request("find the blue car", histories, frames)
    body = request.to_body()
    content = body["messages"][1]["content"]
    assert [p["type"] for p in content] == ["text"] + ["text", "image_url"] * 3
    assert [p["text"] for p in content[1::2]] == ["Drone 1:", "Drone 2:", "Drone 3:"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["drones"]["minItems"] == schema["properties"]["drones"]["maxItems"] == 3
    assert body["max_tokens"] == 3 * 64
    assert "3 small drones" in body["messages"][0]["content"]
    second = prompt.request("other", [[Think()], [], []], frames[::-1]).to_body()
    assert second["messages"][0] == body["messages"][0]
    assert second["response_format"] == body["response_format"]
    reply = json.dumps(
        {"drones": [{"action": "think"}, {"action": "rotate", "angle_deg": 10}, {"action": "finished"}]}
    )
    assert prompt.parse(reply, request) == (Think(), Rotate(angle_deg=10.0), Finished())
    with pytest.raises(MalformedReply, match="expected 3"):
        prompt.parse('{"drones": [{"action": "think"}]}', request)
    with pytest.raises(ValueError):
        prompt.request("x", histories[:2], frames)


def test_commander_request_and_reply() -> None:
    prompt = CommanderPrompt(load_profile("openai-hosted"), 2)
    frames = [encode_frame(_frame(i)) for i in range(2)]
    request = prompt.request("read the three signs", [None, Go(point=(5, 6), depth_m=7.0)], frames, frames[0])
    body = request.to_body()
    content = body["messages"][1]["content"]
    assert (
        "Drone 1: (none yet)" in content[0]["text"] and "Drone 2: GO x=5 y=6 depth=7m" in content[0]["text"]
    )
    assert "top-down map" in content[0]["text"]
    assert [p.get("text") for p in content if p["type"] == "text"][1:] == [
        "Drone 1:",
        "Drone 2:",
        "Top-down map:",
    ]
    assert body["response_format"]["json_schema"]["schema"]["properties"]["orders"]["maxItems"] == 2
    without_map = prompt.request("x", [None, None], frames).to_body()
    assert without_map["messages"][0] == body["messages"][0]
    assert "top-down map" not in without_map["messages"][1]["content"][0]["text"]
    orders = prompt.parse(
        '{"orders": [{"drone": 1, "order": "go left"}, {"drone": 2, "order": "hold"}]}', request
    )
    assert orders == (ParsedOrder(1, "go left"), ParsedOrder(2, "hold"))


def test_prompt_identity_hashes() -> None:
    qwen = load_profile("qwen3.5-2b")
    ident = prompt_identity(qwen, PromptSwitches())
    assert set(ident.prompt_hashes) == {"system.txt", "plan_rule.txt", "user.txt"}
    import hashlib

    assert (
        ident.prompt_hashes["system.txt"]
        == hashlib.sha256((PROMPTS_DIR / "system.txt").read_bytes()).hexdigest()
    )
    assert prompt_identity(qwen, PromptSwitches()) == ident  # deterministic
    others = {
        prompt_identity(qwen, PromptSwitches(think=False)).identity_sha256,
        prompt_identity(qwen, PromptSwitches(visual_history=True)).identity_sha256,
        prompt_identity(load_profile("qwen3.5-2b", ["decoding.temperature=0.2"])).identity_sha256,
        prompt_identity(load_profile("qwen3.5-4b")).identity_sha256,
        prompt_identity(qwen, structure="multi", n_drones=4).identity_sha256,
        prompt_identity(qwen, structure="commander", n_drones=4).identity_sha256,
    }
    assert ident.identity_sha256 not in others and len(others) == 6
    assert "system_think_off.txt" in prompt_identity(qwen, PromptSwitches(think=False)).prompt_hashes


def test_profiles_load_and_validate(tmp_path) -> None:
    assert {
        "cosmos3-edge-2b",
        "cosmos3-edge-2b-ft",
        "qwen3.5-0.8b",
        "qwen3.5-2b",
        "qwen3.5-4b",
        "openai-hosted",
    } <= set(profile_names())
    for name in profile_names():
        profile = load_profile(name)
        assert profile.name == name and profile.served_model
    ft = load_profile("cosmos3-edge-2b-ft")
    assert ft.point_order == "yx" and ft.depth.convention == "canonical"
    assert ft.depth.scale(640.0, 1280) == pytest.approx(1.0)  # default sim camera, 90° HFOV
    assert ft.depth.scale(640.0, 640) == pytest.approx(2.0)
    assert load_profile("qwen3.5-2b").depth.scale(895.0, 960) == 1.0
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nserved_model: local\npoint_order: yx\nmax_tokens: {action: 32}\n")
    mine = load_profile(path)
    assert mine.point_order == "yx" and mine.max_tokens.action == 32 and mine.max_tokens.plan == 768
    with pytest.raises(ConfigError, match="unknown model profile"):
        load_profile("no-such-model")
    path.write_text("name: bad\nserved_model: x\npoint_order: zx\n")
    with pytest.raises(ConfigError):
        load_profile(path)
    path.write_text("name: bad\nserved_model: x\ndepth: {convention: canonical}\n")
    with pytest.raises(ConfigError, match="canonical_focal_px"):
        load_profile(path)


def test_string_length_keywords_follow_the_profile() -> None:
    def plan_body(name: str) -> dict:
        conv = Conversation(PilotPrompt(load_profile(name)), "x")
        conv.record(Think())
        return conv.request(_frame(0)).to_body()["response_format"]["json_schema"]["schema"]

    assert plan_body("qwen3.5-2b")["properties"]["action_planning"]["maxLength"] == 1200
    hosted = plan_body("openai-hosted")
    assert "maxLength" not in json.dumps(hosted) and "minLength" not in json.dumps(hosted)
    frames = [encode_frame(_frame(0))] * 2
    order = CommanderPrompt(load_profile("openai-hosted"), 2).request("x", [None, None], frames).to_body()
    assert "maxLength" not in json.dumps(order["response_format"])
    order = CommanderPrompt(load_profile("qwen3.5-4b"), 2).request("x", [None, None], frames).to_body()
    assert "maxLength" in json.dumps(order["response_format"])


def test_schemas_are_valid_json_schema_and_accept_what_the_parser_accepts() -> None:
    import jsonschema

    from models.schemas import action_schema, commander_schema, multi_schema, plan_schema

    for schema in (
        action_schema(),
        action_schema(False),
        plan_schema(),
        multi_schema(3),
        commander_schema(2),
    ):
        jsonschema.Draft202012Validator.check_schema(schema)
    go = {"action": "go", "point": [612, 430], "depth_m": 9, "angle_deg": None}
    think = {"action": "think", "point": None, "depth_m": None, "angle_deg": None}
    jsonschema.validate(go, action_schema())
    jsonschema.validate(think, action_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(think, action_schema(False))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**go, "depth_m": 0}, action_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"action": "go", "point": [1, 2], "depth_m": 3}, action_schema()
        )  # angle_deg absent
    jsonschema.validate({"drones": [go, think, go]}, multi_schema(3))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"drones": [go, think]}, multi_schema(3))
    jsonschema.validate(
        {"orders": [{"drone": 1, "order": "a"}, {"drone": 2, "order": "b"}]}, commander_schema(2)
    )
