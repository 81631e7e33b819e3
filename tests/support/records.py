"""A valid single-drone episode record as the JSON a suite file holds."""

from __future__ import annotations

RECORD = {
    "id": "town-approach-007",
    "scene": "town",
    "task_type": "approach",
    "instruction": "Fly to the red car parked by the fountain.",
    "environment": "outdoor",
    "delta_m": 5.0,
    "t_max_s": 300.0,
    "drones": [{"name": "Drone1", "start_pose": [0.0, 0.0, -3.0, 0.0]}],
    "targets": [
        {
            "id": "car1",
            "class": "car",
            "colour": "red",
            "shape": "sedan",
            "size_m": [4.5, 1.8, 1.5],
            "pose": [16.0, 2.0, 0.0, 90.0],
        },
    ],
    "distractors": [{"id": "car2", "class": "car", "colour": "blue", "pose": [12.0, -6.0, 0.0, 0.0]}],
    "structure": "single",
    "camera": "outdoor",
    "flight_profile": "outdoor",
    "seed": 7,
}
