"""An OpenAI-compatible HTTP server in front of any pilot (`dronecats serve-pilot`).

POST /v1/chat/completions (also with `stream: true`), GET /v1/models, GET /health. The request is
read back into its parts
(models.chat_decode): the frame(s) from the data URLs, the instruction and history from the user
text, the reply kind from `response_format`. The pilot answers; the answer is validated with
jsonschema against the requested schema before it is sent, and a pilot whose answer does not
satisfy the schema gets the request refused (HTTP 400), as a constrained server would never emit it.

`stream: true` answers with server-sent events in OpenAI's chat.completion.chunk format. A pilot is
not autoregressive: its whole reply exists (and is validated) before the first event, which is sent
then, so a streaming client's time to first token is the pilot's answer time plus HTTP; the reply
follows at once in JSON-lexeme pieces (no tokenizer here, so no usage chunk either).

Standard library HTTP (ThreadingHTTPServer); the pilot itself is called under a lock, since pilots
keep per-call state.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.camera import CameraProfile
from common.errors import BackendError, ConfigError, DroneCatsError, MalformedReply, ProtocolError
from models.chat_decode import DecodedChat, decode_chat
from models.parser import parse_action, reply_object
from models.pilot import Decision, FailureKind, Observation, Pilot, StepDeadlines

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024 * 1024


class ScriptedPilot:
    """A scripted test peer, not a model: replies with the lines of a file, in order.

    The file holds one JSON reply per line (blank lines and lines starting with # are skipped), or
    one JSON array of replies. Behind serve-pilot the replies are sent verbatim, so a script may hold
    single actions, {"drones": [...]} or {"orders": [...]} objects. Flown in process (`dronecats
    onboard --pilot scripted:FILE`, `episodes run --pilot scripted:FILE`) each reply is parsed as one
    drone's action by the model replies' parser, with metric depths (as the baseline's). When the
    script runs out, calls fail.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            text = self.path.read_text()
        except OSError as exc:
            raise ConfigError(f"scripted pilot: cannot read {self.path}: {exc.strerror}") from None
        stripped = text.strip()
        if stripped.startswith("["):
            try:
                items = json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"scripted pilot {self.path}: not a JSON array: {exc}") from None
            self.replies = [json.dumps(item) for item in items]
        else:
            self.replies = [
                line.strip()
                for line in text.splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
        if not self.replies:
            raise ConfigError(f"scripted pilot {self.path}: no replies in the file")
        self.name = f"scripted:{self.path.name}"
        self.position = 0
        self._lock = threading.Lock()

    def next_reply(self) -> str:
        with self._lock:
            if self.position >= len(self.replies):
                raise BackendError(f"scripted pilot {self.path}: all {len(self.replies)} replies used")
            reply = self.replies[self.position]
            self.position += 1
            return reply

    def decide(self, observation: Observation) -> Decision:
        try:
            raw = self.next_reply()
        except BackendError as exc:
            return Decision(action=None, raw="", error=f"backend: {exc}", failure=FailureKind.BACKEND)
        try:
            action = parse_action(raw, think=observation.think, plan=bool(observation.plan))
        except MalformedReply as exc:
            return Decision(action=None, raw=raw, error=exc.reason, failure=FailureKind.MALFORMED)
        return Decision(action=action, raw=raw)

    def identity(self) -> None:
        return None  # no prompts

    def canonical_focal_px(self, camera: CameraProfile) -> None:
        return None  # metric depths

    def close(self) -> None:
        pass


def make_pilot(
    spec: str, delta_m: float = 5.0, camera: str | None = None, deadlines: StepDeadlines | None = None
) -> Pilot:
    """`baseline`, `scripted:FILE`, or a backend URL with `profile=` (a model pilot, its calls cut at
    `deadlines`: the runtime's staleness bounds)."""
    if spec == "baseline":
        from common.camera import camera_profile
        from models.baseline import BaselinePilot

        return BaselinePilot(camera_profile(camera) if camera else None, delta_m=delta_m)
    if spec.startswith("scripted:"):
        return ScriptedPilot(spec.partition(":")[2])
    if "://" in spec:
        from models.pilot import model_pilot_from_url

        return model_pilot_from_url(spec, deadlines=deadlines)
    raise ConfigError(f"unknown pilot {spec!r}: use baseline, scripted:FILE or a backend URL")


@dataclass
class ServeStats:
    requests: int = 0
    errors: int = 0


class PilotService:
    """Turns a decoded chat request into the reply text (pilot-independent part of the server)."""

    def __init__(
        self,
        pilot: Pilot,
        model_name: str,
        latency_s: float = 0.0,
        latency_draws_s: Sequence[float] | None = None,
    ) -> None:
        self.pilot = pilot
        self.model_name = model_name
        self.latency_s = latency_s  # injected model latency, to reproduce slow models without one
        # A latency per reply, in order (a benchmark's drawn distribution, the same draws as its
        # lock-step run): each reply leaves that long after its request arrived, the pilot's own time
        # inside it; past the last draw, latency_s again.
        self._draws = list(latency_draws_s or [])
        self._draw_index = 0
        self.stats = ServeStats()
        self._lock = threading.Lock()
        self._stats_lock = threading.Lock()

    def count(self, error: bool = False) -> None:
        with self._stats_lock:
            if error:
                self.stats.errors += 1
            else:
                self.stats.requests += 1

    def next_draw_s(self) -> float | None:
        """The next reply's drawn latency, None when there are no draws (left)."""
        with self._stats_lock:
            if self._draw_index >= len(self._draws):
                return None
            self._draw_index += 1
            return self._draws[self._draw_index - 1]

    def answer(self, chat: DecodedChat) -> str:
        draw_s = self.next_draw_s()
        if draw_s is not None:
            reply_at = time.monotonic() + draw_s
            text = self._answer(chat)
            time.sleep(max(0.0, reply_at - time.monotonic()))
            return text
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        return self._answer(chat)

    def _answer(self, chat: DecodedChat) -> str:
        if isinstance(self.pilot, ScriptedPilot):
            return self.pilot.next_reply()
        with self._lock:
            return self._answer_with_pilot(self.pilot, chat)

    def _answer_with_pilot(self, pilot: Pilot, chat: DecodedChat) -> str:
        if chat.kind == "commander":
            # A pilot is not a commander: every drone gets the user's instruction as its order.
            orders = [{"drone": i, "order": chat.instruction} for i in range(1, chat.n_drones + 1)]
            return json.dumps({"orders": orders})
        if chat.kind == "multi":
            actions = []
            for i in range(chat.n_drones):
                decision = pilot.decide(
                    Observation(
                        chat.images[i], chat.instruction, chat.histories[i], think=chat.think, plan=False
                    )
                )
                if decision.action is None:
                    raise BackendError(
                        f"pilot {pilot.name} gave no action for drone {i + 1}: {decision.error}"
                    )
                actions.append(reply_object(decision.action, chat.point_order))
            return json.dumps({"drones": actions})
        images = chat.images
        observation = Observation(
            images[-1],
            chat.instruction,
            chat.histories[0],
            history_images=images[:-1],
            think=chat.think,
            plan=chat.kind == "plan",
        )
        decision = pilot.decide(observation)
        if decision.action is None:
            raise BackendError(f"pilot {pilot.name} gave no action: {decision.error}")
        # Re-written in the request's point order (the system prompt's {point_fmt}), whatever the
        # pilot's own convention.
        return json.dumps(reply_object(decision.action, chat.point_order))


@functools.lru_cache(maxsize=64)
def _validator(schema_text: str) -> Validator:
    """A checked validator per distinct schema: clients send the same few schemas every call, and
    checking a schema costs far more than validating a reply against it."""
    import jsonschema

    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ProtocolError(f"response_format schema is not a valid JSON schema: {exc.message}") from None
    return cls(schema)


def validate_reply(text: str, schema: dict[str, Any] | None) -> str | None:
    """None when `text` is one JSON value satisfying `schema`, else what is wrong."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"reply is not JSON: {exc}"
    if schema is None:
        return None
    error = next(iter(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value)), None)
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return f"reply violates the requested schema at {path}: {error.message}"
    return None


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The json_schema of `response_format` (None when the request constrains nothing)."""
    fmt = body.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict):
        raise ProtocolError("response_format must be an object")
    kind = fmt.get("type")
    if kind in ("text", "json_object"):
        return None
    if kind != "json_schema":
        raise ProtocolError(f"response_format.type={kind!r} is not text, json_object or json_schema")
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        raise ProtocolError("response_format.json_schema.schema must be an object")
    _validator(json.dumps(schema, sort_keys=True))  # raises ProtocolError for an invalid schema
    return schema


def requested_stream(body: dict[str, Any]) -> bool:
    """Whether the request asks for server-sent events (`stream`, `stream_options` checked)."""
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise ProtocolError(f"stream={stream!r} must be true or false")
    options = body.get("stream_options")
    if options is not None:
        if not stream:
            raise ProtocolError("stream_options is only allowed with stream=true")
        if not isinstance(options, dict):
            raise ProtocolError("stream_options must be an object")
    return stream


# One JSON lexeme per piece: a string, a number, a literal, a run of white space, or one character.
_LEXEME = re.compile(r'"(?:\\.|[^"\\])*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|\s+|.', re.DOTALL)


def reply_pieces(text: str) -> list[str]:
    """The reply cut where a tokenizer would cut JSON at the coarsest: joined, they are `text`."""
    return _LEXEME.findall(text)


def stream_events(completion: dict[str, Any]) -> list[str]:
    """A chat.completion as the `data:` payloads of its chat.completion.chunk stream, [DONE] last."""
    head = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
    }
    choice = completion["choices"][0]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        event = {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        return json.dumps(event, separators=(",", ":"))

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in reply_pieces(choice["message"]["content"])]
    events.append(chunk({}, choice["finish_reason"]))
    events.append("[DONE]")
    return events


