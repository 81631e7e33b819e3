"""The HIL path: an episode flown against an AirSim-compatible server (AirSim, Cosys-AirSim or
`dronecats sim`, strict or not) through a real AirSim client, with stock AirSim RPC only — the same
OnboardRuntime as the lock-step path, with the airsim:// Vehicle/Camera adapters and RemoteTruth
instead of the in-process ones.

`--sim airsim://HOST:PORT[?api=airsim|cosys|auto][&assets=MAP][&lockstep=1][&spawn=x,y,z]`:
- `assets`: an asset map (episodes.asset_map): `builtin` (default; the built-in simulator's asset
  strings), a shipped map's name (`builtin-strict`) or a YAML file.
- `lockstep=1`: the server is paused and advanced with simContinueForTime by the same lock-step
  driver as in-process runs (with the run's --latency model), instead of flying in real time.
- `spawn=x,y,z`: the drone's spawn in the world NED frame, where the server cannot tell it
  (simGetObjectPose of the vehicle has no pose); by default simGetObjectPose - simGetVehiclePose.

Set-up (stock calls): each object spawned (simSpawnObject with the map's blueprint, then
simSetObjectMaterial with its paint) or an existing actor moved (simSetObjectPose); the drone placed
with simSetVehiclePose relative to its spawn (simGetObjectPose - simGetVehiclePose); every mesh given
segmentation id 0 and the target id 1 (simSetSegmentationObjectID) for point-on-target; moving
objects moved by this runner along the record's route with simSetObjectPose (3-D interpolation at
the record's speed, at every lock-step advance (<= 0.1 s) or at 10 Hz in real time). Pre-flight
checks then run on the server (`server_preflight`). Everything spawned is removed and every moved
actor put back at the end, so one server can fly a whole suite.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import msgspec
import numpy as np

from common.errors import ConfigError, VehicleError
from common.frames import yaw_quat_ned_wxyz, yaw_rotation_ned
from common.pose import Pose, wrap_deg
from episodes.asset_map import AssetMap, load_asset_map, placement
from episodes.preflight import (
    BEARING_TOLERANCE_DEG,
    DISTANCE_TOLERANCE_M,
    MAX_OCCUPANCY,
    MIN_OCCUPANCY,
    SPAWN_TOLERANCE_M,
    Expectation,
    expectation_for,
    geometry,
)
from episodes.records import COMMANDING_TASKS, EpisodeRecord
from episodes.scenario import start_pose

if TYPE_CHECKING:
    from types import ModuleType
    from typing import TypeAlias

    import airsim
    import cosysairsim

    from common.clock import SimClock
    from models.pilot import Pilot
    from onboard.lockstep import LatencyModel
    from onboard.recorder import FlightRecorder
    from onboard.runtime_config import RuntimeConfig
    from onboard.vehicles.airsim import AirSimTarget, AirSimVehicle
    from onboard.vehicles.airsim_truth import RemoteTruth, TargetExtent

    # Either client package's (onboard.vehicles.airsim.client_module): the same stock RPC and types.
    RpcClient: TypeAlias = airsim.MultirotorClient | cosysairsim.MultirotorClient
    RpcPose: TypeAlias = airsim.Pose | cosysairsim.Pose
    RpcGeoPoint: TypeAlias = airsim.GeoPoint | cosysairsim.GeoPoint

log = logging.getLogger(__name__)

MOVER_RATE_HZ = 10.0  # real time: moving objects are placed this often
MAX_LOCKSTEP_CHUNK_S = 0.1  # lock-step: at most this much simulation time between placements
TARGET_SEGMENTATION_ID = 1
CLEAR_PATH_STANDOFF_M = 0.3  # the camera-path ray ends this far in front of the target's box


@dataclass(frozen=True)
class HilTarget:
    server: AirSimTarget  # host, port, api and spawn (its vehicle is the episode's drone, named later)
    lockstep: bool
    assets: AssetMap


def parse_sim_url(url: str, flag: str = "--sim") -> HilTarget:
    """A --sim URL (or a --sim-pool entry: `flag`): what it shares with an airsim:// vehicle URL (host,
    port, api, spawn) is parsed by onboard.vehicles.airsim.parse_airsim_url; `assets` and `lockstep`
    are the runner's own."""
    from onboard.vehicles.airsim import parse_airsim_url

    parts = urlsplit(url)
    if parts.scheme != "airsim" or not parts.hostname:
        raise ConfigError(f"{flag} {url!r}: expected airsim://HOST:PORT[?api=...&assets=...&lockstep=1]")
    query = parse_qs(parts.query)
    unknown = sorted(set(query) - {"api", "assets", "lockstep", "spawn"})
    if unknown:
        raise ConfigError(f"{flag} {url!r}: unknown option(s) {unknown} (api, assets, lockstep, spawn)")
    # The runner's own options are not a vehicle's: the shared parser gets the URL without them.
    shared = urlencode([(k, v) for k, vs in query.items() if k not in ("assets", "lockstep") for v in vs])
    try:
        server = parse_airsim_url(urlunsplit(parts._replace(query=shared)))
    except ConfigError as exc:
        raise ConfigError(f"{flag} {exc}") from None
    lockstep = query.get("lockstep", ["0"])[0]
    if lockstep not in ("0", "1"):
        raise ConfigError(f"{flag} {url!r}: lockstep must be 0 or 1")
    return HilTarget(server, lockstep == "1", load_asset_map(query.get("assets", ["builtin"])[0]))


