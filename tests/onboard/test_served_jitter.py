"""The served control rate's jitter (issue 25): the actuation thread's period spread, carried in
telemetry to the ground station (TelemetryMessage.control_jitter_ms) and written to episode.json."""

from __future__ import annotations

import time

import pytest

from common import wire
from common.clock import WallClock
from common.messages import TelemetryMessage
from common.pose import Pose
from onboard.actuation import ActuationThread


class _Vehicle:
    """Only what the thread's telemetry poller asks of a vehicle: nothing is flown here."""

    def telemetry(self) -> None:
        return None


class _Actuator:
    def __init__(self) -> None:
        self.vehicle = _Vehicle()
        self.poller = None
        self.obstacles = None  # a vehicle that knows no obstacles
        self.ticks = 0

    def tick(self, now_s: float) -> None:
        self.ticks += 1


def test_the_jitter_is_the_spread_of_the_served_period() -> None:
    thread = ActuationThread(_Actuator(), WallClock(), rate_hz=20.0)  # type: ignore[arg-type]
    assert thread.served_jitter_ms() == 0.0  # no ticks yet
    thread.period_errors_s.extend([0.0, 0.002, -0.002, 0.0])  # ms-scale lateness and earliness
    assert thread.served_jitter_ms() == pytest.approx(1000.0 * (0.002**2 / 2) ** 0.5)
    assert thread.served_rate_hz() == pytest.approx(20.0)


def test_a_running_thread_reports_a_finite_jitter() -> None:
    actuator = _Actuator()
    thread = ActuationThread(actuator, WallClock(), rate_hz=50.0)  # type: ignore[arg-type]
    thread.start()
    try:
        time.sleep(0.3)
    finally:
        thread.stop()
    assert actuator.ticks >= 5 and 0.0 <= thread.served_jitter_ms() < 1000.0


def test_telemetry_carries_it_and_omits_it_at_zero() -> None:
    base = TelemetryMessage(1.0, Pose(0.0, 0.0, -3.0), (0.0, 0.0, 0.0), None, "hover", True, "up", 19.8)
    _, body = wire.encode(base, drone_id="Drone1", session_id="s1", seq=0, send_time_s=1.0)
    assert b"control_jitter_ms" not in body  # what peers from before the field decode
    jittery = TelemetryMessage(
        1.0, Pose(0.0, 0.0, -3.0), (0.0, 0.0, 0.0), None, "hover", True, "up", 19.8, control_jitter_ms=3.5
    )
    decoded = wire.decode(wire.encode(jittery, drone_id="Drone1", session_id="s1", seq=1, send_time_s=1.0))
    assert isinstance(decoded.body, TelemetryMessage) and decoded.body.control_jitter_ms == 3.5
