"""Ground truth (docs/verifier.md#declarations) from an AirSim-compatible server over stock AirSim RPC
only (a real AirSim, Cosys-AirSim, or `dronecats sim` with or without --strict-airsim), for the HIL
path.

- Distances: simGetObjectPose of the vehicle and of the target (world NED), the target's bounding
  box placed on its pose: centre offset and half extents in the target's own frame (TargetExtent),
  read once from a detection's box3D and relative_pose (or given: the record's size_m).
- Visibility: simGetDetections of the vehicle's camera after simAddDetectionFilterMeshName(target)
  with the verifier's 100 m radius (simSetDetectionFilterRadius takes centimetres). The server decides
  what counts as detected (the built-in simulator: the verifier's rule, >= 20 px of 640x360, unoccluded).
- Point on target: the pixel's colour in the Segmentation image taken in the same simGetImages
  request as the frame (Frame.meta["segmentation"]), compared with the target's segmentation colour
  (set with simSetSegmentationObjectID, read off a frame by `learn_colour`); where no segmentation
  is at hand, the built-in simulator's dcPointOnTargetInFrame where the server has it (an optional
  fast path: the frame's segmentation as served), else whether the point lies in the target's
  detection box2D now (coarser). `point_source` says which was used.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from common.frames import offset_to_ned, rotation_from_unit_quat, yaw_from_ned_quat, yaw_rotation_ned
from common.pose import Frame
from common.truth import TruthSample
from onboard.vehicles.airsim import AirSimVehicle, ThreadClients, parse_airsim_url, wxyz

log = logging.getLogger(__name__)

UNKNOWN = TruthSample(None, None, None, None)
DETECTION_RADIUS_M = 100.0  # docs/verifier.md#declarations: visible within 100 m
SCENE_IMAGE_TYPE = 0
MIN_SHARE_INSIDE = 0.9  # learn_colour: the target's colour lies wholly inside its box (edge pixels aside)
TARGET_SEGMENTATION_ID = 1  # the target's segmentation object id; everything else gets 0


@dataclass(frozen=True)
class TargetExtent:
    """The target's bounding box in its own frame (x forward, y right, z down; metres)."""

    centre_frd_m: tuple[float, float, float]
    half_m: tuple[float, float, float]
    source: str  # "box3D" or "record"


def xyz(v: Any) -> np.ndarray:
    return np.array([float(v.x_val), float(v.y_val), float(v.z_val)])


def extent_from_detection(detection: Any, camera_rot: np.ndarray, target_yaw: float) -> TargetExtent:
    """box3D and relative_pose (camera frame, AirSim's DetectionComponent) -> the box in the target's frame.

    AirSim's box3D holds the target's world-axis bounding box's Min and Max corners in the camera's frame
    and relative_pose.position its location so, all three less the vehicle's local NED origin (AirSim
    applies toLocalNed to camera-relative vectors): their differences are free of that offset. The centre
    is the box's middle less the location; the half extents the world box's, turned back into the
    target's own axes by its yaw (a box turned near 45 degrees keeps the world box's: larger)."""
    lo, hi = xyz(detection.box3D.min), xyz(detection.box3D.max)
    location = xyz(detection.relative_pose.position)
    centre = yaw_rotation_ned(target_yaw).T @ (camera_rot @ ((lo + hi) / 2.0 - location))
    world_half = np.abs(camera_rot @ (hi - lo)) / 2.0
    c, s = abs(math.cos(math.radians(target_yaw))), abs(math.sin(math.radians(target_yaw)))
    half = world_half.copy()
    if abs(c * c - s * s) > 0.2:  # H = [[c, s], [s, c]] h: solvable away from 45 degrees
        own = np.linalg.solve(np.array([[c, s], [s, c]]), world_half[:2])
        if np.all(own > 0):
            half[:2] = own
    return TargetExtent(tuple(map(float, centre)), tuple(map(float, half)), "box3D")  # type: ignore[arg-type]


