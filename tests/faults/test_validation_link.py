"""Fault rows: bad values in every message field, remote actions outside remote mode, and 10,000
fuzzed frames, sent to real `dronecats onboard` processes flying `dronecats sim` over their real
ZeroMQ command sockets (CURVE with the allowed ground-station key: a hostile but authenticated
peer). Judged by what the vehicles did in the simulator (their pose through the airsim client)
and by what each drone reports in its own telemetry: every frame rejected or accepted as labelled,
counted, nothing moved, nothing non-finite in the logs."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zmq

from common import wire
from common.actions import Go, Think
from common.messages import Ack, RemoteAction
from common.pose import Pose
from tests.support.fuzz_frames import ACCEPT, REJECT, Generator
from tests.support.validation import TWO_DRONES, Flight, forge, hovering_flight, strict_json

pytestmark = pytest.mark.slow

POSE = {"x_m": 0.0, "y_m": 0.0, "z_m": -3.0, "yaw_deg": 0.0}
GO = {"action": "go", "point": [500, 400], "depth_m": 5.0}
STILL_M = 0.15  # a hovering drone in the built-in sim moves less than this


@pytest.fixture(scope="module")
def flight(tmp_path_factory: pytest.TempPathFactory):
    with hovering_flight(tmp_path_factory.mktemp("validation"), 2, TWO_DRONES) as flight:
        yield flight


def remote_action(**changes: Any) -> dict[str, Any]:
    body = {
        "action": GO,
        "call_id": "c1",
        "frame_seq": 1,
        "frame_pose_ned": POSE,
        "capture_time_s": time.monotonic(),  # the drone's clock: CLOCK_MONOTONIC, this host's
        "raw": "",
    }
    return {**body, **changes}


def traffic(**changes: Any) -> dict[str, Any]:
    entry = {"drone_id": "ghost", "position_ned_m": [5.0, 0.0, -3.0], "velocity_ned_m_s": [0.0, 0.0, 0.0]}
    return {"entries": [{**entry, "age_s": 0.1, **changes}]}


# Each is invalid by its values alone (every other field valid): rejected while decoding, unanswered.
BAD_FIELDS: dict[str, tuple[str, Any]] = {
    "remote depth NaN": ("remote_action", lambda: remote_action(action={**GO, "depth_m": math.nan})),
    "remote depth -50": ("remote_action", lambda: remote_action(action={**GO, "depth_m": -50.0})),
    "remote depth 1e308": ("remote_action", lambda: remote_action(action={**GO, "depth_m": 1e308})),
    "remote point [-100000, 99999]": (
        "remote_action",
        lambda: remote_action(action={**GO, "point": [-100000, 99999]}),
    ),
    "remote point 1001": ("remote_action", lambda: remote_action(action={**GO, "point": [500, 1001]})),
    "remote rotate NaN": (
        "remote_action",
        lambda: remote_action(action={"action": "rotate", "angle_deg": math.nan}),
    ),
    "remote rotate 1e9": (
        "remote_action",
        lambda: remote_action(action={"action": "rotate", "angle_deg": 1e9}),
    ),
    "remote capture NaN": ("remote_action", lambda: remote_action(capture_time_s=math.nan)),
    "remote capture inf": ("remote_action", lambda: remote_action(capture_time_s=math.inf)),
    "remote capture -1e308": ("remote_action", lambda: remote_action(capture_time_s=-1e308)),
    "remote pose NaN": ("remote_action", lambda: remote_action(frame_pose_ned={**POSE, "x_m": math.nan})),
    "remote pose 1e9": ("remote_action", lambda: remote_action(frame_pose_ned={**POSE, "y_m": 1e9})),
    "remote raw 20k chars": ("remote_action", lambda: remote_action(raw="x" * 20_000)),
    "instruction 5000 chars": ("instruction", lambda: {"text": "fly " * 1250}),
    "instruction 40 kB": ("instruction", lambda: {"text": "é" * 20_000}),  # over the size cap
    "instruction not text": ("instruction", lambda: {"text": 42}),
    "order expires 0": ("order", lambda: {"order_id": "o1", "text": "go", "expires_after_steps": 0}),
    "order expires -5": ("order", lambda: {"order_id": "o1", "text": "go", "expires_after_steps": -5}),
    "order expires 2**60": ("order", lambda: {"order_id": "o1", "text": "go", "expires_after_steps": 2**60}),
    "order id 1000 chars": ("order", lambda: {"order_id": "o" * 1000, "text": "go"}),
    "judgement verdict maybe": ("judgement", lambda: {"declaration_id": "d1", "verdict": "maybe"}),
    "judgement id 1000 chars": ("judgement", lambda: {"declaration_id": "d" * 1000, "verdict": "accept"}),
    "estop reason 10k chars": ("estop", lambda: {"reason": "r" * 10_000}),
    "hold reason not text": ("hold", lambda: {"reason": ["x"]}),
    "land unknown field": ("land", lambda: {"reason": "", "altitude_m": -5}),
    "traffic position NaN": ("traffic", lambda: traffic(position_ned_m=[math.nan, 0.0, -3.0])),
    "traffic position 1e9": ("traffic", lambda: traffic(position_ned_m=[1e9, 0.0, -3.0])),
    "traffic velocity inf": ("traffic", lambda: traffic(velocity_ned_m_s=[math.inf, 0.0, 0.0])),
    "traffic age -1": ("traffic", lambda: traffic(age_s=-1.0)),
    "traffic 100 entries": ("traffic", lambda: {"entries": traffic()["entries"] * 100}),
    "heartbeat t1 NaN": ("heartbeat_request", lambda: {"hb_seq": 1, "t1_s": math.nan}),
    "heartbeat seq -1": ("heartbeat_request", lambda: {"hb_seq": -1, "t1_s": 1.0}),
}


def send(sock: Any, parts: list[bytes]) -> None:
    sock.send_multipart(parts)


def acks(sock: Any, wait_s: float = 1.0) -> list[Ack]:
    out: list[Ack] = []
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if not sock.poll(50):
            continue
        while True:
            try:
                parts = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            body = wire.decode(parts).body
            if isinstance(body, Ack):
                out.append(body)
    return out


def assert_still(flight: Flight, before: dict[str, tuple], names: tuple[str, ...]) -> None:
    after = flight.sim_positions()
    for name in names:
        moved = math.dist(before[name], after[name])
        assert moved < STILL_M, (
            f"{name} moved {moved:.2f} m in the simulator: {before[name]} -> {after[name]}"
        )


def test_bad_values_in_each_message_field_are_rejected_counted_and_nothing_moves(flight: Flight) -> None:
    drone = flight.drones["Drone1"]
    with flight.talking_to(drone) as (watch, cmd):
        start = watch.wait(lambda t: True)
        run = watch.run_session_id
        before = flight.sim_positions()
        for seq, (_label, (type_name, body)) in enumerate(BAD_FIELDS.items(), start=100):
            send(cmd, forge(type_name, body(), "Drone1", seq, drone_session_id=run))
        # ... and bad envelopes around a valid body
        valid = msgspec.to_builtins(
            RemoteAction(Go((500, 400), 5.0), "c", 1, Pose(0, 0, -3, 0), time.monotonic())
        )
        for seq, send_time in ((200, math.nan), (201, math.inf), (-1, 0.0), (2**60, 0.0)):
            send(cmd, forge("remote_action", valid, "Drone1", seq, send_time, run))
        n_rejected = len(BAD_FIELDS) + 4
        # Refused by the runtime (valid values, wrong moment): acked "rejected" with the reason.
        future = remote_action(capture_time_s=time.monotonic() + 60.0)
        stale = remote_action(capture_time_s=time.monotonic() - 60.0)
        send(cmd, forge("remote_action", future, "Drone1", 300, drone_session_id=run))
        send(cmd, forge("remote_action", stale, "Drone1", 301, drone_session_id=run))
        judgement = {"declaration_id": "never-declared", "verdict": "accept"}
        send(cmd, forge("judgement", judgement, "Drone1", 302, drone_session_id=run))
        # The control case: a valid remote action (think: hold where you are) is executed.
        think = msgspec.to_builtins(RemoteAction(Think(), "c9", 1, Pose(0, 0, -3, 0), time.monotonic()))
        send(cmd, forge("remote_action", think, "Drone1", 303, drone_session_id=run))
        replies = {a.command_seq: a for a in acks(cmd, 2.0)}
        assert set(replies) == {300, 301, 302, 303}, f"only the valid ones are answered: {replies}"
        assert replies[300].result == "rejected" and "in the future" in replies[300].reason
        assert replies[301].result == "rejected" and "stale" in replies[301].reason
        assert replies[302].result == "rejected" and "unknown declaration" in replies[302].reason
        assert replies[303].result == "ok", replies[303]
        end = watch.wait(
            lambda t: (
                t.link_rejected - start.link_rejected >= n_rejected
                and t.link_refused - start.link_refused >= 3
            )
        )
        assert end.link_rejected - start.link_rejected == n_rejected, (start, end)
        assert end.link_refused - start.link_refused == 3
        assert end.link_accepted - start.link_accepted == 4
        assert end.mode == "flying" and end.safety_state == "ok", end  # no e-stop, no land, no hold
        assert_still(flight, before, ("Drone1", "Drone2"))
        # The drone's own log says why, at a bounded rate (a few lines, not one per message).
        log_text = drone.log_text()
        assert "rejected_body (1 so far)" in log_text, log_text[-3000:]
        assert log_text.count("rejected_body (") <= 6, log_text[-3000:]


def test_a_remote_action_to_a_drone_not_in_remote_mode_is_refused(flight: Flight) -> None:
    drone = flight.drones["Drone2"]  # baseline pilot, --insecure: a plain socket reaches it
    with flight.talking_to(drone, client_key=None) as (watch, cmd):
        start = watch.wait(lambda t: True)
        assert start.link_security == "insecure"
        before = flight.sim_positions()
        body = RemoteAction(Go((900, 500), 8.0), "c1", 1, Pose(0, 0, -3, 0), time.monotonic())
        parts = wire.encode(
            body,
            drone_id="Drone2",
            session_id="gs",
            seq=1,
            send_time_s=time.monotonic(),
            drone_session_id=watch.run_session_id,
        )
        send(cmd, parts)
        (ack,) = acks(cmd, 2.0)
        assert ack.result == "rejected" and "not in remote mode" in ack.reason, ack
        end = watch.wait(lambda t: t.link_refused > start.link_refused)
        assert end.link_refused - start.link_refused == 1
        time.sleep(1.0)  # had it been obeyed, a go of 8 m would be under way by now
        assert_still(flight, before, ("Drone2",))


def test_10000_fuzzed_frames_to_the_command_socket_are_all_accounted_for(flight: Flight) -> None:
    drone = flight.drones["Drone1"]
    with flight.talking_to(drone) as (watch, cmd):
        start = watch.wait(lambda t: True)
        run = watch.run_session_id
        generator = Generator(seed=17, drone_id="Drone1", now_s=time.monotonic, drone_session_id=run)
        # Made a hundred at a time as they are sent (the same frames as all at once): a valid command
        # must be fresh when it arrives, or the drone refuses it as stale.
        batches = (generator.command_frames(100) for _ in range(100))
        before = flight.sim_positions()
        frames = []
        for batch in batches:
            for frame in batch:
                cmd.send_multipart(frame.parts)  # DEALER -> ROUTER: blocks at the high-water mark
            frames += batch
            acks(cmd, 0.0)  # keep our own receive queue short
        n_accept = sum(f.expect == ACCEPT for f in frames)
        n_reject = sum(f.expect == REJECT for f in frames)
        end = watch.wait(
            lambda t: (
                (t.link_accepted - start.link_accepted) + (t.link_rejected - start.link_rejected)
                >= len(frames)
            ),
            timeout_s=60.0,
        )
        time.sleep(0.5)
        end = watch.wait(lambda t: True)
        accepted = end.link_accepted - start.link_accepted
        rejected = end.link_rejected - start.link_rejected
        assert end.link_stale == start.link_stale, "a valid command arrived stale (a slow sender?)"
        assert (accepted, rejected) == (n_accept, n_reject), (accepted, rejected, n_accept, n_reject)
        assert accepted + rejected == len(frames)
        assert drone.alive(), drone.log_text()[-2000:]
        assert end.mode == "flying" and end.safety_state == "ok", end
        assert_still(flight, before, ("Drone1", "Drone2"))


def test_the_logs_hold_no_non_finite_number_and_the_link_security(flight: Flight) -> None:
    """Last: stop both drones (they land), then read every log they wrote as strict JSON."""
    for drone in flight.drones.values():
        assert drone.stop() == 0, drone.log_text()[-2000:]
    for name, drone in flight.drones.items():
        episode = strict_json((drone.log_dir / "episode.json").read_text())
        assert episode["run"]["link_security"] == ("curve" if name == "Drone1" else "insecure")
        counts = episode["run"]["link_counts"]
        assert counts["received"] == counts["accepted"] + sum(
            v for k, v in counts.items() if k.startswith("rejected_")
        ), counts
        for path in Path(drone.log_dir).glob("*.jsonl"):
            for line in path.read_text().splitlines():
                strict_json(line)  # raises on NaN / Infinity
        events = [strict_json(line) for line in (drone.log_dir / "events.jsonl").read_text().splitlines()]
        assert {"event": "link_security", "security": episode["run"]["link_security"]}.items() <= next(
            e for e in events if e["event"] == "link_security"
        ).items()
