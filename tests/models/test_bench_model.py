"""bench-model: the figures it derives, its streaming client (TTFT, decode rate) against an SSE peer
at the wire (one with token usage and paced chunks), and the command end to end against serve-pilot
(which streams too) on frames from the built-in simulator."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import pytest

from common.actions import Finished, Go, Rotate
from models.pilot import FailureKind
from models.serving.bench import (
    StepSample,
    StreamOutcome,
    bench_model,
    compact_reply,
    normal_reply,
    summarise,
)
from tests.support.pilots import HttpPeer, QuietHandler, scene, serve_pilot_process
from tests.support.processes import run_dronecats

REPLY = '{"action":"go","point":[512,480],"depth_m":12.0,"angle_deg":null}'


def test_compact_and_normal_renderings() -> None:
    go = Go(point=(612, 430), depth_m=9.0)
    assert json.loads(normal_reply(go)) == {
        "action": "go",
        "point": [612, 430],
        "depth_m": 9.0,
        "angle_deg": None,
    }
    assert json.loads(normal_reply(go, "yx"))["point"] == [430, 612]
    assert json.loads(compact_reply(go)) == {"a": "go", "p": [612, 430], "d": 9.0}
    assert json.loads(compact_reply(Rotate(angle_deg=-30.0))) == {"a": "rotate", "r": -30.0}
    assert json.loads(compact_reply(Finished())) == {"a": "finished"}
    for action in (go, Rotate(angle_deg=45.0), Finished()):
        assert len(compact_reply(action)) < len(normal_reply(action))


def sample(
    latency_s: float,
    tokens: int | None,
    action: object = None,
    error: str | None = None,
    failure: FailureKind | None = None,
) -> StepSample:
    raw = REPLY if action is not None else ""
    return StepSample(latency_s, latency_s, tokens, 900, raw, action, error, failure)  # type: ignore[arg-type]


def test_summary_figures() -> None:
    go = Go(point=(512, 480), depth_m=12.0)
    steps = [sample(1.0, 20, go)] + [sample(0.1 * (i + 1), 20, go) for i in range(8)]
    steps.append(sample(0.2, None, None, "backend: HTTP 500", FailureKind.BACKEND))
    report = summarise(steps, StreamOutcome(False, "no"), "xy")
    assert report["steps"] == 10 and report["valid"] == 9
    assert report["schema_validity_rate"] == 0.9
    assert report["backend_errors"] == 1 and report["malformed"] == 0
    assert report["first_vs_warm"]["first_ms"] == 1000.0
    assert report["first_vs_warm"]["warm_p50_ms"] == 400.0  # median of 0.1..0.8 and 0.2
    assert report["step_latency_ms"]["max"] == 1000.0
    # usage was reported for every reply that has text
    assert report["output_tokens_per_action"]["source"].startswith("server usage")
    assert report["output_tokens_per_action"]["mean"] == 20
    enc = report["compact_encoding"]
    assert enc["unit"] == "characters" and enc["note"]
    assert enc["short_key_json_mean"] < enc["strict_schema_json_mean"]
    assert report["stream"] == {"supported": False, "reason": "no", "ttft_ms": None, "decode_tok_s": None}


def test_a_tokenizer_switches_the_unit_to_tokens() -> None:
    go = Go(point=(512, 480), depth_m=12.0)
    steps = [sample(0.1, None, go) for _ in range(3)]

    def count(text: str) -> int:  # any counting function stands in for a tokenizer here
        return len(text.replace(",", " ").replace(":", " ").split())

    report = summarise(steps, StreamOutcome(False, "no"), "xy", count)
    assert report["compact_encoding"]["unit"] == "tokens"
    assert report["output_tokens_per_action"]["source"] == "local tokenizer on the raw reply"
    assert report["output_tokens_per_action"]["mean"] == count(REPLY)


class SSEPeer(HttpPeer):
    """An OpenAI-style test peer at the wire: JSON replies with usage, or an SSE stream of a reply
    cut into `pieces` chunks `gap_s` apart, ending with a usage chunk and [DONE]."""

    def __init__(self, pieces: int = 6, gap_s: float = 0.02, first_s: float = 0.1) -> None:
        self.bodies: list[dict] = []
        peer = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                peer.bodies.append(body)
                if not body.get("stream"):
                    time.sleep(first_s + pieces * gap_s)
                    data = json.dumps(
                        {
                            "model": body["model"],
                            "choices": [{"message": {"content": REPLY}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 900, "completion_tokens": pieces},
                        }
                    ).encode()
                    self.send_json(200, data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                time.sleep(first_s)
                size = -(-len(REPLY) // pieces)
                for i in range(pieces):
                    chunk = {
                        "choices": [{"index": 0, "delta": {"content": REPLY[i * size : (i + 1) * size]}}]
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(gap_s)
                cached = {"cached_tokens": 0 if len(peer.bodies) == 1 else 768}
                usage = {
                    "choices": [],
                    "usage": {
                        "prompt_tokens": 900,
                        "completion_tokens": pieces,
                        "prompt_tokens_details": cached,
                    },
                }
                self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        super().__init__(Handler)


@pytest.fixture
def sse_peer() -> Iterator[SSEPeer]:
    with SSEPeer() as peer:
        yield peer


def test_streaming_figures_against_an_sse_peer(sse_peer: SSEPeer) -> None:
    frames = [scene() for _ in range(3)]
    url = f"openai://127.0.0.1:{sse_peer.port}/v1?profile=qwen3.5-2b"
    report = bench_model(url, frames, "go to the red car", stream_calls=2)
    assert report["schema_validity_rate"] == 1.0
    assert report["output_tokens_per_action"]["mean"] == 6
    stream = report["stream"]
    assert stream["supported"] is True and stream["calls"] == 2
    # the peer waits 0.1 s before the first chunk, then 6 chunks 0.02 s apart: 5 tokens in ~0.1 s
    assert 90 <= stream["ttft_ms"]["p50"] < 1000
    assert 5 <= stream["decode_tok_s"] <= 60
    assert stream["cached_prompt_tokens"] == [768, 768]  # the peer's non-stream steps came first
    streamed = [b for b in sse_peer.bodies if b.get("stream")]
    assert len(streamed) == 2
    assert streamed[0]["stream_options"] == {"include_usage": True}
    # the streamed request is the flight request: same schema, thinking off
    assert streamed[0]["response_format"]["type"] == "json_schema"
    assert streamed[0]["chat_template_kwargs"] == {"enable_thinking": False}


def test_bench_model_command_against_serve_pilot_on_sim_frames(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    # 0.2 s injected before every reply: the pilot answers no sooner, so neither can a first token
    with serve_pilot_process("--latency-s", "0.2") as hostport:
        result = run_dronecats(
            "bench-model",
            "--pilot",
            f"openai://{hostport}/v1?profile=qwen3.5-2b",
            "--steps",
            "4",
            "--stream-calls",
            "2",
            "--out",
            str(out),
            "--save-frames",
            str(tmp_path / "frames"),
            timeout_s=180,
        )
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    # stdout: the readable table (--json prints the report itself), one measure a line
    table = dict(line.split("  ", 1) for line in result.stdout.strip().splitlines())
    table = {label.strip(): value.strip() for label, value in table.items()}
    assert table["frames"].startswith("4 at 640x360")
    assert table["schema-valid"] == "4 of 4 (100%)"
    assert table["step latency"].startswith(f"p50 {report['step_latency_ms']['p50']:g} ms")
    assert table["first token"].endswith("(2 streamed calls)")
    assert report["frames"] == 4 and report["frame_size_px"] == [640, 360]
    # the baseline behind serve-pilot answers every sim frame with a schema-valid action
    assert report["schema_validity_rate"] == 1.0
    assert report["step_latency_ms"]["p50"] >= 200
    # serve-pilot streams: time to first token is measured (the pilot's answer time plus HTTP)
    stream = report["stream"]
    assert stream["supported"] is True and stream["calls"] == 2, stream
    assert stream["ttft_ms"]["first"] >= 200 and 200 <= stream["ttft_ms"]["p50"] <= stream["ttft_ms"]["p95"]
    assert stream["decode_tok_s"] is None  # no token counts from serve-pilot, none invented
    assert report["compact_encoding"]["unit"] == "characters"
    saved = sorted((tmp_path / "frames").glob("*.jpg"))
    assert len(saved) == 4 and cv2.imread(str(saved[0])).shape == (360, 640, 3)


def test_bench_model_on_saved_frames_needs_no_simulator(tmp_path: Path) -> None:
    frames = tmp_path / "frames"
    frames.mkdir()
    for i in range(2):
        cv2.imwrite(str(frames / f"frame_{i:03d}.jpg"), scene())
    with serve_pilot_process() as hostport:
        result = run_dronecats(
            "bench-model",
            "--pilot",
            f"openai://{hostport}/v1?profile=qwen3.5-2b",
            "--frames",
            str(frames),
            "--stream-calls",
            "0",
            "--json",
            timeout_s=120,
        )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["frames"] == 2 and report["steps"] == 2
    assert report["stream"]["reason"] == "not requested"
