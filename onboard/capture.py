"""The decision loop's camera side: a stamped frame, refused when stale; a failed read holds.

One staleness rule for every camera (onboard.vehicles.video.FrameFreshness), on the runtime's clock
(simulated in lock-step); a fresh frame is the video failsafe's heartbeat (docs/safety.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from common.capabilities import FrameAgeCamera
from common.clock import Clock
from common.errors import VehicleError
from common.interfaces import Camera
from common.pose import Frame
from onboard.actuation import Actuator
from onboard.controller import PlanKind, hold_plan
from onboard.decision import DecisionCounters
from onboard.reporter import StepReporter
from onboard.safety import VIDEO, SafetyGovernor
from onboard.setpoints import MotionSchedule
from onboard.vehicles.video import FrameFreshness

log = logging.getLogger(__name__)


@dataclass(eq=False)
class FrameCapture:
    """Reads the camera for the decision loop (or, in remote mode, for the ground station's model)."""

    camera: Camera
    max_frame_age_s: float  # a camera that knows better (a stream's own max age) brings its own
    clock: Clock
    governor: SafetyGovernor
    actuator: Actuator
    counters: DecisionCounters
    reporter: StepReporter

    def __post_init__(self) -> None:
        camera = self.camera
        max_age_s = camera.max_frame_age_s if isinstance(camera, FrameAgeCamera) else self.max_frame_age_s
        self.freshness = FrameFreshness(float(max_age_s))
        self.stale_frames = 0  # frames refused as stale (never sent to the pilot)

    def read(self, capture_clock_s: float) -> Frame:
        """camera.read(), refused (VehicleError) when stale by the one rule (FrameFreshness) on this
        runtime's clock; a fresh frame is the video failsafe's heartbeat."""
        frame = self.camera.read()
        frame.meta["capture_clock_s"] = capture_clock_s  # the camera may stamp on its own clock
        now_s = self.clock.now()
        age_s = self.freshness.age_s(float(frame.capture_time_s), now_s)
        if age_s > self.freshness.max_frame_age_s:
            self.stale_frames += 1
            raise VehicleError(
                f"video stale: the source's stamp ({frame.capture_time_s:.3f}) has not advanced in "
                f"{age_s:.2f} s (max_frame_age_s={self.freshness.max_frame_age_s})"
            )
        self.governor.heard(VIDEO, now_s)
        return frame

    def failed(self, exc: Exception) -> None:
        """No (fresh) frame: hold this step (never keep flying a plan made on an older one), count it,
        say why. The video failsafe holds the drone frame_stale_hold_s after the last fresh frame."""
        self.counters.capture_errors += 1
        self.actuator.set_schedule(MotionSchedule(hold_plan(PlanKind.NO_FRAME), self.clock.now()))
        self.governor.video_stale(self.clock.now())
        self.reporter.event("capture_failed", error=f"{type(exc).__name__}: {exc}")
        log.warning("camera read failed (%s): holding", exc)

    def stream(self) -> Frame:
        """Remote mode: capture a stamped frame and publish it for the ground station's model."""
        capture_clock_s = self.clock.now()
        frame = self.read(capture_clock_s)
        self.reporter.frame(frame)
        return frame
