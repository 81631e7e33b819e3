"""A ground vehicle for settings.json's `SimMode: "Car"` (AirSim's PhysXCar), as a kinematic bicycle.

AirSim drives its car with Unreal's PhysX vehicle (engine, gearbox, tyres). This is a much smaller
model that gives the same *signs* and plausible magnitudes for AirSim's CarControls:

- longitudinal: a = drive * throttle * MAX_ACCEL - DRAG * v|v| - ROLLING * sign(v)
  - brake * MAX_BRAKE * sign(v) (the handbrake is a full brake); brakes and rolling resistance stop
  the car, they never push it backwards. Throttle 1 reaches ~TOP_SPEED (drag balances the drive).
- direction (AirSim's gear logic, CarPawnApi::updateMovement): with `is_manual_gear` a negative
  `manual_gear` drives backwards, gear 0 is neutral (no drive), a positive one forwards; in automatic
  a negative throttle drives backwards (PhysX's auto-gear reverse). The drive is |throttle|.
- lateral: the front wheel turns by steering * MAX_STEER (steering +1 is right, as in AirSim), and the
  yaw rate is v / WHEELBASE * tan(wheel angle): a right turn going forwards is a positive NED yaw
  rate, going backwards the nose swings the other way, as a real car's does.
- the body stays on the ground (the scenes' flat ground, NED z = 0), roll and pitch zero. A car
  spawned or posed above it stands on the ground at once (AirSim's PhysX car falls onto it), so its
  spawn-relative z is then positive, as on AirSim.

The car is a `Multirotor` subclass only to share the world's bookkeeping (pose, teleport, camera
mount, collision handling, battery fields): `World.step` calls `propose`/`commit`/`blocked` on every
vehicle alike. Its `landed` is always False so the world checks its body against the scene every tick,
as it does a flying multirotor's; a collision stops it. The multirotor's own commands are not reachable
over RPC in Car mode (sim_bridge.rpc.car_api serves AirSim's car surface instead).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from common.pose import Pose, wrap_deg
from sim_bridge.sim.battery import Battery, BatteryConfig
from sim_bridge.sim.multirotor import Multirotor, Task

VEHICLE_TYPE = "PhysXCar"
DEFAULT_NAME = "PhysXCar"  # AirSimSettings' default vehicle in SimMode Car
MAX_ACCEL_M_S2 = 4.0  # full throttle from rest: 0-100 km/h in ~8 s
MAX_BRAKE_M_S2 = 8.0  # full brake (~0.8 g)
TOP_SPEED_M_S = 30.0  # full throttle's steady speed (drag = drive)
DRAG_1_M = MAX_ACCEL_M_S2 / TOP_SPEED_M_S**2  # quadratic drag coefficient (m/s^2 per (m/s)^2)
ROLLING_M_S2 = 0.15  # rolling resistance: a coasting car stops
WHEELBASE_M = 2.7
MAX_STEER_DEG = 35.0
GROUND_Z_M = 0.0  # the built-in scenes' ground (sim_bridge.sim.ground)
STOPPED_M_S = 0.01  # below this (and with no drive) the car is at rest
MAX_RPM = 7000.0  # PhysX vehicle's default engine (UWheeledVehicleMovementComponent4W: 7000 rpm max)
IDLE_RPM = 1000.0
GEAR_TOP_M_S = (0.0, 8.0, 14.0, 20.0, 26.0, 36.0)  # automatic gears 1-5: each one's top speed


@dataclass(frozen=True)
class CarControls:
    """AirSim's CarApiBase::CarControls (its defaults)."""

    throttle: float = 0.0
    steering: float = 0.0
    brake: float = 0.0
    handbrake: bool = False
    is_manual_gear: bool = False
    manual_gear: int = 0
    gear_immediate: bool = True


