"""The multirotor's attitude: a cascaded angle-level -> angle-rate controller after AirSim's SimpleFlight.

Two uses (sim_bridge/README.md, Attitude and cameras):

- under the translational commands (velocity, position, hold, land) the body pitches and rolls to the
  tilt that the commanded acceleration needs (`AttitudeModel.follow`); the translation stays the
  project's kinematic model, so those commands keep their accuracy and the suites their trajectories;
- under AirSim's attitude- and rate-level APIs (moveByRollPitchYaw*, moveByAngleRates*) the attitude is
  the command and the translation follows the thrust vector (`fly_attitude`): thrust along the body's
  down axis, gravity, AirLib's drag on the air-relative velocity (sim_bridge.sim.wind), and z held by
  a vertical velocity loop (the `...Z` calls) or thrust = throttle x the rotors' maximum (the
  `...Throttle` calls).

Gains and limits are SimpleFlight's defaults (AirLib/include/vehicles/multirotor/firmwares/
simple_flight/firmware/Params.hpp): angle level P 2.5 (I 0, D 0), its output (clipped to +-1) scaled
by the 2.5 rad/s angle-rate limit (AngleLevelController.hpp: rate goal = pid output x
angle_rate_pid.max_limit); angle rate P 0.25 (I 0, D 0), output clipped to +-1 (AngleRateController.hpp,
PidController.hpp); the velocity controller's tilt is at most pi/5.5 rad, about 32.7 deg
(VelocityController.hpp: angle goal = pid output x angle_level_pid.max_limit). AirSim's rate PID drives
motor torques through the mixer into a rigid body; here its output (+-1) is an angular acceleration
of RATE_OUTPUT_ACCEL_RAD_S2 per unit, which with the default P gives the rate loop a time constant of
about RATE_TIME_CONSTANT_S (the default quadrotor's arm, thrust and inertia give about that). Thrust:
AirSim's default quadrotor (MultiRotorParams.hpp setupFrameGenericQuad, RotorParams.hpp): 1 kg, four
rotors of 4.179446268 N at full throttle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from common.frames import euler_to_quaternion, rotation_from_euler

if TYPE_CHECKING:
    from sim_bridge.sim.multirotor import Multirotor

GRAVITY_M_S2 = 9.80665  # AirLib's EarthUtils gravity
MASS_KG = 1.0
MAX_THRUST_N = 4 * 4.179446268  # four rotors at full throttle (RotorParams.hpp's max_thrust)
MAX_RATE_RAD_S = 2.5  # Params::AngleRatePid::kMaxLimit
MAX_TILT_RAD = math.pi / 5.5  # Params::AngleLevelPid max_limit for roll and pitch
RATE_TIME_CONSTANT_S = 0.04
RATE_OUTPUT_ACCEL_RAD_S2 = 1.0 / (0.25 * RATE_TIME_CONSTANT_S)  # 100 rad/s^2 per unit of rate output
SUBSTEP_S = 0.01  # the rotational loop's longest integration step (a tick of 20 ms is split)
SUBSTEP_GAIN = 0.25  # and at most this fraction of the rate loop's time constant (stiffer gains: shorter)
MAX_PITCH_RAD = math.radians(85.0)  # Euler angles: pitch is kept off the +-90 deg singularity
VERTICAL_GAIN_1_S = 5.0  # z-hold: vertical velocity error -> vertical acceleration
ANGLE, RATE, FOLLOW = "angle", "rate", "follow"
SETTLED = 1e-6  # rad, rad/s: below this a level-commanded attitude counts as level (follow's shortcut)


@dataclass
class PidGains:
    """One PID per axis (roll, pitch, yaw), as SimpleFlight's setControllerGains takes them."""

    p: tuple[float, float, float]
    i: tuple[float, float, float] = (0.0, 0.0, 0.0)
    d: tuple[float, float, float] = (0.0, 0.0, 0.0)


def angle_level_defaults() -> PidGains:
    return PidGains((2.5, 2.5, 2.5))


def angle_rate_defaults() -> PidGains:
    return PidGains((0.25, 0.25, 0.25))


class _Pid:
    """SimpleFlight's PidController for one axis: P + I + D on the error, output clipped to +-1."""

    __slots__ = ("integral", "last_error")

    def __init__(self) -> None:
        self.integral = 0.0
        self.last_error = 0.0

    def output(self, error: float, kp: float, ki: float, kd: float, dt_s: float) -> float:
        out = kp * error
        if ki:
            self.integral += error * dt_s
            out += ki * self.integral
        if kd:
            out += kd * (error - self.last_error) / dt_s
        self.last_error = error
        return -1.0 if out < -1.0 else 1.0 if out > 1.0 else out


@dataclass
class AttitudeCommand:
    """An attitude- or rate-level command. Per axis: ANGLE (rad) or RATE (body rad/s); yaw also
    FOLLOW (the yaw the translational model sets). Vertical: z (world NED m) or throttle (0-1)."""

    modes: tuple[str, str, str]  # roll, pitch, yaw
    goals: tuple[float, float, float]
    z_m: float = math.nan
    throttle: float = math.nan


