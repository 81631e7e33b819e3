"""Scene images from AirSim (or the built-in simulator's AirSim-compatible server) via the real client.

SRC form: airsim://HOST:PORT/VEHICLE[/CAMERA]; CAMERA defaults to "0" (AirSim's front camera).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np

from calibration.errors import CalibrationError

log = logging.getLogger(__name__)

DEFAULT_PORT = 41451


@dataclass(frozen=True)
class AirSimCameraAddress:
    """One AirSim camera to read Scene images from: airsim://HOST:PORT/VEHICLE[/CAMERA]."""

    host: str
    port: int
    vehicle: str
    camera: str = "0"

    @classmethod
    def parse(cls, src: str) -> AirSimCameraAddress:
        parts = urlsplit(src)
        if parts.scheme != "airsim":
            raise CalibrationError(f"source {src!r}: expected airsim://HOST:PORT/VEHICLE[/CAMERA]")
        try:
            port = parts.port or DEFAULT_PORT
        except ValueError:
            raise CalibrationError(f"source {src!r}: port is not a number") from None
        path = [p for p in parts.path.split("/") if p]
        if not path or len(path) > 2:
            raise CalibrationError(f"source {src!r}: expected airsim://HOST:PORT/VEHICLE[/CAMERA]")
        return cls(parts.hostname or "127.0.0.1", port, path[0], path[1] if len(path) == 2 else "0")


def connect_client(target: AirSimCameraAddress, timeout_s: float = 30.0):  # -> airsim.VehicleClient
    """A connected `airsim.VehicleClient` (one per thread: the client is not thread-safe)."""
    import airsim

    try:
        client = airsim.VehicleClient(ip=target.host, port=target.port, timeout_value=timeout_s)
        # ping instead of confirmConnection, which prints to stdout.
        client.ping()
    except Exception as exc:  # msgpackrpc raises its own transport errors and timeouts
        raise CalibrationError(
            f"cannot reach AirSim at {target.host}:{target.port}: {type(exc).__name__}: {exc}"
        ) from None
    return client


def grab_scene(client, target: AirSimCameraAddress) -> np.ndarray:
    """One uncompressed Scene image (BGR uint8) from the target camera."""
    import airsim

    request = airsim.ImageRequest(target.camera, airsim.ImageType.Scene, False, False)
    try:
        (response,) = client.simGetImages([request], vehicle_name=target.vehicle)
    except Exception as exc:
        raise CalibrationError(
            f"simGetImages failed for camera {target.camera!r} of {target.vehicle!r}: {exc}"
        ) from None
    width, height = int(response.width), int(response.height)
    data = np.frombuffer(response.image_data_uint8, np.uint8)
    if width <= 0 or height <= 0 or data.size != width * height * 3:
        raise CalibrationError(
            f"AirSim returned {data.size} bytes for a {width}x{height} image from camera "
            f"{target.camera!r} of {target.vehicle!r} (expected {width * height * 3}: 3-byte BGR)"
        )
    return data.reshape(height, width, 3).copy()


class AirSimSource:
    """Frames from whatever the vehicle's camera sees; a live source (never ends by itself)."""

    live = True

    def __init__(self, target: AirSimCameraAddress, client=None) -> None:
        self.target = target
        self.description = f"airsim://{target.host}:{target.port}/{target.vehicle}/{target.camera}"
        self.client = client if client is not None else connect_client(target)

    def read(self) -> np.ndarray | None:
        return grab_scene(self.client, self.target)

    def close(self) -> None:
        self.client = None


def open_airsim_source(src: str) -> AirSimSource:
    return AirSimSource(AirSimCameraAddress.parse(src))
