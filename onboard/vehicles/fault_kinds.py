"""What a vehicle fault is (FaultKind) and what the runtime does about it (FaultAction), as enums whose
values are the strings the `vehicle_fault` event and the fault log line have always carried.

onboard.vehicles.faults' VehicleFault and FaultReporter.emit take them; the vehicles (tello, px4,
mavlink) say which they emit.
"""

from __future__ import annotations

from common.enums import StrEnum


class FaultKind(StrEnum):
    VIDEO_STALE = "video_stale"  # the newest frame is too old while flying (tello://)
    VIDEO_OK = "video_ok"  # frames are back
    FAILSAFE = "failsafe"  # the autopilot says failsafe, or our setpoint stream was silent too long
    CONTROL_LOST = "control_lost"  # someone else took the vehicle (RC takeover, a mode change)
    LINK_LOST = "link_lost"  # no state datagram / HEARTBEAT for too long
    LINK_OK = "link_ok"  # the vehicle's link is back
    REFUSED = "refused"  # the vehicle refused a command


class FaultAction(StrEnum):
    """What the runtime does on a fault (onboard.vehicles.faults.attach_vehicle_faults)."""

    INFO = "info"  # logged only
    HOLD = "hold"  # hold through the safety governor
    LAND = "land"  # end the run through the governor's landing
    CLEAR = "clear"  # resume a hold that a fault caused

    @property
    def is_warning(self) -> bool:
        """Logged as a warning (hold, land) rather than as information (info, clear)."""
        return self in (FaultAction.HOLD, FaultAction.LAND)
