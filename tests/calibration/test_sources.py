"""Frame sources for calibration: the SRC registry and the folder source."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration import sources
from calibration.airsim_source import AirSimCameraAddress
from calibration.errors import CalibrationError
from common.schemes import CAMERA_SOURCES_GROUP
from tests.support.plugins import installed


def test_tello_without_adapter_is_a_clear_error() -> None:
    with pytest.raises(
        CalibrationError, match=r"Tello camera is not available yet.*dronecats.camera_sources"
    ):
        sources.open_source("tello://192.168.10.1")


FAKE_SOURCE = """
class Fake:
    description = "fake"
    live = True

    def __init__(self, src):
        self.src = src

    def read(self):
        return None

    def close(self):
        pass
"""


def test_a_declared_scheme_is_used(monkeypatch, tmp_path) -> None:
    """A third party's camera source, declared in its distribution's entry points, serves its scheme."""
    module = installed(
        monkeypatch,
        tmp_path,
        "fake_tello_source",
        FAKE_SOURCE,
        f"[{CAMERA_SOURCES_GROUP}]\ntello = fake_tello_source:Fake\n",
    )
    source = sources.open_source("tello://10.0.0.2")
    assert isinstance(source, module.Fake) and source.src == "tello://10.0.0.2"


def test_unknown_and_missing_sources() -> None:
    with pytest.raises(CalibrationError, match="unknown scheme 'foo'"):
        sources.open_source("foo://bar")
    with pytest.raises(CalibrationError, match="not a device index, URL"):
        sources.open_source("/no/such/folder")


def test_gstreamer_pipeline_needs_gstreamer_in_opencv() -> None:
    if "GStreamer:                   YES" in cv2.getBuildInformation():
        pytest.skip("this OpenCV has GStreamer; the refusal path is not reachable")
    with pytest.raises(CalibrationError, match="no GStreamer support"):
        sources.open_source("videotestsrc ! videoconvert ! appsink")


def test_folder_source_reads_images_in_name_order(tmp_path: Path) -> None:
    for i in (2, 0, 1):
        cv2.imwrite(str(tmp_path / f"v{i}.png"), np.full((8, 10, 3), i * 50, np.uint8))
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "broken.jpg").write_bytes(b"not a jpeg")
    source = sources.open_source(str(tmp_path))
    assert not source.live
    values = []
    while (image := source.read()) is not None:
        values.append(int(image[0, 0, 0]))
    assert values == [0, 50, 100]
    source.close()


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="holds no images"):
        sources.open_source(str(tmp_path))


def test_video_file_source(tmp_path: Path) -> None:
    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 48))
    if not writer.isOpened():
        pytest.skip("no MJPG writer in this OpenCV build")
    for i in range(3):
        writer.write(np.full((48, 64, 3), 40 * (i + 1), np.uint8))
    writer.release()
    source = sources.open_source(str(path))
    frames = []
    while (image := source.read()) is not None:
        frames.append(image)
    source.close()
    assert len(frames) == 3 and frames[0].shape == (48, 64, 3)


def test_airsim_url_parsing() -> None:
    assert AirSimCameraAddress.parse("airsim://10.1.2.3:41452/Drone1") == AirSimCameraAddress(
        "10.1.2.3", 41452, "Drone1", "0"
    )
    assert AirSimCameraAddress.parse("airsim://localhost/Drone2/front_center") == AirSimCameraAddress(
        "localhost", 41451, "Drone2", "front_center"
    )
    with pytest.raises(CalibrationError, match="VEHICLE"):
        AirSimCameraAddress.parse("airsim://localhost:41451")


def test_airsim_unreachable_is_a_clear_error() -> None:
    import socket

    # A port that was free a moment ago: nothing listens there.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from calibration.airsim_source import connect_client

    with pytest.raises(CalibrationError, match=f"cannot reach AirSim at 127.0.0.1:{port}"):
        connect_client(AirSimCameraAddress("127.0.0.1", port, "Drone1"), timeout_s=2.0)
