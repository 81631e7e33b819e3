"""The rule-based commander's assignment by bearing (pure logic: no processes, no sockets)."""

from __future__ import annotations

import math

import pytest

from common.actions import Finished
from common.pose import Pose
from models.commanders import CommanderInput, DroneView, RuleCommander, bearing_to


@pytest.mark.parametrize(
    ("pose", "point", "bearing", "distance"),
    [
        (Pose(0, 0, -3, 0), (10, 0), 0.0, 10.0),  # north
        (Pose(0, 0, -3, 0), (0, 10), 90.0, 10.0),  # east: clockwise from north (NED yaw)
        (Pose(0, 0, -3, 0), (0, -10), 270.0, 10.0),
        (Pose(5, 5, -3, 45), (0, 0), 225.0, math.hypot(5, 5)),
    ],
)
def test_bearing_to(pose, point, bearing, distance) -> None:
    b, d = bearing_to(pose, *point)
    assert b == pytest.approx(bearing) and d == pytest.approx(distance)


def view(name: str, x: float, y: float, yaw: float = 0.0) -> DroneView:
    return DroneView(name, Pose(x, y, -3.0, yaw), None, None)


def test_two_marked_targets_go_to_distinct_drones_nearest_bearing_first() -> None:
    # Drone1 faces north, Drone2 faces east; one target north of both, one east of both.
    drones = [view("Drone1", 0, 0, 0.0), view("Drone2", 0, 4, 90.0)]
    orders = RuleCommander().plan(CommanderInput("find the red car", drones, [(20, 2), (2, 25)]))
    assert orders.orders is not None and orders.error is None
    d1, d2 = orders.detail["assignments"]
    assert d1["bearing_deg"] == pytest.approx(math.degrees(math.atan2(2, 20)), abs=0.1)
    assert d2["bearing_deg"] == pytest.approx(math.degrees(math.atan2(21, 2)), abs=0.1)
    # directions relative to each drone's heading: a sub-agent never sees its world yaw
    assert orders.orders[0] == "find the red car (the one about 6 degrees to your right, about 20 m away)"
    assert orders.orders[1].startswith("find the red car (the one about 5 degrees to your left")


def test_one_target_one_drone_the_others_search_their_own_sectors() -> None:
    drones = [view("Drone1", 0, 0), view("Drone2", 0, 2), view("Drone3", 0, -2), view("Drone4", -3, 0)]
    orders = RuleCommander().plan(CommanderInput("go to the red car", drones, [(15, 0)]))
    assert orders.orders is not None
    assigned = orders.detail["assignments"]
    assert "bearing_deg" in assigned[0]
    sectors = [a["search_bearing_deg"] for a in assigned[1:]]
    assert sectors == [90.0, 180.0, 270.0]  # distinct directions: the fleet covers the compass
    assert orders.orders[1:] == (
        "go to the red car; search about 90 degrees to your right",
        "go to the red car; search behind you",
        "go to the red car; search about 90 degrees to your left",
    )


def test_no_pose_no_candidates() -> None:
    orders = RuleCommander().plan(
        CommanderInput("go to the red car", [DroneView("Drone1", None, None, None)], [(5, 5)])
    )
    assert orders.orders == ("go to the red car; search straight ahead",)


def test_a_declared_candidate_is_not_given_again() -> None:
    """A sub-agent that declared at a look-alike is sent to another candidate, and nobody goes back."""
    commander = RuleCommander()
    marks = [(20, 0), (0, 20)]
    first = commander.plan(CommanderInput("go to the red car", [view("Drone1", 0, 0, 0.0)], marks))
    assert first.detail["assignments"][0]["bearing_deg"] == pytest.approx(0.0)
    # Drone1 flew there and declared 3 m short of the car, facing it.
    declared = DroneView("Drone1", Pose(17, 0, -3, 0.0), None, Finished())
    second = commander.plan(CommanderInput("go to the red car", [declared], marks))
    assert second.detail["declared_spots"] == [[20.0, 0.0]]  # the assigned candidate, not a guess
    assert second.detail["assignments"][0]["bearing_deg"] == pytest.approx(
        math.degrees(math.atan2(20, -17)), abs=0.1
    )
    assert "degrees to your right" in second.orders[0]
    # Still remembered after more plans, whoever asks: the other candidate goes to whoever is free.
    later = commander.plan(
        CommanderInput("go to the red car", [view("Drone1", 15, 0, 180.0), view("Drone2", 18, 2, 0.0)], marks)
    )
    spots = [a.get("bearing_deg") for a in later.detail["assignments"]]
    assert spots[0] == pytest.approx(math.degrees(math.atan2(20, -15)) % 360, abs=0.1)
    assert spots[1] is None  # nothing left for Drone2 but a search sector


def test_a_declaration_away_from_the_assignment_is_placed_ahead_of_the_drone() -> None:
    commander = RuleCommander()
    commander.plan(CommanderInput("go to the red car", [view("Drone1", 0, 0, 0.0)], [(20, 0)]))
    wandered = DroneView("Drone1", Pose(0, -30, -3, 90.0), None, Finished())  # far from (20, 0)
    orders = commander.plan(CommanderInput("go to the red car", [wandered], [(20, 0)]))
    assert orders.detail["declared_spots"] == [[0.0, -27.0]]
    assert orders.detail["assignments"][0]["bearing_deg"] == pytest.approx(
        math.degrees(math.atan2(30, 20)), abs=0.1
    )


def test_search_sectors_stay_fixed_in_the_world_across_plans() -> None:
    commander = RuleCommander()
    drones = [view("Drone1", 0, 0, 0.0), view("Drone2", 0, 2, 0.0)]
    first = commander.plan(CommanderInput("find the red car", drones))
    assert first.orders == ("find the red car; search straight ahead", "find the red car; search behind you")
    # Drone2 turned round as told: the same sector is now straight ahead of it, not behind it again.
    turned = [view("Drone1", 5, 0, 0.0), view("Drone2", 0, 2, 180.0)]
    again = commander.plan(CommanderInput("find the red car", turned))
    assert again.orders == (
        "find the red car; search straight ahead",
        "find the red car; search straight ahead",
    )


def test_a_drone_keeps_its_candidate_while_it_is_seen() -> None:
    commander = RuleCommander()
    marks = [(20, 0), (20, 8)]
    first = commander.plan(CommanderInput("go to the red car", [view("Drone1", 0, 0, 0.0)], marks))
    assert first.detail["assignments"][0]["bearing_deg"] == pytest.approx(0.0)
    # It has yawed toward the other car meanwhile (nearer in bearing now): still sent to its own.
    again = commander.plan(CommanderInput("go to the red car", [view("Drone1", 2, 0, 25.0)], marks))
    assert again.detail["assignments"][0]["bearing_deg"] == pytest.approx(0.0)


def test_after_declaring_with_nothing_else_seen_the_drone_turns_away() -> None:
    commander = RuleCommander()
    commander.plan(CommanderInput("go to the red car", [view("Drone1", 0, 0, 0.0)], [(20, 0)]))
    declared = DroneView("Drone1", Pose(17, 0, -3, 0.0), None, Finished())
    orders = commander.plan(CommanderInput("go to the red car", [declared], [(20, 0)]))
    assert orders.orders == ("go to the red car; search behind you",)
