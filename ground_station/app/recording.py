"""Recording a drone's annotated view (the frame with the model's `go` ring, as its tile shows it) to
a video file, one video frame per frame received. Encoding runs on its own thread: the GUI thread
only renders the annotated frame into an image and hands over its pixels."""

from __future__ import annotations

import logging
import queue
import threading
from pathlib import Path
from typing import Any

import numpy as np
from PyQt6.QtGui import QImage

log = logging.getLogger(__name__)


def qimage_to_bgr(image: QImage) -> np.ndarray:
    rgb = image.convertToFormat(QImage.Format.Format_RGB888)
    width, height = rgb.width(), rgb.height()
    ptr = rgb.constBits()
    assert ptr is not None
    rows = np.frombuffer(ptr.asstring(rgb.sizeInBytes()), np.uint8).reshape(height, rgb.bytesPerLine())
    return np.ascontiguousarray(rows[:, : width * 3].reshape(height, width, 3)[:, :, ::-1])


class ViewRecorder:
    """An MJPG .avi (OpenCV's writer, no codec outside opencv-python-headless) at a fixed size."""

    def __init__(self, path: str | Path, width_px: int, height_px: int, fps: float = 5.0) -> None:
        import cv2

        if width_px < 16 or height_px < 16 or not 0.5 <= fps <= 60:
            raise ValueError(f"recording {width_px}x{height_px} at {fps} fps: need >= 16 px and 0.5-60 fps")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.size = (width_px - width_px % 2, height_px - height_px % 2)
        fourcc = cv2.VideoWriter.fourcc(*"MJPG")
        self.writer: Any = cv2.VideoWriter(str(self.path), fourcc, fps, self.size)
        if not self.writer.isOpened():
            raise OSError(f"cannot write a video to {self.path}")
        self.frames = 0
        self._queue: queue.Queue[np.ndarray | None] = queue.Queue(maxsize=50)
        self._thread = threading.Thread(target=self._run, name=f"record-{self.path.stem}", daemon=True)
        self._thread.start()

    def add(self, image: QImage) -> None:
        """One annotated frame (GUI thread); dropped when the encoder is 50 frames behind."""
        scaled = image.scaled(self.size[0], self.size[1])
        try:
            self._queue.put_nowait(qimage_to_bgr(scaled))
        except queue.Full:
            log.warning("recording %s: encoder behind, frame dropped", self.path)

    def _run(self) -> None:
        while True:
            frame = self._queue.get()
            if frame is None:
                break
            self.writer.write(frame)
            self.frames += 1

    def close(self) -> Path:
        self._queue.put(None)
        self._thread.join(timeout=10)
        self.writer.release()
        return self.path
