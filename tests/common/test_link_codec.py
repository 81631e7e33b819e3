"""Wire codec, message bodies and the link's pure logic (command admission, clock offset, liveness,
frame budget)."""

from __future__ import annotations

import math
import os

import msgspec
import pytest

from common import wire
from common.actions import Go, Rotate
from common.errors import ConfigError
from common.keys import generate_keypair, list_keys, load_keypair, parse_public_key
from common.link.admission import ACKS_KEPT_PER_SESSION, AdmissionConfig, CommandAdmission
from common.link.budget import FrameBudget, FrameBudgetConfig
from common.link.clock_sync import ClockOffsetEstimator
from common.link.liveness import Liveness
from common.messages import (
    ALL_TYPES,
    Ack,
    Declaration,
    EStop,
    FrameMeta,
    GoTo,
    HeartbeatRequest,
    Instruction,
    Judgement,
    RemoteAction,
    Step,
    TelemetryMessage,
)
from common.pose import Pose
from tests.support.processes import run_dronecats, subprocess_env

POSE = Pose(1.0, -2.0, -10.0, 45.0)


def roundtrip(body, blob=None):
    parts = wire.encode(body, drone_id="d1", session_id="s1", seq=7, send_time_s=12.5, blob=blob)
    return parts, wire.decode(parts)


@pytest.mark.parametrize(
    "body",
    [
        TelemetryMessage(
            3.0, POSE, (0.5, 0.0, -0.1), 87.5, "segment", True, "up", 19.8, {"model": 0.41}, "ok"
        ),
        Step(4.0, "c1", 12, Go(point=(612, 430), depth_m=9.0), '{"action":"go"}', {"model": 0.5}),
        Step(4.0, "c1", 12, None, "garbage", {}, "not JSON"),
        Declaration("dec-1", 5.0, POSE, 13, "c2"),
        Instruction("fly to the red car"),
        RemoteAction(Rotate(angle_deg=-30.0), "c3", 14, POSE, 4.5),
        Judgement("dec-1", "accept", "alice"),
        EStop("operator"),
        GoTo("g1", (12.5, -4.0, -3.0)),
        HeartbeatRequest(3, 100.25, 14),
        Ack(7, "instruction", "ok"),
    ],
    ids=lambda b: b.TYPE,
)
def test_roundtrip(body):
    parts, message = roundtrip(body)
    assert len(parts) == 2
    assert message.body == body
    assert message.envelope == wire.Envelope(wire.PROTOCOL_VERSION, body.TYPE, "d1", "s1", 7, 12.5)


def test_frame_jpeg_is_a_separate_raw_part():
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 10
    parts, message = roundtrip(FrameMeta(3, 1.5, POSE, 640, 360, 85), blob=jpeg)
    assert len(parts) == 3 and parts[2] == jpeg  # raw bytes, no base64, no re-encoding
    assert jpeg not in parts[1]
    assert message.blob == jpeg
    with pytest.raises(ValueError):
        wire.encode(FrameMeta(3, 1.5, POSE, 640, 360, 85), drone_id="d", session_id="s", seq=0, send_time_s=0)
    with pytest.raises(ValueError):
        wire.encode(EStop(), drone_id="d", session_id="s", seq=0, send_time_s=0, blob=b"x")


def test_a_goto_carries_exactly_one_world_ned_point_within_range():
    for bad in [(math.nan, 0.0, -3.0), (0.0, math.inf, -3.0)]:
        with pytest.raises(ValueError):
            GoTo("g", bad)
    with pytest.raises(wire.WireError):  # beyond any field: the encoder refuses what a peer would
        roundtrip(GoTo("g", (1e6, 0.0, -3.0)))
    header = msgspec.msgpack.encode([wire.PROTOCOL_VERSION, "goto", "d1", "s", 1, 0.0])
    wrong = [
        {"goto_id": "g", "target_ned_m": [1.0, 2.0]},  # not a 3-D point
        {"goto_id": "x" * 65, "target_ned_m": [0, 0, -3]},  # an id over its limit
        {"goto_id": "g", "target_ned_m": [0, 0, -3], "target_geo": [47.6, -122.1, 120]},  # NED only
    ]
    for body in wrong:
        with pytest.raises(wire.WireError) as caught:
            wire.decode([header, msgspec.msgpack.encode(body)])
        assert caught.value.kind == wire.ProtocolErrorKind.BODY, body
    with pytest.raises(wire.WireError) as caught:
        wire.decode([header, b"\x82" + b" " * 600])
    assert caught.value.kind == wire.ProtocolErrorKind.SIZE


def test_every_type_name_is_unique():
    names = [cls.TYPE for cls in ALL_TYPES]
    assert len(names) == len(set(names)) and all(names)


def good_parts():
    return wire.encode(Instruction("x"), drone_id="d1", session_id="s", seq=1, send_time_s=0.0)


