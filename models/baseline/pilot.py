"""The baseline vision pilot: no model, no ground truth, the same actions as a model pilot.

Each step: read the target from the instruction, find it with models.baseline.detector, and answer
- `go` to a point on it with the pinhole depth estimate, while it is farther than the arrival radius;
- `finished` when it is within the radius (by the depth estimate), large and low in the frame;
- `rotate` when it is not in view: toward where it was last seen (from the history's last `go`),
  else on in the direction of the previous search turns (right by default).
It keeps no state between calls beyond the history it is given, so it works the same behind
serve-pilot, where each HTTP request carries the history as text.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from common.actions import DEPTH_MAX_M, Action, Finished, Go, Plan, Rotate
from common.camera import CameraProfile
from common.errors import ConfigError
from common.pose import wrap_deg
from models.baseline.classes import OBJECT_CLASSES
from models.baseline.detector import MIN_DEPTH_M, Detection, Detector
from models.baseline.instruction import TargetSpec, parse_instruction
from models.parser import reply_object
from models.pilot import Decision, Observation

logger = logging.getLogger(__name__)

SEARCH_TURN_DEG = 60.0  # < the 90° field of view, so consecutive views overlap
REACQUIRE_TURN_DEG = 35.0
HINT_MATCH_DEG = 15.0  # a candidate this close in bearing to an instruction's direction hint is the one meant
ARRIVAL_MARGIN = 0.8  # declare at 80% of δ: the depth is to the near face, δ to the centre
MIN_ARRIVAL_AREA = 0.05  # share of the frame (002 App. C's arrival rule)
LOW_IN_FRAME = 2.0 / 3.0  # box bottom below this share of the height (002 App. C)
DEFAULT_DELTA_M = 5.0
CLOSE_DEPTH_SHARE = 0.4  # nearest believable depth as a share of δ (when below the detector's floor)


class BaselinePilot:
    name = "baseline"

    def __init__(
        self,
        camera: CameraProfile | None = None,
        delta_m: float = DEFAULT_DELTA_M,
        point_order: str = "xy",
        search_turn_deg: float = SEARCH_TURN_DEG,
    ) -> None:
        if delta_m <= 0:
            raise ConfigError(f"baseline pilot: delta_m={delta_m} must be > 0")
        self.detector = Detector(camera)
        self.delta_m = delta_m
        self.point_order = point_order
        self.search_turn_deg = search_turn_deg
        self.last_detections: list[Detection] = []

    def identity(self) -> None:
        """No prompts: nothing to identify beyond the name."""
        return None

    def canonical_focal_px(self, camera: CameraProfile) -> None:
        """Depths from the detector are metric."""
        return None

    def decide(self, observation: Observation) -> Decision:
        try:
            target = parse_instruction(observation.instruction)
        except ConfigError as exc:
            # No target it can read: search in place rather than guess (and say why).
            logger.warning("%s", exc)
            return self._reply(Rotate(angle_deg=self.search_turn_deg), observation, None, str(exc))
        if observation.camera is not None:
            self.detector.camera = observation.camera
        self.detector.camera_attitude = observation.camera_attitude
        image = observation.image
        height, width = image.shape[:2]
        delta_m = observation.delta_m or self.delta_m
        # With a small δ (indoors, 2.5 m) the controller's stop band (1 m) lets the drone come closer
        # than the outdoor floor of 1.5 m: keep seeing the target there instead of losing it.
        self.detector.min_depth_m = min(MIN_DEPTH_M, CLOSE_DEPTH_SHARE * delta_m)
        detections = self.detector.detect(image, target)
        self.last_detections = detections
        action: Action
        hint_deg = remaining_hint_deg(target, observation.history)
        hint_turn_deg: float | None = None
        if hint_deg is None:
            chosen = self._choose(detections, observation, width)
        else:
            chosen, hint_turn_deg = self._choose_hinted(detections, observation, hint_deg, width, height)
        if hint_turn_deg is not None:
            action = Rotate(angle_deg=hint_turn_deg)
        elif chosen is None:
            action = Rotate(angle_deg=self._search_turn(observation))
        elif self._arrived(chosen, width, height, delta_m, target) and not isinstance(
            _last(observation), Finished
        ):
            action = Finished()
        else:
            # Farther than δ, or just declared (a declaration ends nothing: if it was early, the next
            # one, a little closer, may qualify; the controller's stop band keeps the drone off it).
            x = min(1000, max(0, round(chosen.point_px[0] / width * 1000)))
            y = min(1000, max(0, round(chosen.point_px[1] / height * 1000)))
            action = Go(point=(x, y), depth_m=round(min(max(chosen.depth_m, 0.1), DEPTH_MAX_M), 1))
        return self._reply(action, observation, chosen, None, target)

    def close(self) -> None:
        pass

    # -- choices --------------------------------------------------------------------------------
    def _choose_hinted(
        self, detections: list[Detection], observation: Observation, hint_deg: float, width: int, height: int
    ) -> tuple[Detection | None, float | None]:
        """The candidate in the direction the instruction names, or a turn toward that direction.

        A commander that tells look-alikes apart by where they are ("the red sign about 40 degrees to
        your right") is followed until the first `go`; after it, the usual continuity rule holds.
        """
        camera = self.detector._camera_for(width, height)

        def miss_deg(det: Detection) -> float:
            return abs(math.degrees(math.atan2(det.point_px[0] - camera.cx_px, camera.fx_px)) - hint_deg)

        near = [d for d in detections if miss_deg(d) <= HINT_MATCH_DEG]
        if near:
            return min(near, key=miss_deg), None
        if abs(hint_deg) > camera.hfov_deg / 2.0 - HINT_MATCH_DEG / 2.0:
            return None, max(-90.0, min(90.0, hint_deg))  # out of view: face it first
        # In view but nothing there (hidden, or too small yet): take what is seen rather than stall.
        return self._choose(detections, observation, width), None

    def _choose(self, detections: list[Detection], observation: Observation, width: int) -> Detection | None:
        if not detections:
            return None
        last = _last_go(observation.history)
        if last is None or len(detections) == 1:
            return detections[0]
        # Several candidates: stay with the one near where the last go pointed (after its turn,
        # the target sits near the centre if the turn happened, near the old point otherwise).
        best_score = detections[0].score

        def closeness(det: Detection) -> float:
            x = det.point_px[0] / width * 1000
            return min(abs(x - 500), abs(x - last.point[0]))

        plausible = [d for d in detections if d.score >= 0.5 * best_score]
        return min(plausible, key=closeness)

    def _arrived(self, det: Detection, width: int, height: int, delta_m: float, target: TargetSpec) -> bool:
        arrive_m = ARRIVAL_MARGIN * delta_m
        # Large enough: 5% of the frame, or so wide that even the class's widest view of it would be
        # within the arrival distance (small classes such as a person's torso never fill 5% at the
        # indoor δ of 2.5 m, yet their width bounds their distance just as well).
        camera = self.detector._camera_for(width, height)
        widest_m = OBJECT_CLASSES[target.object_class].extent_m[1]
        large = (
            det.area_px >= MIN_ARRIVAL_AREA * width * height
            or det.cut_bottom
            or det.cut_top
            or (not (det.cut_left or det.cut_right) and camera.fx_px * widest_m / det.w_px <= arrive_m)
        )
        # Low in the frame: a ground-standing target seen from above sinks toward the bottom as the
        # drone closes in. A class that hangs or flies (bottom_m None: a sign board at flight height)
        # stays mid-frame however close the drone gets, so for it that cue says nothing.
        grounded = OBJECT_CLASSES[target.object_class].bottom_m is not None
        low = det.bottom_px >= LOW_IN_FRAME * height or not grounded
        return det.depth_m <= arrive_m and large and low

    def _search_turn(self, observation: Observation) -> float:
        history = list(observation.history)
        last_go_index = max((i for i, a in enumerate(history) if isinstance(a, Go)), default=-1)
        if last_go_index >= 0:
            turns_since = [a for a in history[last_go_index + 1 :] if isinstance(a, Rotate)]
            go = history[last_go_index]
            assert isinstance(go, Go)
            if not turns_since:
                # Just lost it: turn toward the side it was last seen on.
                side = 1.0 if go.point[0] >= 500 else -1.0
                return side * REACQUIRE_TURN_DEG
            return math.copysign(self.search_turn_deg, turns_since[-1].angle_deg)
        rotates = [a for a in history if isinstance(a, Rotate)]
        if rotates:
            return math.copysign(self.search_turn_deg, rotates[-1].angle_deg)
        return self.search_turn_deg

    # -- reply text -----------------------------------------------------------------------------
    def _reply(
        self,
        action: Action,
        observation: Observation,
        chosen: Detection | None,
        error: str | None,
        target: TargetSpec | None = None,
    ) -> Decision:
        if observation.plan_step:
            action = _with_plan(action, chosen, observation, target)
        raw = json.dumps(reply_object(action, self.point_order))
        extra: dict[str, Any] = {"candidates": len(self.last_detections)}
        if chosen is not None:
            extra["bbox_px"] = [chosen.x_px, chosen.y_px, chosen.w_px, chosen.h_px]
            extra["depth_m"] = chosen.depth_m
        return Decision(action=action, raw=raw, error=error, extra=extra)


def remaining_hint_deg(target: TargetSpec, history: Any) -> float | None:
    """The instruction's direction hint still to be followed, relative to the current heading.

    The hint is relative to the heading the instruction was given at, so turns made toward it since
    are taken off. It is spent once a `go` was executed, or once the pilot turned any other way (it
    faced the hinted direction, found nothing there, and searches on its own).
    """
    if target.direction_deg is None:
        return None
    remaining_deg = wrap_deg(target.direction_deg)
    for action in history:
        if isinstance(action, Go):
            return None
        if isinstance(action, Rotate):
            toward = (
                action.angle_deg * remaining_deg > 0 and abs(action.angle_deg) <= abs(remaining_deg) + 1.0
            )
            if not toward:
                return None
            remaining_deg -= action.angle_deg
    return remaining_deg


def _last(observation: Observation) -> Action | None:
    return observation.history[-1] if observation.history else None


def _last_go(history: Any) -> Go | None:
    for action in reversed(list(history)):
        if isinstance(action, Go):
            return action
    return None


def _with_plan(
    action: Action, det: Detection | None, observation: Observation, target: TargetSpec | None
) -> Action:
    import msgspec

    name = target.object_class if target else "target"
    if target and target.colour:
        name = f"{target.colour} {name}"
    depths = [a.depth_m for a in observation.history if isinstance(a, Go)]
    if len(depths) >= 2:
        closing = (
            "closing" if depths[-1] < depths[-2] else ("holding" if depths[-1] == depths[-2] else "receding")
        )
    else:
        closing = "unknown"
    if det is None:
        plan = Plan("no", "uncertain", closing, f"no {name} in view", "rotate to search")  # type: ignore[arg-type]
    else:
        in_view = "partly" if det.cut else "yes"
        plan = Plan(
            in_view,  # type: ignore[arg-type]
            "confirmed",
            closing,  # type: ignore[arg-type]
            f"{name} at pixels {det.x_px},{det.y_px} size {det.w_px}x{det.h_px}, about {det.depth_m:.1f} m",
            "declare arrival" if isinstance(action, Finished) else "fly toward it",
        )
    return msgspec.structs.replace(action, plan=plan)