RUN_OBJECT_PREFIX = "ep_"  # the suites' object ids: spawned per episode, not part of the map


@functools.lru_cache(maxsize=16)
def simulator_identity(url: str) -> dict[str, Any]:
    """What a HIL run flies against, for its recorded configuration (episodes.run_config): the client
    api (auto resolved), lock-step or real time, the spawn given, the asset map (name and content),
    and from the server itself its version and the map it runs (a fingerprint of its scene objects'
    names, the suites' own objects left out). Asked once per URL and process; a server that does not
    answer is a ConfigError naming it."""
    from onboard.vehicles.airsim import client_module, resolve_api

    target = parse_sim_url(url)
    server = target.server
    client = None
    try:
        api = resolve_api(server.api, server.host, server.port)
        client = client_module(api).MultirotorClient(ip=server.host, port=server.port, timeout_value=30)
        version = int(client.getServerVersion())
        names = sorted(n for n in client.simListSceneObjects() if not n.startswith(RUN_OBJECT_PREFIX))
    except Exception as exc:  # the server is outside: whatever its client raises is one line
        raise ConfigError(f"--sim {url!r}: no AirSim server answers there ({exc})") from None
    finally:
        if client is not None:
            client.client.close()  # a probe: its connection is not kept for the run
    fingerprint = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    return {
        "kind": "hil",
        "api": api,
        "lockstep": target.lockstep,
        "spawn": server.spawn.as_list() if server.spawn is not None else None,
        "assets": {"name": target.assets.name, "sha256": asset_map_sha256(target.assets)},
        "server_version": version,
        "map": {"objects": len(names), "sha256": fingerprint},
    }


def asset_map_sha256(amap: AssetMap) -> str:
    return hashlib.sha256(msgspec.json.encode(amap)).hexdigest()[:16]


def _pose(mod: ModuleType, x: float, y: float, z: float, yaw_deg: float) -> RpcPose:
    w, qx, qy, qz = yaw_quat_ned_wxyz(yaw_deg)  # both packages' Quaternionr take (x, y, z, w)
    return mod.Pose(mod.Vector3r(x, y, z), mod.Quaternionr(qx, qy, qz, w))


