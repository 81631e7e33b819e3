"""The project's Vehicle and Camera over a real AirSim client (a real AirSim, Cosys-AirSim, or
`dronecats sim`), with stock AirSim RPC only.

URL: ``airsim://HOST:PORT/VEHICLE[?spawn=x,y,z][&camera=0][&watchdog_s=0.25][&api=airsim|cosys|auto]
[&silence_land_s=5]``.

- `api`: which client generation speaks to the server: `airsim` (the `airsim` 1.x package),
  `cosys` (the `cosysairsim` package: Cosys-AirSim's argument counts), or `auto` (default): the
  server's getServerVersion, below 4 -> AirSim 1.x, 4 and above -> Cosys-AirSim.
- AirSim reports a vehicle's pose, and its camera poses, relative to the vehicle's spawn point; this
  adapter adds the spawn offset once, so that telemetry and frame poses are in the episode's shared
  world NED frame. The offset is `spawn=` or else simGetObjectPose(vehicle) - simGetVehiclePose(vehicle)
  (position only: a vehicle's local axes are the world's).
- Lock-step (`lockstep = True`, set by episodes.hil): the server is paused and a driver advances it
  with simContinueForTime (`continue_for_time`, on this thread's connection, so that the commands sent
  before it are applied before the time runs); take-off then only starts the climb.
- Time line: telemetry, frame and `sim_time_s` times are the server's nanosecond stamps less
  `epoch_ns` (0: the server's own clock). Lock-step sets it to the stamp at the episode's start, so the
  episode runs from 0 whatever the server's clock read: the integer difference is exact, whereas
  float seconds of a server that has run for hours round every sum differently.
- E-stop: `emergency_stop()` disarms (armDisarm(False)), the stock RPC's only way to stop the motors.
- The vehicle's own last resort, for when onboard itself dies: on connect the adapter asks the built-in
  simulator to land the vehicle after `silence_land_s` (default 5 s, 0: don't ask) in the air without a
  command (dcSetSilenceLanding, sim_bridge.rpc.silence). The bound sits above the onboard stalls the
  runtime rides out. A stock AirSim has no such call: rpclib answers "could not find function", the
  adapter logs once that the vehicle will hover if onboard dies, and flies on. `has_silence_landing`
  says which it got.

The airsim clients (msgpackrpc) are not thread-safe and cannot run inside a running asyncio loop, so
every thread gets its own client (threading.local).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec
import numpy as np

from common.checks import query_float, url_host_port
from common.errors import ConfigError, LinkError, VehicleError
from common.frames import Quat, forward_right_to_north_east, quaternion_euler_deg, yaw_from_ned_quat
from common.interfaces import Telemetry, Vehicle
from common.obstacles import Obstacle
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose, wrap_deg
from common.silence import check_silence_s  # the server's own bound, shared with it
from common.spawn import parse_spawn

log = logging.getLogger(__name__)

DEFAULT_PORT = 41451
TAKEOFF_SPEED_M_S = 1.0
# AirSim's default camera mount differs per settings.json; the built-in sim's is 0.5 m ahead, 0.1 m below.
DEFAULT_CAMERA_OFFSET_FRD_M = (0.5, 0.0, 0.1)
APIS = ("airsim", "cosys", "auto")
COSYS_MIN_SERVER_VERSION = 4  # Cosys-AirSim servers report 4 and up; AirSim 1.x reports 1
CLIENT_PACKAGES = {"airsim": "airsim", "cosys": "cosysairsim"}
SILENCE_LAND_S = 5.0  # the built-in simulator lands a vehicle this long without a command
NO_SUCH_FUNCTION = "could not find function"  # rpclib's answer for a method the server does not have


def client_module(api: str) -> ModuleType:
    """The client package of an api generation (airsim or cosys), imported on first use."""
    import importlib

    name = CLIENT_PACKAGES[api]
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(
            f"api={api} needs the {name!r} package (installed by scripts/setup_env.sh): {exc}"
        ) from None


def resolve_api(api: str, host: str, port: int, timeout_s: float = 30.0) -> str:
    """`auto` -> airsim or cosys by the server's getServerVersion; others as given."""
    if api != "auto":
        return api
    import msgpackrpc

    client = msgpackrpc.Client(
        msgpackrpc.Address(host, port), timeout=timeout_s, pack_encoding="utf-8", unpack_encoding="utf-8"
    )
    try:
        version = int(client.call("getServerVersion"))
    except Exception as exc:
        raise LinkError(f"no AirSim RPC server at {host}:{port}: {exc}") from exc
    finally:
        try:
            client.close()
        except Exception:
            log.debug("closing the version probe failed", exc_info=True)
    chosen = "cosys" if version >= COSYS_MIN_SERVER_VERSION else "airsim"
    log.info("%s:%d reports server version %d: api=%s", host, port, version, chosen)
    return chosen


