"""AirSim's detection API (simAddDetectionFilterMeshName, simSetDetectionFilterRadius,
simClearDetectionMeshNames, simGetDetections) over the built-in scene, computed as AirSim's
Unreal/Plugins/AirSim/Source/DetectionComponent.cpp, ObjectFilter.cpp and WorldSimApi::getDetections do:

- Filter (ObjectFilter::matchesActor, isMatchAnyWildcard): a pattern matches the actor's name or the name
  of one of its meshes with FString::MatchesWildcard (`*` any run, `?` one character, case ignored).
  Here an object's actor name is its scene name and its mesh name is its asset kind ("car", "person"...).
- Radius (UDetectionComponent: max_distance_to_camera_ = 20000 cm by default; setFilterRadius in cm):
  from the camera to the actor's location (the object's origin), not to its box.
- box2D (calcBoundingFromViewInfo): the 8 corners of the actor's world-axis bounding box projected
  (a corner behind the camera counts as pixel (0, 0), as FSceneView::ProjectWorldToScreen leaves it),
  min/max, clamped to the image; the actor is reported when one corner falls inside the image and it is
  visible. Visibility: AirSim traces rays to the corners and 10 random points; here the verifier's rule
  (>= 20 px of 640x360 unoccluded in the camera's render, sim_bridge.sim.truth), deterministic and the
  same one the project's ground truth judges by.
- box3D (getDetections): the world box's Min and Max corners (Unreal's: Min is the lowest, so its NED
  down is the box's largest) each in the camera's frame (forward, right, down), then NedTransform::
  toLocalNed, which subtracts the vehicle's local NED origin although the vector is camera-relative.
  The built-in simulator's Unreal frame has Player Start at its origin and pawns with no ground offset,
  so that origin is the vehicle's spawn (world NED): both corners and relative_pose.position carry
  "- spawn", as AirSim's do for a vehicle not at Player Start. Differences of box3D corners, and
  box3D minus relative_pose.position, are free of it (onboard.vehicles.airsim_truth reads them so).
- relative_pose: position as above from the actor's location; orientation the camera's rotation in the
  object's frame (FTransform::GetRelativeTransform(camera, object), toNed).
- geo_point: the actor's location (world NED) from the home geo point (EarthUtils::nedToGeodetic).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from common.camera import CameraProfile
from common.frames import quat_from_rotation, yaw_rotation_ned
from common.pose import Pose
from sim_bridge.rpc.wire import vec3
from sim_bridge.sim.world import World

DEFAULT_RADIUS_CM = 20000.0  # UDetectionComponent::max_distance_to_camera_ (200 m)
BOX_SIGNS = np.array([(sx, sy, sz) for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)], float)


def wildcard(pattern: str) -> re.Pattern[str]:
    """FString::MatchesWildcard's pattern (ESearchCase::IgnoreCase by default): `*` and `?` only."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL)


def mesh_name(asset: str) -> str:
    """The mesh an object of this asset string is drawn with: its kind (KIND[:ARG][@COLOUR])."""
    return asset.split("@", 1)[0].split(":", 1)[0]


def aabb_half(half_m: tuple[float, float, float], yaw_deg: float) -> np.ndarray:
    """Half extents along north/east/down of a box with these half extents along its own axes."""
    hx, hy, hz = (float(h) for h in half_m)
    c, s = abs(math.cos(math.radians(yaw_deg))), abs(math.sin(math.radians(yaw_deg)))
    return np.array([c * hx + s * hy, s * hx + c * hy, hz])


class DetectionFilters:
    """Each vehicle camera's filter, per image type: wildcard patterns and the radius (cm)."""

    def __init__(self) -> None:
        self._filters: dict[tuple[str, str, int], dict[str, Any]] = {}

    def get(self, vehicle: str, camera: str, image_type: int) -> dict[str, Any]:
        key = (vehicle, camera, int(image_type))
        return self._filters.setdefault(key, {"patterns": [], "radius_cm": DEFAULT_RADIUS_CM})

    def add(self, vehicle: str, camera: str, image_type: int, pattern: str) -> None:
        patterns = self.get(vehicle, camera, image_type)["patterns"]
        if pattern not in patterns:  # UDetectionComponent::addMeshName keeps each name once
            patterns.append(pattern)

    def set_radius(self, vehicle: str, camera: str, image_type: int, radius_cm: float) -> None:
        self.get(vehicle, camera, image_type)["radius_cm"] = float(radius_cm)

    def clear(self, vehicle: str, camera: str, image_type: int) -> None:
        self.get(vehicle, camera, image_type)["patterns"].clear()


