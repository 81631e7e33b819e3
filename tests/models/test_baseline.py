"""Baseline pilot logic on drawn frames: instruction reading, search turns, re-acquisition,
arrival, plan fields and the reply text. (Accuracy on simulator frames: tests/models/test_baseline_sim.py.)"""

from __future__ import annotations

import json

import pytest

from common.actions import Finished, Go, Rotate, Think
from common.camera import BUILTIN_CAMERAS
from common.errors import ConfigError
from models.baseline import BaselinePilot
from models.baseline.detector import Detector
from models.baseline.instruction import TargetSpec, parse_instruction
from models.parser import parse_action, reply_object
from models.pilot import Observation
from tests.support.pilots import draw_box, scene

RED = (20, 20, 204)
BLUE = (217, 64, 26)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("go to the red car", TargetSpec("car", "red")),
        ("Fly to the blue SUV.", TargetSpec("suv", "blue")),
        ("find the grey van", TargetSpec("van", "gray")),
        ("follow the person in red", TargetSpec("person", None, follow=True)),
        ("Follow the orange pedestrian", TargetSpec("person", "orange", follow=True)),
        ("track the yellow cyclist", TargetSpec("cyclist", "yellow", follow=True)),
        ("approach the traffic cone", TargetSpec("cone", None)),
        ("search for the purple drone", TargetSpec("drone", "purple")),
        ("go to the cars", TargetSpec("car", None)),
    ],
)
def test_instruction_reading(text: str, expected: TargetSpec) -> None:
    assert parse_instruction(text) == expected


def test_unknown_target_is_a_config_error_and_the_pilot_searches() -> None:
    with pytest.raises(ConfigError, match="known classes"):
        parse_instruction("go to the lighthouse")
    decision = BaselinePilot().decide(Observation(scene(), "go to the lighthouse"))
    assert isinstance(decision.action, Rotate) and "lighthouse" in (decision.error or "")


def car_at_8m(image=None, colour=RED, x=400):
    # 640x360 at 90°: f = 320 px; a 1.2 m tall, 4.4 m long car broadside 8 m away, camera 2 m up,
    # so its 1.8 m deep top shows too, about 0.2 (tan of the view angle) x 1.8 m.
    image = scene() if image is None else image
    h = round(320 * (1.2 + 0.2 * 1.8) / 8)
    w = round(320 * 4.4 / 8)
    bottom = 180 + round(320 * (2.0 - 0.3) / 8)
    draw_box(image, x, bottom - h, w, h, colour)
    return image


def test_go_points_at_the_target_with_a_pinhole_depth() -> None:
    decision = BaselinePilot().decide(Observation(car_at_8m(), "go to the red car"))
    action = decision.action
    assert isinstance(action, Go)
    x, _ = action.point
    assert 400 / 640 * 1000 <= x <= (400 + 176) / 640 * 1000
    assert 7.0 <= action.depth_m <= 9.5
    assert parse_action(decision.raw) == action  # the raw text is what a model would have written


def test_wrong_colour_and_wrong_class_are_not_taken() -> None:
    pilot = BaselinePilot()
    assert isinstance(pilot.decide(Observation(car_at_8m(colour=BLUE), "go to the red car")).action, Rotate)
    person = scene()
    draw_box(person, 300, 200, 18, 24, RED)  # a red shirt 0.46 x 0.6 m, 8 m away
    assert isinstance(pilot.decide(Observation(person, "go to the red car")).action, Rotate)
    assert isinstance(pilot.decide(Observation(person, "follow the red person")).action, Go)


def test_search_turns_keep_their_direction_and_reacquire_toward_the_last_sighting() -> None:
    pilot = BaselinePilot()
    empty = scene()
    assert pilot.decide(Observation(empty, "find the red car")).action == Rotate(angle_deg=60.0)
    left = (Rotate(angle_deg=-60.0), Rotate(angle_deg=-60.0))
    assert pilot.decide(Observation(empty, "find the red car", left)).action == Rotate(angle_deg=-60.0)
    # Lost right after a go to the left of the frame: turn left, a smaller step.
    lost_left = (Go(point=(150, 600), depth_m=9.0),)
    assert pilot.decide(Observation(empty, "follow the red car", lost_left)).action == Rotate(angle_deg=-35.0)
    lost_right = (Go(point=(800, 600), depth_m=9.0),)
    assert pilot.decide(Observation(empty, "follow the red car", lost_right)).action == Rotate(angle_deg=35.0)
    # Still lost after that turn: keep turning the same way.
    still = (Go(point=(800, 600), depth_m=9.0), Rotate(angle_deg=35.0))
    assert pilot.decide(Observation(empty, "follow the red car", still)).action == Rotate(angle_deg=60.0)


def test_prefers_the_candidate_where_the_last_go_pointed() -> None:
    image = car_at_8m(x=40)
    car_at_8m(image, x=420)
    pilot = BaselinePilot()
    history = (Go(point=(780, 600), depth_m=9.0),)
    action = pilot.decide(Observation(image, "follow the red car", history)).action
    assert isinstance(action, Go) and action.point[0] > 600


