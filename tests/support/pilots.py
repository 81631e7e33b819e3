"""Shared helpers for the pilot tests: a serve-pilot subprocess, test peers at the wire, and frames."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

import cv2
import numpy as np

from tests.support.processes import dronecats_cmd, stop_process, subprocess_env

SKY_BGR = (235, 206, 135)
GROUND_BGR = (90, 120, 90)
RED_BGR = (20, 20, 204)  # the simulator's red (0.80, 0.08, 0.08) in BGR


def scene(width: int = 640, height: int = 360) -> np.ndarray:
    image = np.zeros((height, width, 3), np.uint8)
    image[: height // 2] = SKY_BGR
    image[height // 2 :] = GROUND_BGR
    return image


def draw_box(image: np.ndarray, x: int, y: int, w: int, h: int, bgr: tuple[int, int, int] = RED_BGR) -> None:
    cv2.rectangle(image, (x, y), (x + w - 1, y + h - 1), bgr, -1)


@contextlib.contextmanager
def serve_pilot_process(*args: str, timeout_s: float = 20.0) -> Iterator[str]:
    """`dronecats serve-pilot --port 0 ARGS` in a subprocess; yields its base URL host:port."""
    proc = subprocess.Popen(
        dronecats_cmd("serve-pilot", "--port", "0", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=subprocess_env(),
    )
    try:
        deadline = time.monotonic() + timeout_s
        line = ""
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "listening on http://" in line or not line:
                break
        if "listening on http://" not in line:
            raise RuntimeError(f"serve-pilot did not start: {line!r}")
        hostport = line.split("http://", 1)[1].split("/", 1)[0]
        yield hostport
    finally:
        stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()


_Peer = TypeVar("_Peer", bound="HttpPeer")


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 request handler that logs nothing and sends JSON bodies whole."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def send_json(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class HttpPeer:
    """An HTTP test peer at the wire: `handler` served on a free loopback port from a thread, for the
    length of a `with` block."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def __enter__(self: _Peer) -> _Peer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class RecordingPeer(HttpPeer):
    """A tiny HTTP test peer: records each request (headers, raw body) and answers with `respond`."""

    def __init__(self, respond: Callable[[bytes], tuple[int, bytes]]) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        peer = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                peer.requests.append((dict(self.headers), body))
                self.send_json(*respond(body))

        super().__init__(Handler)


class RawPeer:
    """A raw TCP test peer that answers every connection with fixed bytes (or just closes it)."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(1.0)
                with contextlib.suppress(OSError):
                    conn.recv(1 << 20)
                    if self.reply:
                        conn.sendall(self.reply)

    def __enter__(self) -> RawPeer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        self.sock.close()