def test_rejections_have_kinds():
    header, body = good_parts()
    bad_version = msgspec.msgpack.encode([99, "instruction", "d1", "s", 1, 0.0])
    release_1 = msgspec.msgpack.encode([1, "hold", "d1", "s", 1, 0.0])  # the format before run binding
    unknown_type = msgspec.msgpack.encode([wire.PROTOCOL_VERSION, "teleport", "d1", "s", 1, 0.0])
    wrong_body = msgspec.msgpack.encode({"text": 5})
    cases = {
        wire.ProtocolErrorKind.PARTS: [header],
        wire.ProtocolErrorKind.HEADER: [header[:-1], body],
        wire.ProtocolErrorKind.VERSION: [bad_version, body],
        wire.ProtocolErrorKind.UNKNOWN_TYPE: [unknown_type, body],
        wire.ProtocolErrorKind.BODY: [header, wrong_body],
    }
    for kind, parts in cases.items():
        with pytest.raises(wire.WireError) as info:
            wire.decode(parts)
        assert info.value.kind == kind, parts
    with pytest.raises(wire.WireError) as info:  # a command of the release before run binding
        wire.decode([release_1, msgspec.msgpack.encode({"reason": ""})])
    assert info.value.kind == wire.ProtocolErrorKind.VERSION and "same release" in str(info.value)
    with pytest.raises(wire.WireError) as info:
        wire.decode([header, body, b"extra"])
    assert info.value.kind == wire.ProtocolErrorKind.PARTS
    with pytest.raises(wire.WireError):  # unknown field in a body
        wire.decode([header, msgspec.msgpack.encode({"text": "x", "episode_id": "", "sneaky": 1})])


RUN = "run-b"


def test_admission_runs_each_seq_once_and_none_at_or_below_the_last():
    gate: CommandAdmission[str] = CommandAdmission(RUN)
    assert gate.admit("a", 0, 100.0, RUN, 100.0).status == "run"
    for seq in range(ACKS_KEPT_PER_SESSION + 4):
        gate.remember("a", seq, 100.0, f"ack{seq}", 100.0)
    last = ACKS_KEPT_PER_SESSION + 3
    assert gate.admit("a", last, 100.0, RUN, 100.0).cached == f"ack{last}"  # a retry: its ack again
    old = gate.admit("a", 1, 100.0, RUN, 100.0)  # its ack is forgotten: refused, never run again
    assert old.status == "replayed" and "at or below" in old.reason
    assert gate.admit("a", last + 1, 100.0, RUN, 100.0).status == "run"
    assert gate.admit("b", 1, 100.0, RUN, 100.0).status == "run"  # sessions are separate


def test_admission_refuses_stale_future_and_unbound_commands():
    gate: CommandAdmission[str] = CommandAdmission(RUN, AdmissionConfig(max_age_s=2.0, clock_skew_s=0.5))
    assert gate.admit("a", 1, 97.6, RUN, 100.0).status == "run"  # 2.4 s: within age + skew
    stale = gate.admit("a", 1, 100.0 - 3600.0, RUN, 100.0)
    assert stale.status == "stale" and "3600.0 s ago" in stale.reason
    assert gate.admit("a", 1, 100.6, RUN, 100.0).status == "stale"  # from the future
    other = gate.admit("a", 1, 100.0, "run-a", 100.0)
    assert other.status == "unbound" and "run-a" in other.reason
    assert "another release" in gate.admit("a", 1, 100.0, "", 100.0).reason


def test_traffic_is_held_to_the_run_and_the_age_alone():
    gate: CommandAdmission[str] = CommandAdmission(RUN)
    assert gate.fresh(99.0, RUN, 100.0).status == "run"
    assert gate.fresh(99.0, "run-a", 100.0).status == "unbound"
    assert gate.fresh(90.0, RUN, 100.0).status == "stale"
    assert len(gate) == 0  # nothing remembered: the next relay replaces it


def test_admission_cannot_be_flushed_by_throw_away_sessions():
    config = AdmissionConfig(max_age_s=30.0, clock_skew_s=0.5, session_memory_s=60.0, max_sessions=8)
    gate: CommandAdmission[str] = CommandAdmission(RUN, config)
    gate.remember("victim", 5, 100.0, "ok", 100.0)
    for n in range(70):  # far more sessions than it remembers at once
        gate.remember(f"throwaway{n}", 1, 101.0 + n * 0.01, "ok", 101.0)
    assert len(gate) == 8
    replay = gate.admit("victim", 5, 100.0, RUN, 102.0)  # its session was forgotten early ...
    assert replay.status == "stale" and "forgotten" in replay.reason  # ... behind a floor
    assert gate.admit("fresh", 1, 102.0, RUN, 102.0).status == "run"  # a new ground station is not
    # Forgotten by time only once everything the session sent is stale by its send time.
    gate.remember("late", 1, 110.0, "ok", 110.0)
    assert gate.admit("late", 1, 110.0, RUN, 171.0).status == "stale"
    with pytest.raises(ValueError, match="session_memory_s"):
        AdmissionConfig(max_age_s=30.0, session_memory_s=10.0)