def learn_colour(
    segmentation: np.ndarray, box2d: tuple[float, float, float, float]
) -> tuple[int, int, int] | None:
    """The target's segmentation colour in a frame: of the colours that lie (almost) wholly inside its
    detection box, the one with the most pixels there. AirSim's box2D is the projection of the target's
    world-axis box (DetectionComponent), looser than its silhouette, so the box also holds ground, sky or
    a neighbour; those colours have most of their pixels outside it, the target's has all of them in."""
    h, w = segmentation.shape[:2]
    u0, v0, u1, v1 = (round(float(a)) for a in box2d)
    u0, v0, u1, v1 = max(0, u0), max(0, v0), min(w - 1, u1), min(h - 1, v1)
    if u1 < u0 or v1 < v0:
        return None
    inside = np.zeros((h, w), bool)
    inside[v0 : v1 + 1, u0 : u1 + 1] = True
    flat = segmentation.reshape(-1, 3)
    keys = (flat[:, 0].astype(np.int64) << 16) | (flat[:, 1].astype(np.int64) << 8) | flat[:, 2]
    colours, inverse = np.unique(keys, return_inverse=True)
    total = np.bincount(inverse.ravel(), minlength=colours.size)
    within = np.bincount(inverse.ravel()[inside.ravel()], minlength=colours.size)
    wholly_inside = within >= MIN_SHARE_INSIDE * total
    if not np.any(wholly_inside & (within > 0)):
        return None
    colour = int(colours[np.argmax(np.where(wholly_inside, within, 0))])
    return (colour >> 16, (colour >> 8) & 255, colour & 255)