def _error_body(message: str, kind: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    server: PilotHTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive, as clients expect

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm holds the body
        # back until the client's delayed ACK (40 ms on Linux) on every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("%s - %s", self.address_string(), format % args)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        service = self.server.service
        if path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok", "pilot": service.pilot.name, "requests": service.stats.requests})
        elif path == "/v1/models":
            model = {"id": service.model_name, "object": "model", "created": 0, "owned_by": "dronecats"}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send(404, _error_body(f"no route {self.path}", "not_found_error", 404))

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path != "/v1/chat/completions":
            self._send(404, _error_body(f"no route {self.path}", "not_found_error", 404))
            return
        service = self.server.service
        service.count()
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY_BYTES:
            service.count(error=True)
            self.close_connection = True
            self._send(
                400,
                _error_body(
                    f"Content-Length {length} outside 1-{MAX_BODY_BYTES}", "invalid_request_error", 400
                ),
            )
            return
        raw = self.rfile.read(length)
        status, payload, stream = self.server.handle_completion(raw)
        if status != 200:
            service.count(error=True)
        if status == 200 and stream:
            self._send_stream(payload)
        else:
            self._send(status, payload)

    def _send_stream(self, completion: dict[str, Any]) -> None:
        """The completion as server-sent events (chunked, so the keep-alive connection survives)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in stream_events(completion):
            data = f"data: {event}\n\n".encode()
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")


class PilotHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], service: PilotService) -> None:
        super().__init__(address, _Handler)
        self.service = service

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def handle_completion(self, raw: bytes) -> tuple[int, dict[str, Any], bool]:
        """(HTTP status, chat.completion or error body, whether the client asked for a stream)."""
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ProtocolError("request body must be a JSON object")
            stream = requested_stream(body)
            if body.get("tools") or body.get("functions"):
                raise ProtocolError("tools/function calling are not supported (the pilot sends none)")
            schema = requested_schema(body)
            chat = decode_chat(body, schema)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return 400, _error_body(f"request body is not JSON: {exc}", "invalid_request_error", 400), False
        except (ProtocolError, BackendError) as exc:
            return 400, _error_body(str(exc), "invalid_request_error", 400), False
        started = time.perf_counter()
        try:
            text = self.service.answer(chat)
        except DroneCatsError as exc:
            logger.warning("pilot failed: %s", exc)
            return 500, _error_body(f"pilot failed: {exc}", "server_error", 500), False
        problem = validate_reply(text, schema)
        if problem is not None:
            logger.warning("refusing reply %r: %s", text[:200], problem)
            message = (
                f"pilot {self.service.pilot.name} cannot satisfy the requested response_format: {problem}"
            )
            return 400, _error_body(message, "invalid_request_error", 400), False
        elapsed_s = time.perf_counter() - started
        logger.info("%s reply in %.1f ms: %s", chat.kind, elapsed_s * 1000, text[:200])
        return (
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": str(body.get("model") or self.service.model_name),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                # No tokenizer here: token counts are unknown rather than invented.
            },
            stream,
        )


def start_server(
    pilot: Pilot,
    host: str = "127.0.0.1",
    port: int = 0,
    model_name: str | None = None,
    latency_s: float = 0.0,
    latency_draws_s: Sequence[float] | None = None,
) -> tuple[PilotHTTPServer, threading.Thread]:
    """Serve `pilot` in a background thread; port 0 picks a free port (see `server.port`).
    `latency_draws_s`: one injected latency per reply, in order (PilotService)."""
    service = PilotService(pilot, model_name or pilot.name, latency_s, latency_draws_s)
    server = PilotHTTPServer((host, port), service)
    thread = threading.Thread(target=server.serve_forever, name="serve-pilot", daemon=True)
    thread.start()
    return server, thread
