# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's common calls of every vehicle server: connection and version, log messages, reset, the
vehicle list and simAddVehicle, API control and arming, the last task, and the simulation clock
(pause, continue for time).

AirLib's RpcLibServerBase.cpp binds them for every SimMode (PythonClient/airsim/client.py:
VehicleClient's "common" calls); the car server wraps some of them (sim_bridge.rpc.car_api).
"""

from __future__ import annotations

import logging

from common.pose import Pose
from sim_bridge.rpc.add_vehicle import add_vehicle
from sim_bridge.rpc.collisions import Collisions
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.extensions import WorldEffects
from sim_bridge.rpc.lidar import LidarService
from sim_bridge.rpc.local_frames import LocalFrames
from sim_bridge.rpc.manual import ManualFlight
from sim_bridge.rpc.sensors import SensorService
from sim_bridge.rpc.silence import SilenceLanding
from sim_bridge.rpc.wire import PoseMsg
from sim_bridge.settings import MULTIROTOR_TYPES
from sim_bridge.sim.world import VehicleSlot

log = logging.getLogger(__name__)

SERVER_VERSION = 4  # Cosys-AirSim's client wants >= 4; AirSim 1.x's wants >= 1
MIN_CLIENT_VERSION = 1


class SessionApi:
    """The common calls over the world and the per-vehicle state a reset clears."""

    def __init__(
        self,
        frames: LocalFrames,
        collisions: Collisions,
        manual: ManualFlight,
        lidars: LidarService,
        sensors: SensorService,
        silence: SilenceLanding,
        effects: WorldEffects,
    ) -> None:
        self.world = frames.world
        self._frames = frames
        self._collisions = collisions
        self._manual = manual
        self._lidars = lidars
        self._sensors = sensors
        self._silence = silence
        self._effects = effects

    def handlers(self) -> HandlerTable:
        return {
            "ping": self.ping,
            "getServerVersion": self.getServerVersion,
            "getMinRequiredClientVersion": self.getMinRequiredClientVersion,
            "simPrintLogMessage": self.simPrintLogMessage,
            "reset": self.reset,
            "simAddVehicle": self.simAddVehicle,
            "listVehicles": self.listVehicles,
            "enableApiControl": self.enableApiControl,
            "isApiControlEnabled": self.isApiControlEnabled,
            "armDisarm": self.armDisarm,
            "cancelLastTask": self.cancelLastTask,
            "simPause": self.simPause,
            "simIsPaused": self.simIsPaused,
            "simContinueForTime": self.simContinueForTime,
        }

    def ping(self) -> bool:
        return True

    def getServerVersion(self) -> int:
        return SERVER_VERSION

    def getMinRequiredClientVersion(self) -> int:
        return MIN_CLIENT_VERSION

    def simPrintLogMessage(self, message: str, message_param: str = "", severity: int = 0) -> None:
        # AirSim shows these on the Unreal viewport; here they go to the server's log, with its time
        # stamps (the HIL runner names each episode it flies, so a server's log says who flew when).
        log.info("client message: %s%s", message, message_param)

    def reset(self) -> None:
        """ASimModeBase::reset -> each vehicle's MultirotorPawnSimApi::resetImplementation: the pawn back
        at its start with zero velocity (PawnSimApi: state_ = initial_state_, so the collision info is
        empty; rc_data_ cleared), its running task cancelled (MultirotorApiBase::resetImplementation)
        and SimpleFlight's OffboardApi::reset: API control off, landed, the vehicle state back to
        DefaultVehicleState (SimpleFlightApi: "Armed" unless settings.json says otherwise)."""
        w = self.world
        with w.lock:
            for slot in w.vehicles.values():
                w.set_vehicle_pose(slot.model.name, slot.model.spawn)  # cancels the task, stops it
                slot.model.api_control = False
                slot.model.armed = True
                slot.model.landed = True
                slot.model.battery.replace()  # the initial state: a freshly charged pack
                self._collisions.clear(slot.model.name)
                self._manual.set_rc(slot.model.name, {})
        self._lidars.reset()  # AirSim's reset resets the sensors
        self._sensors.reset()
        self._silence.apply_default()  # a client's dcSetSilenceLanding ends with its session

    def simAddVehicle(self, vehicle_name: str, vehicle_type: str, pose: PoseMsg, pawn_path: str = "") -> bool:
        """A multirotor at `pose` (world NED), as AirSim's addVehicle: False for a type it cannot
        create or a name in use."""

        def like_the_others(slot: VehicleSlot, _spawn: Pose) -> None:
            slot.model.wind_ned = self._effects.wind_ned.copy()
            slot.model.silence_land_s = self._silence.default_s

        return add_vehicle(
            self.world, vehicle_name, vehicle_type, pose, MULTIROTOR_TYPES, "multirotor", like_the_others
        )

    def listVehicles(self) -> list[str]:
        return list(self.world.vehicles)

    def enableApiControl(self, is_enabled: bool, vehicle_name: str) -> None:
        self._frames.slot(vehicle_name).model.api_control = bool(is_enabled)

    def isApiControlEnabled(self, vehicle_name: str) -> bool:
        return bool(self._frames.slot(vehicle_name).model.api_control)

    def armDisarm(self, arm: bool, vehicle_name: str) -> bool:
        """SimpleFlight's OffboardApi::arm/disarm: both need API control; arming an armed vehicle is
        True ("already armed"), disarming a disarmed one False (not Active, Armed or BeingArmed)."""
        m = self._frames.slot(vehicle_name).model
        if not m.api_control or (not arm and not m.armed):
            return False
        m.armed = bool(arm)
        return True

    def cancelLastTask(self, vehicle_name: str) -> None:
        with self.world.lock:
            self._frames.slot(vehicle_name).model.cancel()

    def simPause(self, is_paused: bool) -> None:
        self.world.pause(bool(is_paused))

    def simIsPaused(self) -> bool:
        return self.world.paused

    def simContinueForTime(self, seconds: float) -> None:
        self.world.continue_for_time(float(seconds))