# ---- moving objects ------------------------------------------------------------------------------
class RouteMover:
    """Places one object on its route (one-way, 3-D waypoints, constant speed) with simSetObjectPose;
    heading along the current leg, kept at the end."""

    def __init__(self, name: str, waypoints: list[tuple[float, float, float]], speed_m_s: float, t0_s: float):
        self.name = name
        self.points = np.asarray(waypoints, float)
        self.speed_m_s = float(speed_m_s)
        self.t0_s = t0_s
        self.yaw_deg = 0.0
        self.updates = 0

    def at(self, t_s: float) -> Pose:
        s = max(0.0, (t_s - self.t0_s) * self.speed_m_s)
        for a, b in zip(self.points[:-1], self.points[1:], strict=True):
            leg = float(np.linalg.norm(b - a))
            if s <= leg and leg > 0:
                d = (b - a) / leg
                p = a + d * s
                self.yaw_deg = math.degrees(math.atan2(d[1], d[0]))
                return Pose(float(p[0]), float(p[1]), float(p[2]), wrap_deg(self.yaw_deg))
            s -= leg
        p = self.points[-1]
        return Pose(float(p[0]), float(p[1]), float(p[2]), wrap_deg(self.yaw_deg))

    def place(self, client: RpcClient, mod: ModuleType, t_s: float) -> None:
        p = self.at(t_s)
        if not client.simSetObjectPose(self.name, _pose(mod, p.x_m, p.y_m, p.z_m, p.yaw_deg), True):
            raise VehicleError(f"simSetObjectPose({self.name!r}) was refused: the moving object is gone")
        self.updates += 1


