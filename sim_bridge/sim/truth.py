"""Ground truth of targets seen from vehicles (docs/verifier.md#declarations): distances, the visible
pixels and their box, whether an image point lies on a target.

Answered from a render's segmentation when one is given; otherwise from a render of only the pixels
that can hold the target (its projected region), which gives the same pixels as a full render at the
cost of the region (tests/sim_bridge/test_crop_truth.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from common.camera import CameraProfile
from common.errors import ConfigError
from common.frames import yaw_rotation_ned
from common.pose import Pose
from sim_bridge.sim.camera import (
    NEAR_M,
    Cameras,
    Render,
    Viewer,
    camera_pose,
    camera_rotation_ned,
    image_pixel,
)
from sim_bridge.sim.scene import SceneBody

VISIBLE_RANGE_M = 100.0
VISIBLE_PIXELS_640x360 = 20
# pixels added around a target's projected box: mesh edges rasterise up to a pixel beyond it
REGION_MARGIN_PX = 2
BOX_CORNER_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
BOX_EDGES = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]


@dataclass
class TargetTruth:
    """Ground truth (docs/verifier.md#declarations) of one target seen from one vehicle."""

    distance_m: float  # to the bbox centre
    bbox_distance_m: float
    visible: bool
    pixel_count: int
    min_pixels: int
    target_pose: Pose
    box2d_px: tuple[int, int, int, int] | None = None  # (u_min, v_min, u_max, v_max)


def projected_region(
    obj: SceneBody,
    eye: np.ndarray,
    yaw_deg: float,
    cam: CameraProfile,
    rotation: np.ndarray | None = None,
) -> tuple[int, int, int, int] | None:
    """The pixels (u0, v0, u1, v1), end exclusive, that can hold `obj` in a frame from (eye, yaw), or
    from (eye, rotation) for a tilted camera (camera FRD -> world NED; see camera_rotation_ned):
    the part of its oriented bounding box in front of the near plane, projected, REGION_MARGIN_PX
    wider, clipped to the frame. None when no pixel can (behind the camera, outside the frustum).

    A box that crosses the near plane is cut there (its corners in front plus its edges' crossing
    points): TinyRenderer does not clip at the near plane, but measured over 107 such poses no
    target pixel of a full render fell outside this region (tests/sim_bridge/test_crop_truth.py).
    """
    half = np.asarray(obj.bbox_half_m)
    corners = obj.bbox_centre_ned() + (BOX_CORNER_SIGNS * half) @ yaw_rotation_ned(obj.pose.yaw_deg).T
    cam_rot = yaw_rotation_ned(yaw_deg) if rotation is None else rotation  # a tilted camera's own
    rel = (corners - eye) @ cam_rot  # rows: (forward, right, down) in the camera
    ahead = rel[:, 0] - NEAR_M
    points = [rel[ahead > 0]]
    for a, b in BOX_EDGES:
        if ahead[a] * ahead[b] < 0:  # the edge crosses the near plane: keep the crossing point
            points.append(rel[a] + (ahead[a] / (ahead[a] - ahead[b])) * (rel[b] - rel[a]))
    pts = np.vstack(points)
    if len(pts) == 0:
        return None
    fwd = np.maximum(pts[:, 0], NEAR_M)
    u = cam.fx_px * pts[:, 1] / fwd + cam.cx_px
    v = cam.fy_px * pts[:, 2] / fwd + cam.cy_px
    u0 = max(0, math.floor(u.min()) - REGION_MARGIN_PX)
    v0 = max(0, math.floor(v.min()) - REGION_MARGIN_PX)
    u1 = min(cam.width_px, math.ceil(u.max()) + REGION_MARGIN_PX + 1)
    v1 = min(cam.height_px, math.ceil(v.max()) + REGION_MARGIN_PX + 1)
    if u0 >= u1 or v0 >= v1:
        return None
    return (u0, v0, u1, v1)


def min_visible_pixels(cam: CameraProfile) -> int:
    """20 pixels of a 640x360 frame, scaled with the frame's area (docs/verifier.md#declarations)."""
    return max(1, round(VISIBLE_PIXELS_640x360 * cam.width_px * cam.height_px / (640 * 360)))


class SimTruth:
    """Target truth over the scene `cameras` render; `vehicle` looks a vehicle up by name."""

    def __init__(self, cameras: Cameras, vehicle: Callable[[str], Viewer]) -> None:
        self.cameras = cameras
        self.scene = cameras.scene
        self.vehicle = vehicle

    def target_truth(
        self, vehicle: str, target: str, render: Render | None = None, vehicle_pose: Pose | None = None
    ) -> TargetTruth:
        """Distance, bbox distance and visibility of `target` from `vehicle`, read from `render` when
        given; otherwise from a render of just the target's projected region (crop_truth), at the
        vehicle's pose now or at `vehicle_pose`."""
        if render is None:
            return self._crop_truth(vehicle, target, vehicle_pose)
        if render.seg is None:
            raise ConfigError("target_truth needs a render with segmentation")
        with self.scene.lock:
            obj = self.scene.get_object(target)
            body, target_pose = obj.body_id, obj.pose
            drone = np.array([render.vehicle_pose.x_m, render.vehicle_pose.y_m, render.vehicle_pose.z_m])
            dist = float(np.linalg.norm(obj.bbox_centre_ned() - drone))
            bbox_dist = obj.bbox_distance_m(drone)
        return _truth_from_mask(render.seg == body, (0, 0), dist, bbox_dist, target_pose, render.camera)

    def _crop_truth(self, vehicle: str, target: str, vehicle_pose: Pose | None) -> TargetTruth:
        """target_truth from the target's projected region only: the same pixel count as a full render
        (the crop is the same pixel grid with the same scene; see tests/sim_bridge/test_crop_truth.py) at
        the cost of the region's pixels. Not in the frame at all: 0 pixels without rendering."""
        with self.scene.lock:
            viewer = self.vehicle(vehicle)
            obj = self.scene.get_object(target)
            pose = vehicle_pose or viewer.model.pose()
            drone = np.array([pose.x_m, pose.y_m, pose.z_m])
            dist = float(np.linalg.norm(obj.bbox_centre_ned() - drone))
            bbox_dist = obj.bbox_distance_m(drone)
            eye, yaw = camera_pose(viewer, pose)
            region = projected_region(obj, eye, yaw, viewer.camera, camera_rotation_ned(viewer, pose))
            if region is None:
                self.cameras.stats.skipped += 1
                mask = np.zeros((0, 0), bool)
                origin = (0, 0)
            else:
                mask = self.cameras.render_segmentation(viewer, region, vehicle_pose) == obj.body_id
                origin = (region[0], region[1])
            target_pose = obj.pose
        return _truth_from_mask(mask, origin, dist, bbox_dist, target_pose, viewer.camera)

    def point_on_target(self, render: Render, target: str, u: float, v: float) -> bool:
        """Whether image point (u, v), each 0-1000 in image order, lies on `target` in this render."""
        if render.seg is None:
            raise ConfigError("point_on_target needs a render with segmentation")
        h, w = render.seg.shape
        col, row = image_pixel(w, h, u, v)
        return bool(render.seg[row, col] == self.scene.get_object(target).body_id)

    def point_on_target_at(
        self, vehicle: str, target: str, u: float, v: float, vehicle_pose: Pose | None = None
    ) -> bool:
        """point_on_target for the vehicle's frame now (or at `vehicle_pose`), rendering that one pixel
        only (none when it lies outside the target's projected region)."""
        with self.scene.lock:
            viewer = self.vehicle(vehicle)
            obj = self.scene.get_object(target)
            cam = viewer.camera
            col, row = image_pixel(cam.width_px, cam.height_px, u, v)
            eye, yaw = camera_pose(viewer, vehicle_pose)
            region = projected_region(obj, eye, yaw, cam, camera_rotation_ned(viewer, vehicle_pose))
            if region is None or not (region[0] <= col < region[2] and region[1] <= row < region[3]):
                self.cameras.stats.skipped += 1
                return False
            seg = self.cameras.render_segmentation(viewer, (col, row, col + 1, row + 1), vehicle_pose)
            return bool(seg[0, 0] == obj.body_id)


def _truth_from_mask(
    mask: np.ndarray,
    origin: tuple[int, int],
    dist: float,
    bbox_dist: float,
    target_pose: Pose,
    cam: CameraProfile,
) -> TargetTruth:
    count = int(mask.sum())
    need = min_visible_pixels(cam)
    box = None
    if count:
        vs, us = np.nonzero(mask)
        u0, v0 = origin
        box = (int(us.min()) + u0, int(vs.min()) + v0, int(us.max()) + u0, int(vs.max()) + v0)
    return TargetTruth(
        distance_m=dist,
        bbox_distance_m=bbox_dist,
        visible=count >= need and dist <= VISIBLE_RANGE_M,
        pixel_count=count,
        min_pixels=need,
        target_pose=target_pose,
        box2d_px=box,
    )
