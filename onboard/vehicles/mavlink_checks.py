"""The autopilot parameters the onboard runtime depends on, and the values it accepts before arming.

Each rule names the parameter, what the firmware does with it and the accepted range, so that a
refusal is one line a pilot can act on ("COM_OF_LOSS_T = 3.0: ... accepted 0..1 s").

PX4 (commander_params.c, navigator_params.c, geofence_params.c):
- COM_OF_LOSS_T: how long PX4 flies on the last setpoint before the offboard-loss failsafe. The
  runtime's own stall handling assumes the vehicle stops within 1 s: accepted 0..1 s.
- COM_OBL_RC_ACT: the offboard-loss action. Manual (2) hands an unattended vehicle to sticks nobody
  may hold, Terminate (6) and Disarm (7) drop it: accepted 0 Position, 1 Altitude, 3 Return, 4 Land,
  5 Hold. (PX4 falls back to Hold when the Position/Altitude modes cannot run for lack of RC:
  commander/failsafe/framework.cpp.)
- NAV_DLL_ACT: with a data-link-loss action (> 0) PX4 refuses to arm until a MAV_TYPE_GCS heartbeat
  arrives (rcAndDataLinkCheck.cpp): checked by the vehicle against what it hears, not here.
- GF_ACTION: a geofence breach must make PX4 act: accepted 2 Hold, 3 Return, 4 Terminate, 5 Land.

ArduCopter (Parameters.cpp, mode_guided.cpp):
- GUID_TIMEOUT: GUIDED velocity targets are zeroed this long after the last one: accepted 0.1..1 s,
  the same bound as PX4's COM_OF_LOSS_T (ArduCopter's default 3 s fails: set GUID_TIMEOUT 1).
- FS_GCS_ENABLE: the GCS-failsafe action; 2 ("RTL or continue mission") was removed in 4.0 and is
  not a valid setting: accepted 0, 1, 3, 4, 5, 6, 7.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# COM_OBL_RC_ACT by name: the values PX4_RULES accept (commander_params.c)
LOSS_ACTIONS = {"land": 4, "hold": 5, "return": 3, "position": 0, "altitude": 1}


@dataclass(frozen=True)
class LastResort:
    """A parameter onboard sets before arming so that the autopilot itself acts if onboard dies."""

    name: str
    value: float
    integer: bool  # sent as MAV_PARAM_TYPE_INT32 (else REAL32)


def last_resort_params(px4: bool, command_loss_s: float, loss_action: str) -> tuple[LastResort, ...]:
    """PX4: after COM_OF_LOSS_T without a setpoint, the COM_OBL_RC_ACT action (default Land) once
    COM_FAIL_ACT_T has passed in Hold. ArduCopter: GUIDED zeroes its velocity target GUID_TIMEOUT after
    the last one and holds there (mode_guided.cpp); it has no landing of its own for a silent companion
    (FS_GCS_ENABLE acts on the ground station's heartbeats)."""
    if px4:
        return (
            LastResort("COM_OF_LOSS_T", command_loss_s, integer=False),
            LastResort("COM_OBL_RC_ACT", LOSS_ACTIONS[loss_action], integer=True),
        )
    return (LastResort("GUID_TIMEOUT", command_loss_s, integer=False),)


@dataclass(frozen=True)
class ParamRule:
    name: str
    accepted: str  # in words, for the refusal
    ok: Callable[[float], bool]

    def check(self, value: float) -> str | None:
        if self.ok(value):
            return None
        shown = f"{value:g}"
        return f"{self.name} = {shown}: accepted {self.accepted}"


PX4_RULES = (
    ParamRule(
        "COM_OF_LOSS_T",
        "0..1 s (the vehicle must stop within 1 s of the last setpoint)",
        lambda v: 0.0 <= v <= 1.0,
    ),
    ParamRule(
        "COM_OBL_RC_ACT",
        "0 Position, 1 Altitude, 3 Return, 4 Land, 5 Hold (not 2 Manual, 6 Terminate, 7 Disarm)",
        lambda v: int(v) in (0, 1, 3, 4, 5),
    ),
    ParamRule(
        "GF_ACTION",
        "2 Hold, 3 Return, 4 Terminate, 5 Land (a breach must make PX4 act)",
        lambda v: int(v) in (2, 3, 4, 5),
    ),
)
APM_RULES = (
    ParamRule(
        "GUID_TIMEOUT", "0.1..1 s (GUIDED must stop within 1 s of the last target)", lambda v: 0.1 <= v <= 1.0
    ),
    ParamRule(
        "FS_GCS_ENABLE",
        "0, 1, 3, 4, 5, 6 or 7 (2 was removed in ArduCopter 4.0)",
        lambda v: int(v) in (0, 1, 3, 4, 5, 6, 7),
    ),
)
PX4_READ = (*[r.name for r in PX4_RULES], "NAV_DLL_ACT", "COM_DL_LOSS_T")
APM_READ = (*[r.name for r in APM_RULES], "SYSID_MYGCS")
NAV_DLL_ACT_NAMES = {0: "Disabled", 1: "Hold", 2: "Return", 3: "Land", 5: "Terminate", 6: "Disarm"}


def check_params(px4: bool, values: dict[str, float]) -> list[str]:
    """One line per parameter outside its accepted range (missing ones count as problems)."""
    problems = []
    for rule in PX4_RULES if px4 else APM_RULES:
        if rule.name not in values:
            problems.append(
                f"{rule.name}: not served by the autopilot (cannot check; accepted {rule.accepted})"
            )
            continue
        why = rule.check(values[rule.name])
        if why:
            problems.append(why)
    return problems


def nav_dll_refusal(value: float, gcs_heard: bool, on_behalf: bool, ground_link_up: bool) -> str | None:
    """PX4 arms with NAV_DLL_ACT > 0 only after a GCS-typed heartbeat: say why we cannot provide one."""
    act = int(value)
    if act == 0 or gcs_heard or (on_behalf and ground_link_up):
        return None
    name = NAV_DLL_ACT_NAMES.get(act, "?")
    if on_behalf:
        return (
            f"NAV_DLL_ACT = {act} ({name}): PX4 arms only with a ground-station heartbeat, and the "
            "ground-station link is down (gcs_heartbeat=1 sends one only while it is up)"
        )
    return (
        f"NAV_DLL_ACT = {act} ({name}): PX4 arms only with a ground-station heartbeat and no GCS is "
        "heard on this link; accepted 0, or connect a GCS, or add gcs_heartbeat=1 to the vehicle URL"
    )
