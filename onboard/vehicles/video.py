"""Camera sources for real vehicles, each frame stamped with its arrival time so its age is known.

- `H264UdpReceiver`: the Tello's raw H.264 (Annex-B) in UDP datagrams, decoded with PyAV. A datagram
  shorter than 1460 bytes ends an access unit (the Tello convention), so each unit is decoded as soon
  as it is complete, without waiting for the next one as a bitstream parser would.
- `OpenCvSource`: a V4L2 device number, an RTSP/HTTP URL or a GStreamer pipeline (contains "!").

`StampedFrame.arrival_s` is time.monotonic() when the frame became available.

`FrameFreshness` is the one staleness rule for every camera: a frame is stale when its source's own
stamp has not advanced while the runtime's clock advanced more than max_frame_age_s. The onboard
runtime applies it to every frame it reads (the stamp: `Frame.capture_time_s`, the source's clock:
AirSim's image time_stamp, the built-in simulator's time, a stream's first datagram), on its own
clock (simulated time in lock-step); stream cameras here also apply it at arrival, where they know
when each frame came in, and wait briefly for a newer one. No decision is made on a stale frame.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from common.errors import VehicleError
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose

log = logging.getLogger(__name__)

DATAGRAM_BYTES = 1460


@dataclass(frozen=True)
class StampedFrame:
    image_bgr: np.ndarray
    arrival_s: float  # time.monotonic() when decoded
    first_datagram_s: float  # time.monotonic() of the unit's first datagram (= arrival for OpenCV)
    index: int  # frames decoded so far by this source, from 0


class FrameSource:
    """Base: a thread fills `latest`; `wait_newer` blocks for a frame newer than a given index."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._latest: StampedFrame | None = None
        self._stop = threading.Event()
        self.frames = 0
        self.errors = 0
        self.decode_s: list[float] = []
        self.record_arrivals = False  # benchmarks: keep (index, arrival_s) of every frame
        self.arrivals: list[tuple[int, float]] = []

    def _publish(self, image: np.ndarray, first_s: float) -> None:
        frame = StampedFrame(image, time.monotonic(), first_s, self.frames)
        with self._cond:
            self._latest = frame
            self.frames += 1
            self._cond.notify_all()
        if self.record_arrivals:
            self.arrivals.append((frame.index, frame.arrival_s))

    def latest(self) -> StampedFrame | None:
        with self._cond:
            return self._latest

    def age_s(self) -> float | None:
        f = self.latest()
        return None if f is None else time.monotonic() - f.arrival_s

    def wait_newer(self, index: int, timeout_s: float) -> StampedFrame | None:
        """The newest frame with index > `index`, or None after timeout_s."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._latest is None or self._latest.index <= index:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set():
                    return None
                self._cond.wait(remaining)
            return self._latest

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()


class H264UdpReceiver(FrameSource):
    def __init__(self, bind_ip: str = "0.0.0.0", port: int = 11111) -> None:
        super().__init__()
        import av  # heavy: only when a video stream is opened

        self.codec = av.CodecContext.create("h264", "r")
        self.codec.options = {"flags": "low_delay"}
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        try:
            self.sock.bind((bind_ip, port))
        except OSError as exc:
            self.sock.close()
            raise VehicleError(f"cannot receive video on UDP {bind_ip}:{port}: {exc}") from exc
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.datagrams = 0
        self._thread = threading.Thread(target=self._run, name=f"h264-{self.port}", daemon=True)
        self._thread.start()

    def _decode(self, unit: bytes, first_s: float) -> None:
        import av

        t0 = time.monotonic()
        try:
            frames = self.codec.decode(av.Packet(unit))
        except Exception as exc:  # broken units before the first IDR or after a loss
            self.errors += 1
            log.debug("h264 decode error: %s", exc)
            return
        for frame in frames:
            self._publish(frame.to_ndarray(format="bgr24"), first_s)
        if frames:
            self.decode_s.append(time.monotonic() - t0)
            del self.decode_s[:-500]

    def _run(self) -> None:
        buf: list[bytes] = []
        first_s = 0.0
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            self.datagrams += 1
            if not buf:
                first_s = time.monotonic()
            buf.append(data)
            if len(data) < DATAGRAM_BYTES:
                self._decode(b"".join(buf), first_s)
                buf = []

    def close(self) -> None:
        super().close()
        self._thread.join(2.0)
        self.sock.close()


class OpenCvSource(FrameSource):
    """cv2.VideoCapture on a device number, a URL, or a GStreamer pipeline string."""

    def __init__(self, spec: str) -> None:
        super().__init__()
        import cv2

        if spec.isdigit():
            self.cap = cv2.VideoCapture(int(spec))
        elif "!" in spec:
            self.cap = cv2.VideoCapture(spec, cv2.CAP_GSTREAMER)
        else:
            self.cap = cv2.VideoCapture(spec)
        if not self.cap.isOpened():
            raise VehicleError(
                f"camera {spec!r}: OpenCV could not open it (device, URL or GStreamer pipeline)"
            )
        self._thread = threading.Thread(target=self._run, name="opencv-camera", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ok, image = self.cap.read()
            if not ok:
                self.errors += 1
                time.sleep(0.05)
                continue
            self._publish(image, time.monotonic())

    def close(self) -> None:
        super().close()
        self._thread.join(2.0)
        self.cap.release()


def open_frame_source(spec: str) -> FrameSource:
    """h264udp://BIND_IP:PORT (raw H.264 datagrams), else an OpenCV device/URL/pipeline."""
    if spec.startswith("h264udp://"):
        host, _, port = spec[len("h264udp://") :].rpartition(":")
        return H264UdpReceiver(host or "0.0.0.0", int(port))
    return OpenCvSource(spec)


