"""An episode timeline as an MCAP file that Foxglove shows with its built-in panels.

Channels (JSON messages; the Foxglove well-known schemas of foxglove_schemas where one fits):

- `/tf` (foxglove.FrameTransform): "world" -> "ned" once (common.viewer_frames), then "ned" -> each drone per
  trace line, "ned" -> the target per trace sample, "ned" -> each untraced object once;
- `/scene` (foxglove.SceneUpdate), once at t = 0: geofence and ceiling rings, the δ ring (locked to
  the target), target and distractor boxes, drone arrows (locked to the drones), each drone's whole
  trail, a moving object's route;
- `/camera/DRONE/image` (foxglove.CompressedImage): each decision's saved JPEG, unchanged;
- `/camera/DRONE/annotations` (foxglove.ImageAnnotations), same time stamp: the chosen point (green
  on the target, red off, white unknown), the projected truth (yellow), a caption;
- `/log` (foxglove.Log): every reply, declaration (with its verdict), event, discarded reply, link
  change and order; `name` is DRONE/TOPIC;
- `/TOPIC/DRONE` (JSON, dronecats.TOPIC): the same entries with their fields: reply (raw, parsed
  action, think text), declaration, safety, discarded, link, command, event;
- `/stats/DRONE/NAME` (JSON, dronecats.Scalar): `{"value": v}`: reply latency, frame age, distance
  to target, inside-δ, visible, served control rate and jitter when logged.

Time stamps (log and publish time, and each message's `timestamp`) are the wall clock of the
episode's start (from events.jsonl; the Unix epoch when it is not logged) plus the episode time.
"""

from __future__ import annotations

import base64
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgspec
from mcap.writer import CompressionType, Writer

from common.viewer_frames import NED_FRAME, NED_IN_WORLD, WORLD_FRAME, heading_quat, xyzw
from episodes.export.foxglove_schemas import LOG_LEVELS, schema_bytes
from episodes.export.foxglove_schemas import frame_transform as _transform
from episodes.export.foxglove_schemas import time_json as _time
from episodes.export.timeline import EpisodeTimeline, ExportSummary, FrameSample, PixelPoint

Json = dict[str, object]
Colour = tuple[float, float, float, float]

GREEN: Colour = (0.24, 0.8, 0.24, 1.0)
RED: Colour = (0.9, 0.16, 0.16, 1.0)
WHITE: Colour = (0.95, 0.95, 0.95, 1.0)
YELLOW: Colour = (1.0, 0.8, 0.0, 1.0)
CYAN: Colour = (0.0, 0.8, 0.9, 1.0)
ORANGE: Colour = (1.0, 0.5, 0.0, 1.0)
GREY: Colour = (0.6, 0.6, 0.6, 0.6)
CLEAR: Colour = (0.0, 0.0, 0.0, 0.0)
SHADE: Colour = (0.0, 0.0, 0.0, 0.6)

RING_SEGMENTS = 72
DEFAULT_SIZE_M = (1.0, 1.0, 1.0)  # a scene object whose record has no size_m


@dataclass(frozen=True)
class _Message:
    t_ns: int
    topic: str
    schema: str
    payload: Json


def _colour(c: Colour) -> Json:
    return {"r": c[0], "g": c[1], "b": c[2], "a": c[3]}


def _vec(x: float, y: float, z: float) -> Json:
    return {"x": x, "y": y, "z": z}


def _quat(q_xyzw: tuple[float, float, float, float]) -> Json:
    return {"x": q_xyzw[0], "y": q_xyzw[1], "z": q_xyzw[2], "w": q_xyzw[3]}


_IDENTITY_POSE: Json = {"position": _vec(0.0, 0.0, 0.0), "orientation": _quat((0.0, 0.0, 0.0, 1.0))}


def _pose_at(x: float, y: float, z: float) -> Json:
    return {"position": _vec(x, y, z), "orientation": _quat((0.0, 0.0, 0.0, 1.0))}


def _ring(radius_m: float, z_m: float, colour: Colour, centre: tuple[float, float] = (0.0, 0.0)) -> Json:
    points = [
        _vec(
            centre[0] + radius_m * math.cos(2 * math.pi * k / RING_SEGMENTS),
            centre[1] + radius_m * math.sin(2 * math.pi * k / RING_SEGMENTS),
            z_m,
        )
        for k in range(RING_SEGMENTS)
    ]
    return {
        "type": 1,  # LINE_LOOP
        "pose": _IDENTITY_POSE,
        "thickness": 2.0,
        "scale_invariant": True,
        "points": points,
        "color": _colour(colour),
    }


def _entity(
    t_ns: int, frame_id: str, entity_id: str, frame_locked: bool = False, **primitives: list[Json]
) -> Json:
    entity: Json = {
        "timestamp": _time(t_ns),
        "frame_id": frame_id,
        "id": entity_id,
        "lifetime": _time(0),  # 0: until replaced or deleted
        "frame_locked": frame_locked,
    }
    entity.update(primitives)
    return entity