def test_clock_offset_min_rtt_filter():
    true_offset = 1000.0  # drone clock = ground clock + 1000 s
    est = ClockOffsetEstimator(window=8)
    # (leg up, leg down) delays: asymmetric ones bias the offset, the min-RTT sample is symmetric.
    for up_s, down_s in [(0.050, 0.002), (0.001, 0.001), (0.002, 0.090), (0.030, 0.030)]:
        t1 = 10.0
        t2 = t1 + up_s + true_offset
        t3 = t2 + 0.0005
        t4 = t3 - true_offset + down_s
        est.add(t1, t2, t3, t4)
    assert est.offset_s == pytest.approx(true_offset, abs=1e-9)
    assert est.rtt_s == pytest.approx(0.002)
    assert est.to_ground_time(1005.0) == pytest.approx(5.0)
    assert est.add(10.0, 1010.0, 1009.0, 10.1) is None  # t3 < t2: inconsistent, ignored


def test_liveness_lost_and_restored():
    live = Liveness("d1", timeout_s=1.0)
    assert live.check(0.0) is None
    assert live.heard(0.5).state == "up"
    assert live.heard(0.9) is None
    assert live.check(1.8) is None
    lost = live.check(1.95)
    assert lost.state == "lost" and lost.silence_s == pytest.approx(1.05)
    assert live.check(3.0) is None  # raised once
    restored = live.heard(3.5)
    assert restored.state == "up" and restored.silence_s == pytest.approx(2.6)


def jpeg_size(quality: int) -> int:
    return 300 * quality  # a size model for the policy test: 25.5 kB at q85


def run_budget(budget: FrameBudget, seconds: float, camera_fps: float, ack_lag_frames: int | None = 0):
    sent = []
    now = 0.0
    while now < seconds:
        decision = budget.decide(now)
        if decision.send:
            seq = len(sent)
            budget.record_sent(seq, jpeg_size(decision.quality), decision.quality, now)
            sent.append((now, decision.quality))
            if ack_lag_frames is not None and seq - ack_lag_frames >= 0:
                budget.record_acked(seq - ack_lag_frames)
        now += 1.0 / camera_fps
    return sent


def test_budget_unlimited_sends_at_max_fps_and_quality():
    sent = run_budget(FrameBudget(FrameBudgetConfig(max_fps=5.0)), 10.0, camera_fps=30.0)
    assert 49 <= len(sent) <= 51
    assert {q for _, q in sent} == {85}


def test_budget_judges_the_rate_on_capture_times():
    """Frames captured every 0.2 s but offered unevenly (the camera read took 90 ms one step and 20 ms
    the next, so two were offered 130 ms apart) are all sent at max_fps 5; judged on the times they
    are offered, every uneven pair would lose a frame."""
    budget, offered_late = (
        FrameBudget(FrameBudgetConfig(max_fps=5.0)),
        FrameBudget(FrameBudgetConfig(max_fps=5.0)),
    )
    sent = sent_by_offer = 0
    for i in range(50):
        capture_s = 0.2 * i
        offer_s = capture_s + (0.09 if i % 2 == 0 else 0.02)
        if budget.decide(offer_s, capture_s).send:
            budget.record_sent(i, 10_000, 85, offer_s, capture_s)
            budget.record_acked(i)
            sent += 1
        if offered_late.decide(offer_s).send:
            offered_late.record_sent(i, 10_000, 85, offer_s)
            offered_late.record_acked(i)
            sent_by_offer += 1
    assert sent == 50
    assert sent_by_offer <= 26
    # frames captured closer than the rate allows are still skipped, and a clock that went back
    # (a new run) does not block sending
    assert not budget.decide(10.0, 0.2 * 49 + 0.05).send
    assert budget.decide(10.1, 0.0).send


def test_budget_lowers_quality_and_keeps_bandwidth():
    bandwidth = 60_000.0  # 12 kB per frame at 5 fps: q85 (25.5 kB) does not fit, q35 (10.5 kB) does
    budget = FrameBudget(FrameBudgetConfig(max_fps=5.0, bandwidth_bytes_s=bandwidth, burst_s=1.0))
    sent = run_budget(budget, 30.0, camera_fps=30.0)
    total = sum(jpeg_size(q) for _, q in sent)
    assert total <= bandwidth * 30.0 + bandwidth * 1.0  # the rate plus one bucket of burst
    late = [q for t, q in sent if t > 5.0]
    assert late and max(late) <= 40
    assert len([1 for t, _ in sent if t > 5.0]) >= 0.8 * 5.0 * 25.0  # still close to 5 fps


