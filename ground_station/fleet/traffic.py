"""The traffic relay: each drone is sent its fleet mates' positions for its separation check.

The ground station is the only party that hears every drone, so it tells each one where the others
are (as last heard, with the age of that news); the drone's safety governor keeps its distance.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from common.messages import Traffic, TrafficEntry
from ground_station.fleet.state import FleetState


class TrafficRelay:
    """Sends every drone a Traffic message `traffic_hz` times a second, on its own thread."""

    def __init__(
        self,
        state: FleetState,
        stale_after_s: float,
        traffic_hz: float,
        send: Callable[[str, Traffic], None],
    ) -> None:
        self.state = state
        self.stale_after_s = stale_after_s
        self.traffic_hz = traffic_hz
        self._send = send
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="traffic-relay", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def traffic_for(self, drone_id: str, now_s: float | None = None) -> Traffic:
        """What `drone_id` is sent: every other drone whose telemetry is fresh (not stale), as heard."""
        now_s = time.monotonic() if now_s is None else now_s
        entries = []
        with self.state.lock:
            for other, state in self.state.drones.items():
                t, received_s = state.telemetry, state.telemetry_received_s
                if other == drone_id or t is None or received_s is None:
                    continue
                if state.is_stale(now_s, self.stale_after_s):
                    continue
                p = t.pose_ned
                entries.append(
                    TrafficEntry(
                        other, (p.x_m, p.y_m, p.z_m), t.velocity_ned_m_s, max(0.0, now_s - received_s)
                    )
                )
        return Traffic(tuple(entries))

    def _run(self) -> None:
        period_s = 1.0 / self.traffic_hz
        while not self._stop.wait(period_s):
            now_s = time.monotonic()
            for drone_id in self.state.drones:  # its keys are the fleet's drones, fixed at its start
                self._send(drone_id, self.traffic_for(drone_id, now_s))
