"""One episode's logs as one typed timeline that no viewer's conventions have touched.

Everything is on the episode clock (`t_s`, seconds since the episode started, as in the logs) and in
world NED metres (common.frames); the writers (mcap_writer, rerun_writer) turn it into their formats
and their viewers' frames. Read from the files of docs/logs.md only, so an exported real flight
shows the same things as a simulated one, with whatever its logs lack left out.

What is derived here rather than read:
- the target's projected truth on each frame: the target's centre (its trace pose, raised by half its
  height) seen by a level pinhole camera (the episode's camera profile) at the drone's trace pose at
  the frame's capture time (the step's `t` less its `frame_age_s`), both interpolated between the
  2 Hz trace samples. The camera's tilt is not logged, so a gimballed or pitched camera's truth is
  off by its tilt: a marker to read against the chosen point, not a measurement;
- inside-δ per trace sample (`distance_m` <= the record's δ);
- each declaration's verdict: common.declarations.qualifies, as the verifier and `episodes replay`.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

import msgspec

from common.actions import Go, Plan, Rotate, action_name
from common.camera import CameraProfile, camera_profile
from common.declarations import qualifies
from common.errors import ConfigError
from common.frames import ned_to_heading
from common.logformat import (
    EPISODE_FILE,
    STEPS_FILE,
    TRACE_FILE,
    DeclarationLine,
    PoseList,
    StepLine,
    TraceLine,
)
from episodes.logs import read_episode, read_jsonl
from episodes.records import SceneObject
from onboard.recorder import EVENTS_FILE

Level = Literal["debug", "info", "warning", "error"]
PixelPoint = tuple[float, float]  # image pixels: u right, v down, from the top-left corner

# The log's topics, one channel each in the writers.
TOPICS = ("reply", "declaration", "safety", "discarded", "link", "command", "event")

# events.jsonl's `event` -> (topic, level). Anything else is an "event" at info.
_EVENT_TOPICS: dict[str, tuple[str, Level]] = {
    "safety": ("safety", "warning"),
    "estop": ("safety", "error"),
    "hold": ("safety", "warning"),
    "land": ("safety", "warning"),
    "return_home": ("safety", "warning"),
    "stall": ("safety", "warning"),
    "traffic": ("safety", "warning"),
    "vehicle_fault": ("safety", "error"),
    "refused": ("safety", "warning"),
    "prearm_failed": ("safety", "error"),
    "discarded": ("discarded", "warning"),
    "no_action": ("discarded", "warning"),
    "link": ("link", "warning"),
    "link_security": ("link", "warning"),
    "order": ("command", "info"),
    "order_expired": ("command", "info"),
    "instruction": ("command", "info"),
    "judged": ("command", "info"),
    "awaiting_judgement": ("command", "info"),
    "capture_failed": ("event", "warning"),
    "disk": ("event", "warning"),
}


class _Stages(msgspec.Struct):
    frame_age_s: float | None = None
    total_s: float | None = None


class _Step(StepLine):
    """A steps.jsonl line with the runtime's additions that the export shows."""

    discarded: str | bool | None = None
    error: str | None = None
    stages: _Stages | None = None
    source: str | None = None


class _Safety(msgspec.Struct):
    altitude_ceiling_m: float | None = None
    altitude_floor_m: float | None = None
    geofence_radius_m: float | None = None


class _Onboard(msgspec.Struct):
    safety: _Safety | None = None


class _Run(msgspec.Struct):
    camera_profile: dict[str, object] | None = None
    onboard: _Onboard | None = None
    home: PoseList | None = None
    served_control_rate_hz: float | None = None
    served_control_jitter_ms: float | None = None


class _EpisodeFile(msgspec.Struct):
    run: _Run | None = None


@dataclass(frozen=True)
class FrameSample:
    """One decision's saved camera frame and what is drawn over it (pixels of the saved image)."""

    t_s: float
    drone: str
    path: Path
    width_px: int
    height_px: int
    chosen_px: PixelPoint | None  # a `go`'s point
    on_target: bool | None  # did the chosen point fall on the target (the log's point_on_target)
    truth_px: PixelPoint | None  # the target's centre projected (module docstring); None if behind
    caption: str


@dataclass(frozen=True)
class PoseSample:
    t_s: float
    drone: str
    pose: PoseList  # world NED metres, yaw in degrees


@dataclass(frozen=True)
class LogEntry:
    t_s: float
    drone: str
    topic: str  # one of TOPICS
    level: Level
    text: str
    fields: dict[str, object] = field(default_factory=dict)  # the line's own fields, for JSON channels