def tilt_for_acceleration(accel_ned: np.ndarray, yaw_rad: float) -> tuple[float, float]:
    """The (roll, pitch) whose thrust axis gives acceleration accel_ned against gravity, each limited to
    MAX_TILT_RAD. ZYX Euler: the body's down axis in the yaw frame is (cos r sin p, -sin r, cos r cos p)."""
    tx, ty, tz = float(accel_ned[0]), float(accel_ned[1]), float(accel_ned[2]) - GRAVITY_M_S2
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    # the down axis points against the thrust acceleration t: u = -R_yaw^T t
    u1, u2, u3 = -(c * tx + s * ty), -(-s * tx + c * ty), -tz
    roll = math.atan2(-u2, math.hypot(u1, u3))
    pitch = math.atan2(u1, u3) if u3 > 0 else 0.0
    return _clip(roll, MAX_TILT_RAD), _clip(pitch, MAX_TILT_RAD)


def _clip(value: float, limit: float) -> float:
    return -limit if value < -limit else limit if value > limit else value


def _wrap_rad(angle: float) -> float:
    """The shorter way round (SimpleFlight's adjustToMinDistanceAngles)."""
    return (angle + math.pi) % (2 * math.pi) - math.pi


@dataclass
class AttitudeModel:
    """Orientation (ZYX Euler, rad), body angular velocity and acceleration (rad/s, rad/s^2, FRD)."""

    roll_rad: float = 0.0
    pitch_rad: float = 0.0
    yaw_rad: float = 0.0
    rates_body: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    accel_body: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    level_gains: PidGains = field(default_factory=angle_level_defaults)
    rate_gains: PidGains = field(default_factory=angle_rate_defaults)
    _level_pids: list[_Pid] = field(default_factory=lambda: [_Pid(), _Pid(), _Pid()])
    _rate_pids: list[_Pid] = field(default_factory=lambda: [_Pid(), _Pid(), _Pid()])

    def reset(self, yaw_rad: float) -> None:
        """Level and at rest (a teleport, a collision stop)."""
        self.roll_rad = self.pitch_rad = 0.0
        self.yaw_rad = yaw_rad
        self.rates_body[:] = [0.0, 0.0, 0.0]
        self.accel_body[:] = [0.0, 0.0, 0.0]
        for pid in (*self._level_pids, *self._rate_pids):
            pid.integral = pid.last_error = 0.0

    def quaternion_wxyz(self) -> tuple[float, float, float, float]:
        """AirSim's NED (w, x, y, z) quaternion of this attitude (airsim.to_quaternion's formula)."""
        return euler_to_quaternion(self.roll_rad, self.pitch_rad, self.yaw_rad)

    def follow(self, accel_ned: np.ndarray, yaw_rad: float, yaw_rate_rad_s: float, dt_s: float) -> None:
        """Under a translational command: tilt towards what accel_ned needs; yaw is set from outside."""
        roll, pitch = tilt_for_acceleration(accel_ned, yaw_rad)
        w = self.rates_body
        if (
            roll == pitch == 0.0
            and max(abs(self.roll_rad), abs(self.pitch_rad), abs(w[0]), abs(w[1])) < SETTLED
        ):
            # level and settled (hovering, cruising): the cascade would change nothing; skip its cost
            r0 = w[2]
            self.roll_rad = self.pitch_rad = w[0] = w[1] = 0.0
            w[2] = yaw_rate_rad_s
            self.accel_body[:] = [0.0, 0.0, (w[2] - r0) / dt_s]
            self.yaw_rad = yaw_rad
            return
        self.step(AttitudeCommand((ANGLE, ANGLE, FOLLOW), (roll, pitch, yaw_rate_rad_s)), dt_s)
        self.yaw_rad = yaw_rad

    def step(self, cmd: AttitudeCommand, dt_s: float) -> None:
        """Advance the cascade by dt_s in substeps of at most SUBSTEP_S and of SUBSTEP_GAIN of the rate
        loop's time constant (2 of 10 ms at the default gains; I or D terms: 5 ms)."""
        rt = self.rate_gains
        h_max = min(SUBSTEP_S, SUBSTEP_GAIN / (RATE_OUTPUT_ACCEL_RAD_S2 * max(*rt.p, 1e-6)))
        if any(rt.i) or any(rt.d):
            h_max = min(h_max, SUBSTEP_S / 2)
        n = max(1, math.ceil(dt_s / h_max - 1e-9))
        h = dt_s / n
        w0 = list(self.rates_body)
        for _ in range(n):
            self._substep(cmd, h)
        self.accel_body[:] = [(self.rates_body[k] - w0[k]) / dt_s for k in range(3)]

    def _substep(self, cmd: AttitudeCommand, h: float) -> None:
        lv, rt = self.level_gains, self.rate_gains
        angles = (self.roll_rad, self.pitch_rad, self.yaw_rad)
        w = self.rates_body
        sr, cr = math.sin(self.roll_rad), math.cos(self.roll_rad)
        cp = math.cos(self.pitch_rad)
        goals = [0.0, 0.0, 0.0]
        for k in range(3):
            mode = cmd.modes[k]
            if mode == ANGLE:
                err = _wrap_rad(cmd.goals[k] - angles[k]) if k == 2 else cmd.goals[k] - angles[k]
                goals[k] = self._level_pids[k].output(err, lv.p[k], lv.i[k], lv.d[k], h) * MAX_RATE_RAD_S
            elif mode == RATE:
                goals[k] = cmd.goals[k]
        for k in (0, 1):
            u = self._rate_pids[k].output(goals[k] - w[k], rt.p[k], rt.i[k], rt.d[k], h)
            w[k] += u * RATE_OUTPUT_ACCEL_RAD_S2 * h
        if cmd.modes[2] == FOLLOW:
            # the body rate r that gives the prescribed Euler yaw rate at this roll and pitch
            w[2] = (cmd.goals[2] * cp - w[1] * sr) / cr
        else:
            u = self._rate_pids[2].output(goals[2] - w[2], rt.p[2], rt.i[2], rt.d[2], h)
            w[2] += u * RATE_OUTPUT_ACCEL_RAD_S2 * h
        # ZYX Euler kinematics from the body rates
        tp = math.tan(self.pitch_rad)
        q_r = w[1] * sr + w[2] * cr
        self.roll_rad = _wrap_rad(self.roll_rad + (w[0] + tp * q_r) * h)
        self.pitch_rad = _clip(self.pitch_rad + (w[1] * cr - w[2] * sr) * h, MAX_PITCH_RAD)
        self.yaw_rad = _wrap_rad(self.yaw_rad + q_r / cp * h)

    def euler_yaw_rate(self) -> float:
        """d(yaw)/dt (rad/s) of the current body rates."""
        w = self.rates_body
        return (w[1] * math.sin(self.roll_rad) + w[2] * math.cos(self.roll_rad)) / math.cos(self.pitch_rad)

    def down_axis_ned(self) -> tuple[float, float, float]:
        """The body's down axis (thrust acts against it) in world NED."""
        sr, cr = math.sin(self.roll_rad), math.cos(self.roll_rad)
        sp, cp = math.sin(self.pitch_rad), math.cos(self.pitch_rad)
        sy, cy = math.sin(self.yaw_rad), math.cos(self.yaw_rad)
        return (cr * sp * cy + sr * sy, cr * sp * sy - sr * cy, cr * cp)


