"""The project's one small exception hierarchy. Messages say which value broke which limit."""

from __future__ import annotations


class DroneCatsError(Exception):
    """Base of every error this project raises on purpose."""


class ConfigError(DroneCatsError):
    """A configuration file, override or profile is missing, unreadable or invalid."""


class MalformedReply(DroneCatsError):
    """A model reply that is not a valid action (AGENT.md §2). Carries the raw text."""

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


class RecordError(DroneCatsError):
    """An episode record or log line is invalid; the message names the field."""
