"""A TCP tap for replay attacks: a forwarder in front of one port that records every byte each way,
per connection, and a raw replay of recorded bytes into a port with the ZMTP frames of the answer.

What it records is what an eavesdropper on the network sees: under CURVE, ciphertext; under
`--insecure`, the ZeroMQ frames in the clear. Nothing here builds a message: a replay sends the
recorded bytes unchanged.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

GREETING_BYTES = 64  # ZMTP 3: signature, version, mechanism, as-server, filler


@dataclass
class Recorded:
    client: bytearray = field(default_factory=bytearray)  # what the connecting side sent
    server: bytearray = field(default_factory=bytearray)


class TcpTap:
    """127.0.0.1:`port` forwards to 127.0.0.1:`upstream_port`, recording each connection."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[Recorded] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            record = Recorded()
            with self._lock:
                self.connections.append(record)
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, record.client), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, record.server), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, record: bytearray) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            with self._lock:
                record += data
            with contextlib.suppress(OSError):
                sink.sendall(data)

    def client_bytes(self) -> list[bytes]:
        with self._lock:
            return [bytes(r.client) for r in self.connections]

    def close(self) -> None:
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()


def replay(port: int, data: bytes, listen_s: float = 2.0) -> bytes:
    """Send `data` unchanged on a new TCP connection to 127.0.0.1:`port`; what came back in `listen_s`.

    Paced as the original was: the greeting, then (once the peer's greeting is in) the rest. ZeroMQ
    refuses a handshake that arrives ahead of its own greeting, as a real replay tool knows."""
    received = bytearray()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(0.1)
        end = time.monotonic() + listen_s
        with contextlib.suppress(OSError):
            sock.sendall(data[:GREETING_BYTES])
            while len(received) < GREETING_BYTES and time.monotonic() < end:
                with contextlib.suppress(TimeoutError):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    received += chunk
            sock.sendall(data[GREETING_BYTES:])
        while time.monotonic() < end:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            received += chunk
    return bytes(received)


def zmtp_messages(stream: bytes) -> list[list[bytes]]:
    """The multipart messages in one direction of a NULL-mechanism ZMTP 3 stream (its commands, e.g.
    READY and PING, skipped; a frame cut off at the end ignored)."""
    messages: list[list[bytes]] = []
    parts: list[bytes] = []
    i = GREETING_BYTES
    while i < len(stream):
        flags = stream[i]
        if flags & 0x02:  # long frame: 8-byte size
            if i + 9 > len(stream):
                break
            (size,) = struct.unpack(">Q", stream[i + 1 : i + 9])
            start = i + 9
        else:
            if i + 2 > len(stream):
                break
            size, start = stream[i + 1], i + 2
        if start + size > len(stream):
            break
        body = stream[start : start + size]
        i = start + size
        if flags & 0x04:  # a command frame
            continue
        parts.append(body)
        if not flags & 0x01:  # the last part of a message
            messages.append(parts)
            parts = []
    return messages
