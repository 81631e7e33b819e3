"""The onboard runtime's settings (RuntimeConfig): rates, loop mode, deadlines, profiles, limits.

Every field is range-checked when the config is built (onboard.config_limits), so a bad value from a
command line or a file stops the run before anything connects.
"""

from __future__ import annotations

import msgspec

from onboard.config_limits import check_limits
from onboard.decision import DEFAULT_LATENCY_GOAL, LATENCY_GOALS, LatencyGoal
from onboard.recorder import RecorderConfig
from onboard.safety_config import SafetyConfig

DECLARATION_POLICIES = ("hold", "land", "continue")  # on_declaration without ground truth


class RuntimeConfig(msgspec.Struct, forbid_unknown_fields=True):
    drone: str = "Drone1"
    instruction: str = ""
    rate_hz: float = 20.0
    # SCHED_FIFO priority of the actuation thread (0: normal scheduling). Best effort: without root
    # or CAP_SYS_NICE it is logged and recorded, and the loop runs normally (onboard.realtime).
    actuation_rt_priority: int = 10
    # Nice value of the runtime's own threads (decision loop, telemetry poller, logging) while flying;
    # they hold the interpreter lock the actuation tick needs, so they must not be starved by other
    # work on the board. 0 leaves them as they are. Best effort, like the priority above.
    nice: int = -5
    # "tolerant": the drone keeps executing the current plan while the model thinks; each new plan
    # is re-expressed from the pose at the time it arrives and replaces what is left of the current
    # one; replies older than their deadline are discarded and counted; misses hold. "naive":
    # capture -> wait for the model -> execute the plan fully -> repeat (for comparison).
    loop: str = "tolerant"
    action_deadline_s: float = 3.0  # an action reply older than this (since capture) is discarded
    # A frame whose source stamp (Frame.capture_time_s: the simulator's or camera's own clock) has not
    # advanced while this runtime's clock advanced this long is stale: never sent to the pilot, and
    # the video failsafe (safety.frame_stale_hold_s) holds (onboard.vehicles.video.FrameFreshness).
    max_frame_age_s: float = 1.0
    plan_deadline_s: float = 12.0  # plan-schema replies (after a think) get longer
    # A ground-station command sent longer ago than command_max_age_s + command_clock_skew_s (on this
    # drone's clock, as the station estimates it from heartbeats), or stamped more than the skew in
    # the future, is refused unrun (common.link.admission; each retry is stamped afresh).
    command_max_age_s: float = 2.0
    command_clock_skew_s: float = 0.5
    compensate_latency: bool = True  # tolerant loop: re-express late plans from the current pose
    # What a late `go` flies toward from the current pose: "in-view" (the default: the point the
    # model aimed at, fixed in the world at capture, cap and bands applied again, the move cut where
    # that point would leave the image, and a point far beyond the target's track held rather than
    # flown; onboard.latency_compensation), "point" (that point alone; the default before issue 25)
    # or "step" (the end of the capped step planned at capture; kept for comparison).
    latency_goal: LatencyGoal = DEFAULT_LATENCY_GOAL
    flight_profile: str = "outdoor"
    camera: str | None = None  # camera profile for back-projection; default: the flight profile's
    canonical_focal_px: float | None = None  # from the model profile's depth convention
    takeoff_altitude_m: float | None = None  # None: the flight profile's (tello 1.5 m), else 3 m
    delta_m: float = 5.0  # arrival radius: the verdict's δ, and the baseline pilot's arrival rule
    think: bool = True
    # Decisions start at most this often (0: back to back, as fast as the pilot answers). A fast
    # pilot (the baseline) needs no 20 Hz of decisions, and lock-step runs render a frame for each.
    min_decision_period_s: float = 0.0
    t_max_s: float = 300.0
    max_steps: int | None = None
    stop_on_declaration: bool = True  # stop at the first declaration within δ and visible (needs truth)
    # A declaration on a run with no ground truth (real flight, the PX4/ArduPilot/Tello emulators, a
    # simulator flown without --truth-target) is the operator's to judge (docs/safety.md#real-flight):
    # "hold" (the default) holds the drone until the ground station accepts (the run ends) or rejects
    # (it flies on), and ends the run, landing, after judgement_wait_s without a verdict; "land" lands
    # at once; "continue" logs it and flies on. Time held for a verdict does not count toward t_max_s.
    on_declaration: str = "hold"
    judgement_wait_s: float = 60.0
    # Remote mode (one-context fleet, docs/protocol.md#several-drones): the ground station's model decides for
    # this drone; the decision loop only captures and publishes frames (every min_decision_period_s) and
    # executes the RemoteActions that come back. The local pilot is never called.
    remote: bool = False
    land_at_end: bool = True
    # Real time: after the run ends with a landing, how long the process waits to see the vehicle
    # on the ground (landed or disarmed) before it exits; the `touchdown` event says which came first.
    touchdown_wait_s: float = 15.0
    prearm_check: bool = True
    save_frames: bool = True
    safety: SafetyConfig = msgspec.field(default_factory=SafetyConfig)
    recorder: RecorderConfig = msgspec.field(default_factory=RecorderConfig)

    def __post_init__(self) -> None:
        check_limits(self)  # onboard.config_limits: every number's valid range
        if self.loop not in ("tolerant", "naive"):
            raise ValueError(f"loop={self.loop!r} must be 'tolerant' or 'naive'")
        if self.rate_hz <= 0:
            raise ValueError(f"rate_hz={self.rate_hz} must be > 0")
        if self.on_declaration not in DECLARATION_POLICIES:
            raise ValueError(f"on_declaration={self.on_declaration!r} must be one of {DECLARATION_POLICIES}")
        if self.latency_goal not in LATENCY_GOALS:
            raise ValueError(f"latency_goal={self.latency_goal!r} must be one of {LATENCY_GOALS}")
        self.latency_goal = LatencyGoal(self.latency_goal)  # built in code from the config's string
        if not -20 <= self.nice <= 19:
            raise ValueError(f"nice={self.nice} must be in -20..19")
        if not 0 <= self.actuation_rt_priority <= 99:
            raise ValueError(f"actuation_rt_priority={self.actuation_rt_priority} must be 0 (off) or 1..99")
