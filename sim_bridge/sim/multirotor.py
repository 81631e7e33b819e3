"""Kinematic multirotor with SimpleFlight-like command semantics, integrated in simulation time.

No rotor aerodynamics: the commanded velocity is tracked under acceleration limits, and when no command
is active the vehicle brakes to and holds a position (as SimpleFlight does after its API watchdog).
Motions are single tasks per vehicle: starting one cancels the running one (which then reports False).

Command-silence landing (`silence_land_s`, off unless set; AirSim has no such rule): a vehicle in the
air that has held with no command for that long lands by itself, as a Tello does after 15 s and PX4
after its offboard-loss timeout, so that a client that died in flight does not leave it hovering.
Silence runs from the last command or the end of the last motion (a running motion, e.g. a blocking
take-off climb, is not silence) and must have lasted silence_land_s both in simulation time (a paused
simulator, e.g. lock-step waiting on its pilot, never lands anything) and in wall time (a simulator run
faster than real time does not land a client that commands at its own wall-clock rate).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from common.frames import yaw_rotation_ned
from common.pose import Pose, wrap_deg
from sim_bridge.sim.attitude import AttitudeCommand, AttitudeModel, body_rotation_ned, fly_attitude
from sim_bridge.sim.battery import Battery, BatteryConfig
from sim_bridge.sim.wind import WindResponse

log = logging.getLogger(__name__)


@dataclass
class MultirotorLimits:
    max_accel_m_s2: float = 4.0
    max_speed_m_s: float = 6.0  # SimpleFlight's velocity PID limit per axis
    max_yaw_rate_deg_s: float = 143.0  # SimpleFlight's angle-rate limit, 2.5 rad/s
    max_yaw_accel_deg_s2: float = 720.0
    hold_gain_1_s: float = 2.0  # position-hold P gain
    hold_max_speed_m_s: float = 3.0
    yaw_hold_gain_1_s: float = 3.0
    land_speed_m_s: float = 0.5
    position_accuracy_m: float = 0.1


PATH_LOOKAHEAD_M = 1.0  # moveOnPath's carrot distance when none is given
DISTANCE_ACCURACY_M = 0.5  # SimpleFlightApi::getDistanceAccuracy: ForwardOnly keeps the yaw nearer than this


class YawMode(NamedTuple):
    """AirSim's YawMode during a motion: hold a yaw rate (deg/s), or turn to and hold a heading (deg).
    `forward_only` (DrivetrainType::ForwardOnly, angle mode only): `value` is an offset from the
    direction of travel, which position and path motions re-aim every tick
    (MultirotorApiBase::adjustYaw in moveToPathPosition)."""

    is_rate: bool = True
    value: float = 0.0
    forward_only: bool = False


NO_TURN = YawMode()  # a yaw rate of 0: keep the heading the motion starts with


class Task:
    """One motion: finishes with True (completed) or False (cancelled, timed out or refused)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._done = threading.Event()
        self.result: bool | None = None

    def finish(self, result: bool) -> None:
        if not self._done.is_set():
            self.result = result
            self._done.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """The task's result (False if it has not finished within timeout_s of wall time)."""
        self._done.wait(timeout_s)
        return bool(self.result)

    @property
    def done(self) -> bool:
        return self._done.is_set()


@dataclass
class _Goal:
    mode: str  # hold | velocity | position | yaw | land | attitude
    task: Task | None = None
    velocity_ned: np.ndarray = field(default_factory=lambda: np.zeros(3))
    yaw_is_rate: bool = True
    yaw_value: float = 0.0
    end_t_s: float = math.inf
    target_ned: np.ndarray = field(default_factory=lambda: np.zeros(3))
    speed_m_s: float = 1.0
    yaw_margin_deg: float = 5.0
    hold_z_m: float = math.nan  # velocity mode: track this NED z instead of the z velocity (moveByVelocityZ)
    # position mode on a path (moveOnPath): the polyline from the start, its cumulative lengths, the
    # distance along it reached so far and the carrot's lead (target_ned is the path's last point)
    path_pts: np.ndarray | None = None
    path_cum: np.ndarray | None = None
    path_s_m: float = 0.0
    lookahead_m: float = PATH_LOOKAHEAD_M
    forward_only: bool = False  # yaw_value is set each tick: forward_offset_deg + the direction of travel
    forward_offset_deg: float = 0.0
    attitude: AttitudeCommand | None = None  # attitude mode: the attitude- or rate-level command


