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
    """A thread that sends an encoded frame to `dest()` at fps, of the newest image `render()` gave.

    With `size` (width, height) every frame is scaled to it (a camera's fixed output, e.g. the
    Tello's 960x720) and rendering runs in its own thread as fast as it can up to fps: when the
    renderer is slower than the stream, frames repeat, as a real encoder repeats a stalled sensor;
    the renderer's real rate is logged every `rate_log_s` (and kept in `render_rate_hz`).
    Without `size` each frame is rendered in the sending thread (one render per frame)."""

    def __init__(
        self,
        render: Callable[[], np.ndarray],
        dest: Callable[[], tuple[str, int] | None],
        fps: float = 10.0,
        bind_ip: str = "127.0.0.1",
        name: str = "h264",
        size: tuple[int, int] | None = None,
        rate_log_s: float = 10.0,
    ) -> None:
        if not 0.5 <= fps <= 60:
            raise ValueError(f"video fps={fps} outside 0.5-60")
        self.render = render
        self.dest = dest
        self.period_s = 1.0 / fps
        self.fps = fps
        self.size = size
        self.rate_log_s = rate_log_s
        self.render_rate_hz: float | None = None
        self.renders = 0
        self._latest: np.ndarray | None = None
        self._latest_s = 0.0
        self._latest_lock = threading.Lock()
        self._render_thread = (
            threading.Thread(target=self._render_loop, name=f"{name}-render", daemon=True) if size else None
        )
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
        if self._render_thread is not None:
            self._render_thread.start()

    def set_fps(self, fps: float) -> None:
        if not 0.5 <= fps <= 60:
            raise ValueError(f"video fps={fps} outside 0.5-60")
        self.fps, self.period_s = fps, 1.0 / fps
        self._encoder = None  # the stream restarts with an IDR at the new rate

    def close(self) -> None:
        self._stop.set()
        for t in (self._thread, self._render_thread):
            if t is not None and t.is_alive():
                t.join(5.0)
        self.sock.close()

    def _scaled(self, image: np.ndarray) -> np.ndarray:
        if self.size is None or (image.shape[1], image.shape[0]) == self.size:
            return image
        import cv2

        return cv2.resize(image, self.size, interpolation=cv2.INTER_LINEAR)

    def _render_loop(self) -> None:
        window_start, window_renders = time.monotonic(), 0
        while not self._stop.is_set():
            if self.dest() is None or self.paused.is_set():
                self._stop.wait(0.05)
                continue
            t0 = time.monotonic()
            try:
                image = self._scaled(self.render())
            except Exception:
                self.errors += 1
                log.exception("video render failed")
                self._stop.wait(0.5)
                continue
            with self._latest_lock:
                self._latest, self._latest_s = image, t0
            self.renders += 1
            window_renders += 1
            now = time.monotonic()
            if now - window_start >= self.rate_log_s:
                self.render_rate_hz = window_renders / (now - window_start)
                log.info(
                    "video: rendering at %.1f Hz for a %.0f fps stream (frames repeat in between)",
                    self.render_rate_hz,
                    self.fps,
                )
                window_start, window_renders = now, 0
            spare = self.period_s - (now - t0)
            if spare > 0:
                self._stop.wait(spare)

    def _frame(self) -> tuple[np.ndarray | None, float]:
        if self._render_thread is None:
            t0 = time.monotonic()
            return self.render(), t0
        with self._latest_lock:
            return self._latest, self._latest_s

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
                image, t0 = self._frame()
                if image is None:
                    continue  # the first render is still running
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
