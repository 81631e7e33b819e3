"""Tiny episode records and suites that fly in a few seconds (the runner, resume, figures, spawn and
Ray tests fly them)."""

from __future__ import annotations

from episodes.preflight import expectation_for
from episodes.records import DroneStart, EpisodeRecord, SceneObject
from episodes.suites import Suite, SuiteEntry


def short_record(episode_id: str, start_x_m: float = -2.0, target_x_m: float = 7.0) -> EpisodeRecord:
    """An approach of ~9 m on the residential street (a few seconds of flight)."""
    return purple_car_approach(
        episode_id,
        (start_x_m, -1.0, 0.0, 0.0),
        (target_x_m, -1.0, 0.0, 10.0),
        [
            SceneObject("ep_same_colour", "person", (8.0, 5.2, 0.0, 0.0), colour="purple"),
            SceneObject("ep_same_class", "car", (4.0, 1.6, 0.0, 180.0), colour="orange"),
        ],
    )


def purple_car_approach(
    episode_id: str,
    drone: tuple[float, float, float, float],
    target: tuple[float, float, float, float],
    distractors: list[SceneObject],
) -> EpisodeRecord:
    """Drone1 at `drone` to the purple car at `target` on the residential street (x, y, z, yaw)."""
    return EpisodeRecord(
        id=episode_id,
        scene="residential",
        task_type="approach",
        instruction="go to the purple car",
        environment="outdoor",
        delta_m=5.0,
        t_max_s=60.0,
        drones=[DroneStart("Drone1", drone)],
        targets=[SceneObject("ep_target", "car", target, colour="purple")],
        distractors=distractors,
    )


def tiny_suite(n: int) -> Suite:
    records = [short_record(f"tiny-{i}", start_x_m=-2.0 - i) for i in range(1, n + 1)]
    return Suite("tiny", [SuiteEntry(r, expectation_for(r)) for r in records])
