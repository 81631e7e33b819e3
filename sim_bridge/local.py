"""In-process Vehicle, Camera and GroundTruth over a built-in simulator `World` (no RPC).

For lock-step runs (the episode runner, the jitter benchmark, tests): the caller owns the world's
time and advances it between actuation ticks. The same runtime code flies `airsim://` vehicles
through the real AirSim client; this adapter only skips the socket.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from common.frames import euler_from_matrix
from common.interfaces import Telemetry, Vehicle
from common.obstacles import Obstacle
from common.pose import LEVEL_CAMERA, CameraAttitude, Frame, Pose
from common.truth import TruthSample
from sim_bridge.sim.world import Render, World, YawMode

# A streamed setpoint keeps the vehicle moving this long; then it brakes to a hold (SimpleFlight-like).
SETPOINT_WATCHDOG_S = 0.25
LAND_TIMEOUT_S = 30.0


class LocalVehicle(Vehicle):
    def __init__(self, world: World, name: str, watchdog_s: float = SETPOINT_WATCHDOG_S) -> None:
        self.world = world
        self.name = name
        self.watchdog_s = watchdog_s
        self._connected = False
        self._motors_off = False  # after emergency_stop: setpoints are ignored until arm()

    def connect(self) -> None:
        self.world.vehicle(self.name)  # raises for an unknown vehicle
        self._connected = True

    @property
    def is_connected(self) -> bool:
        return self._connected

    def arm(self) -> None:
        with self.world.lock:
            self.world.vehicle(self.name).model.armed = True
        self._motors_off = False

    def emergency_stop(self) -> None:
        """Motors off: disarmed, and down on its floor where it is (the simulator has no free fall, so
        it is put there, as the MAVLink and Tello emulators do)."""
        self._motors_off = True
        with self.world.lock:
            model = self.world.vehicle(self.name).model
            x_m, y_m = float(model.position_ned[0]), float(model.position_ned[1])
            pose = Pose(x_m, y_m, float(model.floor_z_m), model.yaw_deg)
            model.armed = False
        self.world.set_vehicle_pose(self.name, pose)

    def takeoff(self, altitude_m: float) -> None:
        """Starts the climb; in lock-step the caller advances time until telemetry says it is up."""
        self.world.takeoff(self.name, altitude_m)

    def land(self) -> None:
        self.world.land(self.name, timeout_s=LAND_TIMEOUT_S)

    def hold(self) -> None:
        with self.world.lock:
            self.world.vehicle(self.name).model.hover()

    def send_velocity_body(
        self, forward_m_s: float, right_m_s: float, up_m_s: float, yaw_rate_deg_s: float
    ) -> None:
        if self._motors_off:
            return
        self.world.move_velocity_body(
            self.name,
            (float(forward_m_s), float(right_m_s), float(-up_m_s)),
            self.watchdog_s,
            yaw=YawMode(True, float(yaw_rate_deg_s)),
        )

    def telemetry(self) -> Telemetry:
        with self.world.lock:
            m = self.world.vehicle(self.name).model
            return Telemetry(
                time_s=self.world.clock.now(),
                pose=m.pose(),
                velocity_ned_m_s=(
                    float(m.velocity_ned[0]),
                    float(m.velocity_ned[1]),
                    float(m.velocity_ned[2]),
                ),
                battery_fraction=None,  # as airsim:// (AirSim's RPC has no battery), which this mirrors
                link_ok=True,
                armed=bool(m.armed),
                landed=bool(m.landed),
                collided=m.collision is not None,
                collided_with=_collided_with(m.collision),
            )

    def known_obstacles(self) -> list[Obstacle]:
        """The world's cars and people (an ObstacleSource: the safety envelope keeps clear of them)."""
        return self.world.known_obstacles()

    def close(self) -> None:
        self._connected = False  # the world is the caller's: it outlives its vehicles


def _collided_with(hit: dict | None) -> str:
    """What the simulator's collision record (AirSim's CollisionInfo fields) says was hit, as the
    airsim:// adapter words it; "" with no collision."""
    if hit is None:
        return ""
    x, y, z = hit["impact_point"]
    return f"{hit['object_name'] or 'something'} at ({float(x):.2f}, {float(y):.2f}, {float(z):.2f})"


class LocalCamera:
    """Renders the vehicle's forward camera; keeps the render (with segmentation) for ground truth."""

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.name = name
        self.last_render: Render | None = None
        self._lock = threading.Lock()

    def read(self) -> Frame:
        render = self.world.render(self.name, segmentation=True)
        with self._lock:
            self.last_render = render
        return Frame(
            image=render.image_bgr,
            capture_time_s=render.time_s,
            pose=render.vehicle_pose,
            meta={"render": render},
            camera_attitude=render_camera_attitude(render),
        )


def render_camera_attitude(render: Render) -> CameraAttitude:
    """How the render's camera pointed relative to a level one at its vehicle's heading: level when
    the simulator drew it level (a gimbal, or a level body), else its rotation's Euler angles."""
    if render.camera_rotation_ned is None:
        return LEVEL_CAMERA
    roll, pitch, yaw = (math.degrees(a) for a in euler_from_matrix(render.camera_rotation_ned))
    return CameraAttitude.from_world(roll, pitch, yaw, render.vehicle_pose.yaw_deg)


class LocalTruth:
    """Ground truth (docs/verifier.md#declarations) for one target: distances from current poses,
    visibility from a render no older than max_render_age_s (the camera's own when fresh enough, else a
    new one)."""

    def __init__(
        self,
        world: World,
        target: str,
        cameras: dict[str, LocalCamera] | None = None,
        max_render_age_s: float = 0.5,
    ) -> None:
        self.world = world
        self.target = target
        self.cameras = cameras or {}
        self.max_render_age_s = max_render_age_s
        self._renders: dict[str, Render] = {}

    def _render(self, drone: str) -> Render:
        now = self.world.clock.now()
        candidates = [self._renders.get(drone)]
        camera = self.cameras.get(drone)
        if camera is not None:
            candidates.append(camera.last_render)
        fresh = [r for r in candidates if r is not None and now - r.time_s <= self.max_render_age_s]
        if fresh:
            return max(fresh, key=lambda r: r.time_s)
        render = self.world.render(drone, segmentation=True)
        self._renders[drone] = render
        return render

    def sample(self, drone: str) -> TruthSample:
        render = self._render(drone)
        truth = self.world.target_truth(drone, self.target, render)
        with self.world.lock:
            obj = self.world.get_object(self.target)
            pose = self.world.vehicle(drone).model.pose()
            here = np.array([pose.x_m, pose.y_m, pose.z_m])
            distance = float(np.linalg.norm(obj.bbox_centre_ned() - here))
            bbox_distance = obj.bbox_distance_m(here)
            target_pose = obj.pose
        return TruthSample(distance, bbox_distance, bool(truth.visible), target_pose.as_list())

    def point_on_target(self, frame: Frame, point_xy: tuple[int, int]) -> bool | None:
        render = frame.meta.get("render")
        if render is None:
            return None
        return self.world.point_on_target(render, self.target, point_xy[0], point_xy[1])


def target_pose(world: World, target: str) -> Pose:
    return world.object_pose(target)
