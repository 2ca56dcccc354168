"""`rescue sim fidelity`: a simulator's first step against the real next client turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.sim import SimOptions
from rescue_bench.sim.fidelity import fidelity_cases, summarize_fidelity
from rescue_bench.testing import FakeOpenAI
from tests.factories import write_lines
from tests.sim.helpers import LoopAnswers, hand_clip, leak_clip

pytestmark = pytest.mark.slow  # the quick lane (-m 'not slow') leaves these end-to-end tests out

runner = CliRunner()


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results" / "fidelity.jsonl").read_text().splitlines()]


def test_cases_replay_the_real_move_and_read_the_real_next_client_row():
    cases = fidelity_cases([hand_clip()], SimOptions())
    by_row = {start.row: (answers, real) for start, answers, real in cases}
    # after row 2 the therapist (row 3) tracks the couple; Ann speaks next (row 4)
    answers, real = by_row[2]
    assert json.loads(answers["whom_how"]) == {"target": "Couple", "strategy": "track"}
    assert real["speaker"] == "Ann" and real["pattern"] == "attack_attack"
    # the floors see what the simulator sees: Bob spoke last, the move addressed the couple (no one alone)
    floors = _floors(cases, 2)
    assert floors == {"floor_last_correct": False, "floor_addressed_correct": False, "floor_least_recent_correct": True}
    # after row 4 the next row is Bob's: the move is silence
    answers, real = by_row[4]
    assert answers == {"when": json.dumps({"answer": "no"})} and real["speaker"] == "Bob"
    floors = _floors(cases, 4)  # Bob spoke less recently than Ann, who spoke last
    assert floors == {"floor_last_correct": False, "floor_addressed_correct": False, "floor_least_recent_correct": True}
    assert 5 not in by_row  # after row 5 only the therapist speaks: nothing to compare


def _floors(cases, row: int) -> dict[str, bool]:
    """The speaker floors' verdicts at the case after ``row``, played by the fitted simulator's floor rule."""
    from rescue_bench.sim.fidelity import fidelity_episode, fidelity_record
    from rescue_bench.sim.offline import offline_simulator

    start, answers, real = next(c for c in cases if c[0].row == row)
    sim = offline_simulator("fitted")
    record = fidelity_record(start, real, fidelity_episode(start, answers, "fitted", SimOptions(), sim).typed_record(), sim)
    return {k: record[k] for k in ("floor_last_correct", "floor_addressed_correct", "floor_least_recent_correct")}


def test_fidelity_of_the_default_simulator_on_the_demo_beside_its_floors(tmp_path):
    from rescue_bench.data.load import load_clips
    from rescue_bench.sim.units import group_of

    clips = load_clips(None)
    out = tmp_path / "fid"
    result = runner.invoke(app, ["sim", "fidelity", "--out", str(out), "--display", "none", "--no-bertscore"])
    assert result.exit_code == 0, result.output
    assert "The simulator against its best floor on these sessions" in result.output
    records = _records(out)
    assert records and all(r["valid"] for r in records)
    for r in records:
        assert r["speaker_correct"] == (r["prediction"]["speaker"] == r["gold"]["speaker"])
        # the bundled model was fitted on the demo: each clip is played by a model refitted without its couple or family
        assert r["simulator_model"]["refitted_without"] == group_of(next(c for c in clips if c.sample_id == r["sample_id"]))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fidelity"] == {s: e.model_dump(mode="json", by_alias=True) for s, e in summarize_fidelity(records).items()}
    both = summary["fidelity"]["both"]
    assert both["speaker_correct"]["value"] == sum(r["speaker_correct"] for r in records) / len(records)
    for key in ("floor_last_correct", "floor_addressed_correct", "floor_least_recent_correct", "intensity_error_floor",
                "intensity_error_all_floor", "pattern_correct_floor", "multistep_3", "multistep_3_floor"):
        assert both[key]["n"] > 0, key  # every floor, and fidelity after several real moves
    assert set(both["beaten_by"]) >= {"speaker_correct", "intensity_error_all", "pattern_correct"}
    assert [c["check"].split(":")[0] for c in summary["checks"]] == ["words", "label", "order of names in a group address", "attend vs group, both speaking at every step"]
    assert json.loads((out / "run.json").read_text())["kind"] == "sim_fidelity"
    assert "does not beat" in result.output and "check passed: label" in result.output


def test_model_simulator_fidelity_through_the_server(isolated_env):
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    out = isolated_env / "fid"
    with FakeOpenAI(LoopAnswers()) as server:
        result = runner.invoke(app, ["sim", "fidelity", "--simulator", "openai/fake-sim", "--data", str(data), "--out", str(out),
                                     "--display", "none", "--no-bertscore"], env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
    records = _records(out)
    assert records
    for r in records:  # the loopback simulator always lets the first client (Ann) speak, one point calmer
        assert r["prediction"]["speaker"] == "Ann"
        assert r["speaker_correct"] == (r["gold"]["speaker"] == "Ann")
    run = json.loads((out / "run.json").read_text())
    assert run["calls"]["simulator_total"] >= len(records)


class PlausibilityJudge:
    """A judge on loopback: 4 for a turn that is a real row's text of the leak clip, 2 for any other
    (the scripted simulator's templates); every request kept."""

    def __init__(self) -> None:
        self.requests: list[list[dict]] = []

    def __call__(self, messages: list[dict]) -> tuple[int, str]:
        self.requests.append(messages)
        candidate = str(messages[-1]["content"]).rsplit("Candidate turn: ", 1)[-1]
        return 200, json.dumps({"score": 4 if "trip" in candidate or "there for that" in candidate else 2})


def test_the_judge_rates_the_simulated_turn_and_the_real_one_blind(isolated_env):
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    out = isolated_env / "fid"
    judge = PlausibilityJudge()
    with FakeOpenAI(judge) as server:
        result = runner.invoke(app, ["sim", "fidelity", "--judge", "openai/fake-judge", "--data", str(data), "--out", str(out),
                                     "--display", "none", "--no-bertscore", "--max-connections", "2"], env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
        assert server.stats.peak_in_flight <= 2
    records = _records(out)
    assert records
    for r in records:  # the scripted turn is a template (2), the real one a row of the clip (4)
        assert r["judge_plausibility"] == 2 and r["judge_plausibility_real"] == 4
    assert len(judge.requests) == 2 * len(records)
    for messages in judge.requests:  # blind: the same form for both, never saying which is real
        body = str(messages[-1]["content"])
        assert "Candidate turn: " in body
        frame = body.split("Candidate turn: ")[0].lower()
        assert "real" not in frame and "simulat" not in frame
        assert "Next speaker: " in body and "Transcript before the turn" in body
    summary = json.loads((out / "summary.json").read_text())["fidelity"]["both"]
    assert summary["judge_plausibility"]["value"] == 2 and summary["judge_plausibility_real"]["value"] == 4
    assert "judge plausibility" in result.output
    run = json.loads((out / "run.json").read_text())
    assert run["judge"] == "openai/fake-judge" and run["calls"]["judge"] == 2 * len(records) and run["judge_prompt_sha"]
    assert (out / "logs").is_dir() and any((out / "logs").iterdir())


def test_fidelity_without_a_judge_has_no_plausibility():
    from rescue_bench.sim.fidelity import FIDELITY_METRICS

    assert {"judge_plausibility", "judge_plausibility_real"} <= {k for k, _, _ in FIDELITY_METRICS}


def test_a_simulator_that_never_answers_is_not_scored_as_the_state_it_started_from(isolated_env):
    """A refusing simulator's steps have no state: its intensity error is left out and counted as
    invalid, never the "no change" floor's error passed off as the simulator's."""
    data = write_lines(isolated_env / "leak.jsonl", [leak_clip().to_json()])
    out = isolated_env / "fid"
    with FakeOpenAI(LoopAnswers(broken_simulator=True)) as server:
        args = ["sim", "fidelity", "--simulator", "openai/fake-sim", "--data", str(data), "--out", str(out), "--display", "none", "--no-bertscore"]
        result = runner.invoke(app, args, env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 2 and "the simulator gave no usable answer" in result.output, result.output  # a failure, not a score
        result = runner.invoke(app, [*args, "--max-failed-share", "1"], env={"OPENAI_BASE_URL": server.base_url})
        assert result.exit_code == 0, result.output
    records = _records(out)
    assert records and not any(r["valid"] for r in records)
    assert all(r["intensity_error"] is None and r["speaker_correct"] is None and r["pattern_correct"] is None for r in records)
    both = json.loads((out / "summary.json").read_text())["fidelity"]["both"]
    assert both["intensity_error"]["n"] == 0 and both["invalid"]["value"] == 1.0
    assert both["intensity_error_floor"]["n"] > 0  # the floor is still there to be beaten


def test_a_fitted_model_is_measured_on_clips_it_was_not_fitted_on(tmp_path):
    from rescue_bench.data.load import load_clips
    from rescue_bench.sim.fitted import default_model_path
    from rescue_bench.sim.fitting import simulators_for
    from rescue_bench.sim.units import group_of

    clips = load_clips(None)
    sims = simulators_for(clips, "fitted", str(default_model_path()))
    assert {sid: s.describe()["refitted_without"] for sid, s in sims.items()} == {c.sample_id: group_of(c) for c in clips}
    assert sims[clips[0].sample_id].model.source.clips == [c.sample_id for c in clips]  # fitted on all, refitted without one
    # a few of the model's clips in other data cannot be refitted without them: refused, not measured in-sample
    changed = [clips[0].model_copy(update={"rows": clips[0].rows[:-1]}), *clips[1:3]]
    with pytest.raises(ValueError, match="fitted on 3 of these clips"):
        simulators_for(changed, "fitted", str(default_model_path()))


def test_clips_of_one_couple_are_left_out_together_so_a_fit_never_sees_the_session_it_is_checked_on(real_data):
    """Six of the eight shared real clips are one couple: leaving out one clip would leave five of
    the same couple in the fit. The whole couple is left out."""
    from rescue_bench.data.load import load_clips
    from rescue_bench.sim.fitting import fit, fold_function
    from rescue_bench.sim.units import group_of

    clips = load_clips(sorted(str(p) for p in real_data.glob("*.jsonl")))
    couple = [c for c in clips if c.scenario == "couple"]
    assert len(couple) >= 2 and len({group_of(c) for c in couple}) == 1
    assert {fold_function(clips)(c) for c in couple} == {group_of(couple[0])}
    fitted = fit(clips, "real", validate=False)
    ids = {c.sample_id for c in couple}
    others = [u for u in fitted.units.changes if u.sample_id not in ids]
    without = fitted.folds[group_of(couple[0])].intensity.cv
    assert without is not None and without.units == len(others) < len(fitted.units.changes)


@pytest.mark.slow
def test_fitted_on_the_real_lines_the_simulator_is_no_worse_than_its_floors_on_sessions_it_never_saw(real_data, tmp_path):
    """Found by a reviewer: fitted on the 8 shared clips, the old simulator's next speaker was right
    33% of the time against 62.5% for a floor, and its words check failed. A tie is an honest result
    with so few sessions; losing to a floor it could have fallen back to is not."""
    from typer.testing import CliRunner

    from rescue_bench.cli import app

    data = [str(p) for p in sorted(real_data.glob("*.jsonl"))]
    model = tmp_path / "real.json"
    runner = CliRunner()
    fitted = runner.invoke(app, ["sim", "fit", *(x for d in data for x in ("--data", d)), "--out", str(model)])
    assert fitted.exit_code == 0, fitted.output
    out = tmp_path / "fidelity"
    result = runner.invoke(app, ["sim", "fidelity", "--sim-model", str(model), *(x for d in data for x in ("--data", d)),
                                 "--out", str(out), "--display", "none", "--no-bertscore"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    checks = {c["measure"]: c for c in summary["fidelity"]["both"]["validation"]}
    for measure in ("speaker_correct", "intensity_error_all", "valence_correct"):
        assert checks[measure]["verdict"] in ("better", "no different"), checks[measure]
        assert checks[measure]["ci"] is not None  # 8 clips: an interval, not a bare sign
    words = next(c for c in summary["checks"] if c["check"].startswith("words"))
    assert words["passed"], words
    # the model carries the same check, from its own leave-one-group-out fit
    stored = {c["measure"]: c["verdict"] for c in json.loads(model.read_text())["validation"]}
    assert stored["speaker_correct"] in ("better", "no different")
