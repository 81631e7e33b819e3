"""Fault rows: commands are fresh and bound to the run. Real `dronecats onboard` processes fly
`dronecats sim` (Drone1 behind CURVE, Drone2 behind `--insecure`); a real GroundLink commands them
through a TCP tap that records the bytes on the wire, and those bytes are replayed unchanged. Under
CURVE the recorded bytes are ciphertext (a raw replay fails the handshake), so there the attack is
the one a holder of the ground station's key can make: the same command with a stale send time or
another run's nonce. Judged on the vehicle in the simulator (its position through the airsim
client): a refused hold leaves a GoTo flying, a refused e-stop leaves the drone in the air, and a
fresh ground station's e-stop brings it down."""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from common import wire
from common.keys import load_secret_keypair
from common.link import CurveClient, DroneEndpoint, GroundLink, GroundLinkConfig, Insecure
from common.messages import Ack, EStop, GoTo, Hold
from tests.support.failsafe import events, wait_until
from tests.support.processes import subprocess_env
from tests.support.validation import TWO_DRONES, Drone, Flight, TelemetryWatch, forge, hovering_flight
from tests.support.wire_tap import TcpTap, replay, zmtp_messages

pytestmark = pytest.mark.slow

DRONES = ["Drone1", "Drone2"]  # CURVE, --insecure
THROWAWAY_SESSIONS = 70  # more than the 64 sessions the old de-duplication window held


@pytest.fixture(scope="module")
def flight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flight]:
    with hovering_flight(tmp_path_factory.mktemp("commands"), 2, TWO_DRONES) as flight:
        yield flight


def ground_link(flight: Flight, drone: Drone, command_endpoint: str | None = None) -> GroundLink:
    """A real ground-station link to one drone, its commands through `command_endpoint` (a tap)."""
    security = (
        CurveClient(load_secret_keypair(flight.keys / "gs.key_secret")) if drone.public_key else Insecure()
    )
    ground = GroundLink(GroundLinkConfig(subscribe_frames=False), security)
    ground.start()
    ground.add_drone(
        DroneEndpoint(
            drone.name,
            drone.telemetry_endpoint,
            drone.frame_endpoint,
            command_endpoint or drone.command_endpoint,
            server_public_key=drone.public_key,
        )
    )
    return ground


def acks_in(stream: bytes) -> list[Ack]:
    out = []
    for parts in zmtp_messages(stream):
        try:
            body = wire.decode(parts).body
        except wire.WireError:
            continue
        if isinstance(body, Ack):
            out.append(body)
    return out


def key_holder_send(flight: Flight, drone: Drone, parts: list[bytes]) -> Ack:
    """Send hand-made parts as a holder of the ground station's key (or anyone, insecure); the Ack."""
    sock = flight.commander(drone)
    try:
        sock.send_multipart(parts)
        assert sock.poll(10_000), "no ack from the drone"
        body = wire.decode(sock.recv_multipart()).body
        assert isinstance(body, Ack), body
        return body
    finally:
        sock.close(linger=0)


def goto_north(ground: GroundLink, watch: TelemetryWatch, drone: Drone, metres: float, goto_id: str) -> None:
    pose = watch.wait(lambda t: True).pose_ned
    target = (pose.x_m + metres, pose.y_m, pose.z_m)
    ack = ground.send_command(drone.name, GoTo(goto_id, target), timeout_s=2.0)
    assert ack.result == "ok", ack


def moved_m(flight: Flight, drone: Drone, since: tuple[float, float, float]) -> float:
    return math.dist(flight.sim_positions()[drone.name], since)


