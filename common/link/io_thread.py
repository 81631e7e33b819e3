"""The one thread that owns a link's ZeroMQ sockets.

ZeroMQ sockets are not thread-safe, so each link gives all of its sockets to one I/O thread. Other
threads talk to it through `call_soon(fn)` (a queue plus a socketpair that wakes the poller), which
is thread-safe. Socket monitors count CURVE handshake failures into the link's stats, and the
connections that close before any handshake (a port scan, an HTTP request, anything not ZeroMQ).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import socket as pysocket
import threading
import time
from collections.abc import Callable
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

from common.errors import LinkError
from common.link.stats import LinkStats

log = logging.getLogger(__name__)

_MONITOR_EVENTS = (
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
    | zmq.EVENT_HANDSHAKE_SUCCEEDED
    | zmq.EVENT_DISCONNECTED
    | zmq.EVENT_ACCEPTED
)
MAX_UNSHAKEN = 1024  # accepted connections awaiting their handshake, per socket (a bound, not a window)


class IoThread:
    """Subclasses open their sockets in `_open()` (on the I/O thread), register readers with
    `_register`, and close them in `_close()`. `_tick(now_s)` runs at least every `tick_s`."""

    tick_s = 0.05

    def __init__(self, name: str, stats: LinkStats) -> None:
        self.name = name
        self.stats = stats
        self.context: zmq.Context[Any] | None = None
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = pysocket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._readers: dict[Any, Callable[[], None]] = {}
        self._poller = zmq.Poller()
        self._monitors: dict[Any, Any] = {}  # monitor socket -> watched socket's label
        # Per monitor: the fds of accepted connections with no handshake event yet, oldest first.
        # Handshake events carry no fd, so each one settles the oldest (the count stays exact).
        self._unshaken: dict[Any, list[int]] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._started = threading.Event()
        self._start_error: BaseException | None = None

    # -- lifecycle (any thread) -------------------------------------------------------------------

    def start(self, timeout_s: float = 5.0) -> None:
        if self._thread is not None:
            raise LinkError(f"{self.name} is already started")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise LinkError(f"{self.name} did not start within {timeout_s} s")
        if self._start_error is not None:
            self._thread.join(timeout_s)
            raise self._start_error

    def close(self, timeout_s: float = 5.0) -> None:
        if self._thread is None or self._stop.is_set():
            return
        self._stop.set()
        self._wake()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.warning("%s I/O thread did not stop within %s s", self.name, timeout_s)

    def __enter__(self) -> IoThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call_soon(self, fn: Callable[[], None]) -> bool:
        """Run fn on the I/O thread (thread-safe). After close() nothing runs and this returns False:
        a flight loop that publishes into a closed link must not fail or grow a queue forever."""
        if self._stop.is_set():
            self.stats.add("calls_after_close")
            return False
        self._tasks.put(fn)
        self._wake()
        return True

    def call_and_wait(self, fn: Callable[[], Any], timeout_s: float = 5.0) -> Any:
        """Run fn on the I/O thread and return its result (thread-safe; not from the I/O thread)."""
        done = threading.Event()
        box: dict[str, Any] = {}

        def task() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # handed back to the caller
                box["error"] = exc
            done.set()

        if not self.call_soon(task):
            raise LinkError(f"{self.name} is closed")
        if not done.wait(timeout_s):
            raise LinkError(f"{self.name}: I/O thread did not answer within {timeout_s} s")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    # -- for subclasses (I/O thread only) ---------------------------------------------------------

    def _open(self) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        pass

    def _tick(self, now_s: float) -> None:
        pass

    def _register(self, sock: Any, handler: Callable[[], None] | None, label: str = "") -> None:
        """Poll `sock` with `handler` (None: a send-only socket), and watch it with a monitor if `label`."""
        if handler is not None:
            self._readers[sock] = handler
            self._poller.register(sock, zmq.POLLIN)
        if label:
            monitor = sock.get_monitor_socket(_MONITOR_EVENTS)
            self._monitors[monitor] = (sock, label)
            self._readers[monitor] = functools.partial(self._on_monitor, monitor)
            self._poller.register(monitor, zmq.POLLIN)

    def _unregister(self, sock: Any) -> None:
        for monitor, (watched, _label) in list(self._monitors.items()):
            if watched is sock:
                self._poller.unregister(monitor)
                del self._readers[monitor]
                del self._monitors[monitor]
                self._unshaken.pop(monitor, None)
                with contextlib.suppress(zmq.ZMQError):
                    sock.disable_monitor()
                monitor.close(linger=0)
        if sock in self._readers:
            self._poller.unregister(sock)
            del self._readers[sock]

    def _on_monitor(self, monitor: Any) -> None:
        _sock, label = self._monitors[monitor]
        try:
            event = recv_monitor_message(monitor, zmq.NOBLOCK)
        except zmq.Again:
            return
        except (zmq.ZMQError, ValueError):
            return
        kind = event["event"]
        unshaken = self._unshaken.setdefault(monitor, [])
        if kind == zmq.EVENT_ACCEPTED:
            unshaken.append(event["value"])
            del unshaken[:-MAX_UNSHAKEN]
            return
        if kind == zmq.EVENT_DISCONNECTED:
            self.stats.add(f"disconnects_{label}")
            if event["value"] in unshaken:
                unshaken.remove(event["value"])
                self.stats.reject(
                    "handshake",
                    f"a connection to {label} closed before any ZeroMQ handshake (not a ZeroMQ peer?)",
                )
            return
        if unshaken:
            unshaken.pop(0)
        if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self.stats.add(f"handshakes_{label}")
        elif kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            # On a server the ZAP handler already counted this denial; on a client it means the peer
            # refused our key.
            self.stats.add(f"auth_failed_{label}")
        else:  # counted, and logged at a bounded rate: a peer with no or the wrong key keeps retrying
            self.stats.reject("handshake", f"CURVE/ZMTP handshake failed on {label} ({event['endpoint']!r})")

    # -- the loop ---------------------------------------------------------------------------------

    def _wake(self) -> None:
        # A full wake buffer already means "wake up", so a failed write is fine.
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def _run(self) -> None:
        self.context = zmq.Context()
        try:
            self._open()
        except BaseException as exc:
            self._start_error = exc
            self._shutdown()
            self._started.set()
            return
        self._poller.register(self._wake_r.fileno(), zmq.POLLIN)
        self._started.set()
        next_tick_s = time.monotonic()
        try:
            while not self._stop.is_set():
                timeout_ms = max(0, int((next_tick_s - time.monotonic()) * 1000.0) + 1)
                events = dict(self._poller.poll(timeout_ms))
                if self._wake_r.fileno() in events:
                    self._drain_wake()
                self._run_tasks()
                for sock in list(events):
                    handler = self._readers.get(sock)
                    if handler is not None:
                        self._guarded(handler)
                now_s = time.monotonic()
                if now_s >= next_tick_s:
                    self._guarded(functools.partial(self._tick, now_s))
                    next_tick_s = now_s + self.tick_s
        finally:
            self._run_tasks()
            self._shutdown()

    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:
            # A bug in one handler must not kill the link that keeps a drone reachable.
            self.stats.add("internal_errors")
            log.exception("%s: error in I/O handler", self.name)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _run_tasks(self) -> None:
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                return
            self._guarded(task)

    def _shutdown(self) -> None:
        try:
            self._close()
        except Exception:
            log.exception("%s: error while closing sockets", self.name)
        for sock in list(self._readers):
            if isinstance(sock, zmq.Socket):
                self._unregister(sock)
        for monitor in list(self._monitors):
            monitor.close(linger=0)
        if self.context is not None:
            self.context.destroy(linger=0)
        self._wake_r.close()
        self._wake_w.close()
