"""Pre-flight checks of an episode (docs/verifier.md#task-types, issue 10): before a drone flies, the
world must hold what the record says, seen the way the record declares it.

- every target and distractor is spawned where the record puts it, overlapping no other object, and
  no drone starts inside or next to an object;
- start distance and bearing to the (first) target match the declared ones;
- visible at start as declared (approach/track: yes; search: no);
- seen from the start pose *facing* the target, it fills 0.40-12% of the frame;
- the camera path is clear: the ray from the camera to the target's centre meets the target first.

Each failed check is a sentence naming the value and the limit it broke.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from common.errors import ConfigError
from common.pose import Pose, wrap_deg
from episodes.records import COMMANDING_TASKS, EpisodeRecord
from episodes.scenario import start_pose, takeoff_altitude_m

if TYPE_CHECKING:
    from sim_bridge.sim.world import World

MIN_OCCUPANCY = 0.004
MAX_OCCUPANCY = 0.12
DISTANCE_TOLERANCE_M = 1.0
BEARING_TOLERANCE_DEG = 5.0
SPAWN_TOLERANCE_M = 0.05
START_CLEARANCE_M = 1.0  # no named object this close to a drone's start (it would take off inside it)


class Expectation(msgspec.Struct, frozen=True):
    """What the author declared about the start: checked before every flight."""

    start_distance_m: float  # horizontal, start position to the first target's position
    start_bearing_deg: float  # of the target relative to the start yaw (+ = right)
    visible_at_start: bool


@dataclass
class PreflightReport:
    ok: bool
    problems: list[str] = field(default_factory=list)
    start_distance_m: float = 0.0
    start_bearing_deg: float = 0.0
    visible_at_start: bool = False
    occupancy: float = 0.0  # share of the frame the target covers, seen facing it
    clear_path: bool = False


def geometry(start: Pose, target_xy: tuple[float, float]) -> tuple[float, float]:
    """(horizontal distance, bearing relative to the start yaw, + = clockwise/right) of a point."""
    dx, dy = target_xy[0] - start.x_m, target_xy[1] - start.y_m
    return math.hypot(dx, dy), wrap_deg(math.degrees(math.atan2(dy, dx)) - start.yaw_deg)


def expectation_for(record: EpisodeRecord) -> Expectation:
    """The declaration a record implies by its geometry and task type (search: out of view)."""
    target = record.targets[0]
    distance, bearing = geometry(start_pose(record), (target.pose[0], target.pose[1]))
    visible = record.task_type not in ("search", "search+track", *COMMANDING_TASKS)
    return Expectation(round(distance, 2), round(bearing, 1), visible)


def _clear_path(world: World, render: object, target: str) -> bool:
    """The target's bbox centre, projected into the facing render, is a pixel of the target."""
    from common.frames import yaw_rotation_ned
    from sim_bridge.sim.world import Render

    assert isinstance(render, Render) and render.seg is not None
    obj = world.get_object(target)
    rel = obj.bbox_centre_ned() - np.asarray(render.camera_position_ned)
    frd = yaw_rotation_ned(render.camera_yaw_deg).T @ rel  # forward, right, down
    if frd[0] <= 0:
        return False
    cam = render.camera
    u = int(np.rint(cam.cx_px + cam.fx_px * frd[1] / frd[0]))
    v = int(np.rint(cam.cy_px + cam.fy_px * frd[2] / frd[0]))
    h, w = render.seg.shape
    if not (0 <= u < w and 0 <= v < h):
        return False
    # A 3x3 neighbourhood: a thin gap in the target's own geometry (a window) is not an obstacle.
    patch = render.seg[max(0, v - 1) : v + 2, max(0, u - 1) : u + 2]
    return bool((patch == obj.body_id).any())


def _footprint(world: World, name: str) -> np.ndarray:
    """The four ground-plane corners (x, y) of an object's oriented bounding box."""
    from common.frames import yaw_rotation_ned

    obj = world.get_object(name)
    rot = yaw_rotation_ned(obj.pose.yaw_deg)[:2, :2]
    hx, hy = obj.bbox_half_m[0], obj.bbox_half_m[1]
    local = np.array([[hx, hy], [hx, -hy], [-hx, -hy], [-hx, hy]])
    return local @ rot.T + obj.bbox_centre_ned()[:2]


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Separating-axis test of two convex quadrilaterals."""
    for quad in (a, b):
        for i in range(4):
            edge = quad[(i + 1) % 4] - quad[i]
            axis = np.array([-edge[1], edge[0]])
            pa, pb = a @ axis, b @ axis
            if pa.max() <= pb.min() or pb.max() <= pa.min():
                return False
    return True


def overlaps(world: World, record: EpisodeRecord) -> list[str]:
    """Record objects whose footprints intersect another named object's (scenery aside)."""
    ours = [o.id for o in (*record.targets, *record.distractors) if o.id in world.objects]
    others = [n for n, o in world.objects.items() if o.cls != "scenery"]
    problems = []
    for i, name in enumerate(ours):
        mine = _footprint(world, name)
        for other in others:
            if other == name or (other in ours and ours.index(other) < i):
                continue
            if _overlap(mine, _footprint(world, other)):
                problems.append(f"object {name!r} overlaps {other!r}")
    return problems