@dataclass(frozen=True)
class Scalar:
    t_s: float
    drone: str
    name: str  # e.g. "reply_latency_s"; the unit is in the name
    value: float


@dataclass(frozen=True)
class SceneItem:
    """A target or distractor, at its record pose (a moving one: its route and its trace poses)."""

    id: str
    role: Literal["target", "distractor"]
    kind: str  # the object class
    pose: PoseList
    size_m: tuple[float, float, float] | None
    route: list[tuple[float, float, float]]


@dataclass(frozen=True)
class ExportSummary:
    """What a writer wrote: messages per MCAP topic or Rerun entity path."""

    source: Path
    path: Path
    messages: dict[str, int]
    bytes: int
    seconds: float


@dataclass
class EpisodeTimeline:
    episode_id: str
    directory: Path
    drones: list[str]
    delta_m: float | None
    home: PoseList  # the geofence's centre
    geofence_radius_m: float | None
    ceiling_m: float | None  # altitudes (up), not NED z
    floor_m: float | None
    scene: list[SceneItem]
    frames: list[FrameSample] = field(default_factory=list)
    poses: list[PoseSample] = field(default_factory=list)  # one per trace line with a pose
    target_poses: list[PoseSample] = field(default_factory=list)  # `drone` is the target's id
    logs: list[LogEntry] = field(default_factory=list)
    scalars: list[Scalar] = field(default_factory=list)
    start_unix_ns: int = 0  # wall clock of t = 0 when the events carry it, else 0

    @property
    def end_s(self) -> float:
        times = [
            0.0,
            *(p.t_s for p in self.poses),
            *(e.t_s for e in self.logs),
            *(f.t_s for f in self.frames),
        ]
        return max(times)

    def declarations(self) -> list[LogEntry]:
        return [e for e in self.logs if e.topic == "declaration"]


# ---- reading


def _seconds(event: dict[str, object], key: str) -> float:
    """A numeric field of an event line (_read_events keeps only lines whose `t` is a number)."""
    value = event.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def _read_events(path: Path) -> list[dict[str, object]]:
    """events.jsonl's objects with a numeric `t`; an unreadable line is left out (the verifier does not
    read this file, so it has no problem list of its own)."""
    try:
        data = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[dict[str, object]] = []
    for raw in data.splitlines():
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("t"), int | float):
            out.append(obj)
    return out


def _episode_file(directory: Path) -> _EpisodeFile:
    try:
        return msgspec.json.decode((directory / EPISODE_FILE).read_bytes(), type=_EpisodeFile)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return _EpisodeFile()


def _camera(run: _Run | None, name: str | None) -> CameraProfile | None:
    if run is not None and run.camera_profile is not None:
        try:
            return msgspec.convert(run.camera_profile, CameraProfile)
        except (msgspec.ValidationError, ConfigError):
            pass
    if name is None:
        return None
    try:
        return camera_profile(name)
    except ConfigError:
        return None


def jpeg_size_px(path: Path) -> tuple[int, int] | None:
    """(width, height) from a JPEG's start-of-frame header, without decoding the image."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            width = int.from_bytes(data[i + 7 : i + 9], "big")
            return width, height
        i += 2 + length
    return None


# ---- derived values


def _interpolate(samples: list[tuple[float, PoseList]], t_s: float) -> PoseList | None:
    """The pose at t_s, linear between the neighbouring samples (yaw the short way round); held
    beyond the ends."""
    if not samples:
        return None
    if t_s <= samples[0][0]:
        return samples[0][1]
    for (t0, p0), (t1, p1) in itertools.pairwise(samples):
        if t0 <= t_s <= t1:
            f = 0.0 if t1 <= t0 else (t_s - t0) / (t1 - t0)
            dyaw = (p1[3] - p0[3] + 180.0) % 360.0 - 180.0
            return (
                p0[0] + f * (p1[0] - p0[0]),
                p0[1] + f * (p1[1] - p0[1]),
                p0[2] + f * (p1[2] - p0[2]),
                p0[3] + f * dyaw,
            )
    return samples[-1][1]


def project_to_image(
    point_ned: tuple[float, float, float], pose: PoseList, camera: CameraProfile, size_px: tuple[int, int]
) -> PixelPoint | None:
    """Pixels (in an image of size_px) where a level pinhole camera at `pose` sees a world point; None
    behind it. The image's right is the heading frame's right, its down the world's down."""
    forward_m, right_m, up_m = ned_to_heading(
        point_ned[0] - pose[0], point_ned[1] - pose[1], point_ned[2] - pose[2], pose[3]
    )
    if forward_m <= 1e-6:
        return None
    u_px = camera.cx_px + camera.fx_px * right_m / forward_m
    v_px = camera.cy_px + camera.fy_px * (-up_m) / forward_m
    return u_px * size_px[0] / camera.width_px, v_px * size_px[1] / camera.height_px