def wxyz(q: Any) -> Quat:
    """An airsim Quaternionr as common.frames' (w, x, y, z) floats."""
    return (float(q.w_val), float(q.x_val), float(q.y_val), float(q.z_val))


@dataclass(frozen=True)
class AirSimTarget:
    host: str
    port: int
    vehicle: str
    spawn: Pose | None
    camera: str
    watchdog_s: float
    api: str = "auto"
    silence_land_s: float = SILENCE_LAND_S  # 0: do not arm the simulator's command-silence landing


AIRSIM_URL_OPTIONS = {"api", "camera", "silence_land_s", "spawn", "watchdog_s"}


def parse_airsim_url(url: str) -> AirSimTarget:
    parts = urlsplit(url)
    if parts.scheme != "airsim":
        raise ConfigError(f"not an airsim:// URL: {url!r}")
    query = parse_qs(parts.query)
    unknown = sorted(set(query) - AIRSIM_URL_OPTIONS)
    if unknown:  # a misspelt option (watchdg_s) must not fly on the default it meant to change
        raise ConfigError(
            f"{url!r}: unknown option(s) {unknown} (known: {', '.join(sorted(AIRSIM_URL_OPTIONS))})"
        )
    host, port = url_host_port(url, parts, "127.0.0.1", DEFAULT_PORT)
    spawn = parse_spawn(url, {k: v[0] for k, v in query.items()}) if "spawn" in query else None
    watchdog_s = query_float(url, {k: v[0] for k, v in query.items()}, "watchdog_s", 0.25, 0.02, 2.0)
    flat = {k: v[0] for k, v in query.items()}
    silence_land_s = query_float(url, flat, "silence_land_s", SILENCE_LAND_S, 0.0, 3600.0)
    try:
        check_silence_s(silence_land_s)
    except ConfigError as exc:
        raise ConfigError(f"{url!r}: silence_land_s: {exc}") from None
    api = query.get("api", ["auto"])[0]
    if api not in APIS:
        raise ConfigError(f"{url!r}: api={api!r} is not one of {', '.join(APIS)}")
    return AirSimTarget(
        host=host,
        port=port,
        vehicle=parts.path.strip("/"),
        spawn=spawn,
        camera=query.get("camera", ["0"])[0],
        watchdog_s=watchdog_s,
        api=api,
        silence_land_s=silence_land_s,
    )


class ThreadClients(threading.local):
    """One airsim client per thread: msgpackrpc clients are not thread-safe."""

    client: Any = None

    def close(self) -> None:
        """Close this thread's client, if it has one; each other thread's closes with its socket."""
        c = self.client
        if c is not None:
            try:
                c.client.close()
            except Exception:
                log.debug("closing an airsim client failed", exc_info=True)
            self.client = None


