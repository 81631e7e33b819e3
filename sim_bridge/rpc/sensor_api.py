# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's sensor calls (RpcLibServerBase.cpp; PythonClient/airsim/client.py's sensor APIs): IMU,
barometer, magnetometer, GPS (sim_bridge.rpc.sensors), distance sensors (sim_bridge.rpc.distance)
and lidars (sim_bridge.rpc.lidar), each by sensor and vehicle name."""

from __future__ import annotations

from typing import Any

from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.distance import DistanceService
from sim_bridge.rpc.lidar import LidarService
from sim_bridge.rpc.segmentation import SegmentationIds
from sim_bridge.rpc.sensors import SensorService


class SensorApi:
    """The sensor calls over the sensor services (a lidar return names its segmentation ID)."""

    def __init__(
        self,
        sensors: SensorService,
        distance: DistanceService,
        lidars: LidarService,
        segmentation: SegmentationIds,
    ) -> None:
        self._sensors = sensors
        self._distance = distance
        self._lidars = lidars
        self._segmentation = segmentation

    def handlers(self) -> HandlerTable:
        return {
            "getImuData": self.getImuData,
            "getBarometerData": self.getBarometerData,
            "getMagnetometerData": self.getMagnetometerData,
            "getGpsData": self.getGpsData,
            "getDistanceSensorData": self.getDistanceSensorData,
            "getLidarData": self.getLidarData,
        }

    def getImuData(self, imu_name: str, vehicle_name: str) -> dict[str, Any]:
        return self._sensors.imu(imu_name, vehicle_name)

    def getBarometerData(self, barometer_name: str, vehicle_name: str) -> dict[str, Any]:
        return self._sensors.barometer(barometer_name, vehicle_name)

    def getMagnetometerData(self, magnetometer_name: str, vehicle_name: str) -> dict[str, Any]:
        return self._sensors.magnetometer(magnetometer_name, vehicle_name)

    def getGpsData(self, gps_name: str, vehicle_name: str) -> dict[str, Any]:
        return self._sensors.gps(gps_name, vehicle_name)

    def getDistanceSensorData(self, distance_sensor_name: str, vehicle_name: str) -> dict[str, Any]:
        # AirSim's default multirotor has none; settings.json's Sensors may add some (rpc/distance.py)
        return self._distance.data(distance_sensor_name, vehicle_name)

    def getLidarData(self, lidar_name: str, vehicle_name: str) -> dict[str, Any]:
        # the lidars settings.json's Sensors define (none by default, as AirSim): rpc/lidar.py
        return self._lidars.data(lidar_name, vehicle_name, self._segmentation.snapshot())