class FrameFreshness:
    """A frame is stale when its source stamp has not advanced while the clock advanced more than
    max_frame_age_s. `arrived_s`, when the caller knows it, is the clock time the stamp advanced (a
    stream's arrival time); else it is the first time this rule saw the stamp."""

    def __init__(self, max_frame_age_s: float) -> None:
        if not (math.isfinite(max_frame_age_s) and max_frame_age_s > 0):
            raise ValueError(f"max_frame_age_s={max_frame_age_s} must be a finite number of seconds > 0")
        self.max_frame_age_s = max_frame_age_s
        self._stamp: float | None = None
        self._advanced_s = 0.0

    def age_s(self, stamp: float, now_s: float, arrived_s: float | None = None) -> float:
        """How long the source has shown this stamp, on the caller's clock."""
        if self._stamp is None or stamp != self._stamp:  # advanced (or restarted: a new source)
            self._stamp = stamp
            self._advanced_s = now_s if arrived_s is None else min(now_s, arrived_s)
        return now_s - self._advanced_s

    def stale(self, stamp: float, now_s: float, arrived_s: float | None = None) -> bool:
        return self.age_s(stamp, now_s, arrived_s) > self.max_frame_age_s


class FreshFrameCamera:
    """Camera.read() over a FrameSource: the newest frame if fresh (FrameFreshness, on its arrival time),
    else it waits for one. No decision is ever made on a stale frame: after stale_wait_s, or at once when
    `usable()` says the vehicle cannot use one (link lost, landing), it raises VehicleError saying how
    old the newest frame is. Frames are stamped with `pose_at(first datagram time)`. `source` is called
    at each read (the vehicle opens its stream when it connects)."""

    def __init__(
        self,
        name: str,
        source: Callable[[], FrameSource | None],
        pose_at: Callable[[float], Pose],
        max_frame_age_s: float,
        usable: Callable[[], str | None] = lambda: None,
        # Short, so that the runtime hears of stale video in time for its failsafe (frame_stale_hold_s)
        stale_wait_s: float = 1.0,
        # Until the first frame: a stream that is still starting (decoder waiting for its first
        # keyframe) is not stale video, and the drone is still on the ground (pre-arm check).
        first_frame_wait_s: float = 10.0,
        camera: str = "front",
        meta: dict[str, Any] | None = None,
        attitude_at: Callable[[float], CameraAttitude] = lambda t_s: LEVEL_CAMERA,
    ) -> None:
        self.name = name
        self.source = source
        self.pose_at = pose_at
        self.attitude_at = attitude_at  # the camera's attitude at a frame's capture (AttitudeHistory.at)
        self.max_frame_age_s = max_frame_age_s
        self.freshness = FrameFreshness(max_frame_age_s)
        self.usable = usable
        self.stale_wait_s = stale_wait_s
        self.first_frame_wait_s = first_frame_wait_s
        self._had_frame = False
        self.camera = camera
        self.meta = meta or {}
        self.refused = 0

    def read(self) -> Frame:
        source = self.source()
        if source is None:
            raise VehicleError(f"{self.name}: no video source (not connected, or video off)")
        max_age = self.max_frame_age_s
        wait_s = self.stale_wait_s if self._had_frame else max(self.stale_wait_s, self.first_frame_wait_s)
        deadline = time.monotonic() + wait_s
        frame = source.latest()
        while frame is None or self.freshness.stale(frame.index, time.monotonic(), frame.arrival_s):
            self.refused += 1
            remaining = deadline - time.monotonic()
            unusable = self.usable()
            if remaining <= 0 or unusable:
                age = (
                    "no frame"
                    if frame is None
                    else f"newest frame {time.monotonic() - frame.arrival_s:.2f} s old"
                )
                why = f" and {unusable}" if unusable else ""
                raise VehicleError(f"{self.name}: video stale ({age} > max_frame_age_s={max_age}){why}")
            frame = source.wait_newer(-1 if frame is None else frame.index, min(0.5, remaining))
            frame = frame or source.latest()
        self._had_frame = True
        return Frame(
            image=frame.image_bgr,
            capture_time_s=frame.first_datagram_s,
            pose=self.pose_at(frame.first_datagram_s),
            camera=self.camera,
            meta={"frame_age_s": time.monotonic() - frame.arrival_s, "frame_index": frame.index, **self.meta},
            camera_attitude=self.attitude_at(frame.first_datagram_s),
        )
