# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's world-sim object calls (RpcLibServerBase.cpp's getWorldSimApi bindings; PythonClient/
airsim/client.py's object and scene calls): object poses (get, set with or without a sweep), the
scene's object list, spawning and destroying objects, the asset list and materials, the world's
extents and line-of-sight tests. Object poses are in the world NED frame, as AirSim's are.

Which assets exist is the `AssetCatalogue`'s: the built-in one here; `dronecats sim --strict-airsim`
passes a foreign map's (sim_bridge.rpc.strict).
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any, Protocol

import numpy as np

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.rpc.catalogue import BLUEPRINTS, MATERIALS, with_colour
from sim_bridge.rpc.detections import aabb_half
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.local_frames import geo_point, ned_from_geo
from sim_bridge.rpc.orientation import attitude_msgs
from sim_bridge.rpc.segmentation import SegmentationIds
from sim_bridge.rpc.sweep import SWEEP_CLEARANCE_M, sweep
from sim_bridge.rpc.wire import NAN_POSE, GeoPointMsg, PoseMsg, Vector3Msg, parse_pose, parse_vec3, pose_msg
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)


class AssetCatalogue(Protocol):
    """What simSpawnObject may spawn and simListAssets lists."""

    def resolve(self, asset_name: str) -> str:
        """The built-in asset string for simSpawnObject's asset name (raises for an unknown one)."""
        ...

    def names(self) -> list[str]: ...


class BuiltInAssets:
    """The built-in simulator's assets: its asset strings, the blueprints and the materials."""

    def resolve(self, asset_name: str) -> str:
        return BLUEPRINTS.get(asset_name, asset_name)

    def names(self) -> list[str]:
        from sim_bridge.sim.assets import ASSET_KINDS

        return sorted(ASSET_KINDS) + sorted(BLUEPRINTS) + sorted(MATERIALS)


