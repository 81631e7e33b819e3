"""The HIL path: an episode flown against an AirSim-compatible server (`dronecats sim`, or AirSim) in
real time, through the real `airsim` client — the same OnboardRuntime as the lock-step path, with the
airsim:// Vehicle/Camera adapters and RemoteTruth instead of the in-process ones.

Setting the episode up uses the AirSim API (simSpawnObject with the record's asset strings, and
simSetVehiclePose relative to the vehicle's spawn) plus the built-in simulator's dcSetObjectPath for
moving targets. A real AirSim has neither these asset strings nor dcSetObjectPath: there the records
must name the environment's own assets, and moving targets are not supported (an error says so).
The objects are removed again at the end, so one server can fly a whole suite.
"""

from __future__ import annotations

import logging
import math
from typing import Any
from urllib.parse import urlsplit

from common.errors import ConfigError, VehicleError
from episodes.records import EpisodeRecord
from episodes.scenario import asset_string, start_pose

log = logging.getLogger(__name__)

# One named object each built-in scene has, to check the server flies the record's scene.
SCENE_MARKERS = {"residential": "parked_car_1", "blocks": "sign_north", "indoor": "sign_kitchen"}


def _pose(airsim: Any, x: float, y: float, z: float, yaw_deg: float) -> Any:
    return airsim.Pose(airsim.Vector3r(x, y, z), airsim.to_quaternion(0.0, 0.0, math.radians(yaw_deg)))


def server_address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "airsim" or not parts.hostname or not parts.port:
        raise ConfigError(f"--sim {url!r}: expected airsim://HOST:PORT")
    return parts.hostname, parts.port


def set_up(client: Any, record: EpisodeRecord) -> list[str]:
    """Spawn the record's objects and place its drone; returns the spawned names (to remove later)."""
    import airsim

    marker = SCENE_MARKERS.get(record.scene)
    if marker and not client.simListSceneObjects(marker):
        raise ConfigError(
            f"episode {record.id} is set in {record.scene!r}, but the server has no {marker!r}: "
            f"start it with --scene {record.scene}"
        )
    spawned: list[str] = []
    try:
        for obj in (*record.targets, *record.distractors):
            x, y, z, yaw = obj.pose
            client.simDestroyObject(obj.id)  # left over from an interrupted run
            name = client.simSpawnObject(
                obj.id, asset_string(obj), _pose(airsim, x, y, z, yaw), airsim.Vector3r(1, 1, 1), False, False
            )
            spawned.append(name)
            if name != obj.id:
                raise ConfigError(f"the server named object {obj.id!r} {name!r} (clashes with its scene)")
            if obj.moving:
                try:
                    client.client.call(
                        "dcSetObjectPath", obj.id, [list(p) for p in obj.path or ()], obj.speed_m_s
                    )
                except Exception as exc:
                    raise ConfigError(
                        f"moving target {obj.id!r} needs the built-in simulator's dcSetObjectPath: {exc}"
                    ) from exc
        drone = record.drones[0].name
        spawn = client.client.call("dcGetVehicleSpawn", drone)["position"]
        start = start_pose(record)
        client.simSetVehiclePose(
            _pose(
                airsim,
                start.x_m - spawn["x_val"],
                start.y_m - spawn["y_val"],
                start.z_m - spawn["z_val"],
                start.yaw_deg,
            ),
            True,
            drone,
        )
    except BaseException:
        tear_down(client, spawned)
        raise
    return spawned


def tear_down(client: Any, names: list[str]) -> None:
    for name in names:
        try:
            client.simDestroyObject(name)
        except Exception as exc:  # the server may be gone; nothing else to clean up
            log.warning("could not remove %s: %s", name, exc)


def announce(client: Any, event: str, episode_id: str) -> None:
    """Tell the server which episode starts or ends (simPrintLogMessage, stock AirSim: shown in AirSim's
    viewport, logged by `dronecats sim`), so a server's own log says which episode flew on it when."""
    try:
        client.simPrintLogMessage(f"dronecats episode {event}: ", episode_id)
    except Exception as exc:  # informative only: never fail an episode over it
        log.warning("could not tell the server that episode %s %ss: %s", episode_id, event, exc)


def fly_hil(record: EpisodeRecord, config: Any, pilot: Any, recorder: Any, sim_url: str) -> dict:
    """Set the episode up on the server, fly it in real time, and clean up."""
    import airsim

    from common.clock import WallClock
    from common.interfaces import open_vehicle
    from episodes.preflight import check
    from episodes.scenario import build_world
    from onboard.runtime import OnboardRuntime
    from sim_bridge.remote_truth import RemoteTruth

    if len(record.drones) != 1:
        raise ConfigError(f"episode {record.id}: the HIL path flies single-drone episodes")
    # The pre-flight checks run on an in-process copy of the scene (the server has no render-as-if API).
    world = build_world(record)
    try:
        report = check(world, record)
    finally:
        world.close()
    recorder.write_metadata(run={"preflight": {"ok": report.ok, "problems": report.problems}})
    if not report.ok:
        raise ConfigError(f"episode {record.id}: pre-flight checks failed: " + "; ".join(report.problems))
    host, port = server_address(sim_url)
    client = airsim.MultirotorClient(ip=host, port=port, timeout_value=60)
    if not client.ping():
        raise VehicleError(f"no AirSim server at {host}:{port}")
    drone = record.drones[0].name
    vehicle_url = f"airsim://{host}:{port}/{drone}"
    spawned = set_up(client, record)
    announce(client, "start", record.id)
    try:
        vehicle = open_vehicle(vehicle_url)
        camera = vehicle.camera()  # type: ignore[attr-defined]
        truth = RemoteTruth(vehicle_url, record.targets[0].id)
        runtime = OnboardRuntime(config, vehicle, camera, pilot, WallClock(), recorder, truth=truth)
        runtime.start()
        result = runtime.run()
        sim_time_s = runtime.t()
        vehicle.close()
    finally:
        tear_down(client, spawned)
        announce(client, "end", record.id)
    return {"reason": result.reason, "steps": result.steps, "sim_time_s": sim_time_s}