def test_budget_backlog_skips_and_recovers():
    budget = FrameBudget(FrameBudgetConfig(max_fps=5.0, max_in_flight=2, ack_timeout_s=100.0, recover_s=1.0))
    sent = run_budget(budget, 5.0, camera_fps=30.0, ack_lag_frames=None)  # nothing is ever acked
    assert len(sent) == 2
    assert budget.skipped["backlog"] > 0 and budget.quality_cap < 85
    budget.record_acked(1)
    later = run_budget(budget, 1.0, camera_fps=30.0, ack_lag_frames=0)
    assert later  # sending again once the ground station acknowledged


def test_budget_unacked_frames_expire():
    budget = FrameBudget(FrameBudgetConfig(max_fps=5.0, max_in_flight=1, ack_timeout_s=0.5))
    sent = run_budget(budget, 5.0, camera_fps=30.0, ack_lag_frames=None)
    assert 7 <= len(sent) <= 11  # one frame per ack timeout when no acknowledgement ever comes


def test_budget_config_errors():
    with pytest.raises(ValueError, match="max_fps"):
        FrameBudgetConfig(max_fps=0)
    with pytest.raises(ValueError, match="quality_min"):
        FrameBudgetConfig(quality_min=90, quality_max=85)


def test_keys_cli(tmp_path):
    env = subprocess_env()
    out = run_dronecats("keys", "generate", "--out", str(tmp_path), "--name", "gs1", timeout_s=30, env=env)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "gs1.key_secret").stat().st_mode & 0o777 == 0o600
    pair = load_keypair(tmp_path / "gs1.key_secret")
    assert pair.secret_key is not None and len(pair.public_key) == 40
    assert load_keypair(tmp_path / "gs1.key").public_key == pair.public_key
    assert parse_public_key(pair.public_key.decode()) == pair.public_key
    assert parse_public_key(tmp_path / "gs1.key") == pair.public_key
    again = run_dronecats("keys", "generate", "--out", str(tmp_path), "--name", "gs1", timeout_s=30, env=env)
    assert again.returncode == 2 and "already exists" in again.stderr
    generate_keypair(tmp_path, "drone1")
    os.remove(tmp_path / "drone1.key_secret")
    listed = run_dronecats("keys", "list", str(tmp_path), timeout_s=30, env=env)
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("drone1") and "public only" in lines[0]
    assert lines[1].startswith("gs1") and pair.public_key.decode() in lines[1] and "0600" in lines[1]
    assert [k.name for k in list_keys(tmp_path)] == ["drone1", "gs1"]
    with pytest.raises(ConfigError):
        parse_public_key("not-a-key")


def test_link_configs_load_from_yaml(tmp_path):
    from common.config import load_config
    from common.link import CurveServer, DroneLinkConfig, Insecure, SecurityConfig

    generate_keypair(tmp_path, "drone1")
    public_gs, _ = generate_keypair(tmp_path, "gs1")
    path = tmp_path / "link.yaml"
    path.write_text(
        "drone_id: drone1\ncommand_endpoint: tcp://0.0.0.0:5557\n"
        "budget:\n  max_fps: 3\n  bandwidth_bytes_s: 200000\n"
    )
    cfg = load_config(DroneLinkConfig, path, ["budget.quality_min=40"])
    assert cfg.command_endpoint == "tcp://0.0.0.0:5557"
    assert cfg.budget == FrameBudgetConfig(max_fps=3.0, bandwidth_bytes_s=200000.0, quality_min=40)

    security = load_config(
        SecurityConfig,
        None,
        ["mode=curve", f"secret_key_file={tmp_path / 'drone1.key_secret'}", f"allowed_keys=[{public_gs}]"],
    ).for_drone()
    assert isinstance(security, CurveServer)
    assert security.allowed_client_keys == {load_keypair(public_gs).public_key}
    with pytest.raises(ConfigError, match="mode"):
        load_config(SecurityConfig, None, [])  # no silent default to "no security"
    with pytest.raises(ConfigError, match="allowed"):
        SecurityConfig("curve", str(tmp_path / "drone1.key_secret")).for_drone()
    assert isinstance(SecurityConfig("none").for_drone(), Insecure)


def test_link_config_limits():
    from common.link import DroneLinkConfig, GroundLinkConfig

    with pytest.raises(ValueError, match="heartbeat_interval_s"):
        DroneLinkConfig("d1", heartbeat_interval_s=3.0, link_timeout_s=2.0)
    with pytest.raises(ValueError, match="drone_id"):
        DroneLinkConfig("")
    with pytest.raises(ValueError, match="backoff"):
        GroundLinkConfig(backoff=0.5)