def wait_moving(flight: Flight, drone: Drone, since: tuple[float, float, float], metres: float) -> float:
    """Until the vehicle moved `metres` from `since` in the simulator (AssertionError after 30 s)."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        distance_m = moved_m(flight, drone, since)
        if distance_m >= metres:
            return distance_m
        time.sleep(0.2)
    raise AssertionError(
        f"{drone.name} moved only {moved_m(flight, drone, since):.2f} m: {drone.log_text()[-2000:]}"
    )


def refused_events(drone: Drone, by: str) -> list[dict[str, Any]]:
    return [e for e in events(drone.log_dir, "refused") if e.get("by") == by]


def capture_hold(flight: Flight, drone: Drone, ground: GroundLink, tap: TcpTap) -> tuple[Ack, float, bytes]:
    """A real ground station holds the drone through the tap: its Ack, when it sent it, the bytes."""
    sent_at = time.monotonic()
    ack = ground.send_command(drone.name, Hold("captured hold"), timeout_s=2.0)
    assert ack.result == "ok", ack
    (captured,) = tap.client_bytes()
    return ack, sent_at, captured


def throwaway_sessions(flight: Flight, drone: Drone, run: str) -> None:
    """70 fresh sessions, each running one command (refused by the runtime, remembered by the link)."""
    sock = flight.commander(drone)
    try:
        for n in range(THROWAWAY_SESSIONS):
            judgement = {"declaration_id": f"none-{n}", "verdict": "accept"}
            sock.send_multipart(forge("judgement", judgement, drone.name, 1, None, run, f"throwaway{n}"))
        got = 0
        while got < THROWAWAY_SESSIONS and sock.poll(10_000):
            body = wire.decode(sock.recv_multipart()).body
            got += isinstance(body, Ack) and body.result == "rejected"  # "unknown declaration": it ran
        assert got == THROWAWAY_SESSIONS, got
    finally:
        sock.close(linger=0)


def replay_hold(
    flight: Flight, drone: Drone, run: str, ground: GroundLink, capture: tuple[Ack, float, bytes]
) -> list[Ack]:
    """The captured hold again: its very bytes (insecure), or under CURVE, where those fail the
    handshake, its plaintext as the key's holder sends it (the same session, seq, run and time)."""
    ack, sent_at, captured = capture
    if drone.public_key is None:
        answer = replay(drone.base_port + 2, captured)
        return [a for a in acks_in(answer) if a.command_type == "hold"]
    assert acks_in(replay(drone.base_port + 2, captured, listen_s=0.5)) == []
    parts = forge(
        "hold", {"reason": "captured hold"}, drone.name, ack.command_seq, sent_at, run, ground.session_id
    )
    return [key_holder_send(flight, drone, parts)]