class AirSimVehicle(Vehicle):
    """Vehicle over airsim.MultirotorClient; `camera()` gives the matching Camera."""

    def __init__(self, target: AirSimTarget, timeout_s: float = 3600.0) -> None:
        self.target = target
        self.name = target.vehicle
        self._timeout_s = timeout_s
        self._local = ThreadClients()
        self._spawn: Pose | None = target.spawn
        self._armed = False
        self._collision_baseline_ns: int | None = None  # the collision time stamp when first asked
        self._collision_stamp_ns: int | None = None  # the newest collision's, and what it hit
        self._collided_with = ""
        self._connected = False
        self._api: str | None = None if target.api == "auto" else target.api
        self.lockstep = False  # episodes.hil: the server is paused and advanced by a driver
        self.epoch_ns = 0  # the server stamp that is time 0 of this adapter's times (module docstring)
        self.segmentation = False  # camera reads add a Segmentation image (point-on-target)
        self.has_silence_landing: bool | None = None  # known once connected (and asked)
        self.has_obstacles: bool | None = None  # known at the first known_obstacles()

    # ---- plumbing
    @property
    def api(self) -> str:
        """airsim or cosys (auto resolved on first use)."""
        if self._api is None:
            self._api = resolve_api(self.target.api, self.target.host, self.target.port)
        return self._api

    @property
    def module(self) -> ModuleType:
        return client_module(self.api)

    def _client(self) -> Any:
        c = self._local.client
        if c is None:
            c = self.module.MultirotorClient(
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

    def client(self) -> Any:
        """This thread's client (airsim or cosysairsim MultirotorClient) on its own connection."""
        return self._client()

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return self._client().client.call(method, *args)
        except LinkError:
            raise
        except Exception as exc:
            raise VehicleError(f"{self.name}: {method} failed: {exc}") from exc

    @property
    def spawn(self) -> Pose:
        """The vehicle's spawn in the world NED frame: the offset between its world pose
        (simGetObjectPose, the world API) and its local pose (simGetVehiclePose, the vehicle API)."""
        if self._spawn is None:
            self._spawn = spawn_offset(self._client(), self.name)
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
        self._arm_silence_landing()
        self._connected = True

    def _arm_silence_landing(self) -> None:
        """dcSetSilenceLanding where the server has it (see the module docstring)."""
        bound_s = self.target.silence_land_s
        if bound_s <= 0:
            return
        try:
            armed_s = float(self._client().client.call("dcSetSilenceLanding", self.name, bound_s))
        except Exception as exc:
            if NO_SUCH_FUNCTION not in str(exc):
                raise VehicleError(f"{self.name}: dcSetSilenceLanding({bound_s:g}) failed: {exc}") from exc
            self.has_silence_landing = False
            log.warning(
                "%s: the server has no command-silence landing (a stock AirSim): if onboard dies in "
                "flight the vehicle hovers where it is",
                self.name,
            )
            return
        self.has_silence_landing = True
        log.info("%s: the simulator lands the vehicle after %g s without a command", self.name, armed_s)

    @property
    def is_connected(self) -> bool:
        return self._connected

    def arm(self) -> None:
        if not self._client().armDisarm(True, self.name):
            raise VehicleError(f"{self.name}: arming refused (is API control enabled?)")
        self._armed = True

    def emergency_stop(self) -> None:
        """Motors off: AirSim's RPC has no kill command; disarming is its closest equivalent (the
        flight controller stops driving the rotors wherever the vehicle is)."""
        if not self._client().armDisarm(False, self.name):
            raise VehicleError(f"{self.name}: disarming refused (is API control enabled?)")
        self._armed = False

    def takeoff(self, altitude_m: float) -> None:
        c = self._client()
        if self.lockstep:
            # The server is paused: start the climb (as the in-process take-off does) and let the
            # lock-step driver advance time until it is up. Straight up from here, holding the heading.
            pose = c.simGetVehiclePose(self.name)
            yaw = yaw_from_ned_quat(*wxyz(pose.orientation))
            future = c.moveToZAsync(
                float(pose.position.z_val) - float(altitude_m),
                TAKEOFF_SPEED_M_S,
                yaw_mode=self.module.YawMode(False, yaw),
                vehicle_name=self.name,
            )
            self._send_now(future)
            return
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
        mod = self.module
        future = self._client().moveByVelocityBodyFrameAsync(
            float(forward_m_s),
            float(right_m_s),
            -float(up_m_s),
            float(self.target.watchdog_s),
            mod.DrivetrainType.MaxDegreeOfFreedom,
            mod.YawMode(True, float(yaw_rate_deg_s)),
            vehicle_name=self.name,
        )
        self._send_now(future)

    # ---- simulation time (lock-step over RPC; stock simPause / simContinueForTime)
    def pause(self, paused: bool) -> None:
        self._client().simPause(bool(paused))

    def continue_for_time(self, duration_s: float) -> None:
        """Run the paused server for duration_s of simulation time (returns when it has run)."""
        self._client().simContinueForTime(float(duration_s))

    def sim_stamp_ns(self) -> int:
        """The server's simulation time as it stamps it (ns): the vehicle state's time stamp."""
        return int(self._client().getMultirotorState(self.name).timestamp)

    def sim_time_s(self) -> float:
        """The server's simulation time on this adapter's time line (since `epoch_ns`)."""
        return self._seconds(self.sim_stamp_ns())

    def _seconds(self, stamp_ns: Any) -> float:
        """A server stamp (ns) on this adapter's time line: the integer difference first (exact)."""
        return (int(stamp_ns) - self.epoch_ns) / 1e9

    def telemetry(self) -> Telemetry:
        try:
            state = self._client().getMultirotorState(self.name)
        except LinkError:
            raise
        except Exception as exc:
            raise LinkError(f"{self.name}: getMultirotorState failed: {exc}") from exc
        collided, collided_with = self._collided()
        k = state.kinematics_estimated
        p, q, v = k.position, k.orientation, k.linear_velocity
        yaw = yaw_from_ned_quat(*wxyz(q))
        x, y, z = self._to_world(p.x_val, p.y_val, p.z_val)
        return Telemetry(
            time_s=self._seconds(state.timestamp),
            pose=Pose(x, y, z, wrap_deg(yaw)),
            velocity_ned_m_s=(float(v.x_val), float(v.y_val), float(v.z_val)),
            # AirSim's (and Cosys-AirSim's) RPC carries no battery: getMultirotorState has none and
            # neither client has a battery method (the built-in simulator's pack is reported over
            # its MAVLink and Tello emulators)
            battery_fraction=None,
            link_ok=True,
            armed=self._armed,
            landed=int(state.landed_state) == 0,
            collided=collided,
            collided_with=collided_with,
        )

    def _collided(self) -> tuple[bool, str]:
        """A collision since this adapter first asked. AirSim's getMultirotorState never fills its
        collision field, and simGetCollisionInfo clears has_collided once read (any client may have read
        it): a collision time stamp newer than the first one seen is the lasting evidence. With it, what
        was hit (the info of the newest collision: object name and impact point)."""
        try:
            info = self._client().simGetCollisionInfo(self.name)
            stamp = int(info.time_stamp)
        except LinkError:
            raise
        except Exception as exc:
            raise LinkError(f"{self.name}: simGetCollisionInfo failed: {exc}") from exc
        if self._collision_baseline_ns is None:
            self._collision_baseline_ns = stamp
        if stamp <= self._collision_baseline_ns:
            return False, ""
        if stamp != self._collision_stamp_ns:
            p = info.impact_point
            self._collision_stamp_ns = stamp
            self._collided_with = (
                f"{info.object_name or 'something'} at ({p.x_val:.2f}, {p.y_val:.2f}, {p.z_val:.2f})"
            )
        return True, self._collided_with

    def known_obstacles(self) -> list[Obstacle]:
        """The built-in simulator's cars and people (dcGetObstacles), world NED; none from a stock
        AirSim, which has no object heights to tell (said once: the floor is then the only clearance)."""
        if self.has_obstacles is False:
            return []
        try:
            raw = self._client().client.call("dcGetObstacles")
        except Exception as exc:
            if NO_SUCH_FUNCTION not in str(exc):
                raise VehicleError(f"{self.name}: dcGetObstacles failed: {exc}") from exc
            self.has_obstacles = False
            log.info(
                "%s: the server reports no obstacles (a stock AirSim): only the floor keeps clear",
                self.name,
            )
            return []
        self.has_obstacles = True
        try:
            return msgspec.convert(raw, list[Obstacle])
        except msgspec.ValidationError as exc:
            raise VehicleError(f"{self.name}: dcGetObstacles gave a malformed list: {exc}") from None

    def camera(self) -> AirSimCamera:
        return AirSimCamera(self)

    def close(self) -> None:
        self._connected = False
        self._local.close()


def spawn_offset(client: Any, vehicle: str) -> Pose:
    """simGetObjectPose(vehicle) - simGetVehiclePose(vehicle): where the vehicle's local frame sits in
    the world (stock calls; both poses taken back to back, the vehicle need not be still)."""
    world = client.simGetObjectPose(vehicle).position
    local = client.simGetVehiclePose(vehicle).position
    values = [world.x_val - local.x_val, world.y_val - local.y_val, world.z_val - local.z_val]
    if not all(math.isfinite(v) for v in values):
        raise VehicleError(
            f"{vehicle}: simGetObjectPose({vehicle!r}) has no pose (the server does not list the vehicle "
            "as a scene object): give its spawn in the URL, ?spawn=x,y,z"
        )
    return Pose(float(values[0]), float(values[1]), float(values[2]), 0.0)


class AirSimCamera:
    """Camera.read(): one raw BGR Scene image, stamped with its sim time (the response's time_stamp,
    as capture_time_s in seconds on the vehicle's time line and as the server's meta["time_stamp_ns"]),
    the vehicle pose at capture and the camera's attitude (Frame.camera_attitude: its pitch and roll
    from the response's camera pose).
    With `vehicle.segmentation`, the same simGetImages request also takes a raw Segmentation image,
    kept in `Frame.meta["segmentation"]` (BGR) for point-on-target questions about this very frame."""

    def __init__(
        self,
        vehicle: AirSimVehicle,
        camera_offset_frd_m: tuple[float, float, float] = DEFAULT_CAMERA_OFFSET_FRD_M,
    ) -> None:
        self.vehicle = vehicle
        self.offset = np.asarray(camera_offset_frd_m, float)

    def read(self) -> Frame:
        v = self.vehicle
        mod = v.module
        t0 = time.monotonic()
        requests = [mod.ImageRequest(v.target.camera, mod.ImageType.Scene, False, False)]
        if v.segmentation:
            requests.append(mod.ImageRequest(v.target.camera, mod.ImageType.Segmentation, False, False))
        responses = v._client().simGetImages(requests, vehicle_name=v.name)
        if len(responses) != len(requests):
            raise VehicleError(
                f"{v.name}: simGetImages returned {len(responses)} images, asked {len(requests)}"
            )
        r = responses[0]
        image = _bgr(r, v.name)
        # The camera pose is relative to the vehicle's spawn (as AirSim reports it): add the spawn
        # offset for the world pose; the vehicle pose is the camera's minus its mount. The frame's
        # heading is the camera's; its pitch and roll (a body-fixed camera on a tilted body) go with
        # the frame, for the controller's projection of a `go` point.
        yaw, attitude = camera_heading_attitude(r.camera_orientation)
        ox, oy, oz = self.offset
        if not attitude.level:  # the mount arm turns with the tilted camera
            ox, oy, oz = attitude.to_heading_frame(float(ox), float(oy), float(oz))
        arm_north, arm_east = forward_right_to_north_east(ox, oy, yaw)
        at = r.camera_position
        cam_x, cam_y, cam_z = v._to_world(at.x_val, at.y_val, at.z_val)
        pose = Pose(float(cam_x - arm_north), float(cam_y - arm_east), float(cam_z - oz), wrap_deg(yaw))
        # The simulator's own image clock: the runtime judges staleness on it (a paused or stuck
        # simulator keeps serving the same stamp), not on when the image was read.
        meta: dict[str, Any] = {"read_wall_s": time.monotonic() - t0, "time_stamp_ns": int(r.time_stamp)}
        if v.segmentation:
            meta["segmentation"] = _bgr(responses[1], v.name)
        return Frame(
            image=image,
            capture_time_s=v._seconds(r.time_stamp),
            pose=pose,
            camera=v.target.camera,
            meta=meta,
            camera_attitude=attitude,
        )


def camera_heading_attitude(q: Any) -> tuple[float, CameraAttitude]:
    """A camera pose's orientation (airsim Quaternionr) as its heading (deg) and its attitude at
    that heading (pitch and roll; a level camera's is exactly LEVEL_CAMERA)."""
    yaw = yaw_from_ned_quat(*wxyz(q))
    roll, pitch, _ = quaternion_euler_deg(*wxyz(q))
    if roll == 0.0 and pitch == 0.0:
        return yaw, LEVEL_CAMERA
    return yaw, CameraAttitude(roll, pitch, 0.0)


def _bgr(response: Any, vehicle: str) -> np.ndarray:
    """A raw (uncompressed) ImageResponse as an HxWx3 array."""
    data = np.frombuffer(response.image_data_uint8, np.uint8)
    if response.width <= 0 or data.size != response.width * response.height * 3:
        raise VehicleError(
            f"{vehicle}: image of {data.size} bytes does not match {response.width}x{response.height}x3"
        )
    return data.reshape(response.height, response.width, 3).copy()


def open_airsim_vehicle(url: str) -> AirSimVehicle:
    """Registered in common.interfaces for the airsim:// scheme."""
    return AirSimVehicle(parse_airsim_url(url))
