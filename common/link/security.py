"""Link security: ZeroMQ CURVE with an allow-list of ground-station keys, or an explicit no-security mode.

The drone is the CURVE server on all its sockets and runs a ZAP handler (RFC 27) on its own I/O
thread: a connection is accepted only when the client's public key is in `allowed_client_keys`.
So an unknown ground station can neither command a drone nor watch its video. The handler is ours
rather than zmq.auth's threaded one so that every denial is counted in the link's stats on the same
thread that owns the sockets.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from common.errors import ConfigError
from common.keys import KeyPair, load_secret_keypair, parse_public_key
from common.link.stats import LinkStats

log = logging.getLogger(__name__)

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN = b"dronecats"


@dataclass(frozen=True)
class Insecure:
    """No encryption, no authentication: for local tests and demos only, and chosen explicitly."""


@dataclass(frozen=True)
class CurveServer:
    """Drone side: its own keypair, and the public keys of the ground stations it obeys."""

    keypair: KeyPair
    allowed_client_keys: frozenset[bytes] = field(default_factory=frozenset)

    @classmethod
    def from_files(cls, secret_file: str | Path, allowed: Iterable[str | Path]) -> CurveServer:
        """`allowed`: Z85 public keys, or certificate files holding them."""
        keys = frozenset(parse_public_key(item) for item in allowed)
        if not keys:
            raise ConfigError("a CURVE drone link needs at least one allowed ground-station public key")
        return cls(load_secret_keypair(secret_file), keys)


@dataclass(frozen=True)
class CurveClient:
    """Ground side: its own keypair (its public key must be in each drone's allow-list)."""

    keypair: KeyPair

    @classmethod
    def from_file(cls, secret_file: str | Path) -> CurveClient:
        return cls(load_secret_keypair(secret_file))


Security = Insecure | CurveServer | CurveClient


@dataclass(frozen=True)
class SecurityConfig:
    """The config-file form. `mode` has no default on purpose: running without CURVE is a choice.

    Drone:  mode: curve, secret_key_file: keys/drone1.key_secret, allowed_keys: [keys/gs1.key]
    Ground: mode: curve, secret_key_file: keys/gs1.key_secret (drone keys go in each DroneEndpoint)
    """

    mode: Literal["curve", "none"]
    secret_key_file: str = ""
    allowed_keys: list[str] = field(default_factory=list)  # Z85 public keys or certificate files

    def _check(self) -> None:
        if self.mode == "curve" and not self.secret_key_file:
            raise ConfigError("security.mode is curve but security.secret_key_file is empty")

    def for_drone(self) -> CurveServer | Insecure:
        if self.mode == "none":
            log.warning("drone link runs WITHOUT CURVE: any host that reaches its ports can command it")
            return Insecure()
        self._check()
        return CurveServer.from_files(self.secret_key_file, self.allowed_keys)

    def for_ground(self) -> CurveClient | Insecure:
        if self.mode == "none":
            log.warning("ground link runs WITHOUT CURVE")
            return Insecure()
        self._check()
        return CurveClient.from_file(self.secret_key_file)


def apply_server(socket: Any, security: Insecure | CurveServer) -> None:
    if isinstance(security, CurveServer):
        if security.keypair.secret_key is None:
            raise ConfigError("the drone's CURVE keypair has no secret key")
        socket.curve_secretkey = security.keypair.secret_key
        socket.curve_publickey = security.keypair.public_key
        socket.curve_server = True
        socket.zap_domain = ZAP_DOMAIN


def apply_client(socket: Any, security: Insecure | CurveClient, server_public_key: bytes | None) -> None:
    if isinstance(security, CurveClient):
        if server_public_key is None:
            raise ConfigError(
                "a CURVE ground link needs each drone's public key (DroneEndpoint.server_public_key)"
            )
        if security.keypair.secret_key is None:
            raise ConfigError("the ground station's CURVE keypair has no secret key")
        socket.curve_secretkey = security.keypair.secret_key
        socket.curve_publickey = security.keypair.public_key
        socket.curve_serverkey = server_public_key


class ZapHandler:
    """Answers ZAP requests on a REP socket; call `handle()` when that socket is readable."""

    def __init__(self, context: Any, security: CurveServer, stats: LinkStats) -> None:
        import zmq
        import zmq.utils.z85

        self._z85 = zmq.utils.z85
        self.allowed = security.allowed_client_keys
        self.stats = stats
        self.socket = context.socket(zmq.REP)
        self.socket.linger = 0
        self.socket.bind(ZAP_ENDPOINT)
        self._denials = 0

    def handle(self) -> None:
        import zmq

        try:
            request = self.socket.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return
        version, request_id = ([*request, b"", b""])[:2]
        status, text, user_id = b"400", b"denied", b""
        if len(request) >= 7 and version == b"1.0" and request[5] == b"CURVE" and len(request[6]) == 32:
            client_key = self._z85.encode(request[6])
            if client_key in self.allowed:
                status, text, user_id = b"200", b"OK", client_key
            else:
                self._deny(f"refused connection from {request[3]!r}: CURVE key {client_key!r} is not allowed")
        else:
            self._deny(f"refused a malformed or non-CURVE ZAP request ({len(request)} parts)")
        self.socket.send_multipart([b"1.0", request_id, status, text, user_id, b""])

    def _deny(self, text: str) -> None:
        # A refused client keeps reconnecting: counted, and logged at a bounded rate (LinkStats).
        self._denials += 1
        self.stats.reject("unauthenticated", text)

    def close(self) -> None:
        self.socket.close(linger=0)