def test_stale_and_replayed_holds_are_refused_and_the_goto_flies_on(flight: Flight) -> None:
    """Per drone: a real ground station's hold is captured; 70 throw-away sessions; a GoTo lifts the
    hold; then a hold stamped an hour ago, the captured hold at once and again past the age bound:
    all refused, and the vehicle keeps flying the GoTo in the simulator."""
    drones = [flight.drones[name] for name in DRONES]
    watches = {d.name: flight.watcher(d) for d in drones}
    taps = {d.name: TcpTap(d.base_port + 2) for d in drones}
    grounds = {d.name: ground_link(flight, d, taps[d.name].endpoint) for d in drones}
    try:
        starts = {d.name: watches[d.name].wait(lambda t: True) for d in drones}
        runs = {d.name: watches[d.name].run_session_id for d in drones}
        captures = {d.name: capture_hold(flight, d, grounds[d.name], taps[d.name]) for d in drones}
        for drone in drones:
            watches[drone.name].wait(lambda t: "captured hold" in t.safety_state)
            throwaway_sessions(flight, drone, runs[drone.name])
        before = {d.name: flight.sim_positions()[d.name] for d in drones}
        for drone in drones:  # lifts the hold: the drone flies 25 m
            goto_north(grounds[drone.name], watches[drone.name], drone, -25.0, f"replay-{drone.name}")
        for drone in drones:
            # The right run, the send time an hour ago (a holder of the key, or under --insecure anyone
            # who read the run's nonce off the wire).
            an_hour_ago = time.monotonic() - 3600.0
            stale = forge("hold", {"reason": "an hour late"}, drone.name, 1, an_hour_ago, runs[drone.name])
            ack = key_holder_send(flight, drone, stale)
            assert ack.result == "stale" and "3600" in ack.reason and "ago" in ack.reason, ack
            # At once: still remembered (70 sessions flushed nothing): its cached ack, not run again.
            at_once = replay_hold(flight, drone, runs[drone.name], grounds[drone.name], captures[drone.name])
            assert at_once and all(a.duplicate or a.result == "stale" for a in at_once), at_once
            print(
                f"{drone.name}: a hold stamped an hour ago: {ack.result} ({ack.reason}); "
                f"replayed at once: {at_once}"
            )
        time.sleep(max(0.0, max(c[1] for c in captures.values()) + 3.5 - time.monotonic()))  # past 2.5 s
        for drone in drones:
            later = replay_hold(flight, drone, runs[drone.name], grounds[drone.name], captures[drone.name])
            assert later and all(a.result == "stale" for a in later), later
            print(f"{drone.name}: the captured hold replayed past the bound: {later}")
        for drone in drones:
            flew_m = wait_moving(flight, drone, before[drone.name], 3.0)
            p0 = flight.sim_positions()[drone.name]
            wait_moving(flight, drone, p0, 0.5)  # still flying the GoTo: not held again
            start = starts[drone.name]
            end = watches[drone.name].wait(
                lambda t, s=start: t.link_stale - s.link_stale >= 2
            )  # the hour-old one, the later replay
            assert end.mode == "flying", end
            assert "captured hold" not in end.safety_state and "an hour late" not in end.safety_state, end
            assert end.link_accepted - start.link_accepted >= THROWAWAY_SESSIONS
            holds = [e for e in events(drone.log_dir, "hold") if e.get("reason") == "captured hold"]
            assert len(holds) == 1, holds  # run once, when it was sent
            assert "rejected_stale" in drone.log_text()
            assert any("3600" in e["reason"] for e in refused_events(drone, "stale"))
            print(f"{drone.name}: flew on {flew_m:.2f} m")
    finally:
        for name in DRONES:
            grounds[name].close()
            taps[name].close()
            watches[name].close()


def test_a_command_of_the_release_before_is_refused_by_name(flight: Flight) -> None:
    """Protocol 1 (no run, no drone-clock stamp): refused, counted, and the drone log says why."""
    drone = flight.drones["Drone2"]  # --insecure: a plain socket reaches the command port
    watch = flight.watcher(drone)
    sock = flight.commander(drone, client_key=None)
    try:
        start = watch.wait(lambda t: True)
        header = msgspec.msgpack.encode([1, "estop", drone.name, "old-gs", 1, time.monotonic()])
        sock.send_multipart([header, msgspec.msgpack.encode({"reason": "old release"})])
        end = watch.wait(lambda t: t.link_rejected > start.link_rejected)
        assert not sock.poll(500), "an old-format command was answered"
        assert end.mode == "flying" and "old release" not in end.safety_state, end
        assert "protocol version 1 is not the supported version 2" in drone.log_text()
    finally:
        sock.close(linger=0)
        watch.close()


def restart(drone: Drone, tmp: Path) -> None:
    """The same `dronecats onboard` command line again (same keys, same ports): the next run."""
    assert drone.proc is not None
    assert isinstance(drone.proc.args, list)
    argv = [str(arg) for arg in drone.proc.args]
    argv[argv.index("--log-dir") + 1] = str(tmp / f"{drone.name}-run-b")
    drone.log_dir = tmp / f"{drone.name}-run-b"
    with drone.output.open("a") as out:
        drone.proc = subprocess.Popen(
            argv, env=subprocess_env(), stdout=out, stderr=subprocess.STDOUT, text=True
        )


def wait_still(
    flight: Flight, drone: Drone, where: Callable[[tuple[float, float, float]], bool], timeout_s: float = 60.0
) -> tuple[float, float, float]:
    """Until this vehicle is `where` and still (moved < 2 cm in 0.5 s), in the simulator."""
    deadline = time.monotonic() + timeout_s
    last = flight.sim_positions()[drone.name]
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = flight.sim_positions()[drone.name]
        if where(now) and math.dist(now, last) < 0.02:
            return now
        last = now
    raise AssertionError(f"{drone.name} did not settle: {last} {drone.log_text()[-1500:]}")


