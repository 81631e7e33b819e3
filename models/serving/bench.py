"""Model latency benchmark against any OpenAI-compatible endpoint (`dronecats bench-model`).

Given frames (BGR images; the CLI renders them in the built-in simulator) and a pilot URL, it
measures what decides the control rate of a flight:

- end-to-end step latency (frame encode + request + HTTP + parse, through ModelPilot exactly as the
  onboard runtime calls it), first request vs warm ones (prefix cache, schema grammar, encoder);
- schema validity rate (replies the parser accepts) and the output tokens per action;
- time to first token and decode rate from streaming requests (when the server streams);
- what a compact action encoding would save in output tokens: the same actions rendered as the
  strict-schema JSON and as a short-key JSON, counted with a tokenizer when one is given, else in
  characters (and the report says which).

Only action-schema steps are measured (plan=False): a plan reply is a different, much longer
output and would mix two distributions.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

from common.actions import Action, Go, Rotate, action_name
from common.errors import BackendError
from models.backends.openai_http import OpenAIBackend
from models.history import compact
from models.parser import reply_object
from models.pilot import FailureKind, ModelPilot, Observation

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]


def normal_reply(action: Action, point_order: str = "xy") -> str:
    """The reply as the strict schema has it: every field present, unused ones null."""
    return json.dumps(reply_object(action, point_order), separators=(",", ":"))


def compact_reply(action: Action, point_order: str = "xy") -> str:
    """A compact encoding of the same action: one-letter keys, no null fields."""
    out: dict[str, Any] = {"a": action_name(action)}
    if isinstance(action, Go):
        x, y = action.point
        out["p"] = [x, y] if point_order == "xy" else [y, x]
        out["d"] = action.depth_m
    elif isinstance(action, Rotate):
        out["r"] = action.angle_deg
    return json.dumps(out, separators=(",", ":"))


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else None


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000.0, 1)


@dataclass
class StepSample:
    latency_s: float
    backend_latency_s: float | None
    completion_tokens: int | None
    prompt_tokens: int | None
    raw: str
    action: Action | None
    error: str | None
    failure: FailureKind | None = None


@dataclass
class StreamSample:
    ttft_s: float
    total_s: float
    completion_tokens: int | None
    text: str
    last_token_s: float
    cached_prompt_tokens: int | None = None  # vLLM with --enable-prompt-tokens-details


@dataclass
class StreamOutcome:
    supported: bool
    reason: str | None = None
    samples: list[StreamSample] = field(default_factory=list)


def stream_once(client: httpx.Client, body: dict[str, Any]) -> StreamSample:
    """One streaming chat completion: time to the first content delta, to the last one, usage."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    started = time.perf_counter()
    first: float | None = None
    last = started
    pieces: list[str] = []
    tokens: int | None = None
    cached: int | None = None
    with client.stream("POST", "/chat/completions", json=body) as response:
        if response.status_code != 200:
            detail = response.read().decode(errors="replace")[:300]
            raise BackendError(f"stream request: HTTP {response.status_code}: {detail}")
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            usage = chunk.get("usage")
            if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                tokens = usage["completion_tokens"]
                details = usage.get("prompt_tokens_details")
                if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                    cached = details["cached_tokens"]
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    now = time.perf_counter()
                    first = now if first is None else first
                    last = now
                    pieces.append(piece)
    end = time.perf_counter()
    if first is None:
        raise BackendError("stream request: no content in the stream")
    return StreamSample(first - started, end - started, tokens, "".join(pieces), last - started, cached)


def run_stream(pilot: ModelPilot, frames: Sequence[Any], instruction: str) -> StreamOutcome:
    backend = pilot.backend
    if not isinstance(backend, OpenAIBackend):
        return StreamOutcome(False, f"streaming needs an openai:// backend, not {backend.name}")
    outcome = StreamOutcome(True)
    # The backend's own keep-alive connection (same base URL, same API key) carries the streams.
    client = backend._client
    for image in frames:
        request = pilot.build_request(Observation(image, instruction, plan=False))
        try:
            outcome.samples.append(stream_once(client, backend.build_body(request)))
        except (BackendError, httpx.HTTPError, json.JSONDecodeError) as exc:
            if not outcome.samples:
                # The first call decides: a server that refuses stream=true is reported as such.
                return StreamOutcome(False, str(exc) or type(exc).__name__)
            logger.warning("streaming call failed: %s", exc)
    return outcome


