"""Frame preprocessing and the history text (docs/protocol.md#the-loop, #history)."""

from __future__ import annotations

import base64

import cv2
import numpy as np
import pytest

from common.actions import Finished, Go, Rotate, Think
from models.frames import encode_frame, encode_history_view, jpeg_data_url, target_size
from models.history import EMPTY_HISTORY, ActionHistory, compact, render_history


@pytest.mark.parametrize(
    ("size", "expected"),
    [((1280, 720), (640, 360)), ((960, 720), (640, 480)), ((640, 480), (640, 480)), ((320, 240), (320, 240))],
)
def test_frames_keep_aspect_and_shrink_only_when_wider_than_640(size, expected) -> None:
    width, height = size
    img = np.full((height, width, 3), 128, np.uint8)
    img[: height // 2, : width // 2] = (0, 0, 255)
    frame = encode_frame(img)
    assert (frame.width_px, frame.height_px) == expected == target_size(width, height)
    decoded = cv2.imdecode(np.frombuffer(frame.jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert decoded.shape == (expected[1], expected[0], 3)
    # the red quadrant is still top-left: nothing was flipped or cropped
    assert decoded[expected[1] // 4, expected[0] // 4, 2] > 200
    assert decoded[3 * expected[1] // 4, 3 * expected[0] // 4, 2] < 160


def test_jpeg_quality_85_and_area_interpolation() -> None:
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    frame = encode_frame(img)
    small = cv2.resize(img, (640, 360), interpolation=cv2.INTER_AREA)
    expected = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()
    assert frame.jpeg == expected


def test_history_view_is_half_the_sent_width() -> None:
    img = np.zeros((720, 960, 3), np.uint8)
    view = encode_history_view(img)
    assert (view.width_px, view.height_px) == (320, 240)


def test_data_url_round_trips() -> None:
    frame = encode_frame(np.zeros((10, 20, 3), np.uint8))
    url = jpeg_data_url(frame.jpeg)
    assert url == frame.data_url()
    assert base64.b64decode(url.removeprefix("data:image/jpeg;base64,")) == frame.jpeg


def test_bad_frames_are_rejected() -> None:
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        encode_frame(np.zeros((10, 20), np.uint8))
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        encode_frame(np.zeros((10, 20, 3), np.float32))


@pytest.mark.parametrize(
    ("action", "xy", "yx"),
    [
        (Go(point=(612, 430), depth_m=9.0), "GO x=612 y=430 depth=9m", "GO y=430 x=612 depth=9m"),
        (Go(point=(0, 1000), depth_m=2.46), "GO x=0 y=1000 depth=2.5m", "GO y=1000 x=0 depth=2.5m"),
        (Rotate(angle_deg=45.0), "ROTATE angle=45deg", "ROTATE angle=45deg"),
        (Rotate(angle_deg=-90.0), "ROTATE angle=-90deg", "ROTATE angle=-90deg"),
        (Think(), "THINK", "THINK"),
        (Finished(), "FINISHED", "FINISHED"),
    ],
)
def test_compact_forms(action, xy: str, yx: str) -> None:
    assert compact(action) == xy
    assert compact(action, "yx") == yx


def test_history_is_last_five_oldest_first_most_recent_tagged() -> None:
    assert render_history([]) == EMPTY_HISTORY == "(none yet --- this is the first step)"
    actions = [Rotate(angle_deg=float(10 * i)) for i in range(1, 8)]
    lines = render_history(actions).splitlines()
    assert lines == [
        "1. ROTATE angle=30deg",
        "2. ROTATE angle=40deg",
        "3. ROTATE angle=50deg",
        "4. ROTATE angle=60deg",
        "5. ROTATE angle=70deg  <- most recent",
    ]
    assert render_history([Think()]) == "1. THINK  <- most recent"


def test_action_history_keeps_views_and_last_five() -> None:
    history = ActionHistory()
    assert history.last_action is None and history.render() == EMPTY_HISTORY
    for i in range(7):
        history.append(Rotate(angle_deg=float(i)), view_jpeg=bytes([i]))
    assert len(history) == 5
    assert [e.view_jpeg for e in history] == [bytes([i]) for i in range(2, 7)]
    assert history.last_action == Rotate(angle_deg=6.0)
