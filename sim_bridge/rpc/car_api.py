# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's car RPC surface (SimMode "Car") over the built-in world's cars (sim_bridge.sim.car).

AirSim's car server (AirLib's CarRpcLibServer.cpp) is the generic RpcLibServerBase surface plus
getCarState, setCarControls and getCarControls; the multirotor server's methods (takeoff,
moveByVelocity..., getMultirotorState; MultirotorRpcLibServer.cpp) are not bound at all, so a client
calling one gets rpclib's "could not find function" error. `car_table` builds that table from the
stock one: the multirotor-only names removed, the car's added, and the generic calls whose car
semantics differ wrapped:

- enableApiControl: PhysXCarApi::enableApiControl clears the last controls when the state changes;
  setCarControls only drives the car while API control is on (CarPawnSimApi takes keyboard input
  otherwise, which this simulator has none of: the car coasts on empty controls).
- armDisarm: PhysXCarApi::armDisarm is a no-op answering True.
- reset: the generic reset (back at the spawn, at rest, collision info cleared) plus
  CarPawnApi::reset's empty controls; API control stays as it was (PhysXCarApi's reset, unlike
  SimpleFlight's, does not touch it: car_collision.py enables it, then resets, then drives).
- simAddVehicle: adds a car (type PhysXCar); another type answers False, as the stock one does.

Message shapes as CarRpcLibAdaptors.hpp's MSGPACK_DEFINE_MAPs: CarControls {throttle, steering,
brake, handbrake, is_manual_gear, manual_gear, gear_immediate}, CarState {speed, gear, rpm, maxrpm,
handbrake, kinematics_estimated, timestamp}.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from common.errors import ConfigError
from common.pose import Pose
from sim_bridge.rpc.add_vehicle import add_vehicle
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.wire import PoseMsg
from sim_bridge.sim.camera import place_vehicle_body
from sim_bridge.sim.car import MAX_RPM, Car, CarControls
from sim_bridge.sim.world import VehicleSlot, World

log = logging.getLogger(__name__)

# MultirotorRpcLibServer.cpp's bindings: absent from a car server
MULTIROTOR_ONLY = frozenset(
    {
        "takeoff",
        "land",
        "goHome",
        "moveByVelocityBodyFrame",
        "moveByVelocityZBodyFrame",
        "moveByMotorPWMs",
        "moveByRollPitchYawZ",
        "moveByRollPitchYawThrottle",
        "moveByRollPitchYawrateThrottle",
        "moveByRollPitchYawrateZ",
        "moveByAngleRatesZ",
        "moveByAngleRatesThrottle",
        "moveByVelocity",
        "moveByVelocityZ",
        "moveOnPath",
        "moveToGPS",
        "moveToPosition",
        "moveToZ",
        "moveByManual",
        "rotateToYaw",
        "rotateByYawRate",
        "hover",
        "setAngleLevelControllerGains",
        "setAngleRateControllerGains",
        "setVelocityControllerGains",
        "setPositionControllerGains",
        "moveByRC",
        "setSafety",
        "getRotorStates",
        "getMultirotorState",
    }
)
CarControlsMsg = dict[str, float | int | bool]  # CarControls: CONTROL_FIELDS
CAR_TYPES = {"physxcar"}  # what simAddVehicle creates in Car mode (AirSimSettings' lower-case names)
CONTROL_FIELDS = (
    "throttle",
    "steering",
    "brake",
    "handbrake",
    "is_manual_gear",
    "manual_gear",
    "gear_immediate",
)


def make_cars(world: World) -> list[str]:
    """Replace every vehicle's model by a car at the same spawn (before anything drives them)."""
    with world.lock:
        for name, slot in world.vehicles.items():
            slot.model = Car(name, slot.model.spawn)
            place_vehicle_body(world.scene, slot)  # on the ground now, before the first tick
        return list(world.vehicles)


def _number(msg: dict[str, Any], key: str, lo: float, hi: float) -> float:
    value = msg.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"CarControls.{key}: expected a finite number, got {value!r:.40}")
    return min(max(float(value), lo), hi)  # PhysX clamps its inputs, so does this