def close_car():
    # The car broadside 3 m away, camera 2 m up: large, and cut by the bottom of the frame.
    image = scene()
    draw_box(image, 85, 190, round(320 * 4.4 / 3), 170, RED)
    return image


def test_finished_when_close_large_and_low_then_creeps_closer() -> None:
    pilot = BaselinePilot(delta_m=5.0)
    assert isinstance(pilot.decide(Observation(close_car(), "go to the red car")).action, Finished)
    # Just declared: a declaration ends nothing, so it closes in a little and may declare again.
    after = pilot.decide(Observation(close_car(), "go to the red car", (Finished(),))).action
    assert isinstance(after, Go)
    # With a smaller δ (indoors) the same view is not an arrival.
    assert isinstance(
        BaselinePilot(delta_m=2.5).decide(Observation(close_car(), "go to the red car")).action, Go
    )


def test_after_think_the_reply_carries_the_plan_fields() -> None:
    decision = BaselinePilot().decide(Observation(car_at_8m(), "go to the red car", (Think(),)))
    assert isinstance(decision.action, Go) and decision.action.plan is not None
    reply = json.loads(decision.raw)
    assert list(reply)[:5] == [
        "target_in_view",
        "target_match",
        "closing_in",
        "current_frame",
        "action_planning",
    ]
    assert parse_action(decision.raw, plan=True) == decision.action
    lost = BaselinePilot().decide(Observation(scene(), "go to the red car", (Think(),)))
    assert (
        lost.action is not None and lost.action.plan is not None and lost.action.plan.target_in_view == "no"
    )


def test_yx_point_order_and_the_strict_reply_form() -> None:
    go = Go(point=(700, 550), depth_m=8.5)
    assert reply_object(go, "yx") == {"action": "go", "point": [550, 700], "depth_m": 8.5, "angle_deg": None}
    assert reply_object(Rotate(angle_deg=-30.0)) == {
        "action": "rotate",
        "point": None,
        "depth_m": None,
        "angle_deg": -30.0,
    }
    pilot = BaselinePilot(point_order="yx")
    decision = pilot.decide(Observation(car_at_8m(), "go to the red car"))
    assert parse_action(decision.raw, point_order="yx") == decision.action


def test_camera_profile_scales_the_depth() -> None:
    # The same pixels through a narrower lens (larger focal length) mean a farther object.
    wide = BaselinePilot().decide(Observation(car_at_8m(), "go to the red car")).action
    tello = (
        BaselinePilot(BUILTIN_CAMERAS["tello"]).decide(Observation(car_at_8m(), "go to the red car")).action
    )
    assert isinstance(wide, Go) and isinstance(tello, Go) and tello.depth_m > wide.depth_m * 1.2


def van_behind_car():
    # Camera 2 m up, f = 320 px. A van quartering 14 m away (2.6 m wide in view, 1.9 m tall plus a
    # little roof), and in front of it, overlapping its right edge, a car broadside 9 m away: one
    # merged red region, whose ground line steps where the car starts.
    image = scene()
    draw_box(image, 284, 169, 60, 50, RED)  # van: x 284-343, bottom row 218
    draw_box(image, 340, 190, 156, 51, RED)  # car: x 340-495, bottom row 240
    return image


def test_a_van_merged_with_a_same_colour_car_in_front_is_split_by_ground_contact() -> None:
    # One merged region; split where its ground line steps, each part is its own candidate with
    # its own depth (the van's columns above the car's bonnet stay out of the car's box).
    detections = Detector().detect(van_behind_car(), TargetSpec("van", "red"))
    boxes = sorted((d.x_px, d.y_px, d.w_px, d.h_px) for d in detections)
    assert len(boxes) == 2, boxes
    (van_x, van_y, van_w, van_h), (car_x, car_y, car_w, car_h) = boxes
    # Within 2 px (the closing and opening move edges by a pixel).
    van_edges = (van_x, van_y, van_x + van_w, van_y + van_h)
    car_edges = (car_x, car_y, car_x + car_w, car_y + car_h)
    assert max(abs(a - b) for a, b in zip(van_edges, (284, 169, 340, 219), strict=True)) <= 2, van_edges
    assert max(abs(a - b) for a, b in zip(car_edges, (340, 190, 496, 241), strict=True)) <= 2, car_edges
    by_x = sorted(detections, key=lambda d: d.x_px)
    assert by_x[0].depth_m > by_x[1].depth_m  # the van is farther
    # A blob of one vehicle has no such step: it stays whole.
    single = scene()
    draw_box(single, 284, 169, 60, 50, RED)
    assert len(Detector().detect(single, TargetSpec("van", "red"))) == 1