def _plan_text(plan: Plan | None) -> str:
    if plan is None:
        return ""
    return f"in view: {plan.target_in_view}; {plan.current_frame} | {plan.action_planning}"


def action_text(step: StepLine) -> str:
    a = step.action
    if a is None:
        return "no action (malformed or discarded)"
    if isinstance(a, Go):
        return f"go point={list(a.point)} depth={a.depth_m:g} m"
    if isinstance(a, Rotate):
        return f"rotate {a.angle_deg:+g} deg"
    return action_name(a)  # finished, think


def _event_text(event: dict[str, object]) -> str:
    kind = str(event.get("event", "?"))
    skip = {"t", "drone", "event", "wall_time"}
    detail = ", ".join(f"{k}={v}" for k, v in event.items() if k not in skip and v is not None)
    return f"{kind}: {detail}" if detail else kind


# ---- the timeline


def build_timeline(directory: str | Path) -> EpisodeTimeline:
    """The timeline of one episode directory (docs/logs.md). Lines the readers cannot parse are left
    out, as the verifier leaves them out."""
    directory = Path(directory)
    logs = read_episode(directory)
    # read_jsonl decodes into the type it is given; its signature names the base line types only
    steps = cast("list[_Step]", read_jsonl(directory / STEPS_FILE, _Step, missing_ok=True)[0])
    trace, _ = read_jsonl(directory / TRACE_FILE, TraceLine, missing_ok=True)
    events = _read_events(directory / EVENTS_FILE)
    run = _episode_file(directory).run
    record = logs.record
    safety = run.onboard.safety if run is not None and run.onboard is not None else None
    scene: list[SceneItem] = []
    if record is not None:
        objects: list[tuple[SceneObject, Literal["target", "distractor"]]] = [
            *((o, "target") for o in record.targets),
            *((o, "distractor") for o in record.distractors),
        ]
        for obj, role in objects:
            size = tuple(float(v) for v in obj.size_m) if obj.size_m is not None else None
            scene.append(
                SceneItem(
                    obj.id,
                    role,
                    obj.class_,
                    obj.pose,
                    (size[0], size[1], size[2]) if size is not None else None,
                    [(float(p[0]), float(p[1]), float(p[2])) for p in obj.path or []],
                )
            )
    home = run.home if run is not None and run.home is not None else (0.0, 0.0, 0.0, 0.0)
    timeline = EpisodeTimeline(
        episode_id=record.id if record is not None else directory.name,
        directory=directory,
        drones=logs.drones,
        delta_m=record.delta_m if record is not None else None,
        home=home,
        geofence_radius_m=safety.geofence_radius_m if safety else None,
        ceiling_m=safety.altitude_ceiling_m if safety else None,
        floor_m=safety.altitude_floor_m if safety else None,
        scene=scene,
    )
    wall = [e for e in events if isinstance(e.get("wall_time"), int | float)]
    if wall:
        first = wall[0]
        timeline.start_unix_ns = int((_seconds(first, "wall_time") - _seconds(first, "t")) * 1e9)

    _add_trace(timeline, trace)
    _add_steps(timeline, steps, trace, _camera(run, record.camera if record else None))
    _add_declarations(timeline, logs.declarations)
    for event in events:
        kind = str(event.get("event", ""))
        topic, level = _EVENT_TOPICS.get(kind, ("event", "info"))
        drone = str(event.get("drone") or "run")  # a run-wide event (a commander's, say)
        timeline.logs.append(LogEntry(_seconds(event, "t"), drone, topic, level, _event_text(event), event))
    if run is not None:
        end_s = timeline.end_s
        for drone in timeline.drones[:1]:  # the run's figures: one drone's runtime wrote them
            if run.served_control_rate_hz is not None:
                timeline.scalars.append(
                    Scalar(end_s, drone, "served_control_rate_hz", run.served_control_rate_hz)
                )
            if run.served_control_jitter_ms is not None:
                timeline.scalars.append(
                    Scalar(end_s, drone, "actuation_jitter_ms", run.served_control_jitter_ms)
                )
    for items in (timeline.frames, timeline.poses, timeline.target_poses, timeline.logs, timeline.scalars):
        items.sort(key=lambda item: item.t_s)
    return timeline


