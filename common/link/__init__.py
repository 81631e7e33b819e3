"""The drone ⇄ ground-station link over ZeroMQ (ARCHITECTURE.md "Wire protocol").

- `DroneLink` (common.link.drone): binds; publishes telemetry, frames, steps, declarations and
  heartbeats; receives acked commands exactly once; answers heartbeats.
- `GroundLink` (common.link.ground): connects to N drones; subscribes; `send_command` with ack,
  retry and backoff; link-lost / link-restored events; clock offset per drone.

Each link owns one I/O thread that owns all its ZeroMQ sockets (they are not thread-safe); the
public methods are thread-safe and hand work to that thread through a queue. Callbacks run on the
I/O thread and must return quickly (hand the work to your own queue or a Qt signal).

Importing this package imports pyzmq; `common.messages` and `common.wire` do not.
"""

from common.link.budget import FrameBudget, FrameBudgetConfig, FrameDecision
from common.link.clock_sync import ClockOffsetEstimator
from common.link.drone import CommandOutcome, DroneLink, DroneLinkConfig, ReceivedCommand
from common.link.ground import DroneEndpoint, GroundLink, GroundLinkConfig
from common.link.liveness import LinkEvent
from common.link.security import CurveClient, CurveServer, Insecure, SecurityConfig
from common.link.stats import LinkStats

__all__ = [
    "ClockOffsetEstimator",
    "CommandOutcome",
    "CurveClient",
    "CurveServer",
    "DroneEndpoint",
    "DroneLink",
    "DroneLinkConfig",
    "FrameBudget",
    "FrameBudgetConfig",
    "FrameDecision",
    "GroundLink",
    "GroundLinkConfig",
    "Insecure",
    "LinkEvent",
    "LinkStats",
    "ReceivedCommand",
    "SecurityConfig",
]
