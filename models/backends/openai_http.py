"""`openai://HOST:PORT/v1?model=NAME` — any OpenAI-compatible chat-completions server.

One persistent keep-alive connection (httpx.Client); the schema goes as `response_format`
json_schema (vLLM ≥ 0.12 silently ignores the old `guided_json` field); bounded retries with
exponential backoff on connection errors and 5xx/429 only; one CallStats per call.

Every call is bounded at the socket (models.backends.bounded_io): a connect timeout, a time to the
reply's first byte, a total deadline over all its attempts (`timeout_s`, cut to the request's own
`deadline_s`: the step's staleness bound) and a reply cap (`max_reply_bytes`, headers included)
beyond which the connection is closed unread. Each of them ends the call with a BackendError.

The body is the request's own `to_body()` serialised in its fixed key order, so the system text
and the schema are byte-identical on every call: that is what lets a server's prefix cache reuse them.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from typing import TYPE_CHECKING, Any

import httpx

from common.errors import BackendError, ConfigError
from models.backends.base import CallStats, Completion
from models.backends.bounded_io import BoundedTransport, CallBudget, bounded
from models.excerpt import reply_excerpt

if TYPE_CHECKING:
    from models.request import ChatRequest

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
# A reply is one JSON action in a chat-completions envelope: a few hundred bytes, a few KB with a
# plan. 1 MiB leaves room for any honest reply and none for a runaway one.
DEFAULT_MAX_REPLY_BYTES = 1024 * 1024


class OpenAIBackend:
    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        timeout_s: float = 30.0,
        connect_timeout_s: float = 5.0,
        retries: int = 2,
        backoff_s: float = 0.25,
        retry_on_timeout: bool = False,
        api_key: str | None = None,
        api_key_env: str | None = None,
        profile_name: str | None = None,
        first_byte_timeout_s: float | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        for key, value in (
            ("timeout_s", timeout_s),
            ("connect_timeout_s", connect_timeout_s),
            ("first_byte_timeout_s", timeout_s if first_byte_timeout_s is None else first_byte_timeout_s),
            ("max_reply_bytes", max_reply_bytes),
        ):
            if not math.isfinite(value) or value <= 0:
                raise ConfigError(f"openai backend: {key}={value} must be a finite number > 0")
        if retries < 0:
            raise ConfigError(f"openai backend: retries={retries} must be >= 0")
        self.base_url = base_url.rstrip("/")
        self.model = model  # overrides the request's (profile's) served model name when set
        self.timeout_s = timeout_s  # the total deadline of one call, every attempt and backoff included
        # A server that does not stream sends nothing until the reply is generated: by default the
        # first byte may take the whole deadline.
        self.first_byte_timeout_s = timeout_s if first_byte_timeout_s is None else first_byte_timeout_s
        self.max_reply_bytes = max_reply_bytes
        self.retries = retries
        self.backoff_s = backoff_s
        # A read timeout means the server is alive but slow: retrying doubles the hover, so only on request.
        self.retry_on_timeout = retry_on_timeout
        self.name = f"openai:{self.base_url}"
        self.api_key_env = api_key_env
        self.profile_name = profile_name
        self._api_key = api_key if api_key is not None else self._key_from_env()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(connect_timeout_s, timeout_s)),
            transport=BoundedTransport(httpx.Limits(max_keepalive_connections=4, keepalive_expiry=60.0)),
        )

    def _key_from_env(self) -> str | None:
        # The variable the URL names, then the profile's own (several providers side by side:
        # profile "openai-hosted" reads OPENAI_HOSTED_API_KEY), then the usual one.
        profile_env = profile_key_env(self.profile_name) if self.profile_name else None
        for name in (self.api_key_env, profile_env, "OPENAI_API_KEY"):
            if name and os.environ.get(name):
                return os.environ[name]
        return None

    def build_body(self, request: ChatRequest) -> dict[str, Any]:
        body = request.to_body()
        if self.model:
            body["model"] = self.model
        body.setdefault("n", 1)
        body.setdefault("stream", False)
        return body

    def encode_body(self, request: ChatRequest) -> bytes:
        return json.dumps(self.build_body(request), ensure_ascii=False, separators=(",", ":")).encode()

    def total_deadline_s(self, request: ChatRequest) -> float:
        """Seconds this call may take: `timeout_s`, or the request's own deadline when sooner."""
        return min(self.timeout_s, request.deadline_s) if request.deadline_s is not None else self.timeout_s

    def complete(self, request: ChatRequest) -> Completion:
        payload = self.encode_body(request)
        started = time.perf_counter()
        total_s = self.total_deadline_s(request)
        budget = CallBudget(time.monotonic() + total_s, self.first_byte_timeout_s, self.max_reply_bytes)
        attempts = 0
        while True:
            attempts += 1
            budget.new_attempt()
            try:
                with bounded(budget):
                    response = self._client.post("/chat/completions", content=payload)
            except httpx.TimeoutException as exc:
                bound = budget.why(timed_out=True)
                error = f"timed out: {bound or type(exc).__name__}"
                retryable = self.retry_on_timeout or isinstance(exc, httpx.ConnectTimeout)
            except httpx.TransportError as exc:
                bound = budget.why(timed_out=False)
                error = bound or f"connection failed ({type(exc).__name__}: {exc})"
                retryable = bound is None  # an oversized reply comes back oversized
            except httpx.HTTPError as exc:  # a body that does not decode (bad gzip): the server's fault
                error = f"unreadable reply ({type(exc).__name__}: {exc})"
                retryable = False
            else:
                if response.status_code == 200:
                    return self._completion(response, started, attempts, request)
                error = f"HTTP {response.status_code}: {_error_detail(response)}"
                retryable = response.status_code in RETRY_STATUS
            delay_s = self.backoff_s * (2 ** (attempts - 1))
            if not retryable or attempts > self.retries or time.monotonic() + delay_s >= budget.deadline_s:
                raise BackendError(
                    f"{self.base_url}/chat/completions: {error} after {attempts} attempt(s)"
                    f" in {time.perf_counter() - started:.2f} s (deadline {total_s:.2f} s)"
                )
            logger.warning("%s: %s; retry %d/%d in %.2f s", self.name, error, attempts, self.retries, delay_s)
            time.sleep(delay_s)

    def _completion(
        self, response: httpx.Response, started: float, attempts: int, request: ChatRequest
    ) -> Completion:
        latency_s = time.perf_counter() - started
        where = f"{self.base_url}/chat/completions"
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BackendError(f"{where}: response is not JSON: {reply_excerpt(response.text)!r}") from None
        try:
            choice = data["choices"][0]
            message = choice["message"]
            text = message["content"]
        except (KeyError, IndexError, TypeError):
            raise BackendError(
                f"{where}: response has no choices[0].message.content: {reply_excerpt(str(data))}"
            ) from None
        if not isinstance(text, str):
            # A refusal or a tool call instead of text: there is no reply for the parser.
            refusal = message.get("refusal") if isinstance(message, dict) else None
            raise BackendError(f"{where}: message content is {type(text).__name__}, refusal={refusal!r}")
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        stats = CallStats(
            backend="openai",
            model=str(data.get("model") or self.model or request.model),
            latency_s=latency_s,
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            attempts=attempts,
            finish_reason=choice.get("finish_reason") if isinstance(choice, dict) else None,
        )
        return Completion(text=text, stats=stats)

    def list_models(self) -> list[str]:
        try:
            response = self._client.get("/models")
            response.raise_for_status()
            return [str(m["id"]) for m in response.json()["data"]]
        except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
            raise BackendError(f"{self.base_url}/models: {exc}") from None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def profile_key_env(profile_name: str) -> str:
    """The API-key variable named after a model profile: "openai-hosted" -> OPENAI_HOSTED_API_KEY."""
    stem = "".join(ch if ch.isalnum() else "_" for ch in profile_name.upper())
    return f"{stem}_API_KEY"


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _error_detail(response: httpx.Response) -> str:
    try:
        data = response.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            return str(data["error"].get("message", data["error"]))[:300]
        return str(data)[:300]
    except ValueError:
        return response.text[:300]
