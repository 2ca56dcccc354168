"""The fitted simulator: components that nest their floors, stated assumptions, expected states, the
model file and `rescue sim fit`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from rescue_bench.cli import app
from rescue_bench.data.load import load_clips
from rescue_bench.sim import Episode, SimOptions, StrategyPrior, episode_starts
from rescue_bench.sim.fidelity import fidelity_cases, fidelity_episode, fidelity_record
from rescue_bench.sim.fitted import (
    ASSUMPTIONS,
    SPEAKER_FLOORS,
    Assumption,
    FittedModel,
    client_turn,
    default_model_path,
    load_model,
)
from rescue_bench.sim.fitting import fit, fit_intensity, fit_speaker
from rescue_bench.sim.hearing import SILENCE, heard_as
from rescue_bench.sim.offline import Fitted
from rescue_bench.sim.options import FITTED
from rescue_bench.sim.state import ClientState, HiddenState
from rescue_bench.sim.units import ChangeUnit, SpeakerUnit

runner = CliRunner()


def test_the_bundled_model_is_the_demo_fitted_again_with_every_effect_learned_at_its_floor_or_assumed():
    bundled = load_model()
    again = fit(load_clips(None), "demo").model
    assert again.model_dump() == bundled.model_dump()  # reproducible: `rescue sim fit` on the demo writes the file that ships
    assert bundled.kind == "rescue-sim-model" and bundled.version == 2 and bundled.source.name == "demo"
    assert bundled.source.groups == 9  # every demo clip is its own couple or family
    statuses = {e.status for e in bundled.effects}
    assert statuses <= {"learned", "floor", "assumed"} and "assumed" in statuses
    assumed = [e for e in bundled.effects if e.status == "assumed"]
    assert [(e.name, e.value) for e in assumed] == [(a.name, a.value) for a in ASSUMPTIONS] and all(e.note for e in assumed)
    learned = [e for e in bundled.effects if e.status == "learned" and e.component == "intensity"]
    assert learned and all(e.ci is not None and e.ci[0] <= e.value <= e.ci[1] for e in learned)
    assert {c.measure for c in bundled.validation} >= {"speaker_correct", "intensity_error_all", "valence_correct"}


def _change(i: int, reach: str, change: int, group: str) -> ChangeUnit:
    return ChangeUnit(f"{group}/c{i % 3}", group, i, "A", reach, None, 0 if reach == "silence" else 1, 5, 5 + change, "negative", "negative", 0.0)


def test_intensity_falls_back_to_no_change_when_no_weight_beats_it_on_sessions_left_out():
    rng = np.random.default_rng(0)
    noise = [_change(i, ("alone", "silence", "left_out")[i % 3], int(rng.integers(-2, 3)), f"g{i % 4}") for i in range(240)]
    component, effects = fit_intensity(noise, ASSUMPTIONS)
    assert component.source == "floor" and component.floor == "no change"
    assert all(e.status == "floor" and e.value == 0.0 for e in effects)
    # the negative control: a reach that always calms by two points is learned
    signal = [_change(i, ("alone", "silence")[i % 2], -2 if i % 2 == 0 else 0, f"g{i % 4}") for i in range(240)]
    component, _ = fit_intensity(signal, ASSUMPTIONS)
    assert component.source == "learned" and component.coef[0][2] < -1.0  # the weight of "alone"


def _speaker(i: int, chosen: int, named: int, group: str) -> SpeakerUnit:
    # client 0 spoke last; client 1 spoke least recently; the words named client `named`
    features = tuple((float(c == 0), float(c == 1), 0.0, 1.0, float(c == named), 0.0, 0.0) for c in range(2))
    return SpeakerUnit(f"{group}/c{i % 3}", group, features, chosen, (1, 0))


def test_the_next_speaker_is_a_floor_unless_a_learned_score_beats_every_floor_out_of_sample():
    keeps = [_speaker(i, 0, i % 2, f"g{i % 4}") for i in range(200)]  # the last client always keeps the floor
    component = fit_speaker(keeps)
    assert component.source == "floor" and component.floor == "the last client keeps the floor"
    assert component.coef == [list(SPEAKER_FLOORS["the last client keeps the floor"])]
    # the negative control: the client the words name speaks next, which no floor reads
    named = [_speaker(i, i % 2, i % 2, f"g{i % 4}") for i in range(200)]
    component = fit_speaker(named)
    assert component.source == "learned" and component.coef[0][4] > 0  # the weight of "named"


def test_a_speaker_floor_played_by_the_simulator_is_exactly_the_fidelity_floor_of_that_name():
    model = load_model()
    options = SimOptions(horizon=1, state="none")
    keys = {"the last client keeps the floor": "floor_last_correct", "the least recent speaker": "floor_least_recent_correct",
            "the client addressed alone, else the last client": "floor_addressed_correct"}
    for name, weights in SPEAKER_FLOORS.items():
        speaker = model.speaker.model_copy(update={"source": "floor", "floor": name, "coef": [list(weights)]})
        sim = Fitted(model.model_copy(update={"speaker": speaker}))
        for start, answers, real in fidelity_cases(load_clips(None)[:3], options):
            record = fidelity_record(start, real, fidelity_episode(start, answers, FITTED, options, sim).typed_record(), sim)
            assert record["speaker_correct"] == record[keys[name]], (name, start.id)


def test_an_assumption_that_would_make_warm_words_worse_than_neutral_ones_is_refused():
    with pytest.raises(ValidationError, match="warm >= neutral >= hostile"):
        Assumption(name="x", component="intensity", affect="warm", value=0.5, why="a test")
    with pytest.raises(ValidationError, match="warm >= neutral >= hostile"):
        Assumption(name="x", component="intensity", affect="hostile", value=-0.5, why="a test")
    with pytest.raises(ValidationError, match="0-0.5"):
        Assumption(name="x", component="valence", affect="warm", value=0.8, why="a test")


def test_the_state_is_an_expectation_never_rounded_between_steps():
    model = load_model()
    state = HiddenState(emotions={"A": ClientState(emotion="hurt", valence="negative", intensity=7),
                                  "B": ClientState(emotion="calm", valence="neutral", intensity=2)},
                        stances={"A->B": "guarded", "B->A": "neutral"}, pattern="pursue_withdraw")
    after = model.transition(state, heard_as(["A"], words="x", affect="warm"), ["A", "B"], "couple")
    assert after.emotions["A"].intensity != round(after.emotions["A"].intensity)  # a real expectation, not an integer
    assert after.emotions["A"].intensity < model.transition(state, heard_as(["A"], words="x", affect="neutral"), ["A", "B"], "couple").emotions["A"].intensity
    p = after.emotions["A"].valence_p
    assert p is not None and sum(p.values()) == pytest.approx(1.0) and p["negative"] < 1.0  # warm words moved some of it
    again = model.transition(after, SILENCE, ["A", "B"], "couple")
    assert HiddenState.model_validate(again.to_json()) == again  # the record holds the state exactly


def test_clients_do_not_repeat_a_line_verbatim_within_an_episode():
    clips = load_clips(None)
    prior = StrategyPrior(clips)
    options = SimOptions(horizon=8)
    for clip in clips[:4]:
        for start in episode_starts(clip, options)[0]:
            record = Episode(start, agent="baseline/attend", options=options, prior=prior, simulator="fitted").record()
            lines = [turn["text"] for step in record["steps"] for turn in step["client_turns"]]
            assert len(lines) == len(set(lines)), lines
    # two clients never say the same line either (found on the practice page: Karin, then Ingrid,
    # "Look, I don't like how this keeps going round in circles."): a family left to talk
    options = SimOptions(horizon=5, per_clip=2)
    start = next(s for clip in clips for s in episode_starts(clip, options)[0] if s.id == "sim/demo_family/f02_lindqvist_family/2")
    record = Episode(start, agent="baseline/silent", options=options, prior=prior, simulator="fitted").record()
    lines = [turn["text"] for step in record["steps"] for turn in step["client_turns"]]
    assert len({t["speaker"] for step in record["steps"] for t in step["client_turns"]}) > 1
    assert len(lines) == len(set(lines)), lines
    calm = HiddenState(emotions={"A": ClientState(emotion="x", valence="neutral", intensity=2)}, stances={}, pattern="mixed_transition")
    first = client_turn("A", calm, ["A"], [], "salt")
    assert client_turn("A", calm, ["A"], [first], "salt") != first


@pytest.mark.slow
def test_sim_fit_writes_a_typed_versioned_model_that_a_run_records(tmp_path, real_or_demo):
    model = tmp_path / "model.json"
    result = runner.invoke(app, ["sim", "fit", "--data", str(real_or_demo), "--out", str(model)])
    assert result.exit_code == 0, result.output
    fitted = FittedModel.model_validate_json(model.read_text())
    assert fitted.readings[0].reading == "affect" and fitted.effects and fitted.validation
    assert "assumed: hostile words inflame" in result.output and "sessions it was not fitted on" in result.output
    out = tmp_path / "run"
    run = runner.invoke(app, ["sim", "eval", "--model", "baseline/attend", "--sim-model", str(model), "--data", str(real_or_demo),
                              "--horizon", "2", "--out", str(out), "--display", "none"])
    assert run.exit_code == 0, run.output
    record = json.loads((out / "results" / "sim.jsonl").read_text().splitlines()[0])
    assert record["simulator_model"]["sha256"] == fitted.sha256() and record["simulator_model"]["model"] == str(model)
    assert record["simulator_model"]["validation"] == [c.model_dump(mode="json") for c in fitted.validation]
    assert json.loads((out / "run.json").read_text())["settings"]["sim_model"] == str(model)


def test_sim_fit_refuses_one_clip_and_a_bad_model_file_in_one_line(tmp_path):
    from tests.factories import write_lines
    from tests.sim.helpers import hand_clip

    one = write_lines(tmp_path / "one.jsonl", [hand_clip().to_json()])
    result = runner.invoke(app, ["sim", "fit", "--data", str(one), "--out", str(tmp_path / "m.json")])
    assert result.exit_code == 2 and "two clips or more" in result.output and "Traceback" not in result.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(default_model_path().read_text()), "version": 99}))
    with pytest.raises(ValueError, match="bad.json: not a rescue-sim-model file of version 2"):
        load_model(bad)
