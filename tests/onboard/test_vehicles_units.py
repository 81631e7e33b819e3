"""Small pieces of the real-vehicle adapters without a peer: dead reckoning, the fault plumbing, and
the H.264 datagram path (libx264 encoder -> UDP -> PyAV decoder) with frame ages."""

from __future__ import annotations

import time

import numpy as np
import pytest

from common.errors import VehicleError
from common.pose import Pose
from onboard.vehicles.deadreckon import DeadReckoner
from onboard.vehicles.faults import FaultReporter, VehicleFault
from onboard.vehicles.video import FreshFrameCamera, H264UdpReceiver
from sim_bridge.emulators.h264_out import H264Streamer


def test_dead_reckoning_follows_commands_through_the_lag_and_the_measured_yaw() -> None:
    r = DeadReckoner(10.0, 0.0)
    r.command(1.0, 0.0)
    t = 0.0
    for _ in range(100):  # 5 s at 20 Hz, heading east (yaw 90)
        t += 0.05
        x, y = r.update(t, 90.0)
    assert x == pytest.approx(10.0, abs=1e-6)
    assert y == pytest.approx(5.0 - 0.3, abs=0.05)  # the first-order lag costs ~response_time_s metres
    r.command(0.0, 0.0)
    for _ in range(60):
        t += 0.05
        x, y = r.update(t, 90.0)
    assert y == pytest.approx(5.0, abs=0.08)  # coasting out of the lag gives the distance back
    r.update(t + 30.0, 90.0)  # stopped: a stall of this process moves nothing
    assert r.y_m == pytest.approx(y, abs=0.01)


def test_dead_reckoning_flies_a_stall_on_the_last_command_as_the_drone_does() -> None:
    """A gap between updates is this process stalled while the Tello flew its last sticks: one update
    2 s later counts what forty updates 0.05 s apart count, and the Tello's 15 s auto-land bounds it."""
    steady, stalled = DeadReckoner(), DeadReckoner()
    for r in (steady, stalled):
        r.command(1.0, 0.0)
        r.update(0.0, 0.0)
    for k in range(1, 41):
        steady.update(0.05 * k, 0.0)
    x, _ = stalled.update(2.0, 0.0)
    assert x == pytest.approx(steady.x_m, abs=1e-9) and x == pytest.approx(2.0 - 0.3, abs=0.01)
    assert stalled.v_north_m_s == pytest.approx(steady.v_north_m_s, abs=1e-9)
    x, _ = stalled.update(2.0 + 60.0, 0.0)  # past the auto-land: 15 s of flight at most
    assert x == pytest.approx(2.0 - 0.3 + 15.0, abs=0.01)
    # a stall ended by a new command (the hold after it): the gap was flown on the old one
    held = DeadReckoner()
    held.command(1.0, 0.0, now_s=0.0)
    held.update(0.0, 0.0)
    held.command(0.0, 0.0, now_s=2.0)
    assert held.x_m == pytest.approx(2.0 - 0.3, abs=0.01)


def test_fault_reporter_keeps_history_and_survives_a_failing_sink() -> None:
    seen: list[VehicleFault] = []
    reporter = FaultReporter("X")
    reporter.subscribe(lambda f: (_ for _ in ()).throw(RuntimeError("sink bug")))
    reporter.subscribe(seen.append)
    reporter.emit("link_lost", "no heartbeat for 2.0 s", "land")
    assert reporter.kinds() == ["link_lost"] and seen[0].action == "land"
    with pytest.raises(ValueError, match="fault action"):
        VehicleFault("x", "y", "explode")


def test_h264_over_udp_decodes_and_stale_frames_are_refused() -> None:
    rx = H264UdpReceiver("127.0.0.1", 0)
    counter = [0]

    def render() -> np.ndarray:
        counter[0] += 1
        img = np.zeros((120, 160, 3), np.uint8)
        img[:, : (counter[0] * 8) % 160] = (0, 0, 255)
        return img

    tx = H264Streamer(render, lambda: ("127.0.0.1", rx.port), fps=20)
    camera = FreshFrameCamera("cam", lambda: rx, lambda t: Pose(1.0, 2.0, -3.0, 0.0), 0.3, stale_wait_s=1.0)
    tx.start()
    try:
        frame = camera.read()
        assert frame.image.shape == (120, 160, 3) and frame.pose.x_m == 1.0
        assert frame.meta["frame_age_s"] <= 0.3
        assert frame.image[60, 2, 2] > 200  # red survived the YUV round trip (BGR order)
        tx.paused.set()
        time.sleep(0.6)
        with pytest.raises(VehicleError, match=r"video stale \(newest frame"):
            camera.read()
        tx.paused.clear()  # a restarted stream begins with an IDR: decodable at once
        assert camera.read().meta["frame_age_s"] <= 0.3
        assert rx.errors == 0
    finally:
        tx.close()
        rx.close()


def test_opencv_source_reads_a_url_or_file(tmp_path) -> None:
    """The non-UDP camera path (device number, RTSP URL, GStreamer pipeline, file) through OpenCV."""
    import cv2

    from onboard.vehicles.video import open_frame_source

    path = str(tmp_path / "clip.avi")
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 10, (160, 120))
    for i in range(30):
        img = np.full((120, 160, 3), i * 8, np.uint8)
        writer.write(img)
    writer.release()
    source = open_frame_source(path)
    try:
        frame = source.wait_newer(-1, 5.0)
        assert frame is not None and frame.image_bgr.shape == (120, 160, 3)
    finally:
        source.close()
    with pytest.raises(VehicleError, match="could not open"):
        open_frame_source(str(tmp_path / "missing.avi"))
