"""The drone ⇄ ground-station link over ZeroMQ (docs/architecture.md#the-link).

- `DroneLink` (common.link.drone): binds; publishes telemetry, frames, steps, declarations and
  heartbeats; receives acked commands exactly once; answers heartbeats.
- `GroundLink` (common.link.ground): connects to N drones; subscribes; `send_command` with ack,
  retry and backoff; link-lost / link-restored events; clock offset per drone.

Each link owns one I/O thread that owns all its ZeroMQ sockets (they are not thread-safe); the
public methods are thread-safe and hand work to that thread through a queue. Callbacks run on the
I/O thread and must return quickly (hand the work to your own queue or a Qt signal).

Importing this package imports pyzmq; `common.messages` and `common.wire` do not.

Drone (onboard)::

    security = SecurityConfig("curve", "keys/drone1.key_secret", ["keys/gs1.key"]).for_drone()
    link = DroneLink(DroneLinkConfig("drone1", command_endpoint="tcp://0.0.0.0:5557", ...), security,
                     handler=lambda cmd: (flight_queue.put(cmd), CommandOutcome(True))[1],
                     on_link=lambda event: flight_queue.put(event))
    link.start()
    link.publish_telemetry(TelemetryMessage(...)); link.publish_frame(image_bgr, capture_time_s, pose)

Ground station::

    ground = GroundLink(GroundLinkConfig(), CurveClient.from_file("keys/gs1.key_secret"),
                        on_telemetry=..., on_frame=..., on_link=...)
    ground.start()
    ground.add_drone(DroneEndpoint("drone1", "tcp://10.0.0.5:5555", "tcp://10.0.0.5:5556",
                                   "tcp://10.0.0.5:5557", server_public_key=drone1_public_key))
    ack = ground.send_command("drone1", Instruction("fly to the red car"))

Exactly-once holds across reconnects and command-socket restarts (what the drone remembers of each
session lives in its DroneLink). Every command is bound to one drone run (its session_id, learned by
the ground link from the drone's own messages) and stamped on the drone's clock, and the drone runs
it only when fresh, for this run, and above the last seq run in its session (common.link.admission):
a command retried across a drone *process* restart is refused as `unbound`, never run twice.
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
