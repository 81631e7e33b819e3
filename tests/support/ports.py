"""Free loopback ports (TCP or UDP) for servers a test starts (bound, then released)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_udp_port() -> int:
    """A UDP port nothing is bound to (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_base_port() -> int:
    """A port P with P, P+1 and P+2 free (a drone's telemetry, frames, commands)."""
    for _ in range(50):
        base = free_port()
        if base + 2 < 65536 and all(_port_free(base + i) for i in (1, 2)):
            return base
    raise RuntimeError("no three consecutive free ports")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
