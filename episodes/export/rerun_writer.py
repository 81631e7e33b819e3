"""An episode timeline as a Rerun recording (.rrd) that opens laid out (its blueprint is saved with it).

Entities: common.rerun_entities (the layout the live stream, onboard.rerun_stream, shares); here
also the whole pose trace (`world/ned/trails/DRONE`), the geofence and ceiling rings
(`world/ned/geofence`), routes, boxes and the δ ring, and `log/...` for every timeline.TOPICS line.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import rerun as rr
import rerun.blueprint as rrb

from common import rerun_entities as layout
from common.rerun_entities import TIMELINE
from common.viewer_frames import heading_quat, xyzw
from episodes.export.timeline import EpisodeTimeline, ExportSummary, FrameSample

RING_SEGMENTS = 72
DEFAULT_SIZE_M = (1.0, 1.0, 1.0)
_LEVELS = {"debug": rr.TextLogLevel.DEBUG, "info": rr.TextLogLevel.INFO, "warning": rr.TextLogLevel.WARN}


def _ring(radius_m: float, z_m: float, centre: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    angles = np.linspace(0.0, 2 * math.pi, RING_SEGMENTS + 1)
    return np.column_stack(
        [
            centre[0] + radius_m * np.cos(angles),
            centre[1] + radius_m * np.sin(angles),
            np.full_like(angles, z_m),
        ]
    )


def blueprint(timeline: EpisodeTimeline) -> rrb.Blueprint:
    return layout.blueprint(timeline.drones)


def write_rrd(timeline: EpisodeTimeline, path: str | Path) -> ExportSummary:
    """Write the timeline to `path` (replaced) and say what went in (rows per entity path)."""
    started = time.perf_counter()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    rec = rr.RecordingStream(layout.APPLICATION_ID, recording_id=timeline.episode_id, send_properties=False)
    rec.set_log_time_enabled(False)  # the episode clock only: the same logs give the same file
    rec.set_log_tick_enabled(False)
    rec.save(tmp, default_blueprint=blueprint(timeline))
    rec.send_recording_name(timeline.episode_id)
    if timeline.start_unix_ns:
        rec.send_recording_start_time_nanos(timeline.start_unix_ns)
    counts: dict[str, int] = defaultdict(int)
    _static(rec, timeline, counts)
    _poses(rec, timeline, counts)
    _frames(rec, timeline, counts)
    for entry in timeline.logs:
        rec.set_time(TIMELINE, duration=max(0.0, entry.t_s))
        entity = layout.log_path(entry.drone, entry.topic)
        rec.log(entity, rr.TextLog(entry.text, level=_LEVELS.get(entry.level, rr.TextLogLevel.ERROR)))
        counts[entity] += 1
    _scalars(rec, timeline, counts)
    rec.flush()
    rec.disconnect()
    tmp.replace(path)
    return ExportSummary(
        timeline.directory, path, dict(counts), path.stat().st_size, time.perf_counter() - started
    )


def _static(rec: rr.RecordingStream, timeline: EpisodeTimeline, counts: dict[str, int]) -> None:
    layout.log_world(rec)
    counts[layout.ned_path()] += 1
    if timeline.geofence_radius_m is not None:
        centre = (timeline.home[0], timeline.home[1])
        rings = [_ring(timeline.geofence_radius_m, 0.0, centre)]
        colours = [(150, 150, 150)]
        if timeline.ceiling_m is not None:  # NED z is down: the ceiling's altitude is -z
            rings.append(_ring(timeline.geofence_radius_m, -timeline.ceiling_m, centre))
            colours.append((255, 128, 0))
        labels = ["geofence", "ceiling"][: len(rings)]
        rec.log("world/ned/geofence", rr.LineStrips3D(rings, colors=colours, labels=labels), static=True)
        counts["world/ned/geofence"] += 1
    traced = {p.drone for p in timeline.target_poses}
    for item in timeline.scene:
        size = item.size_m or DEFAULT_SIZE_M
        colour = (60, 200, 60) if item.role == "target" else (230, 40, 40)
        base = layout.object_path(item.id)
        box = rr.Boxes3D(
            sizes=[size],
            centers=[(0.0, 0.0, -size[2] / 2.0)],
            colors=[colour],
            labels=[f"{item.role} {item.kind}"],
        )
        rec.log(f"{base}/box", box, static=True)
        if item.id not in traced:
            rec.log(base, layout.pose_transform(item.pose), static=True)
        if item.role == "target" and timeline.delta_m is not None:
            ring = rr.LineStrips3D([_ring(timeline.delta_m, 0.0)], colors=[(0, 200, 230)], labels=["δ"])
            rec.log(f"{base}/delta", ring, static=True)
        if item.route:
            rec.log(
                f"world/ned/routes/{item.id}", rr.LineStrips3D([item.route], colors=[colour]), static=True
            )
    for drone in timeline.drones:
        layout.log_drone_arrow(rec, drone)
        trail = [p.pose[:3] for p in timeline.poses if p.drone == drone]
        if trail:
            rec.log(
                f"world/ned/trails/{drone}", rr.LineStrips3D([trail], colors=[(240, 240, 240)]), static=True
            )


def _poses(rec: rr.RecordingStream, timeline: EpisodeTimeline, counts: dict[str, int]) -> None:
    by_entity: dict[str, list[tuple[float, tuple[float, float, float, float]]]] = defaultdict(list)
    for p in [*timeline.poses, *timeline.target_poses]:
        by_entity[layout.object_path(p.drone)].append((p.t_s, p.pose))
    for entity, samples in by_entity.items():
        times = [max(0.0, t) for t, _ in samples]
        translations = [pose[:3] for _, pose in samples]
        quaternions = [xyzw(heading_quat(pose[3])) for _, pose in samples]
        rec.send_columns(
            entity,
            indexes=[rr.TimeColumn(TIMELINE, duration=times)],
            columns=rr.Transform3D.columns(translation=translations, quaternion=quaternions),
        )
        counts[entity] += len(samples)


def _frames(rec: rr.RecordingStream, timeline: EpisodeTimeline, counts: dict[str, int]) -> None:
    for frame in timeline.frames:
        rec.set_time(TIMELINE, duration=max(0.0, frame.t_s))
        base = layout.camera_path(frame.drone)
        rec.log(base, layout.jpeg_image(frame.path.read_bytes()))
        counts[base] += 1
        _mark(rec, layout.chosen_path(frame.drone), frame, frame.chosen_px is not None, counts)
        _mark(rec, layout.truth_path(frame.drone), frame, frame.truth_px is not None, counts)


def _mark(
    rec: rr.RecordingStream, entity: str, frame: FrameSample, present: bool, counts: dict[str, int]
) -> None:
    """A point over this frame, or a Clear so that the previous frame's point does not linger."""
    if not present:
        rec.log(entity, rr.Clear(recursive=False))
        return
    if entity.endswith("chosen"):
        assert frame.chosen_px is not None
        points = layout.chosen_points(frame.chosen_px, frame.width_px, frame.on_target, frame.caption)
    else:
        assert frame.truth_px is not None
        points = layout.truth_points(frame.truth_px, frame.width_px)
    rec.log(entity, points)
    counts[entity] += 1


def _scalars(rec: rr.RecordingStream, timeline: EpisodeTimeline, counts: dict[str, int]) -> None:
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for s in timeline.scalars:
        if math.isfinite(s.value):
            series[layout.stats_path(s.drone, s.name)].append((max(0.0, s.t_s), s.value))
    for entity, samples in series.items():
        rec.send_columns(
            entity,
            indexes=[rr.TimeColumn(TIMELINE, duration=[t for t, _ in samples])],
            columns=rr.Scalars.columns(scalars=[v for _, v in samples]),
        )
        counts[entity] += len(samples)
