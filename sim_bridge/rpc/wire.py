"""AirSim's struct encodings on the wire (Vector3r, Quaternionr, Pose maps with the airsim client's
attribute names) and their validated parsing, shared by the stock surface and the extensions."""

from __future__ import annotations

import math
from collections.abc import Iterable

from common.errors import ConfigError
from common.frames import yaw_from_ned_quat, yaw_quat_ned_wxyz
from common.pose import Pose

# The airsim client's structs as msgpack-rpc carries them: what a handler declares; the parsers below
# take `object` (a client may send anything) and refuse what is not one.
Vector3Msg = dict[str, float]  # Vector3r (x_val, y_val, z_val), Quaternionr (and w_val)
GeoPointMsg = dict[str, float]  # GeoPoint: latitude, longitude (degrees), altitude (m)
PoseMsg = dict[str, Vector3Msg]  # Pose: position (Vector3r), orientation (Quaternionr)
ImageRequestMsg = dict[str, object]  # ImageRequest: camera_name, image_type, pixels_as_float, compress
YawModeMsg = dict[str, bool | float]  # YawMode: is_rate, yaw_or_rate
External = bool | str  # the camera calls' last argument: AirSim 1.x's `external`, Cosys's annotation_name


def vec3(x: float, y: float, z: float) -> dict[str, float]:
    return {"x_val": float(x), "y_val": float(y), "z_val": float(z)}


def quat_yaw(yaw_deg: float) -> dict[str, float]:
    w, x, y, z = yaw_quat_ned_wxyz(yaw_deg)
    return {"w_val": w, "x_val": x, "y_val": y, "z_val": z}


def pose_msg(x: float, y: float, z: float, yaw_deg: float) -> PoseMsg:
    return {"position": vec3(x, y, z), "orientation": quat_yaw(yaw_deg)}


NAN_POSE = {
    "position": vec3(math.nan, math.nan, math.nan),
    "orientation": {"w_val": math.nan, "x_val": math.nan, "y_val": math.nan, "z_val": math.nan},
}


def parse_vec3(d: object, name: str) -> tuple[float, float, float]:
    try:
        if not isinstance(d, dict):
            raise TypeError(name)
        return float(d["x_val"]), float(d["y_val"]), float(d["z_val"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"{name}: expected a Vector3r map with x_val, y_val, z_val, got {d!r:.80}"
        ) from None


def parse_pose(d: object, current: Pose | None = None) -> Pose:
    """A Pose map -> Pose; NaN components keep the current value (AirSim's simSetVehiclePose rule)."""
    x, y, z = parse_vec3(d.get("position") if isinstance(d, dict) else None, "pose.position")
    assert isinstance(d, dict)  # parse_vec3 refused anything else
    q = d.get("orientation") or {}
    try:
        w, qx, qy, qz = (float(q.get(k, 0.0)) for k in ("w_val", "x_val", "y_val", "z_val"))
    except (TypeError, ValueError):
        raise ConfigError(f"pose.orientation: expected a Quaternionr map, got {q!r:.80}") from None
    yaw = (
        current.yaw_deg
        if current and any(map(math.isnan, (w, qx, qy, qz)))
        else yaw_from_ned_quat(w, qx, qy, qz)
    )
    if current is not None:
        x = current.x_m if math.isnan(x) else x
        y = current.y_m if math.isnan(y) else y
        z = current.z_m if math.isnan(z) else z
    return Pose(x, y, z, yaw)


def pose_list(values: object) -> Pose:
    try:
        if not isinstance(values, Iterable):
            raise TypeError(values)
        x, y, z, yaw = (float(a) for a in values)
    except (TypeError, ValueError):
        raise ConfigError(
            f"vehicle pose: expected [x, y, z, yaw_deg] world NED, got {values!r:.80}"
        ) from None
    return Pose(x, y, z, yaw)
