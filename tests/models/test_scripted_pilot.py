"""`scripted:FILE` flown in process (onboard, episodes): each line parsed as one drone's action by the
model replies' parser; a bad line is a malformed decision (a hold), the end of the script a backend
failure. (Behind serve-pilot the same file is sent verbatim: tests/models/test_serve_stream.py.)"""

from __future__ import annotations

import numpy as np

from common.actions import Go, Rotate
from models.pilot import FailureKind, Observation, Pilot
from models.serve import make_pilot


def test_a_script_flies_in_process_as_a_pilot(tmp_path) -> None:
    script = tmp_path / "replies.txt"
    script.write_text(
        '# comment\n{"action": "go", "point": [500, 400], "depth_m": 7.5, "angle_deg": null}\n'
        '{"action": "rotate", "angle_deg": 45}\nnot json\n'
    )
    pilot = make_pilot(f"scripted:{script}")
    assert isinstance(pilot, Pilot) and pilot.identity() is None and pilot.canonical_focal_px(None) is None
    observation = Observation(image=np.zeros((36, 64, 3), np.uint8), instruction="go to the red car")
    first = pilot.decide(observation)
    assert isinstance(first.action, Go) and first.action.depth_m == 7.5 and first.failure_kind is None
    assert isinstance(pilot.decide(observation).action, Rotate)
    malformed = pilot.decide(observation)
    assert (
        malformed.action is None
        and malformed.failure_kind == FailureKind.MALFORMED
        and malformed.raw == "not json"
    )
    spent = pilot.decide(observation)
    assert spent.failure_kind == FailureKind.BACKEND and "all 3 replies used" in (spent.error or "")