def start_clearance(world: World, record: EpisodeRecord) -> list[str]:
    """Drones whose start lies within START_CLEARANCE_M of a named object's bounding box."""
    problems = []
    for i, drone in enumerate(record.drones):
        start = start_pose(record, i)
        for name, obj in world.objects.items():
            if obj.cls == "scenery":
                continue
            centre_z = float(obj.bbox_centre_ned()[2])
            gap = obj.bbox_distance_m(np.array([start.x_m, start.y_m, centre_z]))
            if gap < START_CLEARANCE_M:
                problems.append(
                    f"drone {drone.name} starts {gap:.2f} m from {name!r} (< {START_CLEARANCE_M} m clearance)"
                )
    return problems


def check_or_refuse(world: World, record: EpisodeRecord, recorder: Any) -> PreflightReport:
    """check(), with the report written into the episode's metadata; ConfigError when it fails."""
    report = check(world, record)
    recorder.write_metadata(
        run={"preflight": {"ok": report.ok, "problems": report.problems, "occupancy": report.occupancy}}
    )
    if not report.ok:
        raise ConfigError(f"episode {record.id}: pre-flight checks failed: " + "; ".join(report.problems))
    return report


def check(world: World, record: EpisodeRecord, expect: Expectation | None = None) -> PreflightReport:
    """Run every pre-flight check of `record` in `world` (built by episodes.scenario.build_world)."""
    expect = expect or expectation_for(record)
    problems: list[str] = []
    for obj in (*record.targets, *record.distractors):
        if obj.id not in world.objects:
            problems.append(f"object {obj.id!r} is not spawned")
            continue
        placed = world.object_pose(obj.id)
        if obj.moving:
            continue  # on its path already; the path's first point is the record's pose
        error = math.hypot(placed.x_m - obj.pose[0], placed.y_m - obj.pose[1])
        if error > SPAWN_TOLERANCE_M:
            problems.append(
                f"object {obj.id!r} is {error:.2f} m from its record pose (> {SPAWN_TOLERANCE_M})"
            )
    problems += overlaps(world, record)
    problems += start_clearance(world, record)
    target = record.targets[0]
    report = PreflightReport(ok=False, problems=problems)
    if target.id not in world.objects:
        return report
    start = start_pose(record)
    now = world.object_pose(target.id)
    distance, bearing = geometry(start, (now.x_m, now.y_m))
    report.start_distance_m, report.start_bearing_deg = distance, bearing
    if abs(distance - expect.start_distance_m) > DISTANCE_TOLERANCE_M:
        problems.append(
            f"start distance {distance:.1f} m differs from the declared {expect.start_distance_m:.1f} m "
            f"by more than {DISTANCE_TOLERANCE_M} m"
        )
    if abs(wrap_deg(bearing - expect.start_bearing_deg)) > BEARING_TOLERANCE_DEG:
        problems.append(
            f"start bearing {bearing:.1f}° differs from the declared {expect.start_bearing_deg:.1f}° "
            f"by more than {BEARING_TOLERANCE_DEG}°"
        )
    if record.task_type in COMMANDING_TASKS:
        # Commanding tasks are searches by design (the fleet must find and read inscriptions): the
        # view checks of single-drone episodes do not apply; placement and clearance do.
        report.ok = not problems
        return report
    drone = record.drones[0].name
    altitude = takeoff_altitude_m(record)
    airborne = Pose(start.x_m, start.y_m, start.z_m - altitude, start.yaw_deg)
    at_start = world.render(drone, segmentation=True, vehicle_pose=airborne)
    report.visible_at_start = bool(world.target_truth(drone, target.id, at_start).visible)
    if report.visible_at_start != expect.visible_at_start:
        problems.append(
            f"target {target.id!r} is {'' if report.visible_at_start else 'not '}visible at the start pose; "
            f"declared {'visible' if expect.visible_at_start else 'out of view'}"
        )
    facing = Pose(airborne.x_m, airborne.y_m, airborne.z_m, wrap_deg(start.yaw_deg + bearing))
    render = world.render(drone, segmentation=True, vehicle_pose=facing)
    truth = world.target_truth(drone, target.id, render)
    assert render.seg is not None
    report.occupancy = truth.pixel_count / float(render.seg.size)
    if not MIN_OCCUPANCY <= report.occupancy <= MAX_OCCUPANCY:
        problems.append(
            f"target {target.id!r} fills {report.occupancy:.2%} of the frame seen from the start facing it; "
            f"limits {MIN_OCCUPANCY:.2%}-{MAX_OCCUPANCY:.0%}"
        )
    report.clear_path = _clear_path(world, render, target.id)
    if not report.clear_path:
        problems.append(f"the camera path from the start to target {target.id!r} is blocked")
    report.ok = not problems
    return report
