"""A stand-in OpenAI-compatible chat-completions server at the wire, for the faults no real server
shows on demand: real HTTP on a free loopback port, served from a thread.

    with model_server() as server:                      # answers a valid action
        url = server.openai_url(retries=0)              # openai://127.0.0.1:PORT/v1?model=stand-in&...
        server.set_mode("trickle_body", rate_bytes_per_s=1)
        ...

Modes (`set_mode` at run time from the test, or `POST /control` with the same JSON from another
process, e.g. `{"mode": "hang", "hang_s": 30}`):

- `normal`: a valid chat completion whose content is `action` (a rotate by default).
- `trickle_body`: valid headers at once, then the same body at `rate_bytes_per_s`.
- `trickle_headers`: the status line and headers at `rate_bytes_per_s` (a long filler header first).
- `hang`: nothing for `hang_s`, then the normal reply.
- `huge`: a chat completion whose content is `huge_bytes` of text, streamed in 64 KiB pieces from a
  generator (the server never holds it), with a Content-Length, or chunked when `chunked` is set.
- `garbage`: HTTP 200 with a body that is not JSON.

Every reply is recorded (`server.replies`): its mode, the bytes written before the client closed
the connection or the reply ended, whether it ended, and when. A client that gives up is seen as a
broken pipe here; that is how a test tells a connection closed at the cap from one read to the end.

`python -m tests.support.model_servers [--port P] [--mode M]` runs it as its own process; it prints
`listening on http://127.0.0.1:PORT/v1` and serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from http.server import ThreadingHTTPServer
from typing import Any

from tests.support.pilots import HttpPeer, QuietHandler

MODES = ("normal", "trickle_body", "trickle_headers", "hang", "huge", "garbage")
ROTATE_ACTION = '{"action":"rotate","point":null,"depth_m":null,"angle_deg":30}'
GARBAGE_BODY = b"<html><body>502 upstream said something that is not JSON</body></html>\n"
PIECE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Mode:
    """What the server answers; every field has a usable default, so `Mode("hang")` is whole."""

    name: str = "normal"
    action: str = ROTATE_ACTION
    rate_bytes_per_s: float = 1.0
    hang_s: float = 30.0
    huge_bytes: int = 50 * 1024 * 1024
    chunked: bool = False

    def __post_init__(self) -> None:
        if self.name not in MODES:
            raise ValueError(f"unknown stand-in mode {self.name!r}; known: {MODES}")
        if not self.rate_bytes_per_s > 0 or self.hang_s < 0 or self.huge_bytes < 0:
            raise ValueError(f"stand-in mode {self!r}: rate must be > 0, hang_s and huge_bytes >= 0")


@dataclass
class Reply:
    """One reply as the server wrote it."""

    mode: str
    started_s: float  # time.monotonic() when the request was read
    sent_bytes: int = 0  # body bytes written (headers excluded, except in trickle_headers)
    ended_s: float | None = None
    completed: bool = False  # False: the client closed the connection first (or the server stopped)


def completion_body(content: str, model: str = "stand-in") -> bytes:
    """A chat-completions reply carrying `content`, shaped as real servers (vLLM, serve-pilot) send it."""
    return json.dumps(
        {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        },
        separators=(",", ":"),
    ).encode()


def huge_pieces(total_bytes: int) -> tuple[int, Iterator[bytes]]:
    """A chat completion whose content is `total_bytes` of filler, as (length, pieces) — made as it
    is sent, never held whole."""
    head = b'{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"'
    tail = b'"},"finish_reason":"length"}]}'

    def pieces() -> Iterator[bytes]:
        yield head
        filler = b"x" * PIECE_BYTES
        left = total_bytes
        while left > 0:
            yield filler[: min(left, PIECE_BYTES)]
            left -= PIECE_BYTES
        yield tail

    return len(head) + total_bytes + len(tail), pieces()


class ModelServer(HttpPeer):
    """The stand-in server; use it as a context manager (`model_server()` below)."""

    def __init__(self, mode: Mode | None = None, port: int = 0) -> None:
        self.mode = mode or Mode()
        self.replies: list[Reply] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def handle(self) -> None:
                # A bounded client hangs up mid-reply or between requests: that is the point, not an error.
                with contextlib.suppress(ConnectionError):
                    super().handle()

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self.send_json(200, b'{"object":"list","data":[{"id":"stand-in","object":"model"}]}')
                else:
                    self.send_json(404, b'{"error":{"message":"not found"}}')

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/control":
                    server._control(self, body)
                elif self.path.rstrip("/").endswith("/chat/completions"):
                    server._answer(self)
                else:
                    self.send_json(404, b'{"error":{"message":"not found"}}')

        super().__init__(Handler)
        if port:
            self.server.server_close()
            self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
            self.server.daemon_threads = True
            self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, http://127.0.0.1:PORT/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def openai_url(self, **params: object) -> str:
        """An `openai://` pilot URL for this server; `params` become query options."""
        query = "&".join(f"{key}={value}" for key, value in {"model": "stand-in", **params}.items())
        return f"openai://127.0.0.1:{self.port}/v1?{query}"

    def set_mode(self, name: str, **options: Any) -> None:
        """Switch what the next replies are (replies under way keep theirs)."""
        self.mode = replace(Mode(), name=name, **options)

    def reply_count(self) -> int:
        with self._lock:
            return len(self.replies)

    def __exit__(self, *exc: object) -> None:
        # Trickling and hanging replies check this between writes, so no thread outlives the server.
        self.stopping.set()
        super().__exit__(*exc)

    def _control(self, handler: QuietHandler, body: bytes) -> None:
        try:
            options = json.loads(body)
            self.set_mode(str(options.pop("mode")), **options)
        except (ValueError, KeyError, TypeError) as exc:
            handler.send_json(400, json.dumps({"error": {"message": str(exc)}}).encode())
            return
        handler.send_json(200, json.dumps({"mode": self.mode.name}).encode())

    def _answer(self, handler: QuietHandler) -> None:
        mode = self.mode
        reply = Reply(mode.name, time.monotonic())
        with self._lock:
            self.replies.append(reply)
        try:
            self._write(handler, mode, reply)
            reply.completed = not self.stopping.is_set()
        except OSError:  # the client closed the connection: exactly what a bounded client does
            handler.close_connection = True
        finally:
            reply.ended_s = time.monotonic()

    def _write(self, handler: QuietHandler, mode: Mode, reply: Reply) -> None:
        out = handler.wfile
        if mode.name == "hang" and self.stopping.wait(mode.hang_s):
            return
        if mode.name in ("normal", "hang"):
            body = completion_body(mode.action)
            handler.send_json(200, body)
            reply.sent_bytes = len(body)
        elif mode.name == "garbage":
            handler.send_response(200)
            handler.send_header("Content-Type", "text/html")
            handler.send_header("Content-Length", str(len(GARBAGE_BODY)))
            handler.end_headers()
            out.write(GARBAGE_BODY)
            reply.sent_bytes = len(GARBAGE_BODY)
        elif mode.name == "trickle_body":
            body = completion_body(mode.action)
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            out.flush()
            self._trickle(out, body, mode.rate_bytes_per_s, reply)
        elif mode.name == "trickle_headers":
            body = completion_body(mode.action)
            head = (
                b"HTTP/1.1 200 OK\r\nX-Filler: " + b"f" * 4096 + b"\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
            )
            self._trickle(out, head, mode.rate_bytes_per_s, reply)
            out.write(body)
        else:  # huge
            length, pieces = huge_pieces(mode.huge_bytes)
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            if mode.chunked:
                handler.send_header("Transfer-Encoding", "chunked")
            else:
                handler.send_header("Content-Length", str(length))
            handler.end_headers()
            for piece in pieces:
                if self.stopping.is_set():
                    return
                out.write(b"%x\r\n%s\r\n" % (len(piece), piece) if mode.chunked else piece)
                reply.sent_bytes += len(piece)
            if mode.chunked:
                out.write(b"0\r\n\r\n")
        out.flush()

    def _trickle(self, out: Any, data: bytes, rate_bytes_per_s: float, reply: Reply) -> None:
        # Whole bytes at the asked rate: at most 10 writes a second, so a fast rate is not a busy loop.
        interval_s = max(1.0 / rate_bytes_per_s, 0.1)
        per_write = max(1, round(rate_bytes_per_s * interval_s))
        for start in range(0, len(data), per_write):
            if self.stopping.wait(interval_s):
                return
            out.write(data[start : start + per_write])
            out.flush()
            reply.sent_bytes += len(data[start : start + per_write])


@contextlib.contextmanager
def model_server(mode: str = "normal", **options: Any) -> Iterator[ModelServer]:
    """The stand-in server in a thread for the `with` block; `server.base_url`, `server.set_mode(...)`."""
    with ModelServer(replace(Mode(), name=mode, **options)) as server:
        yield server


def main() -> None:
    parser = argparse.ArgumentParser(description="stand-in OpenAI-compatible chat-completions server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", default="normal", choices=MODES)
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ModelServer(Mode(args.mode), port=args.port) as server:
        print(f"listening on {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


if __name__ == "__main__":
    main()
