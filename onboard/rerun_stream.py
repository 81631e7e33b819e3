"""Stream a flight live to a running Rerun viewer (`dronecats onboard --rerun [ADDR]`), in the layout
of the offline export (common.rerun_entities), so the live view and the recorded one look alike.

A `RerunStream` is a Publisher beside the ground-station link (StepReporter.add_publisher). The
reporter's calls only put the record on a bounded queue, since publish_telemetry runs on the
actuation thread: a full queue drops the record and counts it (`dropped`). A worker thread of this
stream's own encodes the JPEGs and turns the records into onboard.rerun_live messages for a child
process, onboard.rerun_sink, which alone runs the Rerun SDK: run in a thread of this process, the
SDK's work kept the actuation thread waiting for the interpreter lock, its p99 tens of milliseconds
late (benchmarks/bench_onboard.py --rerun, docs/review.md#live). The SDK buffers for a viewer
that is not (yet) running, so the flight never waits on one; at the end the sink's flush waits at
most its FLUSH_TIMEOUT_S. The sink needs the `review` extra (rerun-sdk); this module does not.
"""

from __future__ import annotations

import logging
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO

import cv2

from common.actions import Go
from common.logformat import DeclarationLine, pose_list
from common.pose import Frame
from common.truth import GroundTruth
from onboard.reporter import StepExtras, StepReporter, TelemetrySnapshot
from onboard.rerun_live import LiveChosen, LiveFrame, LiveLog, LiveMessage, LivePose, LiveScalars, framed

log = logging.getLogger(__name__)

QUEUE_RECORDS = 256  # ~50 s of 5 Hz telemetry, or a few seconds of a stalled worker at full rate
SINK_EXIT_S = 10.0  # the sink's flush (2 s) and the SDK giving up a viewer that never came (5 s)
TRUTH_PERIOD_S = 0.5  # the target's pose at the trace's 2 Hz
JPEG_QUALITY = 80
FRAMES_MAX_HZ = 2.0  # frames streamed per second at most, as the recorder saves them by default
TARGET_ENTITY = "target"

Record = StepExtras | Frame | TelemetrySnapshot | DeclarationLine


def attach_rerun(reporter: StepReporter, url: str, truth: GroundTruth | None = None) -> RerunStream:
    """Start a stream to the viewer at `url` and hang it beside the reporter's other publishers; the
    caller closes it when the flight is over (`truth`: a connection of its own, or None)."""
    stream = RerunStream(reporter.drone, url, lambda: reporter.t0_s, truth)
    stream.start()
    reporter.add_publisher(stream)
    return stream


