"""What the closed loop's J rewards: the words' stated assumptions order warm above neutral above
hostile for every reach, no rounding decides a ranking, and the sensitivity says which orders hold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from rescue_bench.data.load import load_clips
from rescue_bench.sim import Episode, SimOptions, StrategyPrior, episode_starts, run_offline, summarize
from rescue_bench.sim.fitted import FittedModel, load_model
from rescue_bench.sim.hearing import hear
from rescue_bench.sim.offline import Fitted, offline_simulator
from rescue_bench.sim.sensitivity import add_sensitivity, compare_variants, order
from rescue_bench.sim.state import reward

OPTS = SimOptions(horizon=5, state="none")
WORDS = {
    "warm": "{name}, I can see how much this is weighing on you. That sounds really painful, and it makes sense.",
    "neutral": "{name}, I want to understand what happened this week, step by step.",
    "off-topic": "{name}, the car park closes at six and the lift on the second floor is broken.",
    "hostile": "{name}, honestly, you are being ridiculous and selfish. Stop whining; nobody cares how you feel.",
}


def _constant_j(clips, reach: str, words: str, sim) -> float:
    """Mean J of an agent that says ``words`` to the same clients at every step."""
    total, n = 0.0, 0
    for clip in clips:
        clients = list(clip.clients)
        if reach == "subgroup" and len(clients) < 3:
            continue
        recipients = {"group": clients, "subgroup": clients[:2], "one client": clients[:1]}[reach]
        name = "everyone" if reach == "group" else " and ".join(recipients)
        for start in episode_starts(clip, OPTS)[0]:
            state, j = start.initial, 0.0
            action = {"intervened": True, "whom": None, "how": "track", "turn": words.format(name=name), "recipients": recipients}
            heard = hear(action, clients, sim.read)
            for t in range(1, OPTS.horizon + 1):
                state, _ = sim.step(state, heard, clients, start.scenario, t)
                j += OPTS.gamma ** (t - 1) * reward(state, OPTS.lam)
            total, n = total + j, n + 1
    return total / n


@pytest.mark.parametrize("data", ["demo", "real"])
@pytest.mark.parametrize("reach", ["group", "subgroup", "one client"])
def test_a_constant_agent_scores_warm_words_above_neutral_and_off_topic_ones_above_hostile_ones(data, reach, request):
    """Found by a reviewer: warm words to the group scored below small talk (a cell of two units
    shrank to "negative"). Now what words do is a stated, monotone assumption, for every reach."""
    clips = load_clips([request.getfixturevalue("real_data")] if data == "real" else None)
    sim = offline_simulator("fitted")
    j = {tone: _constant_j(clips, reach, words, sim) for tone, words in WORDS.items()}
    assert j["warm"] > j["neutral"] > j["hostile"], j
    assert j["warm"] > j["off-topic"] > j["hostile"], j
    assert j["neutral"] == pytest.approx(j["off-topic"])  # neither reads as warm or hostile: the same move


def test_with_the_words_assumptions_at_zero_the_words_change_nothing():
    """The negative control: the order above comes from the stated assumptions, not from elsewhere."""
    model = load_model()
    mute = Fitted(model.model_copy(update={"assumptions": [a.model_copy(update={"value": 0.0}) for a in model.assumptions]}))
    clips = load_clips(None)
    js = {tone: _constant_j(clips, "group", words, mute) for tone, words in WORDS.items()}
    assert max(js.values()) - min(js.values()) < 1e-12, js


@dataclass
class Rounded(Fitted):
    """The fitted simulator with every expected intensity rounded to a grid after each step (the
    rounding the simulator used to have, moved by ``offset``)."""

    grid: float = 0.25
    offset: float = 0.0

    def __init__(self, model: FittedModel, grid: float, offset: float) -> None:
        super().__init__(model)
        self.grid, self.offset = grid, offset

    def step(self, state, heard, clients, scenario, t):
        after, info = super().step(state, heard, clients, scenario, t)
        for e in after.emotions.values():
            e.intensity = float(np.clip(np.floor((e.intensity + self.offset) / self.grid + 0.5) * self.grid, 0, 10))
        return after, info


AGENTS = ("baseline/oracle", "baseline/group", "baseline/distressed", "baseline/attend", "baseline/silent")


def _runs(sim, clips) -> dict[str, list]:
    prior = StrategyPrior(clips)
    starts = [s for clip in clips for s in episode_starts(clip, OPTS)[0]]
    return {a: run_offline([Episode(s, agent=a, options=OPTS, prior=prior, simulator="fitted", model=sim) for s in starts]) for a in AGENTS}


@pytest.mark.slow
def test_moving_the_rounding_or_the_seed_does_not_reorder_agents_where_the_sensitivity_says_the_order_holds():
    """Found by a reviewer: a quarter point of rounding moved the oracle's headline from 0.41 to 0.76
    and swapped two agents. Expected states have no rounding; and where the sensitivity says an order
    holds, rounding the states again (by a quarter point, with the grid moved) does not reorder it."""
    clips = load_clips(None)
    sim = offline_simulator("fitted")
    runs = _runs(sim, clips)
    for records in runs.values():
        add_sensitivity(records, sim, gamma=OPTS.gamma, lam=OPTS.lam)
    mean = {a: np.mean([r["metrics"]["J"] for r in rs]) for a, rs in runs.items()}
    orders = {(a, b): compare_variants(runs[a], runs[b]) for i, a in enumerate(AGENTS) for b in AGENTS[i + 1 :]}
    holding = [pair for pair, o in orders.items() if o and o.holds and o.variants in (o.above, o.below)]  # a strict order in every variant
    assert holding  # some orders hold (silent is below every agent that speaks warmly)
    for offset in (0.0, 0.125):
        rounded = _runs(Rounded(sim.model, 0.25, offset), clips)
        means = {a: np.mean([r["metrics"]["J"] for r in rs]) for a, rs in rounded.items()}
        for a, b in holding:
            assert (means[a] > means[b]) == (mean[a] > mean[b]), (a, b, offset, means[a], means[b])
    for seed in (0, 1):  # the seed draws only the intervals' resamples: J is the same
        assert summarize(runs["baseline/group"], n_resamples=20, seed=seed)["both"].metric("J").value == pytest.approx(mean["baseline/group"])


def test_an_order_holds_only_when_one_side_is_above_in_every_variant():
    assert order([2.0, 1.0, 3.0], [1.0, 0.5, 2.0]).holds
    assert order([0.0, 0.0], [1.0, 2.0]).holds  # below in every variant: an order too
    assert not order([2.0, 0.4], [1.0, 0.5]).holds  # it flips
    assert order([1.0, 1.0], [1.0, 1.0]).holds  # tied in every variant: the same moves, the same place
    assert not order([1.0, 1.5], [1.0, 1.0]).holds  # tied, then above: it rests on the assumptions
    assert order([1.0, None], [0.0, 0.0]) is None