def _add_trace(timeline: EpisodeTimeline, trace: list[TraceLine]) -> None:
    seen_target: set[float] = set()
    target_id = next((s.id for s in timeline.scene if s.role == "target"), "target")
    for line in trace:
        if line.pose is not None:
            timeline.poses.append(PoseSample(line.t, line.drone, line.pose))
        if line.target_pose is not None and round(line.t, 3) not in seen_target:
            seen_target.add(round(line.t, 3))  # every drone's line carries the same target pose
            timeline.target_poses.append(PoseSample(line.t, target_id, line.target_pose))
        if line.distance_m is not None:
            timeline.scalars.append(Scalar(line.t, line.drone, "distance_to_target_m", line.distance_m))
            if timeline.delta_m is not None:
                inside = float(line.distance_m <= timeline.delta_m)
                timeline.scalars.append(Scalar(line.t, line.drone, "inside_delta", inside))
        if line.visible is not None:
            timeline.scalars.append(Scalar(line.t, line.drone, "visible", float(line.visible)))


def _add_steps(
    timeline: EpisodeTimeline, steps: list[_Step], trace: list[TraceLine], camera: CameraProfile | None
) -> None:
    drone_poses: dict[str, list[tuple[float, PoseList]]] = {}
    target_poses: list[tuple[float, PoseList]] = []
    for line in sorted(trace, key=lambda line: line.t):
        if line.pose is not None:
            drone_poses.setdefault(line.drone, []).append((line.t, line.pose))
        if line.target_pose is not None:
            target_poses.append((line.t, line.target_pose))
    target = next((s for s in timeline.scene if s.role == "target"), None)
    half_height_m = target.size_m[2] / 2.0 if target is not None and target.size_m is not None else 0.0
    for step in steps:
        think = _plan_text(step.action.plan) if step.action is not None else ""
        fields: dict[str, object] = {
            "call_id": step.call_id,
            "action": msgspec.to_builtins(step.action),
            "raw": step.raw,
            "think": think or None,
            "latency_s": step.latency_s,
            "point_on_target": step.point_on_target,
            "discarded": step.discarded,
            "error": step.error,
            "source": step.source,
        }
        text = action_text(step) + (f"  | {think}" if think else "") + f"  | raw: {step.raw or ''}"
        level: Level = "warning" if step.action is None else "info"
        timeline.logs.append(LogEntry(step.t, step.drone, "reply", level, text, fields))
        if step.latency_s is not None:
            timeline.scalars.append(Scalar(step.t, step.drone, "reply_latency_s", step.latency_s))
        age_s = step.stages.frame_age_s if step.stages is not None else None
        if age_s is not None:
            timeline.scalars.append(Scalar(step.t, step.drone, "frame_age_s", age_s))
        if not step.frame:
            continue
        path = timeline.directory / step.frame
        size = jpeg_size_px(path)
        if size is None:
            continue  # deleted beyond frames_max_bytes, or not a JPEG
        chosen: PixelPoint | None = None
        if isinstance(step.action, Go):
            chosen = (step.action.point[0] / 1000.0 * size[0], step.action.point[1] / 1000.0 * size[1])
        truth: PixelPoint | None = None
        capture_s = step.t - (age_s or 0.0)
        pose = _interpolate(drone_poses.get(step.drone, []), capture_s)
        target_pose = _interpolate(target_poses, capture_s)
        if camera is not None and pose is not None and target_pose is not None:
            centre = (target_pose[0], target_pose[1], target_pose[2] - half_height_m)
            truth = project_to_image(centre, pose, camera, size)
        timeline.frames.append(
            FrameSample(
                step.t,
                step.drone,
                path,
                size[0],
                size[1],
                chosen,
                step.point_on_target,
                truth,
                action_text(step),
            )
        )


def _add_declarations(timeline: EpisodeTimeline, declarations: list[DeclarationLine]) -> None:
    for d in declarations:
        ok = qualifies(d.distance_m, d.visible, timeline.delta_m, d.judged)
        dist = "?" if d.distance_m is None else f"{d.distance_m:.2f} m"
        verdict = "qualifying" if ok else "not qualifying"
        text = f"finished at {dist} (visible={d.visible}, judged={d.judged}): {verdict}"
        fields = {**msgspec.to_builtins(d), "qualifies": ok}
        level: Level = "info" if ok else "warning"
        timeline.logs.append(LogEntry(d.t, d.drone, "declaration", level, text, fields))