def run_steps(
    pilot: ModelPilot, frames: Sequence[Any], instruction: str, history_length: int = 5
) -> list[StepSample]:
    """One decide() per frame, as a flight step: executed actions go into the history."""
    samples: list[StepSample] = []
    history: list[Action] = []
    for image in frames:
        observation = Observation(image, instruction, tuple(history[-history_length:]), plan=False)
        started = time.perf_counter()
        decision = pilot.decide(observation)
        latency_s = time.perf_counter() - started
        stats = decision.stats
        samples.append(
            StepSample(
                latency_s=latency_s,
                backend_latency_s=stats.latency_s if stats else None,
                completion_tokens=stats.completion_tokens if stats else None,
                prompt_tokens=stats.prompt_tokens if stats else None,
                raw=decision.raw,
                action=decision.action,
                error=decision.error,
                failure=decision.failure_kind,
            )
        )
        if decision.action is not None:
            history.append(decision.action)
    return samples


def _tokens_of(samples: Sequence[StepSample], count_tokens: TokenCounter | None) -> tuple[str, list[int]]:
    """Output tokens per action: the server's usage, else a local tokenizer on the raw text."""
    reported = [s.completion_tokens for s in samples if s.completion_tokens is not None]
    if reported and len(reported) == len(samples):
        return "server usage.completion_tokens", [int(t) for t in reported]
    if count_tokens is not None:
        return "local tokenizer on the raw reply", [count_tokens(s.raw) for s in samples if s.raw]
    return "unavailable (server reports no usage, no --tokenizer given)", []


def summarise(
    steps: Sequence[StepSample],
    stream: StreamOutcome,
    point_order: str,
    count_tokens: TokenCounter | None = None,
) -> dict[str, Any]:
    latencies = [s.latency_s for s in steps]
    warm = latencies[1:]
    valid = [s for s in steps if s.action is not None]
    backend_errors = sum(1 for s in steps if s.failure is FailureKind.BACKEND)
    token_source, tokens = _tokens_of([s for s in steps if s.raw], count_tokens)
    unit = "tokens" if count_tokens is not None else "characters"
    measure: Callable[[str], int] = count_tokens if count_tokens is not None else len
    normal = [measure(normal_reply(s.action, point_order)) for s in valid if s.action is not None]
    short = [measure(compact_reply(s.action, point_order)) for s in valid if s.action is not None]
    history_form = [measure(compact(s.action, point_order)) for s in valid if s.action is not None]
    raw_len = [measure(s.raw) for s in valid]
    first_s = latencies[0] if latencies else None
    warm_p50 = percentile(warm, 50)
    report: dict[str, Any] = {
        "steps": len(steps),
        "valid": len(valid),
        "schema_validity_rate": round(len(valid) / len(steps), 3) if steps else None,
        "backend_errors": backend_errors,
        "malformed": len(steps) - len(valid) - backend_errors,
        "errors": sorted({s.error for s in steps if s.error})[:5],
        "actions": dict(Counter(action_name(s.action) for s in valid if s.action is not None)),
        "step_latency_ms": {
            "p50": _ms(percentile(latencies, 50)),
            "p95": _ms(percentile(latencies, 95)),
            "mean": _ms(statistics.fmean(latencies)) if latencies else None,
            "max": _ms(max(latencies)) if latencies else None,
        },
        "first_vs_warm": {
            "first_ms": _ms(first_s),
            "warm_p50_ms": _ms(warm_p50),
            "first_over_warm": round(first_s / warm_p50, 2) if first_s and warm_p50 else None,
        },
        "output_tokens_per_action": {
            "source": token_source,
            "mean": round(statistics.fmean(tokens), 1) if tokens else None,
            "p50": percentile(tokens, 50),
            "max": max(tokens) if tokens else None,
        },
        "output_chars_per_action": round(statistics.fmean(len(s.raw) for s in valid), 1) if valid else None,
        "prompt_tokens": percentile([s.prompt_tokens for s in steps if s.prompt_tokens is not None], 50),
    }
    report["stream"] = _stream_report(stream)
    report["compact_encoding"] = {
        "unit": unit,
        "note": None if count_tokens is not None else "no tokenizer available: characters, not tokens",
        "as_served_mean": round(statistics.fmean(raw_len), 1) if raw_len else None,
        "strict_schema_json_mean": round(statistics.fmean(normal), 1) if normal else None,
        "short_key_json_mean": round(statistics.fmean(short), 1) if short else None,
        "history_line_mean": round(statistics.fmean(history_form), 1) if history_form else None,
        "short_key_saving": round(1 - sum(short) / sum(normal), 3) if normal and sum(normal) else None,
        "example": _example(valid, point_order),
    }
    return report