class WorldObjectsApi:
    """The object and scene calls over the world, its segmentation IDs and an asset catalogue."""

    def __init__(
        self, world: World, segmentation: SegmentationIds, assets: AssetCatalogue | None = None
    ) -> None:
        self.world = world
        self._segmentation = segmentation
        self._assets = assets or BuiltInAssets()
        self._actor_vehicles = set(world.vehicles)  # the actor map's vehicles (GenerateActorMap at start)

    def handlers(self) -> HandlerTable:
        return {
            "simGetObjectPose": self.simGetObjectPose,
            "simSetObjectPose": self.simSetObjectPose,
            "simListSceneObjects": self.simListSceneObjects,
            "simSpawnObject": self.simSpawnObject,
            "simDestroyObject": self.simDestroyObject,
            "simListAssets": self.simListAssets,
            "simSetObjectMaterial": self.simSetObjectMaterial,
            "simGetWorldExtents": self.simGetWorldExtents,
            "simTestLineOfSightBetweenPoints": self.simTestLineOfSightBetweenPoints,
            "simTestLineOfSightToPoint": self.simTestLineOfSightToPoint,
        }

    def simGetObjectPose(self, object_name: str, ned: bool = True) -> dict[str, Any]:
        if not ned:
            raise ConfigError("simGetObjectPose: only NED poses are served (ned=True)")
        try:
            p = self.world.object_pose(str(object_name))
        except ConfigError:
            return NAN_POSE
        msg = pose_msg(p.x_m, p.y_m, p.z_m, p.yaw_deg)
        if str(object_name) in self.world.vehicles:  # a vehicle's body pitches and rolls
            msg["orientation"] = attitude_msgs(self.world, str(object_name))[0]
        return msg

    def simSetObjectPose(self, object_name: str, pose: PoseMsg, teleport: bool) -> bool:
        """WorldSimApi::setObjectPose (world NED): an actor of the scene's actor map (its objects and the
        vehicles the server started with; simAddVehicle's are not in it: False). teleport=True places it,
        False moves it with a sweep that stops at the first thing in its way (True when it moved at all).
        A vehicle's pawn is placed, but its physics body puts it back on the next tick
        (MultirotorPawnSimApi::updateRendering sets the pawn from the physics pose): True, no lasting
        effect; simSetVehiclePose moves vehicles. AirSim has no NaN rule here (the actor is moved to the
        NaN location): a NaN is refused."""
        name = str(object_name)
        target = parse_pose(pose)  # a malformed Pose fails the call (rpclib's argument conversion)
        q = pose.get("orientation")
        values = [*parse_vec3(pose.get("position"), "pose.position")]
        if isinstance(q, dict):
            values += [float(q.get(k, 0.0)) for k in ("w_val", "x_val", "y_val", "z_val")]
        is_vehicle = name in self.world.vehicles
        if (is_vehicle and name not in self._actor_vehicles) or (
            not is_vehicle and name not in self.world.objects
        ):
            return False  # no such actor: its pose is never used (objects.py sets a NaN pose so)
        if any(math.isnan(v) for v in values):
            raise ConfigError(f"simSetObjectPose({name}): the pose has NaN components: {values}")
        if is_vehicle:
            log.info("simSetObjectPose(%s): the physics puts a vehicle back; use simSetVehiclePose", name)
            return True
        if teleport:
            self.world.set_object_pose(name, target)
            return True
        with self.world.lock:
            obj = self.world.objects[name]
            start = obj.bbox_centre_ned()
            offset = start - np.array([obj.pose.x_m, obj.pose.y_m, obj.pose.z_m])
            end = np.array([target.x_m, target.y_m, target.z_m]) + offset
            hit = sweep(self.world, start, end, obj.body_id)
            if hit is not None:
                stop = hit[1] - (end - start) / float(np.linalg.norm(end - start)) * SWEEP_CLEARANCE_M
                if np.dot(stop - start, end - start) <= 0:
                    return False  # blocked at once: no movement
                at = stop - offset
                target = Pose(float(at[0]), float(at[1]), float(at[2]), target.yaw_deg)
            self.world.set_object_pose(name, target)
        return True

    def simListSceneObjects(self, name_regex: str) -> list[str]:
        pattern = re.compile(str(name_regex))
        names = list(self.world.objects) + list(self.world.vehicles)
        return [n for n in names if pattern.fullmatch(n)]

    def simSpawnObject(
        self,
        object_name: str,
        asset_name: str,
        pose: PoseMsg,
        scale: Vector3Msg,
        physics_enabled: bool,
        is_blueprint: bool,
    ) -> str:
        asset = self._assets.resolve(str(asset_name))
        sx, sy, sz = parse_vec3(scale, "scale")
        name = self._spawn_name(str(object_name))
        return self.world.spawn(name, asset, parse_pose(pose), (sx, sy, sz)).name

    def _spawn_name(self, object_name: str) -> str:
        """WorldSimApi::spawnObject's rule: when any actor's name matches the regex .*NAME.* (NAME itself
        a regex, case-sensitive: UAirBlueprintLib::ListMatchingActors), NAME + (the greatest trailing
        number of those names, 0 when none has one, + 1)."""
        try:
            pattern = re.compile(".*" + object_name + ".*", re.DOTALL)
        except re.error as exc:
            raise ConfigError(
                f"simSpawnObject: object name {object_name!r} is not a valid regex: {exc}"
            ) from None
        with self.world.lock:
            names = [*self.world.objects, *self.world.vehicles]
        matching = [n for n in names if pattern.fullmatch(n)]
        if not matching:
            return object_name
        numbers = [int(m.group()) for n in matching if (m := re.search(r"[0-9]+$", n))]
        return f"{object_name}{max(numbers, default=0) + 1}"

    def simDestroyObject(self, object_name: str) -> bool:
        obj = self.world.objects.get(str(object_name))
        if obj is not None:
            self._segmentation.pop(obj.body_id)  # PyBullet reuses body ids
        return self.world.destroy(str(object_name))

    def simListAssets(self) -> list[str]:
        return self._assets.names()

    def simSetObjectMaterial(self, object_name: str, material_name: str, component_id: int = 0) -> bool:
        """Repaint an object with one of MATERIALS (respawned under its name, pose and scale)."""
        colour = MATERIALS.get(str(material_name))
        w = self.world
        with w.lock:
            obj = w.objects.get(str(object_name))
            if colour is None or obj is None or obj.cls in ("scenery", "ground"):
                log.info(
                    "simSetObjectMaterial(%s, %s): no such object or material",
                    object_name,
                    material_name,
                )
                return False
            seg_id = self._segmentation.pop(obj.body_id)
            name, pose, scale, asset = obj.name, obj.pose, obj.scale, obj.asset
            w.destroy(name)
            new = w.spawn(name, with_colour(asset, colour), pose, scale)
            if seg_id is not None:
                self._segmentation.set([new.body_id], seg_id)
        return True

    def simGetWorldExtents(self) -> list[dict[str, float]]:
        """[min, max] GeoPoints of the box around every object of the scene (AirSim: the level's bounds)."""
        with self.world.lock:
            boxes = [
                (o.bbox_centre_ned(), aabb_half(o.bbox_half_m, o.pose.yaw_deg))
                for o in self.world.objects.values()
            ]
        if not boxes:
            zero = geo_point(Pose(0.0, 0.0, 0.0, 0.0))
            return [zero, zero]
        lo = np.min([c - h for c, h in boxes], axis=0)
        hi = np.max([c + h for c, h in boxes], axis=0)
        # NED z is down: the lowest point (max z) is the minimum altitude
        lowest = Pose(float(lo[0]), float(lo[1]), float(hi[2]), 0.0)
        highest = Pose(float(hi[0]), float(hi[1]), float(lo[2]), 0.0)
        return [geo_point(lowest), geo_point(highest)]

    def simTestLineOfSightBetweenPoints(self, point1: GeoPointMsg, point2: GeoPointMsg) -> bool:
        """True when nothing with a collision shape lies on the segment between the two GeoPoints."""
        return self.world.scene.line_of_sight(ned_from_geo(point1), ned_from_geo(point2))

    def simTestLineOfSightToPoint(self, point: GeoPointMsg, vehicle_name: str) -> bool:
        with self.world.lock:
            eye, _ = self.world.camera_pose(str(vehicle_name))
        return self.world.scene.line_of_sight(np.asarray(eye, float), ned_from_geo(point))
