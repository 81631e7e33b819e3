"""The autopilot's end of the MAVLink/UDP link: one pymavlink connection that sends to the companion's
port (like PX4 SITL's offboard link) and answers whoever talks to it, with the `link_down` fault."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

    from pymavlink.dialects.v20.all import MAVLink_message

log = logging.getLogger(__name__)


class MavLink:
    def __init__(self, mavutil: ModuleType, companion: tuple[str, int]) -> None:
        self.m = mavutil.mavlink  # the dialect module (enums)
        host, port = companion
        self.conn = mavutil.mavlink_connection(f"udpout:{host}:{port}", source_system=1, source_component=1)
        self.mav = self.conn.mav  # pymavlink's encoder: mav.<message>_send(...)
        self.link_down = threading.Event()  # fault injection: silence both ways
        self.statustexts: list[str] = []  # every STATUSTEXT sent, for tests and reports
        self._send_lock = threading.Lock()  # the rx and tx threads both send

    def send(self, encode: Callable[..., object], *args: object) -> None:
        """`encode` is one of `self.mav`'s <message>_send methods; nothing goes out while the link is down."""
        if self.link_down.is_set():
            return
        with self._send_lock:
            try:
                encode(*args)
            except OSError:
                log.debug("mavlink send failed", exc_info=True)

    def statustext(self, severity: int, text: str) -> None:
        self.statustexts.append(text)
        log.info("emulator STATUSTEXT: %s", text)
        self.send(self.mav.statustext_send, severity, text.encode()[:50])

    def ack(self, command: int, result: int) -> None:
        self.send(self.mav.command_ack_send, command, result)

    def receive(self, timeout_s: float) -> MAVLink_message | None:
        """The next decoded message or None; raises what the socket raises."""
        return self.conn.recv_match(blocking=True, timeout=timeout_s)

    def close(self) -> None:
        self.conn.close()
