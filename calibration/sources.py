"""Where calibration frames come from, chosen by the form of SRC (a registry keyed by URL scheme).

- "0", "1", …            an OpenCV capture device index
- rtsp://, rtmp://, http(s)://, udp://, or a file that is a video: OpenCV/FFmpeg capture
- a GStreamer pipeline (contains "!"): OpenCV's GStreamer backend, when this OpenCV build has one
- a folder: its images in name order (.png .jpg .jpeg .bmp .tif .tiff)
- airsim://HOST:PORT/VEHICLE[/CAMERA]: Scene images through the real `airsim` client
- tello://IP, or any other scheme: served by whichever distribution declares it in the
  `dronecats.camera_sources` entry points (pyproject.toml; common.schemes), as airsim:// is
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import numpy as np

from calibration.errors import CalibrationError
from common.schemes import CAMERA_SOURCES_GROUP, SchemeRegistry

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
_STREAM_SCHEMES = ("rtsp", "rtsps", "rtmp", "http", "https", "udp", "tcp", "srt")


class CalibrationSource(Protocol):
    """Frames as BGR uint8 arrays; `read()` returns None once the source has ended."""

    description: str
    # A live source never ends by itself: capture stops once enough views are collected.
    live: bool

    def read(self) -> np.ndarray | None: ...

    def close(self) -> None: ...


SourceFactory = Callable[[str], CalibrationSource]

# scheme -> factory(src), declared as entry points; a factory's module is imported when it is chosen
_SOURCES = SchemeRegistry("camera source", CAMERA_SOURCES_GROUP)


def open_source(src: str) -> CalibrationSource:
    src = src.strip()
    if re.fullmatch(r"\d+", src):
        return VideoCaptureSource(int(src), f"camera device {src}", live=True)
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", src)
    scheme = match.group(1).lower() if match else None
    factory: SourceFactory | None = _SOURCES.factory_for(scheme) if scheme is not None else None
    if factory is not None:
        return factory(src)
    if scheme == "tello":
        raise CalibrationError(
            f"source {src!r}: the Tello camera is not available yet: no 'tello' camera source is "
            f"declared (a Tello adapter declares one in the {CAMERA_SOURCES_GROUP!r} entry points)"
        )
    if scheme in _STREAM_SCHEMES:
        return VideoCaptureSource(src, f"stream {src}", live=True)
    if "!" in src:
        return _gstreamer_source(src)
    if scheme is not None:
        raise CalibrationError(
            f"source {src!r}: unknown scheme {scheme!r}; "
            f"known: {sorted(set(_SOURCES.schemes()) | set(_STREAM_SCHEMES))}"
        )
    path = Path(src)
    if path.is_dir():
        return FolderSource(path)
    if path.is_file():
        return VideoCaptureSource(str(path), f"video file {path}", live=False)
    raise CalibrationError(
        f"source {src!r}: not a device index, URL, GStreamer pipeline, folder or video file"
    )


def _gstreamer_source(pipeline: str) -> CalibrationSource:
    import cv2

    info = cv2.getBuildInformation()
    gst_line = next((line for line in info.splitlines() if "GStreamer:" in line), "")
    if "YES" not in gst_line:
        raise CalibrationError(
            "source looks like a GStreamer pipeline, but this OpenCV build has no GStreamer support "
            f"({gst_line.strip() or 'not listed'}); use an rtsp:// URL or an OpenCV built with GStreamer"
        )
    return VideoCaptureSource(pipeline, f"GStreamer pipeline {pipeline}", live=True, api=cv2.CAP_GSTREAMER)


class VideoCaptureSource:
    """cv2.VideoCapture on a device index, stream URL, video file or GStreamer pipeline."""

    def __init__(self, target: int | str, description: str, live: bool, api: int | None = None) -> None:
        import cv2

        self.description = description
        self.live = live
        self._cap = cv2.VideoCapture(target) if api is None else cv2.VideoCapture(target, api)
        if not self._cap.isOpened():
            self._cap.release()
            raise CalibrationError(f"cannot open {description} with OpenCV")
        # A live stream that stops delivering frames has ended for our purposes.
        self._failures = 0

    def read(self) -> np.ndarray | None:
        while True:
            ok, frame = self._cap.read()
            if ok and frame is not None:
                self._failures = 0
                return frame
            self._failures += 1
            if not self.live or self._failures >= 50:
                return None

    def close(self) -> None:
        self._cap.release()


class FolderSource:
    """Every image in a folder, in name order; unreadable files are skipped with a warning."""

    live = False

    def __init__(self, folder: Path) -> None:
        self.description = f"folder {folder}"
        self.paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not self.paths:
            raise CalibrationError(f"folder {folder} holds no images ({', '.join(IMAGE_SUFFIXES)})")
        self._iter: Iterator[Path] = iter(self.paths)
        self.current: Path | None = None

    def read(self) -> np.ndarray | None:
        import cv2

        for path in self._iter:
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                log.warning("skipping %s: not a readable image", path)
                continue
            self.current = path
            return image
        return None

    def close(self) -> None:
        self._iter = iter(())