class RerunStream:
    """A Publisher that streams the runtime's records to a Rerun viewer through a sink process."""

    def __init__(
        self,
        drone: str,
        url: str,
        t0_s: Callable[[], float],
        truth: GroundTruth | None = None,
        *,
        queue_records: int = QUEUE_RECORDS,
        frames_max_hz: float = FRAMES_MAX_HZ,
    ) -> None:
        self.drone = drone
        self.url = url
        self._t0_s = t0_s  # episode time 0 on the runtime's clock (frames carry capture times on it)
        self._truth = truth  # its own connection: sampled on this stream's thread only
        self._queue: queue.Queue[Record] = queue.Queue(maxsize=queue_records)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sink: subprocess.Popen[bytes] | None = None
        self._size_px = (0, 0)  # of the last frame (width, height): a step's chosen point is drawn over it
        self._truth_due_s = 0.0
        self._frame_period_s = 1.0 / frames_max_hz if frames_max_hz > 0 else 0.0
        self._frame_due_s = -float("inf")  # capture time (runtime clock) of the next frame streamed
        self.dropped = 0
        self.frames_skipped = 0  # over frames_max_hz: not offered at all
        self.logged = 0

    # ---- Publisher: called on the runtime's threads, never blocks ---------------------------------
    def publish_step(self, step: StepExtras) -> None:
        self._offer(step)

    def publish_frame(self, frame: Frame) -> None:
        if frame.capture_time_s < self._frame_due_s:
            self.frames_skipped += 1
            return
        self._frame_due_s = frame.capture_time_s + self._frame_period_s
        self._offer(frame)

    def publish_telemetry(self, telemetry: TelemetrySnapshot) -> None:
        self._offer(telemetry)

    def publish_declaration(self, declaration: DeclarationLine) -> None:
        self._offer(declaration)

    def _offer(self, record: Record) -> None:
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the sink process (it connects in the background: no viewer yet is no error) and the
        worker. Called from the thread that starts the runtime, never the actuation thread, whose
        SCHED_FIFO policy a new thread or process would inherit."""
        self._sink = subprocess.Popen(
            [sys.executable, "-m", "onboard.rerun_sink", self.url, self.drone], stdin=subprocess.PIPE
        )
        # Not daemon: close() joins it, so its last records are never cut off.
        self._thread = threading.Thread(target=self._run, name=f"rerun-{self.drone}")
        self._thread.start()

    def close(self) -> None:
        """Send what is queued, end the sink's input and wait for it to flush and exit."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        sink, self._sink = self._sink, None
        if sink is not None:
            try:
                assert sink.stdin is not None
                sink.stdin.close()
            except OSError:  # the sink is gone already
                pass
            try:
                sink.wait(SINK_EXIT_S)
            except subprocess.TimeoutExpired:
                sink.kill()
                sink.wait()
        if self.dropped:
            log.warning(
                "rerun stream: %d records dropped (queue of %d full)", self.dropped, self._queue.maxsize
            )

    def __enter__(self) -> RerunStream:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the worker ------------------------------------------------------------------------------
    def _run(self) -> None:
        assert self._sink is not None and self._sink.stdin is not None
        stdin: IO[bytes] = self._sink.stdin
        while True:
            try:
                record = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            try:
                for message in self._messages(record):
                    stdin.write(framed(message))  # blocks this thread only while the sink catches up
                stdin.flush()
                self.logged += 1
            except (BrokenPipeError, ValueError):  # the sink exited: the flight goes on without it
                log.warning("rerun stream: the sink process ended (%s)", self._sink.poll())
                return
            except Exception:  # an encoder's or a sampler's fault never reaches the flight
                log.exception("rerun stream: %s not streamed", type(record).__name__)

    def _messages(self, record: Record) -> list[LiveMessage]:
        if isinstance(record, Frame):
            ok, jpeg = cv2.imencode(".jpg", record.image, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
            if not ok:
                return []
            self._size_px = (record.width_px, int(record.image.shape[0]))
            t_s = record.capture_time_s - self._t0_s()
            return [LiveFrame(t_s, jpeg.tobytes(), *self._size_px)]
        if isinstance(record, StepExtras):
            return self._step(record)
        if isinstance(record, TelemetrySnapshot):
            tel, t_s = record.telemetry, record.t
            values = {
                "served_control_rate_hz": record.served_rate_hz,
                "actuation_jitter_ms": record.served_jitter_ms,
                "battery_fraction": tel.battery_fraction,
            }
            out: list[LiveMessage] = [
                LivePose(t_s, self.drone, pose_list(tel.pose)),
                LiveScalars(t_s, {k: v for k, v in values.items() if v is not None}),
            ]
            return out + self._target(t_s)
        text = f"finished at {record.distance_m} m (visible: {record.visible})"
        return [LiveLog(record.t, "declaration", text)]

    def _step(self, step: StepExtras) -> list[LiveMessage]:
        values = {
            "reply_latency_s": step.latency_s,
            "frame_age_s": step.stages.frame_age_s if step.stages else None,
            "distance_to_target_m": step.distance_m,
        }
        out: list[LiveMessage] = [LiveScalars(step.t, {k: v for k, v in values.items() if v is not None})]
        action = step.action
        width_px, height_px = self._size_px
        if isinstance(action, Go) and width_px:
            # the point is 0-1000 of the image in x and y (common.actions.Go), as the export draws it
            point_px = (action.point[0] / 1000.0 * width_px, action.point[1] / 1000.0 * height_px)
            caption = f"go point={list(action.point)} depth={action.depth_m:g} m"
            out.append(LiveChosen(step.t, point_px, width_px, step.point_on_target, caption))
        else:
            out.append(LiveChosen(step.t, None, width_px, None, ""))
        text = step.raw or step.error or step.discarded or ""
        out.append(LiveLog(step.t, "reply", text, warning=step.discarded is not None))
        return out

    def _target(self, t_s: float) -> list[LiveMessage]:
        if self._truth is None or t_s < self._truth_due_s:
            return []
        self._truth_due_s = t_s + TRUTH_PERIOD_S
        sample = self._truth.sample(self.drone)
        if sample.target_pose is None:
            return []
        return [LivePose(t_s, TARGET_ENTITY, pose_list(sample.target_pose))]
