"""openai:// is bounded at the socket: the real backend against the stand-in server
(tests/support/model_servers.py) trickling, hanging, flooding and garbling its replies."""

from __future__ import annotations

import hashlib
import time

import pytest

from common.errors import ConfigError
from models.backends import open_backend
from models.excerpt import EXCERPT_BYTES, logged_reply, reply_excerpt
from models.pilot import Observation, StepDeadlines, model_pilot_from_url
from tests.support.model_servers import model_server
from tests.support.pilots import scene
from tests.support.processes import wait_for

# Bounds in the assertions have margin for a loaded machine; the figures are measured and printed.
SLACK_S = 2.5


def _decide(url: str, deadlines: StepDeadlines | None = None, observation: Observation | None = None):
    pilot = model_pilot_from_url(url, deadlines=deadlines)
    try:
        started = time.monotonic()
        decision = pilot.decide(observation or Observation(scene(), "go to the red car"))
        return decision, time.monotonic() - started
    finally:
        pilot.close()


@pytest.mark.parametrize(
    ("mode", "options", "bound"),
    [
        ("trickle_body", {"rate_bytes_per_s": 5}, "the total deadline (1.00 s) passed"),
        ("trickle_headers", {"rate_bytes_per_s": 20}, "the total deadline (1.00 s) passed"),
        ("hang", {"hang_s": 30}, "the total deadline (1.00 s) passed (0 bytes read)"),
    ],
)
def test_a_slow_reply_ends_at_the_step_deadline(mode: str, options: dict, bound: str) -> None:
    with model_server(mode, **options) as server:
        # timeout_s=30 on the URL: the step's own staleness bound (1 s) is the shorter, and wins.
        url = server.openai_url(profile="qwen3.5-2b", timeout_s=30, retries=2)
        decision, elapsed_s = _decide(url, StepDeadlines(action_s=1.0, plan_s=8.0))
        print(f"{mode}: ended after {elapsed_s:.2f} s")
        assert decision.action is None and decision.failure_kind is not None
        assert decision.failure_kind.value == "backend"
        assert bound in decision.error and "1 attempt" in decision.error
        assert 0.9 <= elapsed_s < 1.0 + SLACK_S
        # The client hung up: the server's reply never finished.
        if mode != "hang":  # a hanging server writes nothing: it sees the hang-up only when it wakes
            assert wait_for(lambda: server.replies[0].ended_s is not None, 5.0)
        assert not server.replies[0].completed


def test_the_plan_step_gets_the_plan_deadline_and_the_first_byte_its_own() -> None:
    from common.actions import Think

    with model_server("hang", hang_s=30) as server:
        url = server.openai_url(profile="qwen3.5-2b", retries=0)
        plan_step = Observation(scene(), "go to the red car", (Think(),))
        decision, elapsed_s = _decide(url, StepDeadlines(action_s=0.5, plan_s=1.5), plan_step)
        assert "the total deadline (1.50 s) passed" in decision.error
        assert 1.4 <= elapsed_s < 1.5 + SLACK_S
        decision, elapsed_s = _decide(server.openai_url(first_byte_timeout_s=0.5, timeout_s=20))
        assert "the time to first byte (0.5 s) passed" in decision.error
        assert 0.4 <= elapsed_s < 0.5 + SLACK_S


def test_the_prearm_call_gets_the_longest_deadline() -> None:
    """A server's first request may still warm up: the pre-arm check waits the plan deadline for it."""
    with model_server("hang", hang_s=30) as server:
        url = server.openai_url(profile="qwen3.5-2b", retries=0)
        prearm = Observation(scene(), "look around", prearm=True)
        decision, elapsed_s = _decide(url, StepDeadlines(action_s=0.5, plan_s=1.5), prearm)
        assert "the total deadline (1.50 s) passed" in decision.error
        assert 1.4 <= elapsed_s < 1.5 + SLACK_S


def test_retries_never_run_past_the_deadline() -> None:
    with model_server("hang", hang_s=30) as server:
        url = server.openai_url(timeout_s=1, retries=5, retry_on_timeout="true", backoff_s=0.05)
        decision, elapsed_s = _decide(url)
        assert "timed out: the total deadline" in decision.error
        assert elapsed_s < 1.0 + SLACK_S


