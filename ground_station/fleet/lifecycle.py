"""Where each drone is in its life: what the operator needs at a glance, one word and a colour.

connecting → flying / hold / landing / estop (as the drone reports) → landed → disarmed → done,
or lost (the link went silent while it was in the air), or failed (its process ended with an error,
for a drone this ground station launched). An e-stopped or landed drone whose process then exits
is "done", with the run's end reason, not "link lost": that is how a flight is meant to end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ground_station.fleet.state import DroneState

LANDED_ALTITUDE_M = 0.3  # below this height above its start, a drone in landing mode is down
LANDED_SPEED_M_S = 0.3

# state -> (label colour, what the tile says under it)
LOOKS = {
    "connecting": "#757575",
    "flying": "#2e7d32",
    "hold": "#f9a825",
    "landing": "#ef6c00",
    "landed": "#00838f",
    "disarmed": "#455a64",
    "estop": "#c62828",
    "done": "#1565c0",
    "lost": "#b71c1c",
    "failed": "#6a1b9a",
}
GONE = frozenset({"done", "lost", "failed"})  # nothing sent to these drones can be executed


class ExitInfo(Protocol):
    """What a launcher knows of a drone process that ended (ground_station.fleet.launch.DroneExit)."""

    returncode: int
    reason: str | None
    log_tail: list[str]

    @property
    def failed(self) -> bool: ...

    def summary(self) -> str: ...


@dataclass(frozen=True)
class LifeState:
    name: str  # one of LOOKS
    detail: str  # one human line: why, since when

    @property
    def colour(self) -> str:
        return LOOKS[self.name]

    @property
    def gone(self) -> bool:
        return self.name in GONE

    @property
    def flying(self) -> bool:
        return self.name == "flying"


def life_state(
    state: DroneState, now_s: float, stale_after_s: float, exit_info: ExitInfo | None = None
) -> LifeState:
    t = state.telemetry
    if exit_info is not None:
        if exit_info.failed and (t is None or t.mode not in ("estop", "landing")):
            return LifeState("failed", exit_info.summary())
        return LifeState("done", f"run ended: {exit_info.reason or 'process exited'}")
    if t is None:
        return LifeState("connecting", "waiting for its first telemetry")
    down = _on_ground(state)
    silent_s = None if state.telemetry_received_s is None else now_s - state.telemetry_received_s
    if state.is_stale(now_s, stale_after_s):
        since = f"silent {silent_s:.0f} s" if silent_s is not None else "silent"
        if t.mode == "estop" or down or not t.armed:
            # it stopped on the ground (or was stopped) and then went quiet: its run is over
            return LifeState("done", f"last seen {t.mode}{' on the ground' if down else ''}, {since}")
        return LifeState("lost", f"link lost in the air ({t.mode}), {since}")
    if not t.armed:
        return LifeState("disarmed", "on the ground, motors off")
    if t.mode == "estop":
        return LifeState("estop", t.safety_state if t.safety_state not in ("", "ok") else "e-stopped")
    if down and t.mode in ("landing", "hold"):
        return LifeState("landed", "on the ground, motors on")
    if t.mode in LOOKS:
        reason = t.safety_state if t.safety_state not in ("", "ok") else ""
        return LifeState(t.mode, reason)
    return LifeState("flying" if t.armed else "disarmed", t.mode)


def _on_ground(state: DroneState) -> bool:
    t = state.telemetry
    if t is None:
        return False
    speed = sum(v * v for v in t.velocity_ned_m_s) ** 0.5
    # NED: z is down from the vehicle's start; the ground there is z = 0
    return -t.pose_ned.z_m < LANDED_ALTITUDE_M and speed < LANDED_SPEED_M_S