class RealTimeMovers:
    """Real-time HIL: a thread places every moving object at MOVER_RATE_HZ, on the server's time."""

    def __init__(
        self, movers: list[RouteMover], new_client: Callable[[], RpcClient], mod: ModuleType, vehicle: str
    ) -> None:
        self.movers, self._new_client, self._mod, self._vehicle = movers, new_client, mod, vehicle
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: Exception | None = None

    def start(self) -> None:
        if self.movers:
            self._thread = threading.Thread(target=self._run, name="hil-movers", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        client = self._new_client()
        period = 1.0 / MOVER_RATE_HZ
        next_s = time.monotonic()
        try:
            while not self._stop.is_set():
                t = float(client.getMultirotorState(self._vehicle).timestamp) / 1e9
                for mover in self.movers:
                    mover.place(client, self._mod, t)
                next_s += period
                self._stop.wait(max(0.0, next_s - time.monotonic()))
        except Exception as exc:  # the run goes on; the log and the report say the target stopped
            self.error = exc
            log.error("moving objects stopped: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class RpcStepper:
    """Lock-step over RPC: advance = simContinueForTime on the vehicle's own connection (so commands
    sent before it are applied first), in chunks of at most MAX_LOCKSTEP_CHUNK_S with the moving
    objects placed after each; `clock` follows the simulation time."""

    def __init__(self, vehicle: AirSimVehicle, clock: SimClock, movers: list[RouteMover]) -> None:
        self.vehicle, self.clock, self.movers = vehicle, clock, movers

    def advance(self, duration_s: float) -> float:
        remaining = float(duration_s)
        while remaining > 1e-12:
            chunk = min(remaining, MAX_LOCKSTEP_CHUNK_S) if self.movers else remaining
            self.vehicle.continue_for_time(chunk)
            self.clock.advance(chunk)
            remaining -= chunk
            for mover in self.movers:
                mover.place(self.vehicle.client(), self.vehicle.module, self.clock.now())
        return float(self.clock.now())


# ---- set-up ---------------------------------------------------------------------------------------
@dataclass
class SetUp:
    names: dict[str, str] = field(default_factory=dict)  # record object id -> actor name on the server
    spawned: list[str] = field(default_factory=list)
    moved: list[tuple[str, RpcPose]] = field(default_factory=list)  # (actor, its pose before) to put back
    spawn: Pose = field(default_factory=lambda: Pose(0.0, 0.0, 0.0, 0.0))  # the drone's spawn (world NED)


def set_up(
    client: RpcClient, mod: ModuleType, record: EpisodeRecord, amap: AssetMap, spawn: Pose | None = None
) -> SetUp:
    """Place the record's objects and its drone on the server (stock calls); `spawn`: the drone's
    spawn in the world (default: simGetObjectPose - simGetVehiclePose)."""
    from onboard.vehicles.airsim import spawn_offset

    marker = amap.scene_markers.get(record.scene)
    if marker and not client.simListSceneObjects(marker):
        raise ConfigError(
            f"episode {record.id} is set in {record.scene!r}, but the server has no {marker!r} "
            f"(the scene marker of asset map {amap.name!r}): is it running that map?"
        )
    done = SetUp()
    try:
        for obj in (*record.targets, *record.distractors):
            how = placement(amap, obj)
            x, y, z, yaw = obj.pose
            pose = _pose(mod, x, y, z, yaw)
            if how.actor is not None:
                before = client.simGetObjectPose(how.actor)
                if not math.isfinite(before.position.x_val):
                    raise ConfigError(f"asset map {amap.name!r}: the server has no actor {how.actor!r}")
                if not client.simSetObjectPose(how.actor, pose, True):
                    raise ConfigError(f"simSetObjectPose({how.actor!r}) was refused")
                done.moved.append((how.actor, before))
                done.names[obj.id] = how.actor
                continue
            client.simDestroyObject(obj.id)  # left over from an interrupted run
            assert how.asset is not None
            name = client.simSpawnObject(
                obj.id, how.asset, pose, mod.Vector3r(1, 1, 1), False, amap.blueprints
            )
            done.spawned.append(name)
            done.names[obj.id] = name
            if how.material and not client.simSetObjectMaterial(name, how.material):
                raise ConfigError(f"simSetObjectMaterial({name!r}, {how.material!r}) was refused")
        drone = record.drones[0].name
        done.spawn = spawn or spawn_offset(client, drone)
        start = start_pose(record)
        s = done.spawn
        client.simSetVehiclePose(
            _pose(mod, start.x_m - s.x_m, start.y_m - s.y_m, start.z_m - s.z_m, start.yaw_deg), True, drone
        )
    except BaseException:
        tear_down(client, done)
        raise
    return done


def tear_down(client: RpcClient, done: SetUp) -> None:
    for name in done.spawned:
        try:
            client.simDestroyObject(name)
        except Exception as exc:  # the server may be gone; nothing else to clean up
            log.warning("could not remove %s: %s", name, exc)
    for name, before in done.moved:
        try:
            client.simSetObjectPose(name, before, True)
        except Exception as exc:
            log.warning("could not put %s back: %s", name, exc)


def set_segmentation(client: RpcClient, target: str) -> bool:
    """Every mesh id 0, the target TARGET_SEGMENTATION_ID: its pixels stand out in Segmentation
    images. False when the server refuses (point-on-target then falls back to box2D)."""
    try:
        client.simSetSegmentationObjectID(".*", 0, True)
        return bool(client.simSetSegmentationObjectID(target, TARGET_SEGMENTATION_ID, False))
    except Exception as exc:
        log.warning("simSetSegmentationObjectID failed (%s): point on target from box2D", exc)
        return False


def announce(client: RpcClient, event: str, episode_id: str) -> None:
    """Tell the server which episode starts or ends (simPrintLogMessage, stock AirSim: shown in AirSim's
    viewport, logged by `dronecats sim`), so a server's own log says which episode flew on it when."""
    try:
        client.simPrintLogMessage(f"dronecats episode {event}: ", episode_id)
    except Exception as exc:  # informative only: never fail an episode over it
        log.warning("could not tell the server that episode %s %ss: %s", episode_id, event, exc)


# ---- pre-flight on the server ---------------------------------------------------------------------
@dataclass
class ServerPreflight:
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    start_distance_m: float = 0.0
    start_bearing_deg: float = 0.0
    visible_at_start: bool | None = None
    occupancy: float | None = None
    clear_path: bool | None = None
    clear_path_by: str | None = None  # simTestLineOfSightBetweenPoints | detection
    extent: TargetExtent | None = None
    colour: tuple[int, int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "where": "server",
            "problems": self.problems,
            "start_distance_m": round(self.start_distance_m, 3),
            "start_bearing_deg": round(self.start_bearing_deg, 2),
            "visible_at_start": self.visible_at_start,
            "occupancy": self.occupancy,
            "clear_path": self.clear_path,
            "clear_path_by": self.clear_path_by,
        }


def _geo(home: RpcGeoPoint, spawn: Pose, p: np.ndarray, mod: ModuleType) -> RpcGeoPoint:
    """World NED -> GeoPoint about the vehicle's home (its spawn), as AirSim's geodetic converter does
    over short distances."""
    radius_m = 6378137.0
    lat = home.latitude + math.degrees((p[0] - spawn.x_m) / radius_m)
    lon = home.longitude + math.degrees(
        (p[1] - spawn.y_m) / (radius_m * math.cos(math.radians(home.latitude)))
    )
    point = mod.GeoPoint()
    point.latitude, point.longitude, point.altitude = lat, lon, home.altitude - (p[2] - spawn.z_m)
    return point


def server_preflight(
    vehicle: AirSimVehicle,
    truth: RemoteTruth,
    record: EpisodeRecord,
    done: SetUp,
    altitude_m: float,
    expect: Expectation,
) -> ServerPreflight:
    """The pre-flight checks on the server, after set-up (the drone teleported to look, then put back):
    objects where the record says; start distance and bearing; the target detected from the airborne
    start pose exactly when the record says it is visible; seen facing it, 0.40-12% of the frame
    (Segmentation pixels of its colour); a clear camera path (simTestLineOfSightBetweenPoints from the
    camera to just in front of the target's box, where the server has it). Learns the target's extent
    (box3D) and segmentation colour on the way."""
    from onboard.vehicles.airsim_truth import learn_colour

    client, mod = vehicle.client(), vehicle.module
    report = ServerPreflight()
    problems = report.problems
    for obj in (*record.targets, *record.distractors):
        placed = client.simGetObjectPose(done.names[obj.id]).position
        if not math.isfinite(placed.x_val):
            problems.append(f"object {obj.id!r} ({done.names[obj.id]!r}) is not on the server")
            continue
        error = math.hypot(placed.x_val - obj.pose[0], placed.y_val - obj.pose[1])
        if not obj.moving and error > SPAWN_TOLERANCE_M:
            problems.append(
                f"object {obj.id!r} is {error:.2f} m from its record pose (> {SPAWN_TOLERANCE_M})"
            )
    here = truth.target_pose()
    if here is None:
        problems.append(f"target {truth.target!r} has no pose on the server")
        return report
    start = start_pose(record)
    report.start_distance_m, report.start_bearing_deg = geometry(start, (here[0][0], here[0][1]))
    if abs(report.start_distance_m - expect.start_distance_m) > DISTANCE_TOLERANCE_M:
        problems.append(
            f"start distance {report.start_distance_m:.1f} m differs from the declared "
            f"{expect.start_distance_m:.1f} m by more than {DISTANCE_TOLERANCE_M} m"
        )
    if abs(wrap_deg(report.start_bearing_deg - expect.start_bearing_deg)) > BEARING_TOLERANCE_DEG:
        problems.append(
            f"start bearing {report.start_bearing_deg:.1f}° differs from the declared "
            f"{expect.start_bearing_deg:.1f}° by more than {BEARING_TOLERANCE_DEG}°"
        )
    if record.task_type in COMMANDING_TASKS:
        report.ok = not problems
        return report
    drone, s = record.drones[0].name, done.spawn

    def look(yaw_deg: float) -> None:
        z = start.z_m - altitude_m - s.z_m
        client.simSetVehiclePose(_pose(mod, start.x_m - s.x_m, start.y_m - s.y_m, z, yaw_deg), True, drone)

    try:
        look(start.yaw_deg)
        report.visible_at_start = truth.detection() is not None
        if report.visible_at_start != expect.visible_at_start:
            problems.append(
                f"target {truth.target!r} is {'' if report.visible_at_start else 'not '}detected from the "
                f"start pose; declared {'visible' if expect.visible_at_start else 'out of view'}"
            )
        look(wrap_deg(start.yaw_deg + report.start_bearing_deg))
        detection = truth.detection()
        if detection is None:
            problems.append(f"target {truth.target!r} is not detected from the start facing it")
        else:
            report.extent = truth.learn_extent(detection)
            frame = vehicle.camera().read() if vehicle.segmentation else None
            seg = frame.meta.get("segmentation") if frame is not None else None
            b = detection.box2D
            if seg is not None:
                report.colour = learn_colour(seg, (b.min.x_val, b.min.y_val, b.max.x_val, b.max.y_val))
            if seg is not None and report.colour is not None:
                count = int(np.all(seg == np.asarray(report.colour, np.uint8), axis=-1).sum())
                report.occupancy = count / float(seg.shape[0] * seg.shape[1])
            else:  # no segmentation: the detection box's share (an upper bound)
                h, w = frame.image.shape[:2] if frame is not None else (360, 640)
                area = max(0.0, b.max.x_val - b.min.x_val + 1) * max(0.0, b.max.y_val - b.min.y_val + 1)
                report.occupancy = area / float(w * h)
            if not MIN_OCCUPANCY <= report.occupancy <= MAX_OCCUPANCY:
                problems.append(
                    f"target {truth.target!r} fills {report.occupancy:.2%} of the frame seen from the start "
                    f"facing it; limits {MIN_OCCUPANCY:.2%}-{MAX_OCCUPANCY:.0%}"
                )
            report.clear_path, report.clear_path_by = _clear_path(client, mod, truth, vehicle, report, here)
            if not report.clear_path:
                problems.append(f"the camera path from the start to target {truth.target!r} is blocked")
    finally:
        client.simSetVehiclePose(
            _pose(mod, start.x_m - s.x_m, start.y_m - s.y_m, start.z_m - s.z_m, start.yaw_deg), True, drone
        )
    report.ok = not problems
    return report


def _clear_path(
    client: RpcClient,
    mod: ModuleType,
    truth: RemoteTruth,
    vehicle: AirSimVehicle,
    report: ServerPreflight,
    here: tuple[np.ndarray, float],
) -> tuple[bool, str]:
    """simTestLineOfSightBetweenPoints from the camera to CLEAR_PATH_STANDOFF_M in front of the target's
    box on the line to its centre; a server without it: the target was detected facing it."""
    cam_xyz, _ = truth.camera_pose_world()
    extent = report.extent
    centre = here[0]
    if extent is not None:
        rot = yaw_rotation_ned(here[1])
        centre = here[0] + rot @ np.asarray(extent.centre_frd_m)
        direction = centre - cam_xyz
        length = float(np.linalg.norm(direction))
        # where the ray enters the box (slab test in the target's frame), less the stand-off
        local_o = rot.T @ (cam_xyz - centre)
        local_d = rot.T @ (direction / length)
        half = np.asarray(extent.half_m)
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (-half - local_o) / local_d, (half - local_o) / local_d
        entry = float(np.nanmax(np.minimum(t1, t2)))
        end = cam_xyz + direction / length * max(0.0, min(length, entry) - CLEAR_PATH_STANDOFF_M)
    else:
        end = centre
    home = client.getHomeGeoPoint(vehicle.name)
    try:
        clear = client.simTestLineOfSightBetweenPoints(
            _geo(home, vehicle.spawn, cam_xyz, mod), _geo(home, vehicle.spawn, end, mod)
        )
        return bool(clear), "simTestLineOfSightBetweenPoints"
    except Exception as exc:
        if "could not find function" not in str(exc):
            raise
        return True, "detection"  # detected facing it (checked above): nothing blocks the view


# ---- one episode ----------------------------------------------------------------------------------
def fly_hil(
    record: EpisodeRecord,
    config: RuntimeConfig,
    pilot: Pilot,
    recorder: FlightRecorder,
    sim_url: str,
    latency: LatencyModel | None = None,
) -> dict:
    """Set the episode up on the server, check it there, fly it (real time, or lock-step with the
    `latency` model), and clean up. Returns reason, steps, sim_time_s and (lock-step) injected.

    An error the server answers (msgpackrpc's RPCError: an unknown method, a refused asset) becomes a
    VehicleError naming the episode, so the suite reports it and goes on."""
    from msgpackrpc.error import RPCError

    try:
        return _fly_hil(record, config, pilot, recorder, sim_url, latency)
    except RPCError as exc:
        raise VehicleError(f"episode {record.id}: the server refused: {exc}") from exc


def _fly_hil(
    record: EpisodeRecord,
    config: RuntimeConfig,
    pilot: Pilot,
    recorder: FlightRecorder,
    sim_url: str,
    latency: LatencyModel | None,
) -> dict:
    from common.clock import SimClock, WallClock
    from onboard.assembly import assemble, fly_lockstep, fly_realtime
    from onboard.vehicles.airsim import AirSimVehicle
    from onboard.vehicles.airsim_truth import RemoteTruth

    if len(record.drones) != 1:
        raise ConfigError(f"episode {record.id}: the HIL path flies single-drone episodes")
    target = parse_sim_url(sim_url)
    drone = record.drones[0].name
    vehicle = AirSimVehicle(replace(target.server, vehicle=drone))
    client, mod = vehicle.client(), vehicle.module
    if not client.ping():
        raise VehicleError(f"no AirSim server at {target.server.host}:{target.server.port}")
    was_paused = bool(client.simIsPause())
    if target.lockstep:
        client.simPause(True)
    done = set_up(client, mod, record, target.assets, vehicle.spawn)
    announce(client, "start", record.id)
    movers: list[RouteMover] = []
    realtime: RealTimeMovers | None = None
    truth: RemoteTruth | None = None
    try:
        if target.lockstep:
            # The episode's time line starts at 0 (as in-process): the runtime's clock, the adapter's
            # stamps and the movers' times are then the same numbers whatever the server's clock read
            # (real time between runs, earlier episodes); on absolute seconds every sum rounds
            # differently and the same command flies another trajectory.
            vehicle.epoch_ns = vehicle.sim_stamp_ns()
        t0_s = vehicle.sim_time_s()
        for obj in (*record.targets, *record.distractors):
            if obj.moving:
                assert obj.path is not None and obj.speed_m_s is not None
                mover = RouteMover(done.names[obj.id], [tuple(p) for p in obj.path], obj.speed_m_s, t0_s)  # type: ignore[misc]
                mover.place(client, mod, t0_s)
                movers.append(mover)
        target_name = done.names[record.targets[0].id]
        vehicle.segmentation = set_segmentation(client, target_name)
        truth = RemoteTruth(vehicle, target_name)
        truth.set_up()
        report = server_preflight(
            vehicle, truth, record, done, config.takeoff_altitude_m or 3.0, expectation_for(record)
        )
        truth.colour = report.colour
        recorder.write_metadata(
            run={
                "preflight": report.as_dict(),
                "lockstep": target.lockstep,
                "hil": {
                    "api": vehicle.api,
                    "asset_map": target.assets.name,
                    "names": done.names,
                    "spawn": done.spawn.as_list(),
                },
            }
        )
        if not report.ok:
            raise ConfigError(f"episode {record.id}: pre-flight checks failed: " + "; ".join(report.problems))
        vehicle.lockstep = target.lockstep
        injected: list[float] = []
        if target.lockstep:
            clock = SimClock(t0_s)
            runtime = assemble(config, vehicle, pilot, clock, recorder, truth=truth)
            flown = fly_lockstep(runtime, RpcStepper(vehicle, clock, movers), latency)
            result, injected = flown.result, flown.injected_latencies_s
        else:
            realtime = RealTimeMovers(
                movers,
                lambda: vehicle.module.MultirotorClient(
                    ip=target.server.host, port=target.server.port, timeout_value=60
                ),
                mod,
                drone,
            )
            realtime.start()
            runtime = assemble(config, vehicle, pilot, WallClock(), recorder, truth=truth)
            result = fly_realtime(runtime)
        sim_time_s = runtime.t()
        recorder.write_metadata(run={"truth": truth_source(truth, movers, realtime)})
    finally:
        if realtime is not None:
            realtime.stop()
        tear_down(client, done)
        announce(client, "end", record.id)
        if target.lockstep and not was_paused:
            client.simPause(False)
        if truth is not None:
            truth.close()
        vehicle.close()
    return {"reason": result.reason, "steps": result.steps, "sim_time_s": sim_time_s, "injected": injected}


def truth_source(
    truth: RemoteTruth, movers: list[RouteMover], realtime: RealTimeMovers | None
) -> dict[str, Any]:
    """What the run's ground truth came from (episode.json run.truth)."""
    extent = truth.extent
    return {
        "source": "stock AirSim RPC",
        "distance": "simGetObjectPose (vehicle, target) + target box",
        "extent": extent.source if extent is not None else "none (distances to the target's origin)",
        "visibility": "simGetDetections (100 m radius)",
        "point_on_target": truth.point_source or ("segmentation" if truth.colour is not None else "box2D"),
        "moving_objects": {m.name: m.updates for m in movers},
        "mover_error": str(realtime.error) if realtime is not None and realtime.error else None,
    }
