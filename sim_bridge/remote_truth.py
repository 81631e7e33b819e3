"""AGENT.md §6 ground truth from a running `dronecats sim`, over its RPC extensions (dcGroundTruth,
dcPointOnTargetAt), for an onboard process that flies an airsim:// vehicle.

A real AirSim has no such extensions: there every sample is unknown (None fields) and the log says so
through nulls, never through made-up values.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from common.pose import Frame
from onboard.truth import TruthSample
from sim_bridge.airsim_vehicle import parse_airsim_url

log = logging.getLogger(__name__)

UNKNOWN = TruthSample(None, None, None, None)


class RemoteTruth:
    """GroundTruth for one target, asked of the simulator behind an airsim:// URL."""

    def __init__(self, vehicle_url: str, target: str, timeout_s: float = 30.0) -> None:
        self.target_url = parse_airsim_url(vehicle_url)
        self.target = target
        self._timeout_s = timeout_s
        self._local = threading.local()  # the airsim client is not thread-safe: one per thread
        self._unsupported = False
        self._in_frame = True  # until the simulator says it has no dcPointOnTargetInFrame

    def _call(self, method: str, *args: Any) -> Any:
        client = getattr(self._local, "client", None)
        if client is None:
            import airsim

            client = airsim.MultirotorClient(
                ip=self.target_url.host, port=self.target_url.port, timeout_value=self._timeout_s
            )
            self._local.client = client
        return client.client.call(method, *args)

    def sample(self, drone: str) -> TruthSample:
        if self._unsupported:
            return UNKNOWN
        vehicle = self.target_url.vehicle or drone
        try:
            d = self._call("dcGroundTruth", vehicle, self.target)
        except Exception as exc:
            if "could not find function" in str(exc):
                log.warning(
                    "%s:%d has no dcGroundTruth (not the built-in simulator): truth is unknown",
                    self.target_url.host,
                    self.target_url.port,
                )
                self._unsupported = True
            else:
                log.warning("dcGroundTruth(%s, %s) failed: %s", vehicle, self.target, exc)
            return UNKNOWN
        return TruthSample(
            float(d["distance_m"]), float(d["bbox_distance_m"]), bool(d["visible"]), list(d["target_pose"])
        )

    def point_on_target(self, frame: Frame, point_xy: tuple[int, int]) -> bool | None:
        """Asked about the frame the model saw: the simulator answers from that frame's segmentation
        when it still keeps it (dcPointOnTargetInFrame, by the frame's time stamp and pose), else from
        a re-render at the frame's pose. A simulator without the ring gets dcPointOnTargetAt."""
        if self._unsupported:
            return None
        pose = [float(v) for v in frame.pose.as_list()]
        u, v = float(point_xy[0]), float(point_xy[1])
        vehicle = self.target_url.vehicle
        if self._in_frame:
            try:
                stamp_ns = round(frame.capture_time_s * 1e9)
                return bool(self._call("dcPointOnTargetInFrame", vehicle, self.target, u, v, stamp_ns, pose))
            except Exception as exc:
                if "could not find function" not in str(exc):
                    log.warning("dcPointOnTargetInFrame failed: %s", exc)
                    return None
                log.info("the simulator has no dcPointOnTargetInFrame: re-rendered at the frame's pose")
                self._in_frame = False
        try:
            return bool(self._call("dcPointOnTargetAt", vehicle, self.target, u, v, pose))
        except Exception as exc:
            log.warning("dcPointOnTargetAt failed: %s", exc)
            return None
