"""The Rerun entity layout, written once for the offline export (episodes.export.rerun_writer) and the
live stream (onboard.rerun_stream), so a flight looks the same recorded or live.

Entities, on one timeline `episode_time` (seconds since the episode started):

- `world` (ViewCoordinates RIGHT_HAND_Z_UP) and `world/ned` (Transform3D: NED_TO_ENU of
  common.viewer_frames), so every 3-D entity is written in the logs' own NED metres and shown upright;
- `world/ned/DRONE`: Transform3D (the heading frame), with an Arrows3D forward at `world/ned/DRONE/body`;
- `world/ned/OBJECT`: a target or distractor (Transform3D), its box and the target's δ ring beneath;
- `camera/DRONE`: EncodedImage (JPEG), with `camera/DRONE/chosen` and `camera/DRONE/truth` (Points2D);
- `log/DRONE/TOPIC`: TextLog; `stats/DRONE/NAME`: Scalars, the unit in the name.

Needs the `review` extra (rerun-sdk): import it only where that extra is required.
"""

from __future__ import annotations

from collections.abc import Sequence

import rerun as rr
import rerun.blueprint as rrb

from common.viewer_frames import NED_TO_ENU, heading_quat, xyzw

TIMELINE = "episode_time"
APPLICATION_ID = "dronecats"
ON_TARGET_RGB: dict[bool | None, tuple[int, int, int]] = {
    True: (60, 200, 60),
    False: (230, 40, 40),
    None: (240, 240, 240),
}
TRUTH_RGB = (255, 200, 0)
ARROW_RGB = (255, 200, 0)

PixelPoint = tuple[float, float]  # image pixels: u right, v down, from the top-left corner


def world_path() -> str:
    return "world"


def ned_path() -> str:
    return "world/ned"


def object_path(name: str) -> str:
    """A drone's or a scene object's frame under "ned"."""
    return f"world/ned/{name}"


def camera_path(drone: str) -> str:
    return f"camera/{drone}"


def chosen_path(drone: str) -> str:
    return f"camera/{drone}/chosen"


def truth_path(drone: str) -> str:
    return f"camera/{drone}/truth"


def log_path(drone: str | None, topic: str) -> str:
    return f"log/{drone or 'run'}/{topic}"


def stats_path(drone: str, name: str) -> str:
    return f"stats/{drone}/{name}"


def log_world(rec: rr.RecordingStream) -> None:
    """The Z-up world and the NED frame under it (static: once per recording)."""
    rec.log(world_path(), rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
    rec.log(ned_path(), rr.Transform3D(mat3x3=NED_TO_ENU), static=True)


def log_drone_arrow(rec: rr.RecordingStream, drone: str) -> None:
    arrow = rr.Arrows3D(vectors=[(1.0, 0.0, 0.0)], colors=[ARROW_RGB], labels=[drone])
    rec.log(f"{object_path(drone)}/body", arrow, static=True)


def pose_transform(pose: Sequence[float]) -> rr.Transform3D:
    """A pose (x, y, z NED m, yaw deg) as its heading frame under "ned"."""
    x, y, z, yaw_deg = pose
    return rr.Transform3D(translation=(x, y, z), quaternion=rr.Quaternion(xyzw=xyzw(heading_quat(yaw_deg))))


def mark_radius_px(width_px: int) -> float:
    return max(6.0, width_px / 60.0)


def chosen_points(point_px: PixelPoint, width_px: int, on_target: bool | None, caption: str) -> rr.Points2D:
    """The model's chosen point over its frame, coloured by whether it fell on the target."""
    return rr.Points2D(
        [point_px], radii=[mark_radius_px(width_px)], colors=[ON_TARGET_RGB[on_target]], labels=[caption]
    )


def truth_points(point_px: PixelPoint, width_px: int) -> rr.Points2D:
    """The target's projected truth over a frame."""
    return rr.Points2D(
        [point_px], radii=[1.5 * mark_radius_px(width_px)], colors=[TRUTH_RGB], labels=["truth"]
    )


def jpeg_image(jpeg: bytes) -> rr.EncodedImage:
    return rr.EncodedImage(contents=jpeg, media_type="image/jpeg")


def blueprint(drones: Sequence[str]) -> rrb.Blueprint:
    """3-D scene on the left; each drone's camera, the plots and the log on the right."""
    cameras = [rrb.Spatial2DView(origin=camera_path(drone), name=f"{drone} camera") for drone in drones]
    camera_view: rrb.Container | rrb.View = cameras[0] if len(cameras) == 1 else rrb.Tabs(*cameras)
    return rrb.Blueprint(
        rrb.Horizontal(
            rrb.Spatial3DView(origin=world_path(), name="scene (NED under world)"),
            rrb.Vertical(
                camera_view,
                rrb.TimeSeriesView(origin="stats", name="scalars"),
                rrb.TextLogView(origin="log", name="log"),
                row_shares=[3, 2, 2],
            ),
            column_shares=[3, 2],
        ),
        collapse_panels=True,
    )
