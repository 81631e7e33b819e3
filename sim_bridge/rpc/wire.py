"""AirSim's struct encodings on the wire (Vector3r, Quaternionr, Pose maps with the airsim client's
attribute names) and their validated parsing, shared by the stock surface and the extensions."""

from __future__ import annotations

import math
from typing import Any

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.sim.frames import yaw_from_ned_quat, yaw_quat_ned_wxyz


def vec3(x: float, y: float, z: float) -> dict[str, float]:
    return {"x_val": float(x), "y_val": float(y), "z_val": float(z)}


def quat_yaw(yaw_deg: float) -> dict[str, float]:
    w, x, y, z = yaw_quat_ned_wxyz(yaw_deg)
    return {"w_val": w, "x_val": x, "y_val": y, "z_val": z}


def pose_msg(x: float, y: float, z: float, yaw_deg: float) -> dict[str, Any]:
    return {"position": vec3(x, y, z), "orientation": quat_yaw(yaw_deg)}


NAN_POSE = {
    "position": vec3(math.nan, math.nan, math.nan),
    "orientation": {"w_val": math.nan, "x_val": math.nan, "y_val": math.nan, "z_val": math.nan},
}


def parse_vec3(d: Any, name: str) -> tuple[float, float, float]:
    try:
        return float(d["x_val"]), float(d["y_val"]), float(d["z_val"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"{name}: expected a Vector3r map with x_val, y_val, z_val, got {d!r:.80}"
        ) from None


def parse_pose(d: Any, current: Pose | None = None) -> Pose:
    """A Pose map -> Pose; NaN components keep the current value (AirSim's simSetVehiclePose rule)."""
    x, y, z = parse_vec3(d.get("position") if isinstance(d, dict) else None, "pose.position")
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


def pose_list(values: Any) -> Pose:
    try:
        x, y, z, yaw = (float(a) for a in values)
    except (TypeError, ValueError):
        raise ConfigError(
            f"vehicle pose: expected [x, y, z, yaw_deg] world NED, got {values!r:.80}"
        ) from None
    return Pose(x, y, z, yaw)
