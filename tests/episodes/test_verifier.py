"""The verifier (docs/verifier.md): Algorithm 1, pooled drones, real-flight judgements, diagnostics,
failure modes, and `dronecats episodes verify` through a subprocess."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from common.actions import Finished, Go, Rotate
from common.errors import RecordError
from episodes.logs import DeclarationLine, EpisodeLogs, StepLine, TraceLine, read_episode, write_lines
from episodes.records import record_from_dict, save_record
from episodes.verifier import FAILURE_MODES, VerifierSettings, aggregate, verify
from tests.support.processes import run_dronecats
from tests.support.records import RECORD

GO = Go((500, 500), 8.0)


def record(task="approach", drones=("Drone1",), delta=5.0, t_max=300.0, environment="outdoor"):
    data = copy.deepcopy(RECORD)
    data.update(task_type=task, delta_m=delta, t_max_s=t_max, environment=environment)
    data["drones"] = [{"name": n, "start_pose": [0, 0, -3, 0]} for n in drones]
    data["structure"] = "single" if len(drones) == 1 else "multi"
    if task in ("track", "search+track"):
        data["targets"][0].update(path=[[16, 2, 0], [100, 2, 0]], speed_m_s=0.3)
    return record_from_dict(data)


def trace(distances, drone="Drone1", dt=0.5, visible=True, t0=0.0):
    """A 2 Hz trace through the given distances (visible: a bool or a list of bools)."""
    flags = visible if isinstance(visible, list) else [visible] * len(distances)
    return [
        TraceLine(t0 + i * dt, drone, distance_m=d, visible=v)
        for i, (d, v) in enumerate(zip(distances, flags, strict=True))
    ]


def steps(times_distances, drone="Drone1", on_target=True, action=GO):
    return [
        StepLine(t, drone, action=action, distance_m=d, visible=True, point_on_target=on_target)
        for t, d in times_distances
    ]


def decl(t, distance, visible=True, drone="Drone1", judged=None):
    return DeclarationLine(t, drone, distance, distance, visible, (0.0, 0.0, -3.0, 0.0), judged=judged)


def logs(rec=None, step_lines=(), declarations=(), trace_lines=()):
    return EpisodeLogs(
        Path("ep"), rec or record(), list(step_lines), list(declarations), list(trace_lines), []
    )


APPROACH_STEPS = steps([(1, 16.0), (4, 13.0), (7, 10.0), (10, 7.5), (13, 4.5), (16, 3.0), (19, 3.0)])
APPROACH_TRACE = trace([16 - 0.4 * i for i in range(33)] + [3.0] * 10)


def test_success_on_a_later_declaration_after_an_early_miss():
    v = verify(logs(None, APPROACH_STEPS, [decl(10.0, 7.5), decl(19.0, 3.0)], APPROACH_TRACE))
    assert (v.success, v.ne_m, v.decisive_t, v.decisive_drone) == (True, 3.0, 19.0, "Drone1")
    assert v.failure_mode is None and v.declarations == 2 and v.osr
    assert v.declared_start_ratio == pytest.approx(7.5 / 16.0)


def test_declaration_within_delta_but_not_visible_does_not_qualify():
    v = verify(logs(None, APPROACH_STEPS, [decl(19.0, 3.0, visible=False)], APPROACH_TRACE))
    assert not v.success and v.decisive_t is None
    assert v.ne_m == 3.0  # the last step's distance
    assert v.failure_mode == "declared_prematurely"


def test_declaration_unknown_visibility_does_not_qualify():
    v = verify(logs(None, APPROACH_STEPS, [decl(19.0, 3.0, visible=None)], APPROACH_TRACE))
    assert not v.success


def test_declaration_after_t_max_is_ignored():
    rec = record(t_max=18.0)
    v = verify(logs(rec, APPROACH_STEPS, [decl(19.0, 3.0)], APPROACH_TRACE))
    assert not v.success and v.declarations == 0
    assert v.ne_m == 3.0  # last step with t <= 18 is t=16
    assert v.failure_mode == "arrived_without_declaring"  # the trace was within δ before T_max
    # the same declaration with T_max overridden at verify time
    assert verify(
        logs(rec, APPROACH_STEPS, [decl(19.0, 3.0)], APPROACH_TRACE), VerifierSettings(t_max_s=20)
    ).success


def test_passing_through_delta_without_declaring():
    through = trace([12, 9, 6, 4.5, 3.5, 4.5, 6, 9, 12, 15], dt=3.0)
    st = steps([(0, 12), (6, 6), (12, 3.5), (18, 6), (27, 15)])
    v = verify(logs(None, st, [], through))
    assert (v.success, v.osr, v.declarations) == (False, True, 0)
    assert v.min_distance_m == 3.5 and v.ne_m == 15
    assert v.failure_mode == "arrived_without_declaring"


def test_pooled_drones():
    rec = record(drones=("Drone1", "Drone2"))
    st = steps([(1, 20), (5, 12)], drone="Drone1") + steps(
        [(1, 18), (5, 7), (9, 2.0), (13, 9)], drone="Drone2"
    )
    tr = trace([20, 16, 12], "Drone1", dt=2) + trace([18, 7, 2, 9], "Drone2", dt=4)
    # Drone1's miss does not stop Drone2's hit from deciding.
    v = verify(logs(rec, st, [decl(5, 12, drone="Drone1"), decl(9.5, 2.0, drone="Drone2")], tr))
    assert (v.success, v.decisive_drone, v.ne_m) == (True, "Drone2", 2.0)
    # Failure: NE is the smaller of the drones' last-step distances (not the minimum ever seen).
    v = verify(logs(rec, st, [decl(5, 12, drone="Drone1")], tr))
    assert not v.success and v.ne_m == 9 and v.min_distance_m == 2.0 and v.osr
    assert v.start_distance_m == 18  # the drone that started closest


def test_declarations_out_of_time_order_in_the_file():
    v = verify(
        logs(None, APPROACH_STEPS, [decl(50.0, 2.0), decl(30.0, 4.0), decl(20.0, 9.0)], APPROACH_TRACE)
    )
    assert (v.decisive_t, v.ne_m) == (30.0, 4.0)


def test_equal_times_keep_file_order():
    v = verify(logs(None, APPROACH_STEPS, [decl(30.0, 4.0), decl(30.0, 1.0)], APPROACH_TRACE))
    assert v.ne_m == 4.0


def test_delta_changed_at_verify_time_flips_the_verdict():
    episode = logs(None, APPROACH_STEPS, [decl(19.0, 4.0)], APPROACH_TRACE)
    assert verify(episode).success  # record δ = 5 m
    v = verify(episode, VerifierSettings(delta_m=3.5))
    assert not v.success and v.delta_m == 3.5 and v.failure_mode == "declared_prematurely"
    assert verify(episode, VerifierSettings(delta_m=4.0)).success  # ≤ δ is inclusive


def test_real_flight_judgements():
    rec = record(environment="real", delta=1.5, t_max=150.0)
    st = [StepLine(t, "Drone1", action=GO, point_on_target=True) for t in (1.0, 3.0, 5.0, 7.0)]
    # accept stands for "within δ and visible", even without measured distance
    v = verify(logs(rec, st, [decl(7.0, None, visible=None, judged="accept")]))
    assert (v.success, v.ne_m, v.decisive_t, v.osr) == (True, None, 7.0, True)
    # reject never qualifies, whatever was measured; a later accept decides
    v = verify(
        logs(rec, st, [decl(3.0, 0.5, judged="reject"), decl(6.0, None, visible=None, judged="accept")])
    )
    assert (v.success, v.decisive_t) == (True, 6.0)
    v = verify(logs(rec, st, [decl(3.0, 0.5, judged="reject")]))
    assert not v.success and v.failure_mode == "declared_prematurely" and v.ne_m is None


def test_no_steps_gives_null_ne():
    v = verify(logs(None, [], [], []))
    assert (v.success, v.ne_m, v.min_distance_m, v.approach_ratio) == (False, None, None, None)
    assert v.failure_mode == "never_grounded_referent"


def test_failure_mode_collided_counts_contacts():
    tr = trace([16, 15, 14, 14, 14, 13])
    for line, hit in zip(tr, [False, True, True, False, None, True], strict=True):
        line.collided = hit
    v = verify(logs(None, APPROACH_STEPS, [decl(19, 3.0, visible=False)], tr))
    assert v.collisions == 2  # a line without the field does not end a contact
    assert v.failure_mode == "collided"  # before declared_prematurely


def test_failure_mode_ran_out_of_steps():
    distances = [60 - 0.08 * i for i in range(601)]  # 0..300 s, 60 m -> 12 m, closing to the end
    st = steps([(t, 60 - 0.16 * t) for t in range(0, 301, 3)])
    v = verify(logs(None, st, [], trace(distances)))
    assert v.failure_mode == "ran_out_of_steps"
    # The same approach stopped at 200 s (a runner abort) did not hit T_max.
    early = verify(logs(None, st[:67], [], trace(distances[:401])))
    assert early.failure_mode == "oscillated_without_progress"


def test_failure_mode_never_grounded_referent():
    st = steps([(t, 20.0) for t in range(0, 300, 3)], on_target=False)
    st += [StepLine(301.0, "Drone1", action=Rotate(45.0), distance_m=20.0)]
    v = verify(logs(None, st, [], trace([20.0] * 601)))
    assert v.failure_mode == "never_grounded_referent"
    # only rotations: no go point at all on the target
    rot = [StepLine(float(t), "Drone1", action=Rotate(30.0), distance_m=20.0) for t in range(0, 300, 3)]
    assert verify(logs(None, rot, [], trace([20.0] * 601))).failure_mode == "never_grounded_referent"


def test_failure_mode_grounded_but_never_closed_distance():
    st = steps([(t, 20.0 - 0.01 * t) for t in range(0, 300, 3)])
    v = verify(logs(None, st, [], trace([20.0 - 0.005 * i for i in range(601)])))
    assert v.approach_ratio == pytest.approx(0.15)
    assert v.failure_mode == "grounded_but_never_closed_distance"


def test_failure_mode_oscillated_without_progress():
    wave = [20, 16, 12, 10, 12, 16, 20, 16, 12, 10, 12, 16] * 50  # closes half way, then swings
    st = steps([(t * 0.5, d) for t, d in enumerate(wave)])
    v = verify(logs(None, st, [], trace(wave)))
    assert v.approach_ratio == pytest.approx(0.5)
    assert v.failure_mode == "oscillated_without_progress"


def test_unknown_grounding_skips_that_mode():
    st = steps([(t, 20.0) for t in range(0, 300, 3)], on_target=None)
    assert (
        verify(logs(None, st, [], trace([20.0] * 601))).failure_mode == "grounded_but_never_closed_distance"
    )


def test_every_failure_mode_is_reachable():
    assert set(FAILURE_MODES) == {
        "collided", "declared_prematurely", "arrived_without_declaring", "ran_out_of_steps",
        "never_grounded_referent", "grounded_but_never_closed_distance", "oscillated_without_progress",
    }  # fmt: skip


def test_moving_target_diagnostics():
    rec = record(task="track")
    # visible from t=1.0; lost 3.0..5.0 (samples at 3.0, 3.5, 4.0, 4.5 invisible); within δ 5.5..7.0
    visible = [False, False, True, True, True, True, False, False, False, False, True, True, True, True, True]
    dist = [9, 9, 8, 8, 7, 7, 7, 7, 6, 6, 6, 4, 4, 4, 6]
    v = verify(logs(rec, [], [], trace(dist, visible=visible)))
    assert v.first_acquisition_t == 1.0
    assert v.longest_loss_streak_s == pytest.approx(2.0)
    assert v.dwell_within_delta_s == pytest.approx(1.5)
    # a second drone that saw the target during the first one's loss shortens the streak
    rec2 = record(task="track", drones=("Drone1", "Drone2"))
    other = trace([9] * 3, "Drone2", dt=0.5, t0=3.5, visible=[True, True, False])
    v2 = verify(logs(rec2, [], [], trace(dist, visible=visible) + other))
    # Drone2 covers [3.5, 4.5): the gaps left are [3.0, 3.5) and [4.5, 5.0)
    assert v2.longest_loss_streak_s == pytest.approx(0.5)
    # static targets get no moving-target diagnostics
    static = verify(logs(None, [], [], trace(dist, visible=visible)))
    assert static.first_acquisition_t is None and static.dwell_within_delta_s is None


def test_missing_record_needs_overrides():
    episode = EpisodeLogs(Path("ep"), None, list(APPROACH_STEPS), [decl(19, 3.0)], [], [], "no episode.json")
    with pytest.raises(RecordError, match="--delta"):
        verify(episode)
    v = verify(episode, VerifierSettings(delta_m=5.0, t_max_s=300.0))
    assert v.success and v.episode == "ep"


def test_aggregate_rates():
    a = verify(logs(None, APPROACH_STEPS, [decl(19.0, 3.0)], APPROACH_TRACE))
    b = verify(logs(None, APPROACH_STEPS, [], APPROACH_TRACE))
    c = verify(logs(None, steps([(1, 30.0), (4, 29.0)], on_target=False), [], trace([30, 29])))
    agg = aggregate([a, b, c])
    assert agg["episodes"] == 3
    assert agg["sr"] == pytest.approx(1 / 3) and agg["osr"] == pytest.approx(2 / 3)
    assert agg["declaration_rate"] == pytest.approx(1 / 3)
    assert agg["mean_ne_m"] == pytest.approx((3 + 3 + 29) / 3) and agg["median_ne_m"] == 3.0
    assert agg["failure_modes"]["arrived_without_declaring"] == 1
    assert agg["failure_modes"]["never_grounded_referent"] == 1
    assert sum(agg["failure_modes"].values()) == 2


def write_episode(directory: Path, rec, step_lines, declarations, trace_lines) -> Path:
    directory.mkdir(parents=True)
    save_record(rec, directory / "episode.json")
    write_lines(directory / "steps.jsonl", step_lines)
    if declarations:
        write_lines(directory / "declarations.jsonl", declarations, fsync=True)
    write_lines(directory / "trace.jsonl", trace_lines)
    return directory


def test_truncated_last_line_is_reported(tmp_path):
    ep = write_episode(tmp_path / "ep1", record(), APPROACH_STEPS, [decl(19.0, 3.0)], APPROACH_TRACE)
    with open(ep / "declarations.jsonl", "a") as f:
        f.write('{"t": 25.0, "drone": "Drone1", "distance_m": 2.')
    v = verify(read_episode(ep))
    assert v.success and v.declarations == 1
    assert [(p.file, p.line) for p in v.problems] == [("declarations.jsonl", 2)]
    assert "truncated last line" in v.problems[0].reason


def _verify_cli(*args):
    return run_dronecats("episodes", "verify", *args)


def test_episodes_verify_cli(tmp_path):
    root = tmp_path / "runs"
    good = write_episode(root / "a", record(), APPROACH_STEPS, [decl(19.0, 4.0)], APPROACH_TRACE)
    write_episode(
        root / "b",
        record(),
        [*APPROACH_STEPS, StepLine(20.0, "Drone1", action=Finished(), distance_m=3.0)],
        [],
        APPROACH_TRACE,
    )
    with open(root / "b" / "steps.jsonl", "a") as f:
        f.write('{"t": 21.0, "drone": "Dr')
    (root / "not-an-episode").mkdir()

    proc = _verify_cli(str(good))
    assert proc.returncode == 0, proc.stderr
    one = json.loads(proc.stdout)
    assert {"success", "ne_m", "decisive_t", "osr", "declarations", "min_distance_m", "failure_mode",
            "problems"} <= set(one)  # fmt: skip
    assert (one["success"], one["ne_m"], one["decisive_t"], one["problems"]) == (True, 4.0, 19.0, [])

    flipped = json.loads(_verify_cli(str(good), "--delta", "3.5").stdout)
    assert (flipped["success"], flipped["failure_mode"]) == (False, "declared_prematurely")
    capped = json.loads(_verify_cli(str(good), "--t-max", "15").stdout)
    assert capped["success"] is False and capped["declarations"] == 0

    proc = _verify_cli(str(root))
    assert proc.returncode == 0, proc.stderr
    many = json.loads(proc.stdout)
    assert [e["episode"] for e in many["episodes"]] == ["town-approach-007"] * 2
    assert many["episodes"][1]["failure_mode"] == "arrived_without_declaring"
    assert many["episodes"][1]["problems"][0]["line"] == len(APPROACH_STEPS) + 2
    agg = many["aggregate"]
    assert (agg["episodes"], agg["sr"], agg["osr"], agg["declaration_rate"]) == (2, 0.5, 1.0, 0.5)
    assert agg["episodes_with_problems"] == 1


def test_episodes_verify_cli_errors(tmp_path):
    proc = _verify_cli(str(tmp_path))
    assert proc.returncode == 2 and "no episode directories" in proc.stderr
    ep = tmp_path / "ep"
    ep.mkdir()
    write_lines(ep / "steps.jsonl", APPROACH_STEPS)
    proc = _verify_cli(str(ep))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "--delta" in proc.stderr
    proc = _verify_cli(str(ep), "--delta", "5", "--t-max", "300")
    assert proc.returncode == 0 and json.loads(proc.stdout)["episode"] == "ep"
    assert _verify_cli(str(tmp_path / "nowhere")).returncode == 2
