"""The project's Vehicle and Camera over the real `airsim` client (a real AirSim or `dronecats sim`).

URL: ``airsim://HOST:PORT/VEHICLE[?spawn=x,y,z,yaw_deg][&camera=0][&watchdog_s=0.25]``. AirSim reports
each vehicle's pose relative to its own spawn point; this adapter adds the spawn offset so that poses
are in the episode's shared world NED frame. The offset comes from `spawn=` or, when absent, from the
built-in simulator's `dcGetVehicleSpawn` extension (zero with a warning against a real AirSim).

The airsim client (msgpackrpc on Tornado) is not thread-safe and cannot run inside a running asyncio
loop, so every thread gets its own client (threading.local).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from common.checks import query_float, url_host_port
from common.errors import ConfigError, LinkError, VehicleError
from common.interfaces import Telemetry
from common.pose import Frame, Pose, wrap_deg

log = logging.getLogger(__name__)

DEFAULT_PORT = 41451
TAKEOFF_SPEED_M_S = 1.0
# AirSim's default camera mount differs per settings.json; the built-in sim's is 0.5 m ahead, 0.1 m below.
DEFAULT_CAMERA_OFFSET_FRD_M = (0.5, 0.0, 0.1)


@dataclass(frozen=True)
class AirSimTarget:
    host: str
    port: int
    vehicle: str
    spawn: Pose | None
    camera: str
    watchdog_s: float


def parse_airsim_url(url: str) -> AirSimTarget:
    parts = urlsplit(url)
    if parts.scheme != "airsim":
        raise ConfigError(f"not an airsim:// URL: {url!r}")
    query = parse_qs(parts.query)
    host, port = url_host_port(url, parts, "127.0.0.1", DEFAULT_PORT)
    spawn = None
    if "spawn" in query:
        try:
            values = [float(v) for v in query["spawn"][0].split(",")]
        except ValueError:
            raise ConfigError(
                f"{url!r}: spawn must be x,y,z[,yaw_deg] in metres, got {query['spawn'][0]!r}"
            ) from None
        if len(values) not in (3, 4):
            raise ConfigError(f"{url!r}: spawn needs 3 or 4 numbers, got {len(values)}")
        if not all(math.isfinite(v) for v in values):
            raise ConfigError(f"{url!r}: spawn {query['spawn'][0]!r} must be finite numbers")
        spawn = Pose(values[0], values[1], values[2], values[3] if len(values) == 4 else 0.0)
    watchdog_s = query_float(url, {k: v[0] for k, v in query.items()}, "watchdog_s", 0.25, 0.02, 2.0)
    return AirSimTarget(
        host=host,
        port=port,
        vehicle=parts.path.strip("/"),
        spawn=spawn,
        camera=query.get("camera", ["0"])[0],
        watchdog_s=watchdog_s,
    )


class _Clients(threading.local):
    client: Any = None


class AirSimVehicle:
    """Vehicle over airsim.MultirotorClient; `camera()` gives the matching Camera."""

    def __init__(self, target: AirSimTarget, timeout_s: float = 3600.0) -> None:
        self.target = target
        self.name = target.vehicle
        self._timeout_s = timeout_s
        self._local = _Clients()
        self._spawn: Pose | None = target.spawn
        self._armed = False
        self._connected = False

    # ---- plumbing
    def _client(self) -> Any:
        c = self._local.client
        if c is None:
            import airsim  # heavy (tornado, msgpackrpc): only when a vehicle is used

            c = airsim.MultirotorClient(
                ip=self.target.host, port=self.target.port, timeout_value=self._timeout_s
            )
            # an *Async call as a client's first call is only queued until the IOLoop runs: ping first
            try:
                c.ping()
            except Exception as exc:
                raise LinkError(
                    f"no AirSim RPC server at {self.target.host}:{self.target.port}: {exc}"
                ) from exc
            self._local.client = c
        return c

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return self._client().client.call(method, *args)
        except LinkError:
            raise
        except Exception as exc:
            raise VehicleError(f"{self.name}: {method} failed: {exc}") from exc

    @property
    def spawn(self) -> Pose:
        if self._spawn is None:
            try:
                d = self._client().client.call("dcGetVehicleSpawn", self.name)
                p, q = d["position"], d["orientation"]
                yaw = math.degrees(
                    math.atan2(
                        2 * (q["w_val"] * q["z_val"] + q["x_val"] * q["y_val"]),
                        1 - 2 * (q["y_val"] ** 2 + q["z_val"] ** 2),
                    )
                )
                self._spawn = Pose(float(p["x_val"]), float(p["y_val"]), float(p["z_val"]), yaw)
            except Exception as exc:  # a real AirSim has no dc* extensions
                log.warning(
                    "%s: spawn offset unknown (%s); using zero (give ?spawn=x,y,z in the URL)", self.name, exc
                )
                self._spawn = Pose(0.0, 0.0, 0.0, 0.0)
        return self._spawn

    def _to_world(self, x: float, y: float, z: float) -> tuple[float, float, float]:
        s = self.spawn
        return (x + s.x_m, y + s.y_m, z + s.z_m)

    # ---- Vehicle
    def connect(self) -> None:
        c = self._client()
        ok = c.ping()
        if not ok:
            raise LinkError(f"{self.target.host}:{self.target.port} did not answer ping")
        if self.name and self.name not in c.listVehicles():
            raise VehicleError(
                f"vehicle {self.name!r} not in {c.listVehicles()} at {self.target.host}:{self.target.port}"
            )
        c.enableApiControl(True, self.name)
        _ = self.spawn
        self._connected = True

    def arm(self) -> None:
        if not self._client().armDisarm(True, self.name):
            raise VehicleError(f"{self.name}: arming refused (is API control enabled?)")
        self._armed = True

    def takeoff(self, altitude_m: float) -> None:
        c = self._client()
        f = c.takeoffAsync(vehicle_name=self.name)
        f.join()
        if getattr(f, "error", None):
            raise VehicleError(f"{self.name}: takeoff failed: {f.error}")
        f = c.moveToZAsync(-float(altitude_m), TAKEOFF_SPEED_M_S, vehicle_name=self.name)
        f.join()
        if getattr(f, "error", None):
            raise VehicleError(f"{self.name}: climb to {altitude_m} m failed: {f.error}")

    def land(self) -> None:
        f = self._client().landAsync(vehicle_name=self.name)
        f.join()
        if getattr(f, "error", None):
            raise VehicleError(f"{self.name}: landing failed: {f.error}")

    def _send_now(self, future: Any) -> None:
        """Push a fire-and-forget request onto the wire without waiting for its reply.

        rpc-msgpack's call_async only schedules an asyncio task that writes the request; it runs when the
        client's loop next spins (the next blocking call), so an unjoined setpoint would otherwise sit in
        the client until the following telemetry poll. Running the loop until that write task is done
        sends it now. (msgpack-rpc-python on Tornado 4 writes synchronously and has no task: nothing to do.)
        """
        task = getattr(future, "task", None)
        if task is not None and not task.done():
            self._client().client._loop._asyncio_loop.run_until_complete(task)

    def hold(self) -> None:
        # hover preempts the running motion; the reply is not awaited
        self._send_now(self._client().hoverAsync(vehicle_name=self.name))

    def send_velocity_body(
        self, forward_m_s: float, right_m_s: float, up_m_s: float, yaw_rate_deg_s: float
    ) -> None:
        import airsim

        future = self._client().moveByVelocityBodyFrameAsync(
            float(forward_m_s),
            float(right_m_s),
            -float(up_m_s),
            float(self.target.watchdog_s),
            airsim.DrivetrainType.MaxDegreeOfFreedom,
            airsim.YawMode(True, float(yaw_rate_deg_s)),
            vehicle_name=self.name,
        )
        self._send_now(future)

    def telemetry(self) -> Telemetry:
        try:
            state = self._client().getMultirotorState(self.name)
        except LinkError:
            raise
        except Exception as exc:
            raise LinkError(f"{self.name}: getMultirotorState failed: {exc}") from exc
        k = state.kinematics_estimated
        p, q, v = k.position, k.orientation, k.linear_velocity
        yaw = math.degrees(
            math.atan2(2 * (q.w_val * q.z_val + q.x_val * q.y_val), 1 - 2 * (q.y_val**2 + q.z_val**2))
        )
        x, y, z = self._to_world(p.x_val, p.y_val, p.z_val)
        return Telemetry(
            time_s=float(state.timestamp) / 1e9,
            pose=Pose(x, y, z, wrap_deg(yaw)),
            velocity_ned_m_s=(float(v.x_val), float(v.y_val), float(v.z_val)),
            battery_fraction=None,
            link_ok=True,
            armed=self._armed,
            landed=int(state.landed_state) == 0,
            collided=bool(state.collision.has_collided),
        )

    def camera(self) -> AirSimCamera:
        return AirSimCamera(self)

    def close(self) -> None:
        # Each thread's client closes with its socket; dropping ours is enough (msgpackrpc has no close()).
        c = self._local.client
        if c is not None:
            try:
                c.client.close()
            except Exception:
                log.debug("closing the airsim client failed", exc_info=True)
            self._local.client = None


class AirSimCamera:
    """Camera.read(): one raw BGR Scene image, stamped with its sim time (the response's time_stamp,
    as capture_time_s in seconds and meta["time_stamp_ns"]) and the vehicle pose at capture."""

    def __init__(
        self,
        vehicle: AirSimVehicle,
        camera_offset_frd_m: tuple[float, float, float] = DEFAULT_CAMERA_OFFSET_FRD_M,
    ) -> None:
        self.vehicle = vehicle
        self.offset = np.asarray(camera_offset_frd_m, float)

    def read(self) -> Frame:
        import airsim

        v = self.vehicle
        t0 = time.monotonic()
        responses = v._client().simGetImages(
            [airsim.ImageRequest(v.target.camera, airsim.ImageType.Scene, False, False)], vehicle_name=v.name
        )
        if not responses:
            raise VehicleError(f"{v.name}: simGetImages returned no image")
        r = responses[0]
        data = np.frombuffer(r.image_data_uint8, np.uint8)
        if r.width <= 0 or data.size != r.width * r.height * 3:
            raise VehicleError(f"{v.name}: image of {data.size} bytes does not match {r.width}x{r.height}x3")
        image = data.reshape(r.height, r.width, 3).copy()
        # The camera pose is world NED (AirSim's world API); the vehicle pose is the camera's minus its mount.
        q = r.camera_orientation
        yaw = math.degrees(
            math.atan2(2 * (q.w_val * q.z_val + q.x_val * q.y_val), 1 - 2 * (q.y_val**2 + q.z_val**2))
        )
        c, s = math.cos(math.radians(yaw)), math.sin(math.radians(yaw))
        ox, oy, oz = self.offset
        cam = r.camera_position
        pose = Pose(
            float(cam.x_val - (c * ox - s * oy)),
            float(cam.y_val - (s * ox + c * oy)),
            float(cam.z_val - oz),
            wrap_deg(yaw),
        )
        return Frame(
            image=image,
            capture_time_s=float(r.time_stamp) / 1e9,
            pose=pose,
            camera=v.target.camera,
            # The simulator's own image clock: the runtime judges staleness on it (a paused or stuck
            # simulator keeps serving the same stamp), not on when the image was read.
            meta={"read_wall_s": time.monotonic() - t0, "time_stamp_ns": int(r.time_stamp)},
        )


def open_airsim_vehicle(url: str) -> AirSimVehicle:
    """Registered in common.interfaces for the airsim:// scheme."""
    return AirSimVehicle(parse_airsim_url(url))
