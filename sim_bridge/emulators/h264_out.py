"""Render a simulated camera and stream it as raw H.264 (Annex-B) in UDP datagrams, as a Tello does.

libx264 through PyAV: zerolatency, ultrafast, a short GOP and `repeat-headers` so that SPS/PPS precede
every IDR frame and a receiver that joins late can start. Each encoded access unit is cut into
datagrams of at most 1460 bytes; a shorter datagram ends the unit (the Tello convention receivers
rely on to find frame boundaries without a parser).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

log = logging.getLogger(__name__)

DATAGRAM_BYTES = 1460


@dataclass
class SentFrame:
    index: int
    render_wall_s: float  # time.monotonic() when the image was rendered
    sent_wall_s: float
    bytes: int


class H264Encoder:
    def __init__(self, width_px: int, height_px: int, fps: float, gop: int = 15) -> None:
        import av  # heavy: only when a stream is started

        self.codec = av.CodecContext.create("libx264", "w")
        self.codec.width = width_px - width_px % 2
        self.codec.height = height_px - height_px % 2
        self.codec.pix_fmt = "yuv420p"
        self.codec.time_base = Fraction(1, max(1, round(fps)))
        self.codec.framerate = Fraction(max(1, round(fps)), 1)
        self.codec.gop_size = gop
        self.codec.options = {
            "preset": "ultrafast",
            "tune": "zerolatency",
            "x264-params": f"repeat-headers=1:keyint={gop}:min-keyint={gop}:bframes=0",
        }
        self._pts = 0

    def encode_bgr(self, image_bgr: np.ndarray) -> bytes:
        import av

        h, w = self.codec.height, self.codec.width
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image_bgr[:h, :w]), format="bgr24")
        frame = frame.reformat(format="yuv420p")
        frame.pts = self._pts
        self._pts += 1
        return b"".join(bytes(p) for p in self.codec.encode(frame))


class H264Streamer:
    """A thread that renders with `render()` at fps and sends each encoded frame to `dest()`."""

    def __init__(
        self,
        render: Callable[[], np.ndarray],
        dest: Callable[[], tuple[str, int] | None],
        fps: float = 10.0,
        bind_ip: str = "127.0.0.1",
        name: str = "h264",
    ) -> None:
        if not 0.5 <= fps <= 60:
            raise ValueError(f"video fps={fps} outside 0.5-60")
        self.render = render
        self.dest = dest
        self.period_s = 1.0 / fps
        self.fps = fps
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((bind_ip, 0))
        self.sent: deque[SentFrame] = deque(maxlen=2000)
        self.paused = threading.Event()  # set: render nothing, send nothing (the "video stops" fault)
        self._stop = threading.Event()
        self._encoder: H264Encoder | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.errors = 0

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)
        self.sock.close()

    def _run(self) -> None:
        next_s = time.monotonic()
        index = 0
        while not self._stop.is_set():
            now = time.monotonic()
            if now < next_s:
                self._stop.wait(next_s - now)
                continue
            next_s = max(next_s + self.period_s, time.monotonic())
            dest = self.dest()
            if dest is None or self.paused.is_set():
                # a stream that (re)starts begins with a fresh encoder: an IDR first, frame index 0
                self._encoder = None
                index = 0
                continue
            try:
                t0 = time.monotonic()
                image = self.render()
                if self._encoder is None:
                    self._encoder = H264Encoder(image.shape[1], image.shape[0], self.fps)
                data = self._encoder.encode_bgr(image)
                if not data:
                    continue
                for i in range(0, len(data), DATAGRAM_BYTES):
                    self.sock.sendto(data[i : i + DATAGRAM_BYTES], dest)
                if len(data) % DATAGRAM_BYTES == 0:
                    # a unit of an exact multiple would not end in a short datagram: end it explicitly
                    self.sock.sendto(b"\x00\x00\x00\x01\x09\xf0", dest)  # access unit delimiter NAL
                self.sent.append(SentFrame(index, t0, time.monotonic(), len(data)))
                index += 1
            except Exception:
                self.errors += 1
                log.exception("video frame failed")