class Multirotor:
    """State and command logic; `World` moves its body, checks collisions and renders its camera."""

    def __init__(
        self,
        name: str,
        spawn: Pose,
        limits: MultirotorLimits | None = None,
        battery: BatteryConfig | None = None,
    ) -> None:
        self.name = name
        self.spawn = spawn
        self.limits = limits or MultirotorLimits()
        self.position_ned = np.array([spawn.x_m, spawn.y_m, spawn.z_m], dtype=float)
        self.velocity_ned = np.zeros(3)
        self.accel_ned = np.zeros(3)
        self.yaw_deg = spawn.yaw_deg
        self.yaw_rate_deg_s = 0.0
        self.floor_z_m = spawn.z_m  # resting height of the body origin (NED z is down)
        self.landed = True
        self.armed = True  # SimpleFlight starts armed
        self.api_control = False
        self.collision: dict | None = None
        self.battery = Battery(battery)
        self.wind_ned = np.zeros(3)  # m/s, the world's wind (simSetWind, settings.json's Wind)
        self.wind = WindResponse()  # the velocity the wind adds and its rejection (sim_bridge.sim.wind)
        self.attitude = AttitudeModel(yaw_rad=math.radians(spawn.yaw_deg))  # roll, pitch, body rates
        self._goal = _Goal("hold", target_ned=self.position_ned.copy(), yaw_value=self.yaw_deg)
        self._goal.yaw_is_rate = False
        self.silence_land_s: float | None = None  # land after this long without a command (None: never)
        self.silence_landings = 0
        self._commanded = False  # a command arrived since the last tick
        self._active_s = 0.0  # sim time of the last command, or of the last tick a motion ran
        self._active_wall_s = time.monotonic()  # the same on the wall clock

    @property
    def goal_mode(self) -> str:
        """What the vehicle is doing: hold, velocity, position, yaw or land."""
        return self._goal.mode

    # ---- commands (called under the world lock) ----
    def pose(self) -> Pose:
        p = self.position_ned
        return Pose(float(p[0]), float(p[1]), float(p[2]), wrap_deg(self.yaw_deg))

    def _start(self, goal: _Goal) -> Task:
        self.cancel()
        self._commanded = True
        task = Task(goal.mode)
        goal.task = task
        self._goal = goal
        return task

    def cancel(self) -> None:
        """Cancel the running task (it reports False) and brake to a hold."""
        if self._goal.task is not None:
            self._goal.task.finish(False)
        self._commanded = True
        self._enter_hold()

    def _enter_hold(self) -> None:
        # Hold where braking at the acceleration limit would stop, so the hold does not overshoot.
        v = self.velocity_ned
        stop = self.position_ned + v * np.linalg.norm(v) / (2.0 * self.limits.max_accel_m_s2)
        if self.landed:
            stop = self.position_ned.copy()
        self._goal = _Goal("hold", target_ned=stop, yaw_is_rate=False, yaw_value=self.yaw_deg)

    def move_velocity(
        self,
        velocity_ned: Sequence[float] | np.ndarray,
        duration_s: float,
        now_s: float,
        yaw: YawMode = NO_TURN,
    ) -> Task:
        self.landed = False
        return self._start(
            _Goal(
                "velocity",
                velocity_ned=np.asarray(velocity_ned, float),
                end_t_s=now_s + duration_s,
                yaw_is_rate=yaw.is_rate,
                yaw_value=yaw.value,
            )
        )

    def move_velocity_z(
        self,
        vx_m_s: float,
        vy_m_s: float,
        z_m: float,
        duration_s: float,
        now_s: float,
        yaw: YawMode = NO_TURN,
    ) -> Task:
        """AirSim's moveByVelocityZ: world (vx, vy) while holding the NED height z (world frame)."""
        task = self.move_velocity(np.array([vx_m_s, vy_m_s, 0.0]), duration_s, now_s, yaw)
        self._goal.hold_z_m = float(z_m)
        return task

    def move_on_path(
        self,
        path_ned: list[np.ndarray],
        speed_m_s: float,
        now_s: float,
        timeout_s: float,
        yaw: YawMode,
        lookahead_m: float = PATH_LOOKAHEAD_M,
    ) -> Task:
        """AirSim's moveOnPath (MultirotorApiBase::moveOnPath): the path starts at the current position;
        the vehicle flies at speed towards a carrot `lookahead_m` ahead of the farthest point of the path
        it has come nearest to (never back), and once the carrot is at the end, brakes onto the last
        point as moveToPosition does."""
        points = [self.position_ned.copy(), *(np.asarray(p, float) for p in path_ned)]
        task = self.move_to(points[-1], speed_m_s, now_s, timeout_s, yaw, kind="path")
        pts = np.array(points)
        self._goal.path_pts = pts
        self._goal.path_cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
        self._goal.lookahead_m = max(float(lookahead_m), 1e-3)
        return task

    def move_velocity_body(
        self,
        forward_m_s: float,
        right_m_s: float,
        down_m_s: float,
        duration_s: float,
        now_s: float,
        yaw: YawMode,
    ) -> Task:
        """AirSim's moveByVelocityBodyFrame: (vx, vy) rotated by the yaw at start, vz world-down."""
        horizontal = yaw_rotation_ned(self.yaw_deg) @ np.array([forward_m_s, right_m_s, 0.0])
        velocity = np.array([horizontal[0], horizontal[1], down_m_s])
        return self.move_velocity(velocity, duration_s, now_s, yaw)

    def move_to(
        self,
        target_ned: Sequence[float] | np.ndarray,
        speed_m_s: float,
        now_s: float,
        timeout_s: float = math.inf,
        yaw: YawMode = NO_TURN,
        kind: str = "position",
    ) -> Task:
        self.landed = False
        goal = _Goal(
            "position",
            target_ned=np.asarray(target_ned, float),
            speed_m_s=max(speed_m_s, 0.05),
            end_t_s=now_s + timeout_s,
            yaw_is_rate=yaw.is_rate,
            yaw_value=yaw.value,
            forward_only=yaw.forward_only and not yaw.is_rate,
            forward_offset_deg=yaw.value,
        )
        task = self._start(goal)
        task.kind = kind
        return task

    def rotate_rate(self, yaw_rate_deg_s: float, duration_s: float, now_s: float) -> Task:
        hold = self.position_ned.copy()
        return self._start(
            _Goal(
                "yaw", target_ned=hold, yaw_is_rate=True, yaw_value=yaw_rate_deg_s, end_t_s=now_s + duration_s
            )
        )

    def rotate_to(self, yaw_deg: float, now_s: float, timeout_s: float, margin_deg: float) -> Task:
        hold = self.position_ned.copy()
        return self._start(
            _Goal(
                "yaw",
                target_ned=hold,
                yaw_is_rate=False,
                yaw_value=yaw_deg,
                end_t_s=now_s + timeout_s,
                yaw_margin_deg=margin_deg,
            )
        )

    def move_attitude(self, command: AttitudeCommand, duration_s: float, now_s: float) -> Task:
        """AirSim's attitude- and rate-level calls (sim_bridge.sim.attitude) for duration_s."""
        self.landed = False
        return self._start(_Goal("attitude", end_t_s=now_s + duration_s, attitude=command))

    def land(self, now_s: float, timeout_s: float) -> Task:
        return self._start(
            _Goal("land", end_t_s=now_s + timeout_s, yaw_is_rate=False, yaw_value=self.yaw_deg)
        )

    def hover(self) -> None:
        self.cancel()

    def teleport(self, pose: Pose) -> None:
        self.cancel()
        self.position_ned = np.array([pose.x_m, pose.y_m, pose.z_m], float)
        self.yaw_deg = pose.yaw_deg
        self.velocity_ned[:] = 0.0
        self.wind.reset()
        self.yaw_rate_deg_s = 0.0
        self.attitude.reset(math.radians(pose.yaw_deg))
        self.landed = pose.z_m >= self.floor_z_m - 1e-3
        self._enter_hold()

    # ---- integration ----
    def propose(self, dt_s: float, now_s: float) -> tuple[np.ndarray, float]:
        """Advance velocities by one tick and return the proposed (position, yaw) at now_s + dt_s.

        The caller commits it with `commit` (or `blocked` on a collision).
        """
        self._silence_rule(now_s)
        lim = self.limits
        g = self._goal
        t_end = now_s + dt_s
        if (
            g.task is not None
            and not g.task.done
            and t_end >= g.end_t_s
            and g.mode in ("velocity", "yaw", "attitude")
        ):
            g.task.finish(True)
            self._enter_hold()
            g = self._goal
        elif g.task is not None and t_end >= g.end_t_s and g.mode in ("position", "land"):
            g.task.finish(False)  # timed out
            self._enter_hold()
            g = self._goal

        if g.mode == "attitude" and g.attitude is not None:
            if self.wind.velocity_ned.any():  # the thrust vector model flies the whole velocity
                self.wind.reset()
            new_pos, new_yaw = fly_attitude(self, g.attitude, dt_s)
            return self._touch_ground(new_pos), wrap_deg(new_yaw)
        desired_yaw_rate = 0.0
        if g.mode == "velocity":
            desired_v = g.velocity_ned.copy()
            if not math.isnan(g.hold_z_m):
                dz = g.hold_z_m - self.position_ned[2]
                speed = min(lim.hold_max_speed_m_s, lim.hold_gain_1_s * abs(dz))
                speed = min(speed, math.sqrt(2 * lim.max_accel_m_s2 * abs(dz)))
                desired_v[2] = math.copysign(speed, dz)
        elif g.mode == "land":
            desired_v = np.array([0.0, 0.0, lim.land_speed_m_s])
        else:  # hold, yaw, position: track a point
            error = g.target_ned - self.position_ned
            dist = float(np.linalg.norm(error))
            carrot = _carrot(g, self.position_ned) if g.mode == "position" else None
            max_speed = lim.hold_max_speed_m_s if g.mode != "position" else g.speed_m_s
            # braking-distance limited speed so that the vehicle arrives without overshoot
            speed = min(max_speed, lim.hold_gain_1_s * dist, math.sqrt(2 * lim.max_accel_m_s2 * dist))
            heading = error
            if carrot is not None:  # on the path, the carrot ahead: full speed towards it
                heading = carrot - self.position_ned
                n = float(np.linalg.norm(heading))
                desired_v = heading / n * max_speed if n > 1e-9 else np.zeros(3)
            else:
                desired_v = error / dist * speed if dist > 1e-9 else np.zeros(3)
            if g.forward_only:  # MultirotorApiBase::adjustYaw towards the point flown to
                if float(np.linalg.norm(heading)) > DISTANCE_ACCURACY_M:
                    travel_deg = math.degrees(math.atan2(heading[1], heading[0]))
                    g.yaw_value = wrap_deg(g.forward_offset_deg + travel_deg)
                else:
                    g.yaw_value = self.yaw_deg  # setZeroRate: keep the heading
            if (
                g.mode == "position"
                and g.task is not None
                and carrot is None
                and dist <= lim.position_accuracy_m
            ):
                g.task.finish(True)
                self._goal = _Goal(
                    "hold", target_ned=g.target_ned.copy(), yaw_is_rate=False, yaw_value=self.yaw_deg
                )
        if g.yaw_is_rate:
            desired_yaw_rate = g.yaw_value
        else:
            err = wrap_deg(g.yaw_value - self.yaw_deg)
            desired_yaw_rate = lim.yaw_hold_gain_1_s * err
            if g.mode == "yaw" and g.task is not None and abs(err) <= g.yaw_margin_deg:
                g.task.finish(True)
                self._enter_hold()
                self._goal.yaw_value = g.yaw_value
        if self.landed and g.mode == "hold":
            desired_v = np.zeros(3)
            desired_yaw_rate = 0.0

        desired_v = np.clip(desired_v, -lim.max_speed_m_s, lim.max_speed_m_s)
        windy = not self.landed and self.wind.active(self.wind_ned)
        if self.landed and self.wind.velocity_ned.any():
            self.wind.reset()  # on the ground: its friction holds the body
        # the commands track their own velocity; what the wind adds is its own term (sim.wind)
        commanded_v = self.velocity_ned - self.wind.velocity_ned if windy else self.velocity_ned
        dv = desired_v - commanded_v
        max_dv = lim.max_accel_m_s2 * dt_s
        norm = float(np.linalg.norm(dv))
        if norm > max_dv:
            dv *= max_dv / norm
        control_accel = dv / dt_s  # what the thrust provides
        if windy:
            body = body_rotation_ned(self.attitude, self.yaw_deg)
            old_v = self.velocity_ned
            control_accel = control_accel + self.wind.step(
                self.wind_ned, old_v, body, lim.max_accel_m_s2, dt_s
            )
            self.velocity_ned = commanded_v + dv + self.wind.velocity_ned
            self.accel_ned = (self.velocity_ned - old_v) / dt_s
        else:
            self.accel_ned = dv / dt_s
            self.velocity_ned = self.velocity_ned + dv
        desired_yaw_rate = max(-lim.max_yaw_rate_deg_s, min(lim.max_yaw_rate_deg_s, desired_yaw_rate))
        dr = desired_yaw_rate - self.yaw_rate_deg_s
        max_dr = lim.max_yaw_accel_deg_s2 * dt_s
        self.yaw_rate_deg_s += max(-max_dr, min(max_dr, dr))
        new_pos = self.position_ned + self.velocity_ned * dt_s
        new_yaw = wrap_deg(self.yaw_deg + self.yaw_rate_deg_s * dt_s)
        if self.landed:
            self.attitude.reset(math.radians(new_yaw))
        else:  # the body tilts as the acceleration needs; the translation above does not depend on it
            self.attitude.follow(
                control_accel, math.radians(new_yaw), math.radians(self.yaw_rate_deg_s), dt_s
            )
        return self._touch_ground(new_pos), new_yaw

    def _silence_rule(self, now_s: float) -> None:
        """Land a vehicle left holding in the air with no command for silence_land_s."""
        wall_s = time.monotonic()
        if self._commanded or self._goal.mode != "hold" or self.landed:
            self._commanded = False
            self._active_s, self._active_wall_s = now_s, wall_s
            return
        silent_s = now_s - self._active_s
        bound_s = self.silence_land_s
        if bound_s is None or silent_s < bound_s or wall_s - self._active_wall_s < bound_s:
            return
        log.warning(
            "%s: no command for %.1f s (command-silence landing after %g s): landing",
            self.name,
            silent_s,
            bound_s,
        )
        self.silence_landings += 1
        self.land(now_s, math.inf)

    def _touch_ground(self, new_pos: np.ndarray) -> np.ndarray:
        if new_pos[2] >= self.floor_z_m:  # the ground: touch down instead of passing through
            new_pos[2] = self.floor_z_m
            if self.velocity_ned[2] > 0:
                self.velocity_ned[2] = 0.0
            if self._goal.mode == "land":
                self.landed = True
                self.velocity_ned[:] = 0.0
                self.wind.reset()
                self.yaw_rate_deg_s = 0.0
                if self._goal.task is not None:
                    self._goal.task.finish(True)
                self._enter_hold()
        return new_pos

    def commit(self, position_ned: np.ndarray, yaw_deg: float) -> None:
        self.position_ned = position_ned
        self.yaw_deg = yaw_deg

    def blocked(self, info: dict) -> None:
        """A collision at the proposed pose: stay at the last free pose, stop, and drop the task."""
        self.collision = info
        self.velocity_ned[:] = 0.0
        self.wind.reset()
        self.yaw_rate_deg_s = 0.0
        self.attitude.reset(math.radians(self.yaw_deg))
        self.cancel()


