"""`dronecats sim --rerun [ADDR]`: the simulator's truth streamed live to a running Rerun viewer, in
the layout of the export and of `dronecats onboard --rerun` (common.rerun_entities): every vehicle's
and every non-scenery object's pose under `world/ned/NAME`, on `episode_time` = simulation seconds.

A thread of its own samples the world (under the world's lock, as the RPC handlers read it) at
POSES_HZ; the SDK buffers for a viewer that is not running, and the flush at the end waits at most
FLUSH_TIMEOUT_S. Needs the `review` extra (rerun-sdk): import this module only for `--rerun`.
"""

from __future__ import annotations

import logging
import threading

import rerun as rr

from common import rerun_entities as layout
from sim_bridge.sim.world import World

log = logging.getLogger(__name__)

POSES_HZ = 5.0  # as the onboard's telemetry
FLUSH_TIMEOUT_S = 2.0


class SimRerunStream:
    """Streams a World's vehicles and objects to the viewer at `url` until `close()`."""

    def __init__(self, world: World, url: str, recording: rr.RecordingStream | None = None) -> None:
        self.world = world
        self.url = url
        self._recording = recording
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim-rerun", daemon=True)
        self.samples = 0

    def start(self) -> SimRerunStream:
        if self._recording is None:
            self._recording = rr.RecordingStream(layout.APPLICATION_ID, recording_id="dronecats-sim")
            drones = list(self.world.vehicles)
            self._recording.connect_grpc(self.url, default_blueprint=layout.blueprint(drones))
        self._recording.send_recording_name("dronecats sim")
        layout.log_world(self._recording)
        for name in self.world.vehicles:
            layout.log_drone_arrow(self._recording, name)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        assert self._recording is not None
        try:
            self._recording.flush(timeout_sec=FLUSH_TIMEOUT_S)
        except RuntimeError as exc:  # the SDK's "Flush timed out": no viewer took them
            log.warning(
                "sim rerun stream: %s not reached, what it did not take is dropped (%s)", self.url, exc
            )
        self._recording.disconnect()

    def _run(self) -> None:
        while not self._stop.wait(1.0 / POSES_HZ):
            try:
                self._sample()
            except Exception:  # the viewer's faults never reach the simulator
                log.exception("sim rerun stream: sample not logged")

    def _sample(self) -> None:
        rec = self._recording
        assert rec is not None
        world = self.world
        with world.lock:
            t_s = world.clock.now()
            poses = {name: world.vehicle_pose(name) for name in world.vehicles}
            for name, body in world.objects.items():
                if body.cls != "scenery" and name not in poses:
                    poses[name] = world.object_pose(name)
        rec.set_time(layout.TIMELINE, duration=max(0.0, t_s))
        for name, pose in poses.items():
            rec.log(
                layout.object_path(name), layout.pose_transform((pose.x_m, pose.y_m, pose.z_m, pose.yaw_deg))
            )
        self.samples += 1
