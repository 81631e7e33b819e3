"""msgpack-rpc over TCP as rpclib (AirSim's RPC library) speaks it.

Request ``[0, msgid, method, params]`` -> response ``[1, msgid, error, result]``; notifications
``[2, method, params]`` get no reply. Every request runs in its own worker so that a blocking motion
never delays e.g. getMultirotorState on the same connection (replies may come out of order, matched by
msgid). Error strings copy rpclib's, which the airsim client surfaces as RPCError text.

Requests of one connection *start* in the order they arrived: each waits until the one before it
has returned or has called `release_order()` (a motion does, once its command is applied, before it
waits for the motion to end). So a fire-and-forget velocity command followed by simContinueForTime on
the same connection is applied before the time runs, every time (lock-step over RPC is
deterministic). rpclib itself makes no such promise; on a real AirSim a command may land a frame late.

A handler's parameters with defaults are optional on the wire: AirSim 1.x and Cosys-AirSim clients
send some methods with different argument counts (simGetImages 3 or 2, simGetObjectPose 1 or 2).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import math
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import msgpack

from sim_bridge.rpc.dispatch import Handler, HandlerTable

log = logging.getLogger(__name__)

REQUEST, RESPONSE, NOTIFY = 0, 1, 2
_current = threading.local()


class _Order:
    """The start order of one connection's requests (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0  # sequence number of the next request to arrive
        self._released = 0  # requests before this one have started (and released their turn)

    def ticket(self) -> int:
        with self._cond:
            seq = self._next
            self._next += 1
            return seq

    def wait_turn(self, seq: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._released >= seq)

    def release(self, seq: int) -> None:
        with self._cond:
            if self._released == seq:
                self._released = seq + 1
                self._cond.notify_all()


def release_order() -> None:
    """Called by a handler about to block (a motion waiting for its end): the connection's next
    request may start now. Outside a request (in-process use) it does nothing."""
    turn = getattr(_current, "turn", None)
    if turn is not None:
        order, seq = turn
        order.release(seq)


def _arity(fn: Handler) -> tuple[int, int]:
    params = inspect.signature(fn).parameters.values()
    return sum(p.default is inspect.Parameter.empty for p in params), len(params)


class RpcServer:
    """Serves a name -> callable table; the arity of each callable is fixed (rpclib binds C++ functions)."""

    def __init__(
        self,
        handlers: HandlerTable,
        host: str = "127.0.0.1",
        port: int = 41451,
        workers: int = 64,
    ) -> None:
        self._handlers = handlers
        self._arity = {name: _arity(fn) for name, fn in handlers.items()}
        self._sock = socket.create_server((host, port))
        self.host, self.port = self._sock.getsockname()[:2]
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc")
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._error_counts: dict[str, int] = {}

    def serve_forever(self) -> None:
        self._sock.settimeout(0.5)
        while not self._stop.is_set():
            try:
                conn, addr = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            conn.settimeout(None)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns.add(conn)
            threading.Thread(
                target=self._serve_conn, args=(conn, addr), daemon=True, name=f"rpc-{addr}"
            ).start()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, daemon=True, name="rpc-accept")
        thread.start()
        return thread

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        with self._lock:
            for conn in list(self._conns):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _serve_conn(self, conn: socket.socket, addr: object) -> None:
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=64 * 1024 * 1024)
        write_lock = threading.Lock()
        order = _Order()
        packer_opts = {"use_bin_type": True}

        def send(msg: list[object]) -> None:
            data = msgpack.packb(msg, **packer_opts)
            with write_lock:
                try:
                    conn.sendall(data)
                except OSError:
                    log.debug("client %s went away before its reply", addr)

        try:
            while not self._stop.is_set():
                data = conn.recv(1 << 16)
                if not data:
                    break
                unpacker.feed(data)
                for msg in unpacker:
                    if not self._dispatch(msg, send, order):
                        # rpclib drops a session whose stream is not msgpack-rpc: nothing to reply to
                        log.warning("closing connection %s: not a msgpack-rpc message: %.80r", addr, msg)
                        return
        except (msgpack.UnpackException, ValueError) as exc:
            log.warning("closing connection %s: undecodable stream (%s)", addr, exc)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def _dispatch(self, msg: object, send: Callable[[list[object]], None], order: _Order) -> bool:
        if not isinstance(msg, list | tuple) or not msg:
            return False
        if msg[0] == REQUEST and len(msg) == 4 and isinstance(msg[1], int):
            _, msgid, method, params = msg
            if not isinstance(method, str) or not isinstance(params, list | tuple):
                send(
                    [
                        RESPONSE,
                        msgid,
                        "rpclib: malformed request (method must be a string, params an array)",
                        None,
                    ]
                )
                return True
            self._pool.submit(self._call, msgid, method, list(params), send, order, order.ticket())
            return True
        if msg[0] == NOTIFY and len(msg) == 3:
            _, method, params = msg
            if isinstance(method, str) and isinstance(params, list | tuple):
                self._pool.submit(self._call, None, method, list(params), None, order, order.ticket())
            return True
        return False

    def _call(
        self,
        msgid: int | None,
        method: str,
        params: list[object],
        send: Callable[[list[object]], None] | None,
        order: _Order,
        seq: int,
    ) -> None:
        order.wait_turn(seq)
        _current.turn = (order, seq)
        try:
            error, result = self._run(method, params)
        finally:
            _current.turn = None
            order.release(seq)
        if error is not None:
            self._log_error(method, error)
        if send is not None and msgid is not None:
            send([RESPONSE, msgid, error, result])

    def _log_error(self, method: str, error: str) -> None:
        """Every call answered with an error is logged at INFO ("rpc error METHOD: ERROR"), so a
        server's log says which calls a client's script got refused even when the client swallowed
        the error (the airsim client's join() does). A client retrying in a loop would flood the log:
        after the first 10 of one method, only each power of ten is logged, with the count."""
        with self._lock:
            n = self._error_counts[method] = self._error_counts.get(method, 0) + 1
        if n <= 10 or math.log10(n).is_integer():
            log.info("rpc error %s (#%d): %s", method, n, error)

    def _run(self, method: str, params: list[object]) -> tuple[str | None, object]:
        fn = self._handlers.get(method)
        if fn is None:
            missing = f"rpclib: server could not find function '{method}' with argument count {len(params)}."
            return missing, None
        least, most = self._arity[method]
        if not least <= len(params) <= most:
            expected = str(most) if least == most else f"{least} or {most}"
            return (
                f"rpclib: Function '{method}' was called with an invalid number of arguments. "
                f"Expected: {expected}, got: {len(params)}"
            ), None
        try:
            return None, fn(*params)
        except Exception as exc:
            log.debug("%s(%d args) raised %s: %s", method, len(params), type(exc).__name__, exc)
            return (
                f"rpclib: function '{method}' (called with {len(params)} arg(s)) threw an exception. "
                f"The exception contained this information: {exc}."
            ), None