def _label(text: str, z_m: float, colour: Colour = WHITE) -> Json:
    return {
        "pose": _pose_at(0.0, 0.0, z_m),
        "billboard": True,
        "font_size": 14.0,
        "scale_invariant": True,
        "color": _colour(colour),
        "text": text,
    }


def _scene(timeline: EpisodeTimeline, t_ns: int) -> Json:
    entities: list[Json] = []
    hx, hy = timeline.home[0], timeline.home[1]
    if timeline.geofence_radius_m is not None:
        rings = [_ring(timeline.geofence_radius_m, 0.0, GREY, (hx, hy))]
        if timeline.ceiling_m is not None:  # NED z is down: the ceiling's altitude is -z
            rings.append(_ring(timeline.geofence_radius_m, -timeline.ceiling_m, ORANGE, (hx, hy)))
        entities.append(_entity(t_ns, NED_FRAME, "geofence", lines=rings))
    for item in timeline.scene:
        size = item.size_m or DEFAULT_SIZE_M
        colour = GREEN if item.role == "target" else RED
        # The box's pose is in the object's frame, whose origin is its pose on the ground: its centre
        # is half its height up (NED: negative z).
        cube: Json = {
            "pose": _pose_at(0.0, 0.0, -size[2] / 2.0),
            "size": _vec(*size),
            "color": _colour((colour[0], colour[1], colour[2], 0.5)),
        }
        primitives: dict[str, list[Json]] = {
            "cubes": [cube],
            "texts": [_label(f"{item.role} {item.id} ({item.kind})", -size[2] - 0.5)],
        }
        if item.role == "target" and timeline.delta_m is not None:
            primitives["lines"] = [_ring(timeline.delta_m, 0.0, CYAN)]
        entities.append(_entity(t_ns, item.id, item.id, frame_locked=True, **primitives))
        if item.route:
            route = {
                "type": 0,  # LINE_STRIP
                "pose": _IDENTITY_POSE,
                "thickness": 1.5,
                "scale_invariant": True,
                "points": [_vec(*p) for p in item.route],
                "color": _colour(colour),
            }
            entities.append(_entity(t_ns, NED_FRAME, f"{item.id}/route", lines=[route]))
    for drone in timeline.drones:
        trail = [_vec(p.pose[0], p.pose[1], p.pose[2]) for p in timeline.poses if p.drone == drone]
        if trail:
            line = {
                "type": 0,
                "pose": _IDENTITY_POSE,
                "thickness": 2.0,
                "scale_invariant": True,
                "points": trail,
                "color": _colour(WHITE),
            }
            entities.append(_entity(t_ns, NED_FRAME, f"{drone}/trail", lines=[line]))
        arrow = {
            "pose": _IDENTITY_POSE,  # the drone frame's x: forward
            "shaft_length": 0.8,
            "shaft_diameter": 0.1,
            "head_length": 0.3,
            "head_diameter": 0.25,
            "color": _colour(YELLOW),
        }
        entities.append(
            _entity(t_ns, drone, drone, frame_locked=True, arrows=[arrow], texts=[_label(drone, -0.6)])
        )
    return {"deletions": [], "entities": entities}


def _circle(t_ns: int, at: PixelPoint, diameter_px: float, colour: Colour) -> Json:
    return {
        "timestamp": _time(t_ns),
        "position": {"x": at[0], "y": at[1]},
        "diameter": diameter_px,
        "thickness": 2.0,
        "fill_color": _colour(CLEAR),
        "outline_color": _colour(colour),
    }


def _cross(t_ns: int, at: PixelPoint, half_px: float, colour: Colour) -> Json:
    u, v = at
    return {
        "timestamp": _time(t_ns),
        "type": 4,  # LINE_LIST
        "points": [
            {"x": u - half_px, "y": v},
            {"x": u + half_px, "y": v},
            {"x": u, "y": v - half_px},
            {"x": u, "y": v + half_px},
        ],
        "outline_color": _colour(colour),
        "thickness": 1.0,
    }


def _text(t_ns: int, at: PixelPoint, text: str, colour: Colour) -> Json:
    return {
        "timestamp": _time(t_ns),
        "position": {"x": at[0], "y": at[1]},
        "text": text,
        "font_size": 12.0,
        "text_color": _colour(colour),
        "background_color": _colour(SHADE),
    }


def _annotations(frame: FrameSample, t_ns: int) -> Json:
    r_px = max(6.0, frame.width_px / 60.0)
    circles: list[Json] = []
    points: list[Json] = []
    texts: list[Json] = [_text(t_ns, (4.0, 14.0), f"t={frame.t_s:.1f} s  {frame.caption}", WHITE)]
    if frame.chosen_px is not None:
        colour = {True: GREEN, False: RED, None: WHITE}[frame.on_target]
        circles.append(_circle(t_ns, frame.chosen_px, 2 * r_px, colour))
        points.append(_cross(t_ns, frame.chosen_px, 2 * r_px, colour))
    if frame.truth_px is not None:
        circles.append(_circle(t_ns, frame.truth_px, 3 * r_px, YELLOW))
        u, v = frame.truth_px
        texts.append(_text(t_ns, (u + 1.5 * r_px, v + 1.5 * r_px), "truth", YELLOW))
    return {"circles": circles, "points": points, "texts": texts}


