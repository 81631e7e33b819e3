"""The emulated Tello's body in the simulator: what it reads (battery, height, heading, velocity)
and how it flies each SDK manoeuvre with the World's motion tasks.

Coordinates: the drone's yaw is relative to the heading at power-on (the spawn yaw), as on the real
drone. Tello body axes for moves, `go` and `curve`: x forward, y LEFT, z up (cm).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from common.frames import heading_to_ned, north_east_to_forward_right
from common.pose import Pose, wrap_deg
from sim_bridge.emulators.flight_reset import FlightReset
from sim_bridge.emulators.tello_sdk import TelloEmulatorConfig, TelloStatus
from sim_bridge.sim.world import World, YawMode

TAKEOFF_TIMEOUT_S = 15.0
ROTATE_STEP_DEG = 90.0  # a turn is flown in steps shorter than 180 degrees: always the commanded way
FLIP_S = 1.2


@dataclass(frozen=True)
class Reading:
    """One consistent look at the drone (under the world's lock)."""

    yaw_deg: float  # relative to the power-on heading
    vgx_m_s: float  # ground velocity in the power-on heading frame
    vgy_m_s: float
    vgz_m_s: float
    height_m: float


class TelloAirframe:
    def __init__(
        self,
        world: World,
        vehicle: str,
        status: TelloStatus,
        config: TelloEmulatorConfig,
        stop: threading.Event,
    ) -> None:
        """`config` gives the take-off height and the sticks' full scale; `stop` is the emulator's
        shutdown (it ends a flip's hold)."""
        self.world = world
        self.vehicle = vehicle
        self.status = status
        self.config = config
        self._stop = stop
        self.spawn_yaw_deg = world.vehicle(vehicle).model.spawn.yaw_deg
        self.flights = FlightReset.of(world, vehicle)  # each new "command" session after a landing

    def _model(self):
        return self.world.vehicle(self.vehicle).model

    # ---- readings
    @property
    def battery_pct(self) -> float:
        """The simulated pack's state of charge (sim_bridge.sim.battery), in percent."""
        with self.world.lock:
            return 100.0 * self._model().battery.fraction

    def height_m(self) -> float:
        with self.world.lock:
            m = self._model()
            return float(m.floor_z_m - m.position_ned[2])

    def yaw_deg(self) -> float:
        """Heading relative to the power-on heading."""
        with self.world.lock:
            return wrap_deg(self._model().yaw_deg - self.spawn_yaw_deg)

    def reading(self) -> Reading:
        with self.world.lock:
            m = self._model()
            yaw = wrap_deg(m.yaw_deg - self.spawn_yaw_deg)
            v = m.velocity_ned.copy()
            h_m = float(m.floor_z_m - m.position_ned[2])
        vgx, vgy = north_east_to_forward_right(v[0], v[1], self.spawn_yaw_deg)  # the spawn's axes
        return Reading(yaw, float(vgx), float(vgy), float(v[2]), h_m)

    def hover(self) -> None:
        with self.world.lock:
            self._model().hover()

    # ---- manoeuvres (each runs in its own thread; True when completed)
    def takeoff(self) -> bool:
        if self.battery_pct < 10:
            return False
        self.status.motor_on_s = time.monotonic()
        self.status.motors_idle = False
        task = self.world.takeoff(self.vehicle, self.config.takeoff_height_m, timeout_s=TAKEOFF_TIMEOUT_S)
        ok = task.wait(TAKEOFF_TIMEOUT_S + 2.0)
        self.status.flying = ok or self.height_m() > 0.2
        return ok

    def land(self) -> bool:
        self.status.rc = (0, 0, 0, 0)
        task = self.world.land(self.vehicle, timeout_s=30.0)
        ok = task.wait(32.0)
        self.status.flying = False
        self.status.motor_on_s = None
        self.flights.flight_ended()
        return ok

    def flip(self) -> bool:
        """A flip ends where it started; the simulator flies no attitude, so the drone holds for it."""
        self.hover()
        return not self._stop.wait(FLIP_S)

    def move(self, text: str, preempted: threading.Event) -> bool:
        """A validated move, `go`, `curve`, `cw` or `ccw`, at the commanded speed; `preempted` set by
        land/emergency ends a multi-leg one between legs."""
        word, *args = text.split()
        values = [int(a) for a in args]
        with self.world.lock:
            m = self._model()
            pos = m.position_ned.copy()
            yaw = m.yaw_deg
        speed = self.status.speed_cm_s / 100.0
        if word in ("cw", "ccw"):
            return self._rotate(values[0] if word == "cw" else -values[0], preempted)
        if word == "curve":
            # through (x1 y1 z1) to (x2 y2 z2) at the curve's speed: the arc flown as its two chords
            p1 = _to_world(values[0] / 100, values[1] / 100, values[2] / 100, yaw)
            p2 = _to_world(values[3] / 100, values[4] / 100, values[5] / 100, yaw)
            speed = values[6] / 100.0
            if not self._move_to(pos + p1, float(np.linalg.norm(p1)), speed, yaw) or preempted.is_set():
                return False
            return self._move_to(pos + p2, float(np.linalg.norm(p2 - p1)), speed, yaw)
        if word == "go":
            fwd, left, up = (v / 100.0 for v in values[:3])
            speed = values[3] / 100.0
        else:
            d = values[0] / 100.0
            fwd = {"forward": d, "back": -d}.get(word, 0.0)
            left = {"left": d, "right": -d}.get(word, 0.0)
            up = {"up": d, "down": -d}.get(word, 0.0)
        offset = _to_world(fwd, left, up, yaw)
        return self._move_to(pos + offset, float(np.linalg.norm(offset)), speed, yaw)

    def _move_to(self, target: np.ndarray, distance_m: float, speed_m_s: float, yaw_deg: float) -> bool:
        timeout_s = distance_m / speed_m_s * 1.5 + 3.0  # as long as the move takes at that speed
        task = self.world.move_to(
            self.vehicle, target, speed_m_s, timeout_s=timeout_s, yaw=YawMode(False, yaw_deg)
        )
        return task.wait(timeout_s + 1.0)

    def _rotate(self, degrees_cw: float, preempted: threading.Event) -> bool:
        """Turn by exactly this much, the commanded way (`cw 270` turns 270 degrees clockwise, `ccw
        360` a full turn): through headings at most ROTATE_STEP_DEG apart (rotate_to takes the short
        way to each), without stopping at the intermediate ones."""
        with self.world.lock:
            start = self._model().yaw_deg
        steps = max(1, math.ceil(abs(degrees_cw) / ROTATE_STEP_DEG))
        for k in range(1, steps + 1):
            last = k == steps
            heading = wrap_deg(start + degrees_cw * k / steps)
            task = self.world.rotate_to(
                self.vehicle, heading, timeout_s=10.0, margin_deg=1.0 if last else 30.0
            )
            if not task.wait(11.0) or preempted.is_set():
                return False
        return True

    # ---- sticks and motors
    def set_rc(self, args: list[str]) -> None:
        """`rc a b c d` (each -100..100, clamped); malformed ones are ignored, as the SDK sends no reply."""
        try:
            values = tuple(max(-100, min(100, int(a))) for a in args)
        except ValueError:
            return
        if len(values) != 4:
            return
        self.status.rc = values
        if self.status.flying and self.status.busy is None:
            self.apply_rc()

    def apply_rc(self) -> None:
        a, b, c, d = self.status.rc
        k = self.config.rc_full_scale_m_s / 100.0
        self.world.move_velocity_body(
            self.vehicle,
            (b * k, a * k, -c * k),
            1e6,  # sticks hold until the next rc
            yaw=YawMode(True, d * self.config.rc_full_scale_yaw_deg_s / 100.0),
        )

    def emergency(self) -> None:
        """Motors off: the drone drops to the ground (teleported there: the sim has no free fall)."""
        self.status.rc = (0, 0, 0, 0)
        with self.world.lock:
            m = self._model()
            p = m.position_ned
            pose = Pose(float(p[0]), float(p[1]), float(m.floor_z_m), m.yaw_deg)
        self.world.set_vehicle_pose(self.vehicle, pose)
        if self.status.flying:
            self.flights.flight_ended()
        self.status.flying = False
        self.status.motor_on_s = None


def _to_world(fwd_m: float, left_m: float, up_m: float, yaw_deg: float) -> np.ndarray:
    """Tello body axes (x forward, y left, z up) to the world's NED at this heading."""
    return np.array(heading_to_ned(fwd_m, -left_m, up_m, yaw_deg))