def parse_controls(msg: object) -> CarControls:
    if not isinstance(msg, dict):
        raise ConfigError(f"CarControls: expected a map of {CONTROL_FIELDS}, got {type(msg).__name__}")
    gear = msg.get("manual_gear", 0)
    if isinstance(gear, bool) or not isinstance(gear, int) or not -1 <= gear <= 5:
        raise ConfigError(f"CarControls.manual_gear: expected an integer -1..5, got {gear!r:.40}")
    return CarControls(
        throttle=_number(msg, "throttle", -1.0, 1.0),
        steering=_number(msg, "steering", -1.0, 1.0),
        brake=_number(msg, "brake", 0.0, 1.0),
        handbrake=bool(msg.get("handbrake", False)),
        is_manual_gear=bool(msg.get("is_manual_gear", False)),
        manual_gear=int(gear),
        gear_immediate=bool(msg.get("gear_immediate", True)),
    )


def controls_msg(c: CarControls) -> dict[str, Any]:
    return {
        "throttle": c.throttle,
        "steering": c.steering,
        "brake": c.brake,
        "handbrake": c.handbrake,
        "is_manual_gear": c.is_manual_gear,
        "manual_gear": c.manual_gear,
        "gear_immediate": c.gear_immediate,
    }


class CarFamily:
    """The car methods over `world`; `stock` is the stock table (AirSimApi's or StrictAirSimApi's)."""

    def __init__(self, world: World, stock: HandlerTable) -> None:
        self.world = world
        self._stock = stock

    def handlers(self) -> HandlerTable:
        """The car server's own methods and the generic ones whose car semantics differ (module
        docstring): they replace the stock table's."""
        return {
            "setCarControls": self.setCarControls,
            "getCarControls": self.getCarControls,
            "getCarState": self.getCarState,
            "enableApiControl": self.enableApiControl,
            "armDisarm": self.armDisarm,
            "reset": self.reset,
            "simAddVehicle": self.simAddVehicle,
        }

    def _car(self, vehicle_name: str) -> Car:
        model = self.world.vehicle(str(vehicle_name)).model
        if not isinstance(model, Car):
            raise ConfigError(f"vehicle '{vehicle_name}' is not a car")
        return model

    def setCarControls(self, controls: CarControlsMsg, vehicle_name: str) -> None:
        parsed = parse_controls(controls)
        with self.world.lock:
            car = self._car(vehicle_name)
            if car.api_control:  # CarPawnSimApi drives by the API's controls only under API control
                car.set_controls(parsed)

    def getCarControls(self, vehicle_name: str) -> dict[str, Any]:
        with self.world.lock:
            return controls_msg(self._car(vehicle_name).controls)

    def getCarState(self, vehicle_name: str) -> dict[str, Any]:
        with self.world.lock:
            car = self._car(vehicle_name)
            speed, gear, rpm, handbrake = car.speed_m_s, car.gear(), car.rpm(), car.controls.handbrake
        return {
            "speed": float(speed),
            "gear": int(gear),
            "rpm": float(rpm),
            "maxrpm": MAX_RPM,
            "handbrake": bool(handbrake),
            "kinematics_estimated": self._stock["simGetGroundTruthKinematics"](vehicle_name),
            "timestamp": round(self.world.clock.now() * 1e9),
        }

    def enableApiControl(self, is_enabled: bool, vehicle_name: str) -> None:
        with self.world.lock:
            car = self._car(vehicle_name)
            if car.api_control != bool(is_enabled):
                car.set_controls(CarControls())
            car.api_control = bool(is_enabled)

    def armDisarm(self, arm: bool, vehicle_name: str) -> bool:
        self._car(vehicle_name)  # an unknown vehicle is an error
        return True

    def reset(self) -> None:
        with self.world.lock:
            control = {name: slot.model.api_control for name, slot in self.world.vehicles.items()}
        self._stock["reset"]()
        with self.world.lock:
            for name, slot in self.world.vehicles.items():
                slot.model.api_control = control.get(name, False)  # PhysXCarApi's reset keeps it
                if isinstance(slot.model, Car):
                    slot.model.set_controls(CarControls())

    def simAddVehicle(self, vehicle_name: str, vehicle_type: str, pose: PoseMsg, pawn_path: str = "") -> bool:
        """A car at `pose` (world NED), as AirSim's addVehicle in Car mode: False for another vehicle
        type (AirSim's car mode cannot create a multirotor pawn) or a name in use."""

        def as_car(slot: VehicleSlot, spawn: Pose) -> None:
            slot.model = Car(slot.model.name, spawn)
            place_vehicle_body(self.world.scene, slot)

        return add_vehicle(self.world, vehicle_name, vehicle_type, pose, CAR_TYPES, "car", as_car)


def car_table(world: World, stock: HandlerTable) -> HandlerTable:
    """The method table of a car server (see the module docstring)."""
    table = {name: fn for name, fn in stock.items() if name not in MULTIROTOR_ONLY}
    table.update(CarFamily(world, stock).handlers())
    return table
