"""The one transform between this project's frames (common.frames: world NED, body FRD) and the
viewers': Foxglove's 3-D panel and Rerun's default are right-handed and Z up, so the exporters put a
frame "ned" under a Z-up "world" (east, north, up: ENU) and write every pose in NED beneath it.

A point p given in NED (north, east, down) is, in ENU, (east, north, up) = NED_TO_ENU @ p. The
matrix is its own inverse (a half turn about the axis halfway between north and east), and as a
rotation of the "ned" frame into "world" its quaternion is (w, x, y, z) = (0, 1/sqrt 2, 1/sqrt 2, 0).
A drone's frame under "ned" is the heading frame (FRD at the pose's yaw: common.frames), so its x
axis points where the drone points and its z axis down.
"""

from __future__ import annotations

import numpy as np

from common.frames import Quat, quat_from_rotation, yaw_quat_ned_wxyz

NED_TO_ENU = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
NED_IN_WORLD: Quat = quat_from_rotation(NED_TO_ENU)  # (w, x, y, z)

WORLD_FRAME = "world"  # Z up (ENU): what the viewers expect
NED_FRAME = "ned"  # the logs' world frame, under WORLD_FRAME


def heading_quat(yaw_deg: float) -> Quat:
    """(w, x, y, z) of a drone's heading frame in "ned" (yaw only: the logs carry no tilt)."""
    return yaw_quat_ned_wxyz(yaw_deg)


def xyzw(q: Quat) -> tuple[float, float, float, float]:
    """A (w, x, y, z) quaternion in the (x, y, z, w) order both viewers use."""
    return (q[1], q[2], q[3], q[0])
