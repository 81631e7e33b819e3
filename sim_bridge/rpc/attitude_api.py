# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's attitude- and rate-level multirotor calls and SimpleFlight's gain setters, over the
attitude model (sim_bridge.sim.attitude); the attitude parts of the kinematics messages are
sim_bridge.rpc.orientation's.

Wire semantics as AirLib's server has them (MultirotorRpcLibServer.cpp -> MultirotorApiBase.cpp ->
SimpleFlightApi.hpp): roll, pitch, yaw are NED Euler angles in radians, yaw_rate and the angle rates
body rates in rad/s, z the vehicle's local NED height, throttle 0-1; a call with duration <= 0
returns True at once, otherwise the command holds for `duration` and the call returns True (AirSim's
waitForFunction(...).isTimeout()). The airsim Python client negates pitch and yaw (or their rates)
before sending them (client.py: `call_async('moveByRollPitchYawZ', roll, -pitch, -yaw, ...)`); that is
the client's business and is not undone here, exactly as AirSim's server does not.
setAngleLevelControllerGains / setAngleRateControllerGains set the model's PIDs (SimpleFlightApi's
setControllerGains: three values per list, roll, pitch, yaw); the velocity and position loops of this
simulator are not SimpleFlight's PIDs, so their setters answer an error instead of pretending.
"""

from __future__ import annotations

import math

from common.errors import ConfigError, VehicleError
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.local_frames import LocalFrames, wait_motion
from sim_bridge.sim.attitude import ANGLE, RATE, AttitudeCommand, PidGains

AxisGains = list[float]  # a PID term's gain per axis on the wire: (roll, pitch, yaw)


def _finite(value: object, name: str) -> float:
    try:
        if not isinstance(value, int | float | str | bytes):  # what float() takes from msgpack's types
            raise TypeError(name)
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected a number, got {value!r:.40}") from None
    if not math.isfinite(v):
        raise ConfigError(f"{name}: expected a finite number, got {v}")
    return v


def _gains(kp: object, ki: object, kd: object, method: str) -> PidGains:
    lists = []
    for label, values in (("kp", kp), ("ki", ki), ("kd", kd)):
        if not isinstance(values, list | tuple) or len(values) != 3:
            raise ConfigError(f"{method}: {label} must be 3 numbers (roll, pitch, yaw), got {values!r:.60}")
        lists.append(tuple(_finite(v, f"{method} {label}") for v in values))
    return PidGains(*lists)  # type: ignore[arg-type]


class AttitudeApi:
    """The attitude, rate and gain calls (MultirotorRpcLibServer.cpp's), over the vehicles' frames."""

    def __init__(self, frames: LocalFrames) -> None:
        self.world = frames.world
        self._frames = frames

    def handlers(self) -> HandlerTable:
        return {
            "moveByRollPitchYawZ": self.moveByRollPitchYawZ,
            "moveByRollPitchYawThrottle": self.moveByRollPitchYawThrottle,
            "moveByRollPitchYawrateThrottle": self.moveByRollPitchYawrateThrottle,
            "moveByRollPitchYawrateZ": self.moveByRollPitchYawrateZ,
            "moveByAngleRatesZ": self.moveByAngleRatesZ,
            "moveByAngleRatesThrottle": self.moveByAngleRatesThrottle,
            "moveByMotorPWMs": self.moveByMotorPWMs,
            "setAngleLevelControllerGains": self.setAngleLevelControllerGains,
            "setAngleRateControllerGains": self.setAngleRateControllerGains,
            "setVelocityControllerGains": self.setVelocityControllerGains,
            "setPositionControllerGains": self.setPositionControllerGains,
        }

    def _fly(
        self,
        vehicle_name: str,
        modes: tuple[str, str, str],
        goals: tuple[float, float, float],
        duration: float,
        z: float = math.nan,
        throttle: float = math.nan,
    ) -> bool:
        names = ("roll", "pitch", "yaw")
        values = tuple(_finite(g, names[k]) for k, g in enumerate(goals))
        duration_s = _finite(duration, "duration")
        if duration_s <= 0:
            return True
        if not self._frames.need_control(vehicle_name):
            return False
        z_world = math.nan
        if not (isinstance(z, float) and math.isnan(z)):
            z_world = float(self._frames.to_world(vehicle_name, 0.0, 0.0, _finite(z, "z"))[2])
        if not (isinstance(throttle, float) and math.isnan(throttle)):
            throttle = _finite(throttle, "throttle")
            if not 0.0 <= throttle <= 1.0:
                raise ConfigError(f"throttle {throttle} must be within 0-1")
        command = AttitudeCommand(modes, values, z_m=z_world, throttle=float(throttle))  # type: ignore[arg-type]
        with self.world.lock:
            m = self._frames.slot(vehicle_name).model
            task = m.move_attitude(command, duration_s, now_s=self.world.clock.now())
        return wait_motion(task)

    def moveByRollPitchYawZ(
        self, roll: float, pitch: float, yaw: float, z: float, duration: float, vehicle_name: str
    ) -> bool:
        return self._fly(vehicle_name, (ANGLE, ANGLE, ANGLE), (roll, pitch, yaw), duration, z=z)

    def moveByRollPitchYawThrottle(
        self, roll: float, pitch: float, yaw: float, throttle: float, duration: float, vehicle_name: str
    ) -> bool:
        return self._fly(vehicle_name, (ANGLE, ANGLE, ANGLE), (roll, pitch, yaw), duration, throttle=throttle)

    def moveByRollPitchYawrateThrottle(
        self, roll: float, pitch: float, yaw_rate: float, throttle: float, duration: float, vehicle_name: str
    ) -> bool:
        return self._fly(
            vehicle_name, (ANGLE, ANGLE, RATE), (roll, pitch, yaw_rate), duration, throttle=throttle
        )

    def moveByRollPitchYawrateZ(
        self, roll: float, pitch: float, yaw_rate: float, z: float, duration: float, vehicle_name: str
    ) -> bool:
        return self._fly(vehicle_name, (ANGLE, ANGLE, RATE), (roll, pitch, yaw_rate), duration, z=z)

    def moveByAngleRatesZ(
        self,
        roll_rate: float,
        pitch_rate: float,
        yaw_rate: float,
        z: float,
        duration: float,
        vehicle_name: str,
    ) -> bool:
        return self._fly(vehicle_name, (RATE, RATE, RATE), (roll_rate, pitch_rate, yaw_rate), duration, z=z)

    def moveByAngleRatesThrottle(
        self,
        roll_rate: float,
        pitch_rate: float,
        yaw_rate: float,
        throttle: float,
        duration: float,
        vehicle_name: str,
    ) -> bool:
        return self._fly(
            vehicle_name, (RATE, RATE, RATE), (roll_rate, pitch_rate, yaw_rate), duration, throttle=throttle
        )

    def moveByMotorPWMs(
        self,
        front_right_pwm: float,
        rear_left_pwm: float,
        front_left_pwm: float,
        rear_right_pwm: float,
        duration: float,
        vehicle_name: str,
    ) -> bool:
        self._frames.slot(vehicle_name)
        raise VehicleError(
            "moveByMotorPWMs is not supported by the built-in simulator: its multirotor has no rotor "
            "dynamics (use moveByAngleRatesThrottle or moveByRollPitchYawThrottle)"
        )

    # ---------------------------------------------------------------- gains (SimpleFlight's PIDs)
    def setAngleLevelControllerGains(
        self, kp: AxisGains, ki: AxisGains, kd: AxisGains, vehicle_name: str
    ) -> None:
        gains = _gains(kp, ki, kd, "setAngleLevelControllerGains")
        with self.world.lock:
            self._frames.slot(vehicle_name).model.attitude.level_gains = gains

    def setAngleRateControllerGains(
        self, kp: AxisGains, ki: AxisGains, kd: AxisGains, vehicle_name: str
    ) -> None:
        gains = _gains(kp, ki, kd, "setAngleRateControllerGains")
        with self.world.lock:
            self._frames.slot(vehicle_name).model.attitude.rate_gains = gains

    def setVelocityControllerGains(
        self, kp: AxisGains, ki: AxisGains, kd: AxisGains, vehicle_name: str
    ) -> None:
        self._not_pid("setVelocityControllerGains", vehicle_name)

    def setPositionControllerGains(
        self, kp: AxisGains, ki: AxisGains, kd: AxisGains, vehicle_name: str
    ) -> None:
        self._not_pid("setPositionControllerGains", vehicle_name)

    def _not_pid(self, method: str, vehicle_name: str) -> None:
        self._frames.slot(vehicle_name)
        raise VehicleError(
            f"{method} is not supported by the built-in simulator: its velocity and position control "
            "is a kinematic tracker with acceleration limits, not SimpleFlight's PID cascade "
            "(setAngleLevelControllerGains and setAngleRateControllerGains are)"
        )
