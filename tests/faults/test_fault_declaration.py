"""Fault rows: a declaration on a run without ground truth is the operator's to judge. Real processes
(`dronecats sim`, `dronecats onboard` flying the baseline without --truth-target, as in real flight or
on the PX4 and Tello emulators), judged on the vehicle's pose through the airsim client.

1. No ground station: the first `finished` holds the drone where it is; without a verdict the run
   ends after judgement_wait_s and lands. One declaration, not one per step until T_max.
2. A ground station on the link (a real GroundLink): it rejects the first declaration (the drone
   flies on and declares again) and accepts the next: the run ends at once, accepted.
"""

from __future__ import annotations

import math
import threading
import time

import pytest

from ground_station.fleet.launch import free_port_block
from tests.support.failsafe import (
    PoseRecorder,
    describe,
    end_record,
    events,
    first,
    flying,
    jsonl,
    reset_world,
)

pytestmark = pytest.mark.slow

WAIT_S = 4.0


def test_without_an_operator_a_declaration_holds_then_lands_after_the_wait(sim, tmp_path) -> None:
    port, client = sim
    reset_world(client, target_x_m=12.0)
    log_dir = tmp_path / "flight"
    unjudged = (
        "--set",
        "on_declaration=hold",
        "--set",
        f"judgement_wait_s={WAIT_S:g}",
        "--set",
        "t_max_s=120",
    )
    with PoseRecorder(port) as poses:
        with flying(port, log_dir, *unjudged) as drone:
            rc = drone.wait(timeout=120)
        samples = list(poses.samples)
    assert rc == 0, describe(log_dir)
    declarations = jsonl(log_dir / "declarations.jsonl")
    assert len(declarations) == 1, declarations
    waiting = first(events(log_dir, "awaiting_judgement"))
    finished = first(events(log_dir, "finished_run"))
    assert waiting is not None and finished is not None, describe(log_dir)
    assert finished["reason"] == f"declared: no judgement after {WAIT_S:g} s", finished
    assert WAIT_S <= finished["t"] - waiting["t"] <= WAIT_S + 1.0, (waiting, finished)
    # Held where it declared: over the wait the drone stays put (from 1 s in: braking from the approach).
    x0, y0, z0 = declarations[0]["pose"][:3]
    held = [p for p in samples if waiting["wall_time"] + 1.0 <= p[0] <= waiting["wall_time"] + WAIT_S]
    assert held, (waiting, samples[-3:])
    drift_m = max(math.dist((x0, y0, z0), p[1:]) for p in held)
    assert drift_m < 0.6, drift_m
    assert first(events(log_dir, "touchdown")) is not None and -poses.latest()[2] < 0.3, describe(log_dir)
    waited_s = round(finished["t"] - waiting["t"], 2)
    print(
        "ROW declaration-unjudged",
        {"declarations": 1, "held_drift_m": round(drift_m, 2), "waited_s": waited_s},
    )


def test_an_operator_rejects_then_accepts_and_the_run_ends_accepted(sim, tmp_path) -> None:
    from common.link import DroneEndpoint, GroundLink, GroundLinkConfig, Insecure
    from common.messages import Judgement
    from onboard.link import endpoints

    port, client = sim
    reset_world(client, target_x_m=12.0)
    address = f"tcp://127.0.0.1:{free_port_block(3)}"
    log_dir = tmp_path / "flight"
    verdicts: list[tuple[str, str]] = []
    arrived = threading.Event()

    def on_declaration(drone_id, envelope, body) -> None:
        verdicts.append((body.declaration_id, "reject" if not verdicts else "accept"))
        arrived.set()

    with_operator = (
        "--gs",
        address,
        "--set",
        "t_max_s=120",
        "--set",
        "on_declaration=hold",
        "--set",
        "judgement_wait_s=60",
    )
    with flying(port, log_dir, *with_operator) as drone:
        link = GroundLink(GroundLinkConfig(), Insecure(), on_declaration=on_declaration)
        link.start()
        try:
            link.add_drone(DroneEndpoint("Drone1", *endpoints(address)))
            sent = 0
            deadline = time.monotonic() + 90.0
            while sent < 2 and time.monotonic() < deadline:
                if arrived.wait(0.2) and len(verdicts) > sent:
                    declaration_id, verdict = verdicts[sent]
                    judgement = Judgement(declaration_id, verdict, "test")
                    ack = link.send_command("Drone1", judgement, timeout_s=5.0)
                    assert ack.result == "ok", ack
                    sent += 1
                    accepted_wall = time.time()
                    arrived.clear()
            rc = drone.wait(timeout=30)
            ended_s = time.time() - accepted_wall
        finally:
            link.close()
    assert sent == 2 and rc == 0, (verdicts, describe(log_dir))
    judged = [d for d in jsonl(log_dir / "declarations.jsonl") if d.get("judged")]
    assert [d["judged"] for d in judged] == ["reject", "accept"], judged
    assert end_record(log_dir)["end_reason"] == "declared: accepted by the operator", end_record(log_dir)
    assert len(events(log_dir, "awaiting_judgement")) == 2, describe(log_dir)
    print(
        "ROW declaration-judged",
        {"exit_after_accept_s": round(ended_s, 2), "verdicts": [v for _, v in verdicts]},
    )