class RemoteTruth:
    """GroundTruth for one target, asked of the server behind an AirSimVehicle (its api, its spawn) or
    an airsim:// vehicle URL (`dronecats onboard --truth-target`)."""

    def __init__(
        self,
        vehicle: AirSimVehicle | str,
        target: str,
        extent: TargetExtent | None = None,
        colour: tuple[int, int, int] | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.vehicle = AirSimVehicle(parse_airsim_url(vehicle)) if isinstance(vehicle, str) else vehicle
        self.target = target
        self._filter_set = False
        self._fast_path = True  # dcPointOnTargetInFrame where the server has it and no segmentation
        self.extent = extent
        self.colour = colour  # BGR of the target in Segmentation images
        self._timeout_s = timeout_s
        self._local = ThreadClients()
        self.point_source: str | None = None  # "segmentation" or "box2D" once asked
        self._warned: set[str] = set()

    # ---- plumbing
    def client(self) -> Any:
        c = self._local.client
        if c is None:
            t = self.vehicle.target
            c = self.vehicle.module.MultirotorClient(ip=t.host, port=t.port, timeout_value=self._timeout_s)
            self._local.client = c
        return c

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    @property
    def camera(self) -> str:
        return self.vehicle.target.camera

    def set_up(self) -> None:
        """The detection filter on the vehicle's camera: only the target, within 100 m."""
        c, cam, name = self.client(), self.camera, self.vehicle.name
        c.simClearDetectionMeshNames(cam, SCENE_IMAGE_TYPE, vehicle_name=name)
        c.simSetDetectionFilterRadius(cam, SCENE_IMAGE_TYPE, DETECTION_RADIUS_M * 100.0, vehicle_name=name)
        c.simAddDetectionFilterMeshName(cam, SCENE_IMAGE_TYPE, self.target, vehicle_name=name)
        self._filter_set = True

    def detection(self) -> Any | None:
        """The target's detection from the vehicle's camera now, or None."""
        if not self._filter_set:
            self.set_up()
        found = self.client().simGetDetections(self.camera, SCENE_IMAGE_TYPE, vehicle_name=self.vehicle.name)
        return next((d for d in found if d.name == self.target), None)

    def camera_pose_world(self) -> tuple[np.ndarray, np.ndarray]:
        """(position, rotation) of the vehicle's camera in the world (simGetCameraInfo is spawn-relative)."""
        info = self.client().simGetCameraInfo(self.camera, vehicle_name=self.vehicle.name)
        s = self.vehicle.spawn
        rotation = rotation_from_unit_quat(*wxyz(info.pose.orientation))
        return xyz(info.pose.position) + np.array([s.x_m, s.y_m, s.z_m]), rotation

    def target_pose(self) -> tuple[np.ndarray, float] | None:
        pose = self.client().simGetObjectPose(self.target)
        p = xyz(pose.position)
        if not np.all(np.isfinite(p)):
            return None
        return p, yaw_from_ned_quat(*wxyz(pose.orientation))

    def learn_extent(self, detection: Any) -> TargetExtent | None:
        here = self.target_pose()
        if here is None:
            return None
        _, cam_rot = self.camera_pose_world()
        self.extent = extent_from_detection(detection, cam_rot, here[1])
        log.info(
            "%s: extent from box3D: centre %s, half %s",
            self.target,
            self.extent.centre_frd_m,
            self.extent.half_m,
        )
        return self.extent

    # ---- GroundTruth
    def sample(self, drone: str) -> TruthSample:
        c = self.client()
        try:
            target = self.target_pose()
            vehicle = xyz(c.simGetObjectPose(self.vehicle.name).position)
            detection = self.detection()
        except Exception as exc:
            self._warn_once("sample", "ground truth for %s failed: %s", self.target, exc)
            return UNKNOWN
        if target is None or not np.all(np.isfinite(vehicle)):
            self._warn_once(
                "pose", "simGetObjectPose has no pose for %s or %s", self.target, self.vehicle.name
            )
            return UNKNOWN
        if self.extent is None and detection is not None:
            self.learn_extent(detection)
        position, yaw = target
        if self.extent is None:
            # no box yet (never detected, no record size): the object's origin, said once in the log
            self._warn_once("extent", "%s: extent unknown: distances to its origin", self.target)
            centre, half = position, np.zeros(3)
        else:
            centre = offset_to_ned(position, yaw_rotation_ned(yaw), self.extent.centre_frd_m)
            half = np.asarray(self.extent.half_m)
        distance = float(np.linalg.norm(centre - vehicle))
        local = yaw_rotation_ned(yaw).T @ (vehicle - centre)
        bbox_distance = float(np.linalg.norm(local - np.clip(local, -half, half)))
        pose = [float(position[0]), float(position[1]), float(position[2]), yaw]
        return TruthSample(distance, bbox_distance, detection is not None, pose)

    def point_on_target(self, frame: Frame, point_xy: tuple[int, int]) -> bool | None:
        """Whether the 0-1000 image point of this frame lies on the target."""
        seg = frame.meta.get("segmentation")
        h, w = frame.image.shape[:2]
        col = min(w - 1, max(0, int(point_xy[0] * w / 1000.0)))
        row = min(h - 1, max(0, int(point_xy[1] * h / 1000.0)))
        if seg is not None and self.colour is not None:
            self.point_source = "segmentation"
            return bool(tuple(int(v) for v in seg[row, col]) == self.colour)
        if self._fast_path:
            # The built-in simulator's optional fast path: the frame's segmentation as it served it
            # (by time stamp and pose). Any other server: unknown function, and box2D from then on.
            try:
                # the server's own stamp: capture_time_s is on the adapter's time line (its epoch_ns)
                stamp_ns = int(frame.meta.get("time_stamp_ns", round(frame.capture_time_s * 1e9)))
                pose = [float(v) for v in frame.pose.as_list()]
                u, v = float(point_xy[0]), float(point_xy[1])
                answer = self.client().client.call(
                    "dcPointOnTargetInFrame", self.vehicle.name, self.target, u, v, stamp_ns, pose
                )
                self.point_source = "dcPointOnTargetInFrame"
                return bool(answer)
            except Exception as exc:
                log.info("no dcPointOnTargetInFrame (%s): point on target from box2D", exc)
                self._fast_path = False
        self.point_source = "box2D"
        self._warn_once(
            "box2d", "%s: point on target from the detection's box2D (no segmentation colour)", self.target
        )
        try:
            detection = self.detection()
        except Exception as exc:
            self._warn_once("p", "point on target for %s failed: %s", self.target, exc)
            return None
        if detection is None:
            return False
        b = detection.box2D
        return bool(b.min.x_val <= col <= b.max.x_val and b.min.y_val <= row <= b.max.y_val)

    def close(self) -> None:
        self._local.close()


def open_remote_truth(vehicle_url: str, target: str) -> RemoteTruth:
    """Registered in common.truth for the airsim:// scheme."""
    return RemoteTruth(vehicle_url, target)
