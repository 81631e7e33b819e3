"""The simulator vehicle the autopilot flies: its state as the autopilot's sensors see it (position
from home, velocity, yaw, landed, battery) and the motions the autopilot asks of it."""

from __future__ import annotations

import math

import numpy as np

from common.pose import Pose, wrap_deg
from sim_bridge.emulators.flight_reset import FlightReset
from sim_bridge.sim.multirotor import Multirotor
from sim_bridge.sim.world import World, YawMode


class Airframe:
    def __init__(self, world: World, vehicle: str) -> None:
        self.world = world
        self.vehicle = vehicle
        self.home = world.vehicle(vehicle).model.spawn  # local NED positions are from here
        # Each arm after a flight starts back at home: PX4 takes its home where it arms, and this
        # emulator's home is fixed at the spawn the server printed (flight_reset.py says why).
        self.flights = FlightReset.of(world, vehicle)

    def model(self) -> Multirotor:
        return self.world.vehicle(self.vehicle).model

    def home_ned(self) -> np.ndarray:
        return np.array([self.home.x_m, self.home.y_m, self.home.z_m])

    def landed(self) -> bool:
        with self.world.lock:
            return bool(self.model().landed)

    def local(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(position NED from home, velocity NED, yaw deg, yaw rate deg/s)."""
        with self.world.lock:
            mdl = self.model()
            p = mdl.position_ned - np.array([self.home.x_m, self.home.y_m, self.home.z_m])
            return p, mdl.velocity_ned.copy(), float(mdl.yaw_deg), float(mdl.yaw_rate_deg_s)

    def roll_pitch_rad(self) -> tuple[float, float]:
        """The body's roll and pitch (ZYX, NED: MAVLink ATTITUDE's convention)."""
        with self.world.lock:
            a = self.model().attitude
            return float(a.roll_rad), float(a.pitch_rad)

    def battery_pct(self) -> float:
        """The simulated pack's state of charge (sim_bridge.sim.battery), in percent."""
        with self.world.lock:
            return 100.0 * self.model().battery.fraction

    def battery(self) -> tuple[int, int, int, list[int], int, int]:
        """What SYS_STATUS and BATTERY_STATUS carry: remaining %, pack mV, current cA, cell mV
        (10 fields, UINT16_MAX unused), consumed mAh, consumed energy hJ."""
        with self.world.lock:
            b = self.model().battery
            pct = round(100.0 * b.fraction)
            mv, ca = round(b.voltage_v() * 1000), round(b.current_a() * 100)
            cells = min(b.config.cells, 10)
            per_cell = [round(mv / b.config.cells)] * cells + [65535] * (10 - cells)
            return pct, mv, ca, per_cell, round(b.consumed_mah), round(b.consumed_wh * 36)

    def set_armed(self, armed: bool) -> None:
        with self.world.lock:
            self.model().armed = armed

    def hover(self) -> None:
        with self.world.lock:
            self.model().hover()

    def land(self, speed_m_s: float) -> None:
        with self.world.lock:
            self.model().limits.land_speed_m_s = max(0.1, float(speed_m_s))
        self.world.land(self.vehicle, timeout_s=120.0)

    def drop_to_floor(self) -> None:
        """Motors off in the air: the vehicle falls (teleported: the sim has no free fall)."""
        with self.world.lock:
            mdl = self.model()
            p = mdl.position_ned
            pose = Pose(float(p[0]), float(p[1]), float(mdl.floor_z_m), mdl.yaw_deg)
        self.world.set_vehicle_pose(self.vehicle, pose)

    def climb_to(self, altitude_m: float, speed_m_s: float) -> None:
        """Straight up (or down) to `altitude_m` above home, holding the current heading."""
        _p, _v, yaw, _ = self.local()
        with self.world.lock:
            mdl = self.model()
            target = np.array([mdl.position_ned[0], mdl.position_ned[1], self.home.z_m - altitude_m])
        self.world.move_to(self.vehicle, target, speed_m_s, timeout_s=120.0, yaw=YawMode(False, yaw))

    def fly_to(self, local_ned: np.ndarray, speed_m_s: float, yaw: YawMode | None = None) -> None:
        """To a point in local NED (from home); heading held unless `yaw` says otherwise."""
        if yaw is None:
            _p, _v, yaw_deg, _ = self.local()
            yaw = YawMode(False, yaw_deg)
        target = np.array([self.home.x_m, self.home.y_m, self.home.z_m]) + local_ned
        self.world.move_to(self.vehicle, target, speed_m_s, timeout_s=300.0, yaw=yaw)

    def fly_velocity(self, velocity_ned: list[float], duration_s: float, yaw: YawMode) -> None:
        self.world.move_velocity(self.vehicle, velocity_ned, duration_s, yaw=yaw)

    def turn_rate(self, rate_deg_s: float) -> None:
        self.world.rotate_rate(self.vehicle, rate_deg_s, 0.5)

    def turn_to(self, yaw_deg: float) -> None:
        self.world.rotate_to(self.vehicle, yaw_deg, timeout_s=30.0, margin_deg=1.0)

    def pose(self) -> Pose:
        return self.world.vehicle_pose(self.vehicle)

    def distance_from_home_m(self) -> float:
        p = self.pose()
        return math.hypot(p.x_m - self.home.x_m, p.y_m - self.home.y_m)

    def altitude_m(self) -> float:
        return float(self.home.z_m - self.pose().z_m)

    def heading_deg(self) -> float:
        return wrap_deg(self.pose().yaw_deg)