def body_rotation_ned(a: AttitudeModel, yaw_deg: float) -> np.ndarray:
    """Body FRD -> world NED of a multirotor at its attitude's roll and pitch and heading yaw_deg:
    what a body-fixed sensor or camera mount turns with."""
    return rotation_from_euler(a.roll_rad, a.pitch_rad, math.radians(yaw_deg))


def fly_attitude(m: Multirotor, cmd: AttitudeCommand, dt_s: float) -> tuple[np.ndarray, float]:
    """One tick of an attitude- or rate-level command: the attitude follows the command, the body the
    thrust. Returns the proposed (position, yaw deg) like Multirotor.propose; updates m's velocity,
    acceleration and yaw rate."""
    att = m.attitude
    att.yaw_rad = math.radians(m.yaw_deg)
    att.step(cmd, dt_s)
    down = att.down_axis_ned()
    from sim_bridge.sim.wind import drag_accel_ned  # wind.py builds on this module's constants

    v = m.velocity_ned
    drag = drag_accel_ned(v - m.wind_ned, rotation_from_euler(att.roll_rad, att.pitch_rad, att.yaw_rad))
    max_thrust = MAX_THRUST_N / MASS_KG
    if math.isnan(cmd.z_m):
        thrust = max(0.0, min(1.0, cmd.throttle)) * max_thrust
    else:
        lim = m.limits
        dz = cmd.z_m - float(m.position_ned[2])
        speed = min(
            lim.hold_max_speed_m_s, lim.hold_gain_1_s * abs(dz), math.sqrt(2 * lim.max_accel_m_s2 * abs(dz))
        )
        az = _clip(VERTICAL_GAIN_1_S * (math.copysign(speed, dz) - float(v[2])), lim.max_accel_m_s2)
        # a_z = g - T cos(roll) cos(pitch) + drag_z: the thrust that gives the wanted a_z
        thrust = (GRAVITY_M_S2 + float(drag[2]) - az) / max(down[2], 0.05)
        thrust = max(0.0, min(max_thrust, thrust))
    accel = np.array([0.0, 0.0, GRAVITY_M_S2]) - thrust * np.asarray(down) + drag
    on_ground = m.position_ned[2] >= m.floor_z_m - 1e-6 and accel[2] >= 0.0
    if on_ground:  # resting on the ground: its reaction and friction hold the body
        accel[:] = 0.0
        m.velocity_ned = np.zeros(3)
    m.accel_ned = accel
    m.velocity_ned = m.velocity_ned + accel * dt_s
    m.yaw_rate_deg_s = math.degrees(att.euler_yaw_rate())
    return m.position_ned + m.velocity_ned * dt_s, math.degrees(att.yaw_rad)