class Car(Multirotor):
    """The bicycle model's state; `controls` is what setCarControls last gave (while under API control)."""

    def __init__(self, name: str, spawn: Pose) -> None:
        super().__init__(name, spawn, battery=BatteryConfig(enforced=False))  # no fuel model
        self.floor_z_m = GROUND_Z_M
        self.position_ned[2] = GROUND_Z_M
        self.controls = CarControls()
        self.speed_m_s = 0.0  # signed forward speed
        self.steer_rad = 0.0

    # A car is never "landed": the world then checks its body against the scene every tick.
    @property
    def landed(self) -> bool:
        return False

    @landed.setter
    def landed(self, value: bool) -> None:
        pass

    def land(self, now_s: float, timeout_s: float) -> Task:
        task = Task("land")
        task.finish(False)  # nothing to land
        return task

    def set_controls(self, controls: CarControls) -> None:
        self.controls = controls

    def teleport(self, pose: Pose) -> None:
        super().teleport(Pose(pose.x_m, pose.y_m, GROUND_Z_M, pose.yaw_deg))  # on the ground
        self.speed_m_s = 0.0
        self.battery = Battery(dataclasses.replace(self.battery.config))

    def blocked(self, info: dict) -> None:
        super().blocked(info)
        self.speed_m_s = 0.0

    def direction(self) -> int:
        """+1 forwards, -1 backwards, 0 neutral (see the module docstring)."""
        c = self.controls
        if c.is_manual_gear:
            return (c.manual_gear > 0) - (c.manual_gear < 0)
        return -1 if c.throttle < 0 else 1

    def gear(self) -> int:
        """The gear a CarState reports: the manual one, else -1 reversing, 0 at rest, 1-5 by speed."""
        c = self.controls
        if c.is_manual_gear:
            return int(c.manual_gear)
        if self.speed_m_s < -STOPPED_M_S:
            return -1
        if abs(self.speed_m_s) <= STOPPED_M_S and c.throttle == 0.0:
            return 0
        for gear in range(1, 5):
            if abs(self.speed_m_s) <= GEAR_TOP_M_S[gear]:
                return gear
        return 5

    def rpm(self) -> float:
        """Engine speed: idle plus the fraction of the current gear's speed range."""
        g = abs(self.gear())
        if g == 0:
            return IDLE_RPM
        g = min(g, 5)
        lo, hi = GEAR_TOP_M_S[g - 1], GEAR_TOP_M_S[g]
        frac = min(max((abs(self.speed_m_s) - lo) / (hi - lo), 0.0), 1.0)
        return IDLE_RPM + frac * (MAX_RPM - IDLE_RPM)

    def propose(self, dt_s: float, now_s: float) -> tuple[np.ndarray, float]:
        c = self.controls
        v = self.speed_m_s
        drive = self.direction() * min(abs(c.throttle), 1.0) * MAX_ACCEL_M_S2
        brake = MAX_BRAKE_M_S2 if c.handbrake else min(max(c.brake, 0.0), 1.0) * MAX_BRAKE_M_S2
        resist = brake + ROLLING_M_S2 + DRAG_1_M * v * v  # all oppose the motion
        if abs(v) > STOPPED_M_S:
            new_v = v + drive * dt_s
            slowed = abs(new_v) - resist * dt_s
            new_v = math.copysign(max(slowed, 0.0), new_v) if new_v != 0 else 0.0
        else:  # at rest: the drive must beat the brake and rolling resistance to move it
            push = max(abs(drive) - brake - ROLLING_M_S2, 0.0) * dt_s
            new_v = math.copysign(push, drive) if drive else 0.0
        self.steer_rad = math.radians(min(max(c.steering, -1.0), 1.0) * MAX_STEER_DEG)
        yaw_rate_rad_s = 0.5 * (v + new_v) / WHEELBASE_M * math.tan(self.steer_rad)
        mean_yaw = math.radians(self.yaw_deg) + 0.5 * yaw_rate_rad_s * dt_s
        heading = np.array([math.cos(mean_yaw), math.sin(mean_yaw), 0.0])
        new_pos = self.position_ned + heading * 0.5 * (v + new_v) * dt_s
        new_pos[2] = self.floor_z_m  # on the ground
        new_yaw = wrap_deg(self.yaw_deg + math.degrees(yaw_rate_rad_s * dt_s))
        old_velocity = self.velocity_ned.copy()
        end_heading = np.array([math.cos(math.radians(new_yaw)), math.sin(math.radians(new_yaw)), 0.0])
        self.velocity_ned = end_heading * new_v
        self.accel_ned = (self.velocity_ned - old_velocity) / dt_s
        self.speed_m_s = new_v
        self.yaw_rate_deg_s = math.degrees(yaw_rate_rad_s)
        old_rate = self.attitude.rates_body[2]
        self.attitude.reset(math.radians(new_yaw))  # level on the ground
        self.attitude.rates_body[2] = yaw_rate_rad_s
        self.attitude.accel_body[2] = (yaw_rate_rad_s - old_rate) / dt_s
        return new_pos, new_yaw
