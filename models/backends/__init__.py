"""Model backends, chosen by URL scheme.

    backend = open_backend("openai://127.0.0.1:8000/v1?model=qwen3-vl-2b&timeout_s=10")
    completion = backend.complete(request)   # a models.request.ChatRequest

Schemes: `openai://` (http), `openais://` (https), `vllm://MODEL`, `trtllm://ENGINE`, `hf://MODEL`.
Each is a `dronecats.backends` entry point (pyproject.toml; common.schemes): a third party adds a
backend in its own package the same way, `factory(url: BackendURL) -> ModelBackend`. The in-process
engines are imported only when their scheme is opened.

The backend, not the pilot, is the extension point: a model pilot is prompt + backend + parser, and
the same backend also serves the N-drone call and the fleet commander (models.commanders,
ground_station.fleet), so one new backend reaches every one of them with the prompts, the reply
parser and the staleness deadlines the runtime relies on.
"""

from __future__ import annotations

from common.errors import ConfigError
from common.schemes import BACKENDS_GROUP, SchemeRegistry
from models.backends.base import CallStats, Completion, ModelBackend
from models.backends.url import BackendURL, http_base_url, parse_backend_url

__all__ = [
    "BackendURL",
    "CallStats",
    "Completion",
    "ModelBackend",
    "backend_schemes",
    "open_backend",
    "parse_backend_url",
]

OPENAI_PARAMS = frozenset(
    {
        "model",
        "profile",
        "timeout_s",
        "connect_timeout_s",
        "retries",
        "backoff_s",
        "retry_on_timeout",
        "api_key_env",
        "first_byte_timeout_s",
        "max_reply_bytes",
    }
)


def open_openai(url: BackendURL) -> ModelBackend:
    from models.backends.openai_http import DEFAULT_MAX_REPLY_BYTES, OpenAIBackend

    unknown = set(url.params) - OPENAI_PARAMS
    if unknown:
        raise ConfigError(
            f"{url.scheme}:// parameters {sorted(unknown)} unknown; known: {sorted(OPENAI_PARAMS)}"
        )
    retry_on_timeout = url.get_str("retry_on_timeout", "false") or "false"
    if retry_on_timeout not in ("1", "0", "true", "false"):
        raise ConfigError(f"{url.scheme}:// retry_on_timeout={retry_on_timeout!r} must be true or false")
    return OpenAIBackend(
        http_base_url(url),
        url.get_str("model"),
        timeout_s=url.get_float("timeout_s", 30.0, minimum=0.001),
        connect_timeout_s=url.get_float("connect_timeout_s", 5.0, minimum=0.001),
        retries=url.get_int("retries", 2),
        backoff_s=url.get_float("backoff_s", 0.25),
        retry_on_timeout=retry_on_timeout in ("1", "true"),
        api_key_env=url.get_str("api_key_env"),
        profile_name=url.get_str("profile"),
        first_byte_timeout_s=(
            url.get_float("first_byte_timeout_s", 0.0, minimum=0.001)
            if "first_byte_timeout_s" in url.params
            else None  # the whole deadline (a server that does not stream answers all at once)
        ),
        max_reply_bytes=url.get_int("max_reply_bytes", DEFAULT_MAX_REPLY_BYTES, minimum=1),
    )


def open_vllm(url: BackendURL) -> ModelBackend:
    from models.backends.vllm_local import VLLMBackend, engine_kwargs

    return VLLMBackend(url.location, **engine_kwargs(url.params))


def open_trtllm(url: BackendURL) -> ModelBackend:
    from models.backends.trtllm_local import TRTLLMBackend

    unknown = set(url.params) - {"profile"}
    if unknown:
        raise ConfigError(f"trtllm:// parameters {sorted(unknown)} unknown (only profile=)")
    return TRTLLMBackend(url.location)


# scheme -> factory(url: BackendURL) -> ModelBackend, from the installed distributions' entry points
_BACKENDS = SchemeRegistry("backend", BACKENDS_GROUP)


def backend_schemes() -> list[str]:
    return _BACKENDS.schemes()


def open_backend(url: str) -> ModelBackend:
    """A backend for `url`. The URL's `profile=` is read by the pilot (models.pilot), not here: the
    request a pilot builds already carries the profile's decoding settings and output caps."""
    parsed = parse_backend_url(url)
    opener = _BACKENDS.factory_for(parsed.scheme)
    if opener is None:
        raise ConfigError(f"unknown backend scheme {parsed.scheme!r} in {url!r}; known: {_BACKENDS.known()}")
    backend: ModelBackend = opener(parsed)
    return backend