def _carrot(g: _Goal, position_ned: np.ndarray) -> np.ndarray | None:
    """The point `lookahead_m` ahead along the goal's path from the farthest point reached (the point of
    the path within the lookahead window nearest to the vehicle, never moving back), or None when no
    path is followed or the carrot has reached the end (the final approach brakes onto the last point)."""
    if g.path_pts is None or g.path_cum is None:
        return None
    total = float(g.path_cum[-1])
    best_s, best_d = g.path_s_m, math.inf
    for i in range(len(g.path_pts) - 1):
        a, b = g.path_pts[i], g.path_pts[i + 1]
        s0, s1 = float(g.path_cum[i]), float(g.path_cum[i + 1])
        if s1 < g.path_s_m or s0 > g.path_s_m + g.lookahead_m or s1 - s0 < 1e-9:
            continue
        t = float(np.dot(position_ned - a, b - a)) / (s1 - s0) ** 2
        s = min(max(s0 + t * (s1 - s0), g.path_s_m, s0), min(s1, g.path_s_m + g.lookahead_m))
        d = float(np.linalg.norm(position_ned - _point_at(g, s)))
        if d < best_d:
            best_s, best_d = s, d
    g.path_s_m = best_s
    if g.path_s_m + g.lookahead_m >= total:
        g.path_pts = None  # the final approach: moveToPosition's braking onto target_ned
        return None
    return _point_at(g, g.path_s_m + g.lookahead_m)


def _point_at(g: _Goal, s_m: float) -> np.ndarray:
    assert g.path_pts is not None and g.path_cum is not None
    i = int(np.clip(np.searchsorted(g.path_cum, s_m, side="right") - 1, 0, len(g.path_pts) - 2))
    seg = float(g.path_cum[i + 1] - g.path_cum[i])
    t = 0.0 if seg < 1e-9 else (s_m - float(g.path_cum[i])) / seg
    return g.path_pts[i] + min(max(t, 0.0), 1.0) * (g.path_pts[i + 1] - g.path_pts[i])
