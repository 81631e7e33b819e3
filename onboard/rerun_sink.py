"""`python -m onboard.rerun_sink URL DRONE`: the process that talks to a Rerun viewer for
`dronecats onboard --rerun` (onboard.rerun_stream starts it). It reads onboard.rerun_live messages
from stdin until EOF and logs them in the layout of common.rerun_entities; then it flushes (at most
FLUSH_TIMEOUT_S: a viewer that never came loses what the SDK kept for it) and exits.

Its own process, so that the SDK's work never holds the flight process's interpreter lock: in a
thread of the flight process, it cost the actuation loop's p99 tens of milliseconds
(benchmarks/bench_onboard.py --rerun, docs/review.md#live). Needs the `review` extra (rerun-sdk).
"""

from __future__ import annotations

import sys
import time
from typing import BinaryIO

import rerun as rr

from common import rerun_entities as layout
from onboard.rerun_live import DECODER, HEADER, LiveChosen, LiveFrame, LiveLog, LiveMessage, LivePose

FLUSH_TIMEOUT_S = 2.0


def read_message(stream: BinaryIO) -> LiveMessage | None:
    """The next message, or None at EOF."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        return None
    message: LiveMessage = DECODER.decode(payload)
    return message


def log_message(rec: rr.RecordingStream, drone: str, message: LiveMessage) -> None:
    rec.set_time(layout.TIMELINE, duration=max(0.0, message.t_s))
    if isinstance(message, LiveFrame):
        rec.log(layout.camera_path(drone), layout.jpeg_image(message.jpeg))
    elif isinstance(message, LiveChosen):
        if message.point_px is None:
            rec.log(layout.chosen_path(drone), rr.Clear(recursive=False))
        else:
            points = layout.chosen_points(
                message.point_px, message.width_px, message.on_target, message.caption
            )
            rec.log(layout.chosen_path(drone), points)
    elif isinstance(message, LivePose):
        rec.log(layout.object_path(message.name), layout.pose_transform(message.pose))
    elif isinstance(message, LiveLog):
        level = rr.TextLogLevel.WARN if message.warning else rr.TextLogLevel.INFO
        rec.log(layout.log_path(drone, message.topic), rr.TextLog(message.text, level=level))
    else:
        for name, value in message.values.items():
            rec.log(layout.stats_path(drone, name), rr.Scalars(value))


def main(argv: list[str]) -> int:
    url, drone = argv
    rec = rr.RecordingStream(layout.APPLICATION_ID, recording_id=f"{drone}-{time.strftime('%Y%m%dT%H%M%S')}")
    rec.connect_grpc(url, default_blueprint=layout.blueprint([drone]))
    rec.send_recording_name(f"{drone} live")
    layout.log_world(rec)
    layout.log_drone_arrow(rec, drone)
    stdin = sys.stdin.buffer
    while (message := read_message(stdin)) is not None:
        log_message(rec, drone, message)
    try:
        rec.flush(timeout_sec=FLUSH_TIMEOUT_S)
    except RuntimeError as exc:  # the SDK's "Flush timed out": no viewer took them
        print(f"rerun sink: {url} not reached, what it did not take is dropped ({exc})", file=sys.stderr)
    rec.disconnect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