@pytest.mark.parametrize("chunked", [False, True])
def test_a_huge_reply_is_cut_at_the_cap_and_the_connection_closed(chunked: bool) -> None:
    with model_server("huge", huge_bytes=50 * 1024 * 1024, chunked=chunked) as server:
        url = server.openai_url(profile="qwen3.5-2b", retries=3, max_reply_bytes=65536)
        decision, elapsed_s = _decide(url)
        assert "reply over the cap of 65536 bytes: connection closed after 1 attempt" in decision.error
        assert decision.raw == "" and elapsed_s < SLACK_S
        assert wait_for(lambda: server.replies[0].ended_s is not None, 5.0)
        reply = server.replies[0]
        print(f"server wrote {reply.sent_bytes} of 50 MiB before the client closed")
        assert not reply.completed and reply.sent_bytes < 20 * 1024 * 1024
        assert len(server.replies) == 1  # an oversized reply is not asked for again
        # The next call gets a fresh connection and its normal reply.
        server.set_mode("normal")
        decision, _ = _decide(url)
        assert decision.action is not None


def test_garbage_and_the_default_cap() -> None:
    with model_server("garbage") as server:
        decision, _ = _decide(server.openai_url(profile="qwen3.5-2b"))
        assert "response is not JSON: '<html><body>502 upstream" in decision.error
        assert "[excerpt: 71 bytes, sha256 " in decision.error
        # Just under the default cap (1 MiB, headers included) a reply is read whole: a malformed
        # one is kept...
        server.set_mode("huge", huge_bytes=1024 * 1024 - 2000)
        decision, _ = _decide(server.openai_url(profile="qwen3.5-2b"))
        assert decision.failure_kind is not None and decision.failure_kind.value == "malformed"
        assert len(decision.raw) == 1024 * 1024 - 2000
        # ...and logged only as its excerpt.
        logged = decision.logged_raw
        assert len(logged.encode()) < EXCERPT_BYTES + 120
        assert logged.endswith(f"[excerpt: {len(decision.raw)} bytes, sha256 {_sha(decision.raw)}]")
        server.set_mode("huge", huge_bytes=1024 * 1024 + 1)
        decision, _ = _decide(server.openai_url(profile="qwen3.5-2b"))
        assert "reply over the cap of 1048576 bytes" in decision.error


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_excerpt() -> None:
    assert reply_excerpt("") == ""
    short = '{"action": "nope"}'
    assert reply_excerpt(short) == f"{short} [excerpt: {len(short)} bytes, sha256 {_sha(short)}]"
    assert logged_reply(short, usable=True) == short
    assert logged_reply(short, usable=False) == reply_excerpt(short)
    wide = "é" * 5000  # two bytes each: the cut falls between characters, never inside one
    head = reply_excerpt(wide).split(" [excerpt: ")[0]
    assert head == "é" * (EXCERPT_BYTES // 2) and "10000 bytes" in reply_excerpt(wide)
    padded = '{"action":"finished"' + " " * 100_000 + "}"  # valid JSON, but no log line needs it whole
    assert len(logged_reply(padded, usable=True)) < EXCERPT_BYTES + 120


@pytest.mark.parametrize(
    "query",
    [
        "max_reply_bytes=0",
        "max_reply_bytes=-5",
        "max_reply_bytes=1.5",
        "first_byte_timeout_s=0",
        "first_byte_timeout_s=nan",
        "first_byte_timeout_s=inf",
        "timeout_s=inf",
        "connect_timeout_s=0",
    ],
)
def test_bounds_from_the_url_are_validated(query: str) -> None:
    with pytest.raises(ConfigError, match=query.split("=")[0]):
        open_backend(f"openai://127.0.0.1:9/v1?model=m&{query}")


def test_serve_pilot_cuts_its_upstream_and_its_client_gets_a_failed_decision() -> None:
    from tests.support.pilots import serve_pilot_process

    with model_server("trickle_body", rate_bytes_per_s=1) as upstream:
        # serve-pilot in its own process, piloting through openai:// to the trickling server.
        upstream_url = upstream.openai_url(profile="qwen3.5-2b", timeout_s=1)
        with serve_pilot_process("--pilot", upstream_url) as hostport:
            url = f"openai://{hostport}/v1?profile=qwen3.5-2b&retries=0"
            decision, elapsed_s = _decide(url, StepDeadlines(action_s=8.0, plan_s=8.0))
        print(f"serve-pilot answered the failure after {elapsed_s:.2f} s")
        assert decision.action is None and "HTTP 500" in decision.error
        assert "timed out: the total deadline (1.00 s) passed" in decision.error
        assert elapsed_s < 1.0 + SLACK_S
        assert upstream.replies and not upstream.replies[0].completed
