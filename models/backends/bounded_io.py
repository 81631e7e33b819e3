"""Bounds on one model call at the socket: a total deadline, a time to first byte and a reply cap.

httpx's timeouts are per read: a server that trickles one byte a second (of headers or of body)
never trips them, and a reply is buffered whole whatever its size. Here every read of the
connection is clamped to what is left of the call's deadline and counted against its byte cap, so
a trickled, hung or oversized reply ends the call in time and the connection is dropped at the cap
(httpcore closes a connection whose read raised). The bounds of the call in progress live in a
context variable set by the caller around it (`bounded`): connections are pooled, calls are not.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import httpcore
import httpx

from common.capabilities import Closeable

READ_CHUNK_BYTES = 64 * 1024


@dataclass
class CallBudget:
    """One call's bounds (monotonic times) and what it has used; `exceeded` says which bound ended it."""

    deadline_s: float  # time.monotonic() by which the whole call (every attempt) must be done
    first_byte_s: float  # seconds from an attempt's request to its reply's first byte
    max_reply_bytes: int  # bytes an attempt may read, headers included
    attempt_started_s: float = field(default_factory=time.monotonic)
    read_bytes: int = 0
    timed_out_on: str | None = None  # the bound the last read was clamped to (why it timed out)
    over_cap: bool = False

    def new_attempt(self) -> None:
        self.attempt_started_s = time.monotonic()
        self.read_bytes = 0
        self.timed_out_on = None
        self.over_cap = False

    def why(self, timed_out: bool) -> str | None:
        """Which bound ended the attempt, or None when none did (a plain network failure)."""
        if self.over_cap:
            return f"reply over the cap of {self.max_reply_bytes} bytes: connection closed"
        if timed_out and self.timed_out_on is not None:
            return f"{self.timed_out_on} passed ({self.read_bytes} bytes read)"
        return None

    def read_timeout_s(self, timeout_s: float | None) -> float:
        """The timeout for the next read: the socket's own, cut to the first-byte and total bounds."""
        now = time.monotonic()
        left_s = self.deadline_s - now
        bound = f"the total deadline ({self.deadline_s - self.attempt_started_s:.2f} s)"
        first_byte_left_s = self.attempt_started_s + self.first_byte_s - now
        if self.read_bytes == 0 and first_byte_left_s < left_s:
            left_s, bound = first_byte_left_s, f"the time to first byte ({self.first_byte_s:g} s)"
        self.timed_out_on = None if timeout_s is not None and timeout_s < left_s else bound
        if left_s <= 0:
            raise httpcore.ReadTimeout(f"{bound} passed")
        return left_s if self.timed_out_on is not None or timeout_s is None else timeout_s

    def connect_timeout_s(self, timeout_s: float | None) -> float:
        """The connect timeout, cut to what is left of the total deadline."""
        left_s = self.deadline_s - time.monotonic()
        self.timed_out_on = f"the total deadline ({self.deadline_s - self.attempt_started_s:.2f} s)"
        if left_s <= 0:
            raise httpcore.ConnectTimeout(f"{self.timed_out_on} passed")
        if timeout_s is not None and timeout_s < left_s:
            self.timed_out_on = None  # the connect timeout's own, named by httpx
            return timeout_s
        return left_s

    def count(self, data: bytes) -> None:
        self.read_bytes += len(data)
        if self.read_bytes > self.max_reply_bytes:
            self.over_cap = True
            raise httpcore.ReadError(f"reply over {self.max_reply_bytes} bytes")


_CURRENT: contextvars.ContextVar[CallBudget | None] = contextvars.ContextVar("model_call", default=None)


@contextlib.contextmanager
def bounded(budget: CallBudget) -> Iterator[CallBudget]:
    """Every read on a BoundedNetwork connection inside the block obeys `budget`."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


class BoundedStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        budget = _CURRENT.get()
        if budget is None:
            return self._inner.read(max_bytes, timeout)
        room = budget.max_reply_bytes - budget.read_bytes + 1  # one byte past the cap proves it is passed
        timeout = budget.read_timeout_s(timeout)
        data = self._inner.read(max(1, min(max_bytes, room, READ_CHUNK_BYTES)), timeout)
        budget.count(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        budget = _CURRENT.get()
        # A server that stops reading the request holds the call as surely as one that stops answering.
        self._inner.write(buffer, budget.read_timeout_s(timeout) if budget is not None else timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: object, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return BoundedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))  # type: ignore[arg-type]

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class BoundedNetwork(httpcore.NetworkBackend):
    """httpcore's own sockets, each wrapped in a BoundedStream."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        budget = _CURRENT.get()
        if budget is not None:
            timeout = budget.connect_timeout_s(timeout)
        return BoundedStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        return BoundedStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class BoundedTransport(httpx.BaseTransport):
    """httpx's transport over a pool of BoundedNetwork connections (public httpcore API only)."""

    def __init__(self, limits: httpx.Limits) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=BoundedNetwork(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._inner

    def close(self) -> None:
        if isinstance(self._inner, Closeable):  # httpcore's stream releases its connection
            self._inner.close()


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore's errors as the httpx errors of the same name (httpx defines one for each)."""
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise getattr(httpx, type(exc).__name__, httpx.TimeoutException)(str(exc)) from exc
    except httpcore.NetworkError as exc:
        raise getattr(httpx, type(exc).__name__, httpx.NetworkError)(str(exc)) from exc
    except (httpcore.ProtocolError, httpcore.UnsupportedProtocol, httpcore.ProxyError) as exc:
        raise getattr(httpx, type(exc).__name__, httpx.TransportError)(str(exc)) from exc
