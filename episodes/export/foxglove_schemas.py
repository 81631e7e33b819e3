"""JSON Schemas of the Foxglove well-known schemas the MCAP export writes (the `jsonschema` encoding:
messages are JSON, `bytes` fields base64, times {"sec", "nsec"}), with Foxglove's field names.

Foxglove recognises a channel by its schema's name (foxglove.CompressedImage ...) and shows it in its
built-in panels; the schema text is for validation and for tools that read the file. Only the fields
the export writes are spelled out; each schema allows no others, so a writer's typo is caught in
the tests (jsonschema, a core dependency).
"""

from __future__ import annotations

import json

JsonSchema = dict[str, object]

_NUM: JsonSchema = {"type": "number"}
_STR: JsonSchema = {"type": "string"}
_BOOL: JsonSchema = {"type": "boolean"}


def _obj(**properties: JsonSchema) -> JsonSchema:
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _arr(items: JsonSchema) -> JsonSchema:
    return {"type": "array", "items": items}


TIME = _obj(sec={"type": "integer", "minimum": 0}, nsec={"type": "integer", "minimum": 0})
VECTOR3 = _obj(x=_NUM, y=_NUM, z=_NUM)
POINT2 = _obj(x=_NUM, y=_NUM)
QUATERNION = _obj(x=_NUM, y=_NUM, z=_NUM, w=_NUM)
COLOR = _obj(r=_NUM, g=_NUM, b=_NUM, a=_NUM)
POSE = _obj(position=VECTOR3, orientation=QUATERNION)

COMPRESSED_IMAGE = _obj(
    timestamp=TIME, frame_id=_STR, data={"type": "string", "contentEncoding": "base64"}, format=_STR
)
CIRCLE_ANNOTATION = _obj(
    timestamp=TIME, position=POINT2, diameter=_NUM, thickness=_NUM, fill_color=COLOR, outline_color=COLOR
)
POINTS_ANNOTATION = _obj(
    timestamp=TIME,
    # 0 UNKNOWN, 1 POINTS, 2 LINE_LOOP, 3 LINE_STRIP, 4 LINE_LIST
    type={"type": "integer", "enum": [0, 1, 2, 3, 4]},
    points=_arr(POINT2),
    outline_color=COLOR,
    outline_colors=_arr(COLOR),
    fill_color=COLOR,
    thickness=_NUM,
)
TEXT_ANNOTATION = _obj(
    timestamp=TIME, position=POINT2, text=_STR, font_size=_NUM, text_color=COLOR, background_color=COLOR
)
IMAGE_ANNOTATIONS = _obj(
    circles=_arr(CIRCLE_ANNOTATION), points=_arr(POINTS_ANNOTATION), texts=_arr(TEXT_ANNOTATION)
)
FRAME_TRANSFORM = _obj(
    timestamp=TIME, parent_frame_id=_STR, child_frame_id=_STR, translation=VECTOR3, rotation=QUATERNION
)
LINE_PRIMITIVE = _obj(
    # 0 LINE_STRIP, 1 LINE_LOOP, 2 LINE_LIST
    type={"type": "integer", "enum": [0, 1, 2]},
    pose=POSE,
    thickness=_NUM,
    scale_invariant=_BOOL,
    points=_arr(VECTOR3),
    color=COLOR,
    colors=_arr(COLOR),
    indices=_arr({"type": "integer"}),
)
SHAPE_PRIMITIVE = _obj(pose=POSE, size=VECTOR3, color=COLOR)  # CubePrimitive and SpherePrimitive
ARROW_PRIMITIVE = _obj(
    pose=POSE, shaft_length=_NUM, shaft_diameter=_NUM, head_length=_NUM, head_diameter=_NUM, color=COLOR
)
TEXT_PRIMITIVE = _obj(
    pose=POSE, billboard=_BOOL, font_size=_NUM, scale_invariant=_BOOL, color=COLOR, text=_STR
)
KEY_VALUE = _obj(key=_STR, value=_STR)
SCENE_ENTITY = _obj(
    timestamp=TIME,
    frame_id=_STR,
    id=_STR,
    lifetime=TIME,
    frame_locked=_BOOL,
    metadata=_arr(KEY_VALUE),
    arrows=_arr(ARROW_PRIMITIVE),
    cubes=_arr(SHAPE_PRIMITIVE),
    spheres=_arr(SHAPE_PRIMITIVE),
    lines=_arr(LINE_PRIMITIVE),
    texts=_arr(TEXT_PRIMITIVE),
)
SCENE_ENTITY_DELETION = _obj(timestamp=TIME, type={"type": "integer", "enum": [0, 1]}, id=_STR)
SCENE_UPDATE = _obj(deletions=_arr(SCENE_ENTITY_DELETION), entities=_arr(SCENE_ENTITY))
LOG = _obj(
    timestamp=TIME,
    # 0 UNKNOWN, 1 DEBUG, 2 INFO, 3 WARNING, 4 ERROR, 5 FATAL
    level={"type": "integer", "enum": [0, 1, 2, 3, 4, 5]},
    message=_STR,
    name=_STR,
    file=_STR,
    line={"type": "integer", "minimum": 0},
)
# Everything else (a reply's fields, a declaration, an event, a scalar): plain JSON objects.
ANY_OBJECT: JsonSchema = {"type": "object"}

SCHEMAS: dict[str, JsonSchema] = {
    "foxglove.CompressedImage": COMPRESSED_IMAGE,
    "foxglove.ImageAnnotations": IMAGE_ANNOTATIONS,
    "foxglove.FrameTransform": FRAME_TRANSFORM,
    "foxglove.SceneUpdate": SCENE_UPDATE,
    "foxglove.Log": LOG,
}

LOG_LEVELS = {"debug": 1, "info": 2, "warning": 3, "error": 4}


def schema_bytes(name: str) -> bytes:
    """A schema's text as the MCAP Schema record's data."""
    schema = SCHEMAS.get(name, ANY_OBJECT)
    return json.dumps({"title": name, **schema}, separators=(",", ":")).encode()


def time_json(t_ns: int) -> dict[str, int]:
    """A foxglove time ({"sec", "nsec"}) of nanoseconds since the Unix epoch."""
    return {"sec": t_ns // 1_000_000_000, "nsec": t_ns % 1_000_000_000}


def frame_transform(
    t_ns: int, parent: str, child: str, xyz: tuple[float, float, float], q_xyzw: tuple[float, ...]
) -> dict[str, object]:
    """A foxglove.FrameTransform message: `child`'s pose in `parent` (both writers' /tf)."""
    return {
        "timestamp": time_json(t_ns),
        "parent_frame_id": parent,
        "child_frame_id": child,
        "translation": {"x": xyz[0], "y": xyz[1], "z": xyz[2]},
        "rotation": {"x": q_xyzw[0], "y": q_xyzw[1], "z": q_xyzw[2], "w": q_xyzw[3]},
    }
