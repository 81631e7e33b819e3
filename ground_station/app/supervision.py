"""Each drone's life as the operator sees it: its tile refreshed from the fleet state and its
process's end, an alert whenever that life, its own safety layer or its link changes, and the
re-launch of its process."""

from __future__ import annotations

import logging
import time

from ground_station.app.launcher import DroneLauncher
from ground_station.app.views import Views
from ground_station.fleet.client import FleetClient
from ground_station.fleet.lifecycle import ExitInfo, LifeState, life_state
from ground_station.fleet.state import DroneState

log = logging.getLogger(__name__)


class DroneSupervisor:
    """Owns each drone's LifeState (`life`), and what it has already alerted about, so that an
    alert is raised once per change, not once per refresh."""

    def __init__(self, fleet: FleetClient, views: Views, launcher: DroneLauncher | None = None) -> None:
        """`launcher`: the SimFleet that started the drones (exit_info, relaunch), or None."""
        self.fleet = fleet
        self.views = views
        self.launcher = launcher
        self.life: dict[str, LifeState] = {}
        self._safety_seen: dict[str, str] = {}
        self._problem_shown: dict[str, ExitInfo] = {}  # drone -> the exit whose log lines its tile shows

    def _exit_info(self, drone: str) -> ExitInfo | None:
        if self.launcher is None:
            return None
        try:
            return self.launcher.exit_info(drone)
        except Exception:  # a launcher that cannot say must not stop the display
            log.exception("exit_info failed for %s", drone)
            return None

    def refresh_tile(self, drone_id: str, now: float) -> DroneState:
        snap = self.fleet.state.snapshot(drone_id)
        ended = self._exit_info(drone_id)
        life = life_state(snap, now, self.fleet.stale_after_s, ended)
        previous = self.life.get(drone_id)
        self.life[drone_id] = life
        tile = self.views.tiles[drone_id]
        tile.refresh(snap, life, relaunchable=ended is not None)
        if ended is not None and ended.failed and self._problem_shown.get(drone_id) is not ended:
            tile.show_problem(ended.log_tail[-6:])
            self._problem_shown[drone_id] = ended
        elif ended is None and tile.problem.isVisible():
            tile.show_problem([])
            self._problem_shown.pop(drone_id, None)
        self.views.declarations.set_gone(drone_id, life.gone)
        if previous is not None and previous.name != life.name:
            self._life_alert(drone_id, previous, life)
            if life.name == "failed":
                tile.show_ack("not running: its last log lines are above")
        t = snap.telemetry
        safety = t.safety_state if t is not None else "ok"
        if safety != self._safety_seen.get(drone_id, "ok") and safety not in ("", "ok"):
            self._safety_alert(drone_id, safety)
        self._safety_seen[drone_id] = safety
        return snap

    def relaunch(self, drone: str) -> None:
        """The operator's re-launch of a drone's process (from its tile): what its previous process
        showed and said (its end, its last log lines, its telemetry) no longer describes it."""
        if self.launcher is None:
            return
        try:
            relaunched_wall_s = time.time()  # declarations received before this are the old process's
            self.launcher.relaunch(drone)
            self.fleet.forget_telemetry(drone)
        except Exception as exc:
            self.views.alerts.raise_alert("error", drone, f"cannot re-launch: {exc}", key="relaunch")
            return
        self.views.declarations.end_run(drone, relaunched_wall_s)
        tile = self.views.tiles[drone]
        tile.show_problem([])
        self._problem_shown.pop(drone, None)
        tile.show_ack("re-launched: waiting for it to report …")
        self.refresh_tile(drone, time.monotonic())  # "connecting" now, not the last launch's end
        self.views.alerts.raise_alert("info", drone, "re-launched", key="relaunch")
        self.views.orders.add(f"{drone} re-launched by the operator")

    def _life_alert(self, drone: str, previous: LifeState, life: LifeState) -> None:
        alerts = self.views.alerts
        if life.name == "failed":
            alerts.raise_alert("error", drone, life.detail, key="life")
        elif life.name == "lost":
            alerts.raise_alert("critical", drone, life.detail, key="life")
        elif life.name == "done":
            alerts.raise_alert("info", drone, life.detail, key="life")
        elif life.name in ("landed", "disarmed") or (
            previous.name == "connecting" and life.name != "connecting"
        ):
            alerts.raise_alert("info", drone, f"{life.name}" + (f": {life.detail}" if life.detail else ""))

    def _safety_alert(self, drone: str, safety: str) -> None:
        """The drone's own safety layer acted (collision hold, geofence, link-loss failsafe …)."""
        lowered = safety.lower()
        severity = "critical" if "collision" in lowered or "estop" in lowered else "warning"
        if lowered.startswith(("ground station", "operator", "order expired", "new instruction", "order ")):
            severity = "info"  # what the operator (or the commander's expiry) asked for
        self.views.alerts.raise_alert(severity, drone, f"safety: {safety}", key=f"safety:{safety}")

    def link_alert(self, drone: str, state: str, silence_s: float) -> None:
        life = self.life.get(drone)
        if state == "lost" and (life is None or not life.gone):
            self.views.alerts.raise_alert(
                "warning", drone, f"link lost (silent {silence_s:.1f} s)", key="link"
            )
        elif state == "up" and life is not None and life.name != "connecting":
            self.views.alerts.raise_alert("info", drone, "link back up", key="link")
