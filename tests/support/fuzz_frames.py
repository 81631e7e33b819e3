"""Our own fuzzer for the link: random bytes, and structure-aware frames (a valid envelope and body
with one value replaced by one that no valid message can hold), each labelled with what the
receiver must do with it, so a test can account for every frame, not only count the survivors.

The mutations are chosen so that they are invalid for every field they can land in: a NaN, an
infinity or ±2**60 for any number (every number on the link has a finite range well inside it),
a 20,000-character text or a number for any text (every text is limited to at most 16,000
characters), a string or 2 for a bool. Valid frames (heartbeats, traffic far away, refused
commands) are mixed in and must be accepted.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from common import wire
from common.actions import Go, Rotate
from common.messages import (
    Ack,
    Declaration,
    EStop,
    FrameMeta,
    GoTo,
    Heartbeat,
    HeartbeatReply,
    HeartbeatRequest,
    Hold,
    Instruction,
    Judgement,
    Land,
    Order,
    RemoteAction,
    ReturnHome,
    Step,
    TelemetryMessage,
    Traffic,
    TrafficEntry,
)
from common.pose import Pose

ACCEPT, REJECT = "accept", "reject"
BAD_NUMBERS: list[Any] = [math.nan, math.inf, -math.inf, 2**60, -(2**60), "7", [1, 2], {"a": 1}]
BAD_TEXT: list[Any] = ["x" * 20_000, 42, [1], {"a": "b"}]
BAD_BOOL: list[Any] = ["yes", 2, 1.5]
POSE = Pose(1.0, 2.0, -3.0, 90.0)


@dataclass(frozen=True)
class Fuzzed:
    parts: list[bytes]
    expect: str  # ACCEPT or REJECT
    kind: str  # which generator made it
    route: str = "command"  # ground side: "telemetry", "frame" or "command" (the ROUTER)
    topic: bytes = b""


def envelope(
    type_name: Any, drone_id: Any, seq: Any = 1, send_time_s: Any = 0.0, session: Any = "fuzz"
) -> list:
    return [wire.PROTOCOL_VERSION, type_name, drone_id, session, seq, send_time_s]


def raw(env: list, body: Any, blob: bytes | None = None) -> list[bytes]:
    parts = [msgspec.msgpack.encode(env), msgspec.msgpack.encode(body)]
    return parts + ([blob] if blob is not None else [])


def leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in leaves(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in leaves(item, (*path, i))]
    return [(path, value)] if value is not None else []


def with_leaf(value: Any, path: tuple, new: Any) -> Any:
    out = copy.deepcopy(value)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


def bad_value_for(rng: random.Random, leaf: Any) -> Any:
    if isinstance(leaf, bool):
        return rng.choice(BAD_BOOL)
    if isinstance(leaf, (int, float)):
        return rng.choice(BAD_NUMBERS)
    return rng.choice(BAD_TEXT)


def mutate(rng: random.Random, body: dict[str, Any]) -> dict[str, Any]:
    path, leaf = rng.choice(leaves(body))
    return with_leaf(body, path, bad_value_for(rng, leaf))


class Generator:
    """Frames for one receiver: `command_frames` for a drone's command socket, `ground_frames` for
    a ground station (it subscribes to the fake drone's PUB sockets and talks to its ROUTER)."""

    def __init__(
        self,
        seed: int,
        drone_id: str,
        now_s: Callable[[], float],
        *,
        session_id: str = "fuzz",
        drone_session_id: str = "",
    ) -> None:
        """`session_id`: the sender's session; `drone_session_id`: the drone run a valid command is
        bound to (the drone refuses one bound to no run or another)."""
        self.rng = random.Random(seed)
        self.drone_id = drone_id
        self.now_s = now_s
        self.session_id = session_id
        self.drone_session_id = drone_session_id
        self.seq = 1000

    def _seq(self) -> int:
        self.seq += 1
        return self.seq

    def _valid(self, body: Any, blob: bytes | None = None) -> list[bytes]:
        return wire.encode(
            body,
            drone_id=self.drone_id,
            session_id=self.session_id,
            seq=self._seq(),
            send_time_s=self.now_s(),  # a drone refuses a stale command
            blob=blob,
            drone_session_id=self.drone_session_id,
        )

    # ---- the common invalid shapes --------------------------------------------------------------
    def random_parts(self) -> list[bytes]:
        rng = self.rng
        parts = [rng.randbytes(rng.randint(0, 200)) for _ in range(rng.randint(1, 4))]
        if parts[0][:1] in (b"\x96", b"\xdc", b"\xdd"):  # a lucky 6-array header: make it not one
            parts[0] = b"\xc1" + parts[0][1:]
        return parts

    def bad_envelope(self, body: Any) -> list[bytes]:
        rng = self.rng
        env = envelope(body.TYPE, self.drone_id, self._seq(), 1.0)
        index = rng.randint(0, 5)
        env[index] = rng.choice(
            [
                [0, 1, wire.PROTOCOL_VERSION + 1, "1", None, 1.5],  # 1: the release before run binding
                ["teleport", "", 7, None, "x" * 100],
                ["someone-else", "x" * 100, 5, None],
                ["x" * 100, 5, None],
                [-1, 2**60, "1", 1.5, None],
                [math.nan, math.inf, 1e300, "now", None],
            ][index]
        )
        if rng.random() < 0.2:
            # One field too many (past the optional drone_session_id) or one required field short.
            env = [*env, "", "extra"] if rng.random() < 0.5 else env[:-1]
        return raw(env, msgspec.to_builtins(body))

    def mutated(self, body: Any, blob: bytes | None = None) -> list[bytes]:
        return raw(
            envelope(body.TYPE, self.drone_id, self._seq(), 1.0),
            mutate(self.rng, msgspec.to_builtins(body)),
            blob,
        )

    def wrong_shape(self, body: Any) -> list[bytes]:
        rng = self.rng
        data = msgspec.to_builtins(body)
        choice = rng.randint(0, 3)
        if choice == 0:
            shaped: Any = rng.choice([7, "text", [1, 2], None, 1.5])
        elif choice == 1:
            shaped = {**data, "zzz_unknown": 1}
        elif choice == 2:
            required = [f.encode_name for f in msgspec.structs.fields(type(body)) if f.required]
            missing = rng.choice(required) if required else None
            shaped = {k: v for k, v in data.items() if k != missing} if required else 7
        else:
            shaped = {**data, **{k: "x" * 30_000 for k in list(data)[:1]}}  # over the type's size cap
        return raw(envelope(body.TYPE, self.drone_id, self._seq(), 1.0), shaped)

    def truncated(self, body: Any) -> list[bytes]:
        parts = self._valid(body) if not isinstance(body, FrameMeta) else self._valid(body, b"\xff\xd8")
        i = self.rng.randint(0, 1)
        parts[i] = parts[i][: self.rng.randint(0, len(parts[i]) - 1)]
        return parts

    def extra_parts(self, body: Any) -> list[bytes]:
        if isinstance(body, FrameMeta):
            return self._valid(body, b"\xff\xd8")[:2]  # a frame without its JPEG
        return [*self._valid(body), self.rng.randbytes(8)]

    # ---- a drone's command socket ---------------------------------------------------------------
    def command_samples(self) -> list[Any]:
        now = self.now_s()
        return [
            Instruction("go to the red car", "ep1"),
            Order("o1", "search the north side", 6),
            RemoteAction(Go((500, 400), 6.0), "c1", 3, POSE, now, "raw"),
            RemoteAction(Rotate(30.0), "c2", 4, POSE, now),
            Judgement("Drone1-12.000", "accept", "alice"),
            EStop("fuzz"),
            Hold("fuzz"),
            Land("fuzz"),
            ReturnHome("fuzz"),
            GoTo("fuzz", (5.0, -3.0, -4.0)),
            HeartbeatRequest(3, 100.0, 2),
            Traffic((TrafficEntry("ghost", (50.0, 50.0, -3.0), (0.5, 0.0, 0.0), 0.1),)),
        ]

    def command_valid(self) -> tuple[list[bytes], str]:
        """A valid frame that must not move the drone: accepted (and maybe refused by the runtime)."""
        rng = self.rng
        choice = rng.randint(0, 4)
        if choice == 0:
            body: Any = HeartbeatRequest(rng.randint(0, 10**6), rng.uniform(0, 1e6), -1)
        elif choice == 1:
            body = Judgement(f"unknown-{rng.randint(0, 10**6)}", rng.choice(["accept", "reject"]))
        elif choice == 2:  # from the future: refused by the runtime
            body = RemoteAction(Go((500, 500), 5.0), "future", 1, POSE, self.now_s() + 1000.0)
        elif choice == 3:
            body = Traffic(())
        else:  # a fleet mate 50 km away: nothing in the way
            body = Traffic((TrafficEntry("far", (50_000.0, 50_000.0, -3.0), (0.0, 0.0, 0.0), 0.2),))
        return self._valid(body), f"valid_{body.TYPE}"

    def command_frames(self, count: int, valid_fraction: float = 0.1) -> list[Fuzzed]:
        rng = self.rng
        out = []
        for _ in range(count):
            if rng.random() < valid_fraction:
                parts, kind = self.command_valid()
                out.append(Fuzzed(parts, ACCEPT, kind))
                continue
            body = rng.choice(self.command_samples())
            makers = [self.mutated, self.mutated, self.mutated, self.bad_envelope, self.wrong_shape]
            maker = rng.choice([*makers, self.truncated, self.extra_parts, None])
            if maker is None:
                out.append(Fuzzed(self.random_parts(), REJECT, "random_bytes"))
            else:
                out.append(Fuzzed(maker(body), REJECT, getattr(maker, "__name__", "?")))
        return out

    # ---- a ground station's SUB and DEALER sockets ----------------------------------------------
    def ground_samples(self) -> list[Any]:
        return [
            TelemetryMessage(1.0, POSE, (0.5, 0.0, -0.1), 80.0, "flying", True, "up", 20.0, {"model_s": 0.4}),
            Step(2.0, "c1", 3, Go((612, 430), 9.0), '{"action": "go"}', {"model_s": 0.5}),
            Declaration("Drone1-3.000", 3.0, POSE, 4, "c1", 4.2, 4.0, True),
            Heartbeat(1.0, "up", 3),
            FrameMeta(5, 2.0, POSE, 64, 48, 80),
            Ack(3, "instruction", "ok"),
            HeartbeatReply(1, 1.0, 2.0, 2.1),
        ]

    def ground_valid(self, jpeg: bytes) -> Fuzzed:
        rng = self.rng
        choice = rng.randint(0, 5)
        x, y = rng.uniform(-100, 100), rng.uniform(-100, 100)
        pose = Pose(x, y, -3.0, rng.uniform(-180, 180))
        if choice == 0:
            body: Any = TelemetryMessage(
                rng.uniform(0, 1e4), pose, (0.0, 0.0, 0.0), 50.0, "flying", True, "up", 20.0
            )
        elif choice == 1:
            body = Heartbeat(rng.uniform(0, 1e4), "up", -1)
        elif choice == 2:
            body = Declaration(
                f"d-{self._seq()}", rng.uniform(0, 1e4), pose, 1, "c", rng.uniform(0, 50), None, True
            )
        elif choice == 3:
            body = Step(rng.uniform(0, 1e4), "c", 1, Rotate(rng.uniform(-90, 90)), "raw")
        elif choice == 4:
            return Fuzzed(self._valid(FrameMeta(self._seq(), 1.0, pose, 64, 48, 80), jpeg), ACCEPT,
                          "valid_frame", "frame", wire.TOPIC_FRAME)  # fmt: skip
        else:
            body = Ack(rng.randint(10**6, 10**7), "hold", "ok")  # matches nothing: harmless
            return Fuzzed(self._valid(body), ACCEPT, "valid_ack", "command")
        return Fuzzed(
            self._valid(body), ACCEPT, f"valid_{body.TYPE}", "telemetry", wire.TOPIC_BY_TYPE[body.TYPE]
        )

    def ground_frames(self, count: int, jpeg: bytes, valid_fraction: float = 0.1) -> list[Fuzzed]:
        rng = self.rng
        out = []
        for _ in range(count):
            if rng.random() < valid_fraction:
                out.append(self.ground_valid(jpeg))
                continue
            route = rng.choice(["telemetry", "frame", "command"])
            topic = rng.choice(
                [wire.TOPIC_TELEMETRY, wire.TOPIC_STEP, wire.TOPIC_DECLARATION, wire.TOPIC_FRAME, b"zz"]
            )
            body = rng.choice(self.ground_samples())
            blob = jpeg if isinstance(body, FrameMeta) else None
            choice = rng.randint(0, 7)
            if choice == 0:
                parts, kind = self.random_parts(), "random_bytes"
            elif choice <= 3:
                parts, kind = self.mutated(body, blob), "mutated"
            elif choice == 4:
                parts, kind = self.bad_envelope(body), "bad_envelope"
            elif choice == 5:
                parts, kind = self.wrong_shape(body), "wrong_shape"
            elif choice == 6:
                parts, kind = self.extra_parts(body), "extra_parts"
            else:  # a valid message where it does not belong: a command, or a publication on the ROUTER
                if rng.random() < 0.5:
                    parts, kind = self._valid(Instruction("not for a ground station")), "wrong_direction"
                else:
                    valid = self.ground_valid(jpeg)
                    if valid.route == "command":
                        parts, kind, route = valid.parts, "wrong_socket", "telemetry"
                        topic = wire.TOPIC_TELEMETRY
                    else:
                        parts, kind, route = valid.parts, "wrong_socket", "command"
            out.append(Fuzzed(parts, REJECT, kind, route, topic))
        return out