def _json_safe(value: object) -> object:
    """A line's fields as JSON: NaN and infinities (not JSON) become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def messages(timeline: EpisodeTimeline) -> list[_Message]:
    """Every message of the file, in time order (the order within one time stamp kept)."""
    start_ns = timeline.start_unix_ns

    def ns(t_s: float) -> int:
        return start_ns + max(0, round(t_s * 1e9))

    t0 = ns(0.0)
    out: list[_Message] = [
        _Message(
            t0,
            "/tf",
            "foxglove.FrameTransform",
            _transform(t0, WORLD_FRAME, NED_FRAME, (0.0, 0.0, 0.0), xyzw(NED_IN_WORLD)),
        ),
        _Message(t0, "/scene", "foxglove.SceneUpdate", _scene(timeline, t0)),
    ]
    traced = {p.drone for p in timeline.target_poses}
    for item in timeline.scene:
        if item.id not in traced:  # placed once at its record pose
            x, y, z, yaw = item.pose
            tf = _transform(t0, NED_FRAME, item.id, (x, y, z), xyzw(heading_quat(yaw)))
            out.append(_Message(t0, "/tf", "foxglove.FrameTransform", tf))
    for p in [*timeline.poses, *timeline.target_poses]:
        t_ns = ns(p.t_s)
        tf = _transform(
            t_ns, NED_FRAME, p.drone, (p.pose[0], p.pose[1], p.pose[2]), xyzw(heading_quat(p.pose[3]))
        )
        out.append(_Message(t_ns, "/tf", "foxglove.FrameTransform", tf))
    for frame in timeline.frames:
        t_ns = ns(frame.t_s)
        data = base64.b64encode(frame.path.read_bytes()).decode("ascii")
        image: Json = {
            "timestamp": _time(t_ns),
            "frame_id": f"{frame.drone}/camera",
            "data": data,
            "format": "jpeg",
        }
        out.append(_Message(t_ns, f"/camera/{frame.drone}/image", "foxglove.CompressedImage", image))
        marks = _annotations(frame, t_ns)
        out.append(_Message(t_ns, f"/camera/{frame.drone}/annotations", "foxglove.ImageAnnotations", marks))
    for entry in timeline.logs:
        t_ns = ns(entry.t_s)
        log = {
            "timestamp": _time(t_ns),
            "level": LOG_LEVELS[entry.level],
            "message": entry.text,
            "name": f"{entry.drone}/{entry.topic}",
            "file": "",
            "line": 0,
        }
        out.append(_Message(t_ns, "/log", "foxglove.Log", log))
        fields: Json = {"t": entry.t_s, "drone": entry.drone, **entry.fields}
        safe = _json_safe(fields)
        assert isinstance(safe, dict)
        out.append(_Message(t_ns, f"/{entry.topic}/{entry.drone}", f"dronecats.{entry.topic}", safe))
    for scalar in timeline.scalars:
        if math.isfinite(scalar.value):
            t_ns = ns(scalar.t_s)
            topic = f"/stats/{scalar.drone}/{scalar.name}"
            out.append(_Message(t_ns, topic, "dronecats.Scalar", {"value": scalar.value}))
    out.sort(key=lambda m: m.t_ns)  # stable: per channel, time order is kept
    return out


def write_mcap(timeline: EpisodeTimeline, path: str | Path) -> ExportSummary:
    """Write the timeline to `path` (replaced) and say what went in."""
    started = time.perf_counter()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    tmp = path.with_name(path.name + ".partial")
    encoder = msgspec.json.Encoder()
    with open(tmp, "wb") as stream:
        _write(stream, timeline, encoder, counts)
    tmp.replace(path)
    return ExportSummary(timeline.directory, path, counts, path.stat().st_size, time.perf_counter() - started)


def _write(
    stream: BinaryIO, timeline: EpisodeTimeline, encoder: msgspec.json.Encoder, counts: dict[str, int]
) -> None:
    writer = Writer(stream, compression=CompressionType.ZSTD)
    writer.start(profile="", library="dronecats episodes export")
    schema_ids: dict[str, int] = {}
    channel_ids: dict[str, int] = {}
    sequence: dict[str, int] = {}
    for message in messages(timeline):
        channel = channel_ids.get(message.topic)
        if channel is None:
            schema = schema_ids.get(message.schema)
            if schema is None:
                schema = writer.register_schema(message.schema, "jsonschema", schema_bytes(message.schema))
                schema_ids[message.schema] = schema
            channel = writer.register_channel(message.topic, "json", schema, {"episode": timeline.episode_id})
            channel_ids[message.topic] = channel
        seq = sequence.get(message.topic, 0)
        sequence[message.topic] = seq + 1
        writer.add_message(channel, message.t_ns, encoder.encode(message.payload), message.t_ns, seq)
        counts[message.topic] = counts.get(message.topic, 0) + 1
    writer.add_metadata("episode", {"id": timeline.episode_id, "source": str(timeline.directory)})
    writer.finish()