def capture_estop(flight: Flight, drone: Drone) -> tuple[str, int, bytes]:
    """A real ground station e-stops this run through a tap: (the run's nonce, the seq, the bytes)."""
    watch = flight.watcher(drone)
    tap = TcpTap(drone.base_port + 2)
    ground = ground_link(flight, drone, tap.endpoint)
    try:
        watch.wait(lambda t: True)
        ack = ground.send_command(drone.name, EStop("run A e-stop"), timeout_s=2.0)
        assert ack.result == "ok", ack
    finally:
        ground.close()
        tap.close()
        watch.close()
    (captured,) = tap.client_bytes()
    return watch.run_session_id, ack.command_seq, captured


def replay_into_run_b(flight: Flight, drone: Drone, run_a: str, seq: int, captured: bytes) -> None:
    answer = replay(drone.base_port + 2, captured)  # run A's bytes, unchanged, into run B
    if drone.public_key is None:
        estops = [a for a in acks_in(answer) if a.command_type == "estop"]
        assert estops and all(a.result == "unbound" and run_a in a.reason for a in estops), estops
    else:
        assert acks_in(answer) == []  # the ciphertext of another connection: the handshake fails
        rebuilt = forge("estop", {"reason": "run A e-stop"}, drone.name, seq + 1, None, run_a)
        refused = key_holder_send(flight, drone, rebuilt)  # re-signed with the key, run A's nonce
        assert refused.result == "unbound" and run_a in refused.reason, refused


def test_an_estop_from_run_a_is_refused_by_run_b_and_a_fresh_gs_estops_b_at_once(
    flight: Flight, tmp_path: Path
) -> None:
    drones = [flight.drones[name] for name in DRONES]
    captures = {d.name: capture_estop(flight, d) for d in drones}
    for drone in drones:  # run A ends (its vehicle still landing) ...
        assert drone.proc is not None
        drone.proc.wait(60)
    for drone in drones:  # ... and is down and still: run B can take off from there
        wait_still(flight, drone, lambda p: -p[2] < 0.3)
        restart(drone, tmp_path)
    watches = {d.name: flight.watcher(d) for d in drones}
    try:
        aloft = {d.name: wait_still(flight, d, lambda p: -p[2] > 2.5) for d in drones}  # run B hovers
        starts = {d.name: watches[d.name].wait(lambda t: t.mode == "flying") for d in drones}
        for drone in drones:
            run_a, seq, captured = captures[drone.name]
            assert watches[drone.name].run_session_id != run_a
            replay_into_run_b(flight, drone, run_a, seq, captured)
        time.sleep(1.5)  # an obeyed e-stop would be descending by now
        for drone in drones:
            still = watches[drone.name].wait(lambda t, d=drone: t.link_stale > starts[d.name].link_stale)
            assert still.mode == "flying" and still.safety_state == "ok", still
            assert moved_m(flight, drone, aloft[drone.name]) < 0.3, drone.name
        # A ground station started now e-stops run B at once: it learns the run's nonce and clock
        # from the drone's first heartbeat reply.
        for drone in drones:
            started = time.monotonic()
            fresh = ground_link(flight, drone)
            try:
                stop_ack = fresh.send_command(drone.name, EStop("fresh ground station"), timeout_s=2.0)
                acked_s = time.monotonic() - started
            finally:
                fresh.close()
            assert stop_ack.result == "ok", stop_ack
            assert acked_s < 6.0, acked_s
            stopped_at = time.monotonic()
            top_m = -aloft[drone.name][2]
            down = wait_until(lambda d=drone, top=top_m: -flight.sim_positions()[d.name][2] < top - 1.0, 20.0)
            assert down, (
                f"{drone.name} did not come down after the e-stop: {flight.sim_positions()[drone.name]}"
            )
            print(
                f"{drone.name}: run A's e-stop refused by run B; a fresh GS's e-stop acked {acked_s:.2f} s "
                f"after it started, 1 m lower {time.monotonic() - stopped_at:.2f} s after the ack"
            )
    finally:
        for watch in watches.values():
            watch.close()
