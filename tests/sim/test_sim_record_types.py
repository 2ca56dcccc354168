"""The closed loop's typed records (rescue_bench.sim.record, the fidelity and check rows) declare
exactly the keys the real records have: a key added to a record and not to its type, or declared and
never written, fails here (mypy checks the code against the declarations; this checks the
declarations against the records)."""

from __future__ import annotations

from typing import Any

import pytest

from rescue_bench.data.load import load_clips
from rescue_bench.sim import Episode, SimOptions, StrategyPrior, episode_starts
from rescue_bench.sim.checks import CheckResult, simulator_checks
from rescue_bench.sim.fidelity import (
    FidelityRecord,
    RealOutcome,
    fidelity_cases,
    fidelity_episode,
    fidelity_record,
)
from rescue_bench.sim.fitting import simulators_for
from rescue_bench.sim.objective import compare_runs
from rescue_bench.sim.record import (
    AgentAction,
    ClientTurn,
    EffectJson,
    EpisodeMetrics,
    EpisodeRecord,
    EpisodeStep,
    Heard,
    InferenceJson,
    ReferenceJson,
    RoleCardJson,
    SimulatorDescription,
    SimulatorOutcome,
    StateJson,
)
from tests.sim.helpers import LoopAnswers


def _keys_fit(value: dict[str, Any], typed: Any) -> None:
    """Every key of ``value`` is declared, and every required key is there."""
    declared = typed.__required_keys__ | typed.__optional_keys__
    assert set(value) <= declared, f"{typed.__name__}: undeclared {sorted(set(value) - declared)}"
    assert typed.__required_keys__ <= set(value), f"{typed.__name__}: missing {sorted(typed.__required_keys__ - set(value))}"


def _check_episode(record: dict[str, Any]) -> None:
    _keys_fit(record, EpisodeRecord)
    _keys_fit(record["metrics"], EpisodeMetrics)
    _keys_fit(record["initial_state"], StateJson)
    for card in record["cards"].values():
        _keys_fit(card, RoleCardJson)
    _keys_fit(record["simulator_model"], SimulatorDescription)
    for reading in record["simulator_model"].get("readings", []):
        _keys_fit(reading, InferenceJson)
    for effect in record["simulator_model"].get("effects", []):
        _keys_fit(effect, EffectJson)
    if record["reference"] is not None:
        _keys_fit(record["reference"], ReferenceJson)
    for step in record["steps"]:
        _keys_fit(step, EpisodeStep)
        _keys_fit(step["action"], AgentAction)
        _keys_fit(step["heard"], Heard)
        _keys_fit(step["simulator"], SimulatorOutcome)
        for turn in step["client_turns"]:
            _keys_fit(turn, ClientTurn)
        if step["state"] is not None:
            _keys_fit(step["state"], StateJson)


@pytest.mark.parametrize("simulator", [pytest.param("fitted", marks=pytest.mark.slow), "scripted"])
def test_offline_episode_records_have_exactly_the_declared_keys(simulator):
    clips = load_clips(None)[:3]
    options = SimOptions(per_clip=1, horizon=3, state="none")
    prior = StrategyPrior(clips)
    for start in [s for c in clips for s in episode_starts(c, options)[0]]:
        for agent in ("baseline/attend", "baseline/silent"):
            _check_episode(Episode(start, agent=agent, simulator=simulator, options=options, prior=prior).record())


def test_model_episode_records_with_reasks_and_judge_scores_have_exactly_the_declared_keys():
    clips = load_clips(None)[:2]
    answers = LoopAnswers()
    options = SimOptions(per_clip=1, horizon=3, state="explicit")
    for start in [s for c in clips for s in episode_starts(c, options)[0]]:
        episode = Episode(start, agent="openai/agent", simulator="openai/sim", options=options)
        while (request := episode.next_request()) is not None:
            episode.answer(answers(list(request.messages))[1])
        episode.set_judged({i: (4, False) for i, _ in episode.judge_requests()})
        record = episode.record()
        _check_episode(record)
        assert any("raw" in s["simulator"] for s in record["steps"])  # the model's attempts are kept
        assert any("judge_strategy" in s for s in record["steps"])


def test_fidelity_records_have_exactly_the_declared_keys():
    clips = load_clips(None)[:2]
    options = SimOptions()
    sims = simulators_for(clips, "scripted", None)
    assert sims is not None
    for start, answers, real in fidelity_cases(clips, options, 6):
        _keys_fit(dict(real), RealOutcome)
        sim = sims[start.sample_id]
        line = fidelity_record(start, real, fidelity_episode(start, answers, "scripted", options, sim).record(), sim)
        assert line["multistep"]
        _keys_fit(line, FidelityRecord)


def test_a_check_counts_the_episodes_both_agents_scored_as_the_paired_comparison_does():
    clips = load_clips(None)[:3]
    options = SimOptions(per_clip=2, horizon=3, state="none")
    checks = simulator_checks(clips, "scripted", options, n_resamples=100)
    for check in checks:
        _keys_fit(dict(check), CheckResult)
    # the count is the comparison's (episodes scored by both), not the episodes with a J
    from rescue_bench.sim.checks import VARIANTS, play_variant
    from rescue_bench.sim.offline import offline_simulator

    sim = offline_simulator("scripted")
    assert sim is not None
    opts = options.model_copy(update={"state": "none"})
    starts = [s for clip in clips for s in episode_starts(clip, opts)[0]]
    prior = StrategyPrior(clips)
    first = checks[0]
    a = [play_variant(s, VARIANTS[first["a"]], sim, opts, prior) for s in starts]
    b = [play_variant(s, VARIANTS[first["b"]], sim, opts, prior) for s in starts]
    assert first["episodes"] == compare_runs(a, b, n_resamples=100)["episodes"]
