"""The project's one small exception hierarchy. Messages say which value broke which limit.

Each class carries the exit status `dronecats` ends with when one reaches the top of a command:
USAGE_EXIT for what the user can fix in the command line, a config or an input file, FAILURE_EXIT
for what went wrong while running (a peer that does not answer, a refused command); `dronecats
onboard` tells two of those apart for a supervisor: PREARM_EXIT (nothing armed) and
VEHICLE_LOST_EXIT (the vehicle's connection broke in flight).
"""

from __future__ import annotations

FAILURE_EXIT = 1
USAGE_EXIT = 2  # argparse's own status for a bad command line
PREARM_EXIT = 3  # `dronecats onboard`: the pre-arm check refused to arm (nothing flew)
VEHICLE_LOST_EXIT = 4  # `dronecats onboard`: the vehicle connection broke in flight


class DroneCatsError(Exception):
    """Base of every error this project raises on purpose."""

    exit_code = FAILURE_EXIT


class ConfigError(DroneCatsError):
    """A configuration file, override or profile is missing, unreadable or invalid."""

    exit_code = USAGE_EXIT


class MalformedReply(DroneCatsError):
    """A model reply that is not a valid action (docs/protocol.md#malformed-replies). Carries the raw text."""

    def __init__(self, reason: str, raw: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


class ProtocolError(DroneCatsError):
    """A wire message that cannot be decoded or violates the protocol."""


class LinkError(DroneCatsError):
    """A link (ZeroMQ, HTTP, vehicle radio) failed or timed out."""


class BackendError(DroneCatsError):
    """A model backend failed to produce a reply (server down, timeout, HTTP error)."""


class VehicleError(DroneCatsError):
    """A vehicle refused or failed a command."""


class SafetyError(DroneCatsError):
    """A safety check refused to let something happen (pre-arm, geofence)."""


class PrearmRefused(SafetyError):
    """The pre-arm check refused to arm: the pilot gave no valid action (nothing armed, nothing flew)."""

    exit_code = PREARM_EXIT


class VehicleConnectionLost(VehicleError):
    """The connection to the vehicle broke in flight (the simulator or autopilot link is gone)."""

    exit_code = VEHICLE_LOST_EXIT


class RecordError(DroneCatsError):
    """An episode record or log line is invalid; the message names the field."""

    exit_code = USAGE_EXIT
