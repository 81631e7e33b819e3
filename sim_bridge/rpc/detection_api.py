# ruff: noqa: N802 -- the method names are AirSim wire names
"""AirSim's detection calls (RpcLibServerBase.cpp's simAddDetectionFilterMeshName,
simSetDetectionFilterRadius, simClearDetectionMeshNames, simGetDetections): the forward camera's
detection component per vehicle and image type (sim_bridge.rpc.detections). The `external`
argument is AirSim 1.x's bool or Cosys-AirSim's annotation name, ignored (one camera per drone)."""

from __future__ import annotations

import math
from typing import Any

from common.errors import ConfigError
from sim_bridge.rpc.camera_select import CameraSelect
from sim_bridge.rpc.detections import DetectionFilters, detections
from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.local_frames import LocalFrames, geo_point


class DetectionApi:
    """The detection calls over the vehicles' detection filters."""

    def __init__(self, frames: LocalFrames, select: CameraSelect) -> None:
        self.world = frames.world
        self._frames = frames
        self._select = select
        self._detections = DetectionFilters()

    def handlers(self) -> HandlerTable:
        return {
            "simAddDetectionFilterMeshName": self.simAddDetectionFilterMeshName,
            "simSetDetectionFilterRadius": self.simSetDetectionFilterRadius,
            "simClearDetectionMeshNames": self.simClearDetectionMeshNames,
            "simGetDetections": self.simGetDetections,
        }

    def _filter_key(self, camera_name: str, vehicle_name: str) -> str:
        self._select.check(camera_name)  # the forward camera's detection component
        return str(self._frames.slot(vehicle_name).model.name)

    def simAddDetectionFilterMeshName(
        self, camera_name: str, image_type: int, mesh_name: str, vehicle_name: str, external: bool
    ) -> None:
        vehicle = self._filter_key(camera_name, vehicle_name)
        self._detections.add(vehicle, "0", int(image_type), str(mesh_name))

    def simSetDetectionFilterRadius(
        self, camera_name: str, image_type: int, radius_cm: float, vehicle_name: str, external: bool
    ) -> None:
        radius = float(radius_cm)
        if math.isnan(radius):
            raise ConfigError(f"simSetDetectionFilterRadius: radius_cm must be a number, got {radius_cm}")
        vehicle = self._filter_key(camera_name, vehicle_name)
        self._detections.set_radius(vehicle, "0", int(image_type), radius)

    def simClearDetectionMeshNames(
        self, camera_name: str, image_type: int, vehicle_name: str, external: bool
    ) -> None:
        self._detections.clear(self._filter_key(camera_name, vehicle_name), "0", int(image_type))

    def simGetDetections(
        self, camera_name: str, image_type: int, vehicle_name: str, external: bool
    ) -> list[dict[str, Any]]:
        vehicle = self._filter_key(camera_name, vehicle_name)
        filt = self._detections.get(vehicle, "0", int(image_type))
        return detections(self.world, vehicle, filt, geo_point)
