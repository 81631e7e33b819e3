"""msgpack-rpc over TCP as rpclib (AirSim's RPC library) speaks it.

Request ``[0, msgid, method, params]`` -> response ``[1, msgid, error, result]``; notifications
``[2, method, params]`` get no reply. Every request runs in its own worker so that a blocking motion
never delays e.g. getMultirotorState on the same connection (replies may come out of order, matched by
msgid). Error strings copy rpclib's, which the airsim client surfaces as RPCError text.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgpack

log = logging.getLogger(__name__)

REQUEST, RESPONSE, NOTIFY = 0, 1, 2


class RpcServer:
    """Serves a name -> callable table; the arity of each callable is fixed (rpclib binds C++ functions)."""

    def __init__(
        self,
        handlers: dict[str, Callable[..., Any]],
        host: str = "127.0.0.1",
        port: int = 41451,
        workers: int = 64,
    ) -> None:
        self._handlers = handlers
        self._arity = {name: len(inspect.signature(fn).parameters) for name, fn in handlers.items()}
        self._sock = socket.create_server((host, port))
        self.host, self.port = self._sock.getsockname()[:2]
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc")
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()

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

    def _serve_conn(self, conn: socket.socket, addr: Any) -> None:
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=64 * 1024 * 1024)
        write_lock = threading.Lock()
        packer_opts = {"use_bin_type": True}

        def send(msg: list[Any]) -> None:
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
                    if not self._dispatch(msg, send):
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

    def _dispatch(self, msg: Any, send: Callable[[list[Any]], None]) -> bool:
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
            self._pool.submit(self._call, msgid, method, list(params), send)
            return True
        if msg[0] == NOTIFY and len(msg) == 3:
            _, method, params = msg
            if isinstance(method, str) and isinstance(params, list | tuple):
                self._pool.submit(self._call, None, method, list(params), None)
            return True
        return False

    def _call(
        self, msgid: int | None, method: str, params: list[Any], send: Callable[[list[Any]], None] | None
    ) -> None:
        fn = self._handlers.get(method)
        error: str | None = None
        result: Any = None
        if fn is None:
            error = f"rpclib: server could not find function '{method}' with argument count {len(params)}."
        elif len(params) != self._arity[method]:
            error = (
                f"rpclib: Function '{method}' was called with an invalid number of arguments. "
                f"Expected: {self._arity[method]}, got: {len(params)}"
            )
        else:
            try:
                result = fn(*params)
            except Exception as exc:
                log.info("%s(%d args) raised %s: %s", method, len(params), type(exc).__name__, exc)
                error = (
                    f"rpclib: function '{method}' (called with {len(params)} arg(s)) threw an exception. "
                    f"The exception contained this information: {exc}."
                )
        if send is not None and msgid is not None:
            send([RESPONSE, msgid, error, result])