def person_torso(depth_m: float):
    # Indoors: camera 1.5 m up, f = 320 px; a red torso 0.46 m wide, 0.6 m tall, from 0.85 m up.
    image = scene()
    w, h = round(320 * 0.46 / depth_m), round(320 * 0.6 / depth_m)
    bottom = 180 + round(320 * (1.5 - 0.85) / depth_m)
    draw_box(image, 320 - w // 2, bottom - h, w, h, RED)
    return image


def test_indoor_arrival_at_a_person_smaller_than_5_percent_of_the_frame() -> None:
    # At 1.7 m the torso fills under 4% of the frame, yet it is within 0.8 δ = 2.0 m: arrived.
    pilot = BaselinePilot(delta_m=2.5)
    near = pilot.decide(Observation(person_torso(1.7), "go to the red person", delta_m=2.5)).action
    assert isinstance(near, Finished)
    # Closer than the outdoor floor of 1.5 m (the indoor stop band is 1 m), it is still seen.
    assert isinstance(
        pilot.decide(
            Observation(person_torso(1.2), "go to the red person", (Finished(),), delta_m=2.5)
        ).action,
        Go,
    )
    # At 3.5 m it is not an arrival yet.
    assert isinstance(
        pilot.decide(Observation(person_torso(3.5), "go to the red person", delta_m=2.5)).action, Go
    )


@pytest.mark.parametrize(
    ("text", "direction_deg"),
    [
        ("go to the red car", None),
        ("go to the red car (the one about 40 degrees to your right, about 12 m away)", 40.0),
        ("find the red sign; search about 90 degrees to your left", -90.0),
        ("go to the red car, 25 deg to the left", -25.0),
        ("go to the red car straight ahead", 0.0),
        ("find the red car; search behind you", 180.0),
    ],
)
def test_a_direction_hint_is_read_relative_to_the_heading(text: str, direction_deg: float | None) -> None:
    assert parse_instruction(text).direction_deg == direction_deg
    assert parse_instruction(text).object_class in ("car", "sign")


def test_a_direction_hint_picks_the_look_alike_it_names_until_the_first_go() -> None:
    # Two red cars 8 m away, one each side (about 31 degrees left and right of the 90-degree view's axis).
    image = car_at_8m(x=40)
    car_at_8m(image, x=420)
    pilot = BaselinePilot()
    right = pilot.decide(
        Observation(image, "go to the red car (the one about 30 degrees to your right)")
    ).action
    left = pilot.decide(
        Observation(image, "go to the red car (the one about 30 degrees to your left)")
    ).action
    assert isinstance(right, Go) and right.point[0] > 600
    assert isinstance(left, Go) and left.point[0] < 400
    # Out of view: face it first; after that turn the rest of the hint is what remains.
    far = "go to the red car (the one about 80 degrees to your left)"
    assert pilot.decide(Observation(image, far)).action == Rotate(angle_deg=-80.0)
    turned = pilot.decide(
        Observation(
            image, "go to the red car (the one about 90 degrees to your right)", (Rotate(angle_deg=60.0),)
        )
    ).action
    assert isinstance(turned, Go) and turned.point[0] > 600
    # After the first go the hint is spent: continuity with the last go decides, as without a hint.
    history = (Go(point=(200, 600), depth_m=9.0),)
    after = pilot.decide(
        Observation(image, "go to the red car (the one about 30 degrees to your right)", history)
    )
    assert isinstance(after.action, Go) and after.action.point[0] < 400


def test_a_hint_is_spent_once_faced_so_the_search_goes_on_its_own_way() -> None:
    pilot = BaselinePilot()
    empty = scene()
    behind = "find the red car; search behind you"
    assert pilot.decide(Observation(empty, behind)).action == Rotate(angle_deg=90.0)
    turned = (Rotate(angle_deg=90.0),)
    assert pilot.decide(Observation(empty, behind, turned)).action == Rotate(angle_deg=90.0)
    # Facing it now and nothing there: an ordinary search turn, which spends the hint for good.
    faced = (*turned, Rotate(angle_deg=90.0))
    assert pilot.decide(Observation(empty, behind, faced)).action == Rotate(angle_deg=60.0)
    searching = (*faced, Rotate(angle_deg=60.0))
    assert pilot.decide(Observation(empty, behind, searching)).action == Rotate(angle_deg=60.0)


def sign_board(distance_m: float):
    # A 1.0 x 0.35 m red board at the camera's height, straight ahead (640x360 at 90°: f = 320 px).
    image = scene()
    w, h = round(320 * 1.0 / distance_m), round(320 * 0.35 / distance_m)
    draw_box(image, 320 - w // 2, 180 - h // 2, w, h, RED)
    return image


def test_a_sign_at_flight_height_is_arrived_at_mid_frame() -> None:
    """A board hanging at the drone's height never sinks low in the frame: 'low' is a ground-object cue."""
    pilot = BaselinePilot(delta_m=5.0)
    assert isinstance(pilot.decide(Observation(sign_board(3.5), "go to the red sign")).action, Finished)
    assert isinstance(pilot.decide(Observation(sign_board(9.0), "go to the red sign")).action, Go)