def detections(
    world: World, vehicle: str, filt: dict[str, Any], geo: Callable[[Pose], dict[str, float]]
) -> list[dict[str, Any]]:
    """AirSim's DetectionInfo maps for the vehicle's forward camera under `filt`."""
    patterns = [wildcard(p) for p in filt["patterns"]]
    if not patterns:
        return []
    with world.lock:
        slot = world.vehicle(vehicle)
        spawn = slot.model.spawn
        local_origin = np.array([spawn.x_m, spawn.y_m, spawn.z_m])
        eye, cam_yaw = world.camera_pose(vehicle)
        rot = world.camera_rotation(vehicle)
        cam = slot.camera
        candidates = [
            (name, obj)
            for name, obj in world.objects.items()
            if any(p.fullmatch(name) or p.fullmatch(mesh_name(obj.asset)) for p in patterns)
        ]
    eye = np.asarray(eye, float)
    rot = yaw_rotation_ned(cam_yaw) if rot is None else np.asarray(rot, float)
    out = []
    for name, obj in candidates:
        location = np.array([obj.pose.x_m, obj.pose.y_m, obj.pose.z_m])
        if np.linalg.norm(location - eye) * 100.0 > filt["radius_cm"]:
            continue
        centre, half = obj.bbox_centre_ned(), aabb_half(obj.bbox_half_m, obj.pose.yaw_deg)
        box2d = _project_box(centre + BOX_SIGNS * half, eye, rot, cam.width_px, cam.height_px, cam)
        if box2d is None:
            continue
        truth = world.target_truth(vehicle, name)
        if truth.box2d_px is None or truth.pixel_count < truth.min_pixels:
            continue
        # Unreal's box Min/Max: north and east ascending, Min the lowest (largest NED down)
        lo = np.array([centre[0] - half[0], centre[1] - half[1], centre[2] + half[2]])
        hi = np.array([centre[0] + half[0], centre[1] + half[1], centre[2] - half[2]])
        u0, v0, u1, v1 = box2d
        relative_rot = yaw_rotation_ned(obj.pose.yaw_deg).T @ rot  # the camera in the object's frame
        w, x, y, z = quat_from_rotation(relative_rot)
        out.append(
            {
                "name": name,
                "geo_point": geo(obj.pose),
                "box2D": {"min": {"x_val": u0, "y_val": v0}, "max": {"x_val": u1, "y_val": v1}},
                "box3D": {
                    "min": vec3(*(rot.T @ (lo - eye) - local_origin)),
                    "max": vec3(*(rot.T @ (hi - eye) - local_origin)),
                },
                "relative_pose": {
                    "position": vec3(*(rot.T @ (location - eye) - local_origin)),
                    "orientation": {"w_val": w, "x_val": x, "y_val": y, "z_val": z},
                },
            }
        )
    return out


def _project_box(
    corners: np.ndarray, eye: np.ndarray, rot: np.ndarray, width: int, height: int, cam: CameraProfile
) -> tuple[float, float, float, float] | None:
    """calcBoundingFromViewInfo's box (clamped) or None when no corner is inside the image."""
    rel = (corners - eye) @ rot  # rows: forward, right, down in the camera
    min_u, min_v, max_u, max_v = float(width), float(height), 0.0, 0.0
    in_view = False
    for f, r, d in rel:
        if f > 0:  # ProjectWorldToScreen: W > 0
            u, v = cam.fx_px * r / f + cam.cx_px, cam.fy_px * d / f + cam.cy_px
        else:
            u, v = 0.0, 0.0  # the pixel stays at its initial (0, 0)
        on_corner = (u, v) in ((0.0, 0.0), (float(width), float(height)))
        in_view |= not on_corner and 0 <= int(u) < width and 0 <= int(v) < height  # FIntRect::Contains
        min_u, min_v = min(min_u, u), min(min_v, v)
        max_u, max_v = max(max_u, u), max(max_v, v)
    if not in_view:
        return None

    def clamp(a: float, hi: float) -> float:
        return float(min(max(a, 0.0), hi))

    return clamp(min_u, width), clamp(min_v, height), clamp(max_u, width), clamp(max_v, height)