def _example(valid: Sequence[StepSample], point_order: str) -> dict[str, str] | None:
    action = valid[0].action if valid else None
    if action is None:
        return None
    return {
        "strict_schema_json": normal_reply(action, point_order),
        "short_key_json": compact_reply(action, point_order),
    }


def _stream_report(stream: StreamOutcome) -> dict[str, Any]:
    if not stream.supported or not stream.samples:
        return {"supported": False, "reason": stream.reason, "ttft_ms": None, "decode_tok_s": None}
    ttft = [s.ttft_s for s in stream.samples]
    rates: list[float] = []
    char_rates: list[float] = []
    for s in stream.samples:
        span = s.last_token_s - s.ttft_s
        if span <= 0:
            continue
        if s.completion_tokens and s.completion_tokens > 1:
            rates.append((s.completion_tokens - 1) / span)
        char_rates.append(max(0, len(s.text) - 1) / span)
    return {
        "supported": True,
        "calls": len(stream.samples),
        "ttft_ms": {
            "first": _ms(ttft[0]),
            "p50": _ms(percentile(ttft, 50)),
            "p95": _ms(percentile(ttft, 95)),
        },
        # tokens after the first one over the time between the first and the last content chunk
        "decode_tok_s": round(statistics.median(rates), 1) if rates else None,
        "decode_chars_s": round(statistics.median(char_rates), 1) if char_rates else None,
        # prompt tokens served from the prefix cache, first call and after (None: not reported)
        "cached_prompt_tokens": [s.cached_prompt_tokens for s in stream.samples],
    }


def bench_model(
    pilot_url: str,
    frames: Sequence[Any],
    instruction: str,
    stream_calls: int = 10,
    count_tokens: TokenCounter | None = None,
) -> dict[str, Any]:
    """Run the benchmark against `pilot_url` (openai://HOST:PORT/v1?profile=...&timeout_s=...) on
    `frames`."""
    from models.pilot import model_pilot_from_url

    if not frames:
        raise ValueError("bench_model needs at least one frame")
    pilot = model_pilot_from_url(pilot_url)
    try:
        height, width = frames[0].shape[:2]
        started = time.perf_counter()
        steps = run_steps(pilot, frames, instruction)
        stream = (
            run_stream(pilot, frames[:stream_calls], instruction)
            if stream_calls > 0
            else StreamOutcome(False, "not requested")
        )
        report = summarise(steps, stream, pilot.profile.point_order, count_tokens)
        report = {
            "pilot_url": pilot_url,
            "model_profile": pilot.profile.name,
            "served_model": pilot.profile.served_model,
            "frames": len(frames),
            "frame_size_px": [int(width), int(height)],
            "instruction": instruction,
            "wall_s": round(time.perf_counter() - started, 2),
            **report,
        }
    finally:
        pilot.close()
    return report
