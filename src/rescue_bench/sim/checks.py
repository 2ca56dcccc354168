"""Checks a simulator must pass before its numbers rank agents, each able to fail.

Pairs of agents that differ in one thing, played on the same episodes (the data's starts, the run's
options), against an offline simulator:

* **words** (must separate): the same target and the same strategy label, the words empathic
  (:data:`rescue_bench.sim.agents.ATTEND_TURN`) or insulting (:data:`INSULT_TURN`). A simulator that
  does not hear words, or a reader that cannot tell these apart, fails: the empathic agent must get
  a higher mean J and a lower J in no episode (an offline simulator is deterministic: a difference is
  the simulator's, not noise). The paired permutation test over clips is shown beside it: how far
  the difference holds across sessions, not only episodes.
* **label** (must not separate): the same target and the same words, another strategy label. A
  client cannot hear a label: any episode whose J differs fails the check (the ``scripted`` smoke
  test reads labels and fails it).
* **order of names** (must not separate): the group addressed by name, in client order or reversed.
* **attend vs group** (reported, passes as ``words`` does): the client who looks most distressed vs
  the whole group, both speaking at every step with the same label; whether attending beats
  addressing everyone is for the simulator to say, not fixed by its construction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from rescue_bench.data.models import Clip
from rescue_bench.labels import strategies
from rescue_bench.sim.agents import ATTEND_TURN, GROUP_TURN, StrategyPrior, reference_move
from rescue_bench.sim.episode import Episode, EpisodeStart, episode_starts
from rescue_bench.sim.objective import compare_runs
from rescue_bench.sim.offline import OfflineSimulator, offline_simulator
from rescue_bench.sim.options import SimOptions
from rescue_bench.sim.record import EpisodeRecord

INSULT_TURN = "{name}, honestly, you are being ridiculous and selfish. Stop whining; nobody cares how you feel."
NAMED_GROUP_TURN = "{names}, let's slow down for a moment; I want to hear from each of you about what is happening right now."
TIE = 1e-9


@dataclass(frozen=True)
class Variant:
    """An agent of the checks: a targeting rule (``attend`` or ``group``), the label, the words."""

    name: str
    rule: str
    words: str = "empathic"
    """``empathic``, ``insult``, ``names`` (the group named in client order) or ``names_reversed``."""
    other_label: bool = False

    def answer(self, step: str, episode: Episode, prior: StrategyPrior) -> str:
        s = episode.start
        if step == "when":
            return json.dumps({"answer": "yes"})
        point = episode.live_point()
        move = reference_move(
            self.rule, clients=s.clients, group=s.group, scenario=s.scenario, sample_id=s.sample_id, transcript=point.context,
            hidden=episode.state, prior=prior,
        )
        assert move is not None  # attend and group always speak
        target, strategy = move
        if self.other_label:
            labels = strategies(s.scenario)
            strategy = labels[(labels.index(strategy) + 1) % len(labels)]
        if step == "whom_how":
            return json.dumps({"target": target, "strategy": strategy})
        if target == s.group:
            names = list(s.clients) if self.words != "names_reversed" else list(reversed(s.clients))
            turn = NAMED_GROUP_TURN.format(names=" and ".join(names)) if self.words.startswith("names") else GROUP_TURN
        else:
            turn = (INSULT_TURN if self.words == "insult" else ATTEND_TURN).format(name=target)
        return json.dumps({"turn": turn})


VARIANTS = {
    v.name: v
    for v in (
        Variant("attend", "attend"),
        Variant("attend_insult", "attend", words="insult"),
        Variant("attend_other_label", "attend", other_label=True),
        Variant("group", "group"),
        Variant("group_named", "group", words="names"),
        Variant("group_named_reversed", "group", words="names_reversed"),
    )
}
CHECKS: tuple[tuple[str, str, str, str], ...] = (
    ("words: empathic vs insulting, same target and label", "attend", "attend_insult", "a better"),
    ("label: another strategy label, same target and words", "attend", "attend_other_label", "same"),
    ("order of names in a group address", "group_named", "group_named_reversed", "same"),
    ("attend vs group, both speaking at every step", "attend", "group", "report"),
)
"""``(check, agent a, agent b, expectation)``: ``a better`` (a separates above b), ``same`` (no
episode differs) or ``report`` (the direction is the simulator's to say)."""


class CheckResult(TypedDict):
    """One check of :func:`simulator_checks` (``summary.json``'s ``checks``): the paired comparison
    of its two agents (:func:`rescue_bench.sim.objective.compare_runs`) and whether it passed."""

    check: str
    a: str
    b: str
    expect: str
    episodes: int
    """Episodes both agents scored."""
    differing: int
    clips: int
    delta: float | None
    p_value: float | None
    a_wins: int
    b_wins: int
    passed: bool
    why: str


def play_variant(start: EpisodeStart, variant: Variant, sim: OfflineSimulator, options: SimOptions, prior: StrategyPrior) -> EpisodeRecord:
    """The record of one episode of a check's agent."""
    episode = Episode(start, agent=f"check/{variant.name}", simulator=sim.name, options=options, model=sim)
    while (request := episode.next_request()) is not None:
        episode.answer(variant.answer(request.step, episode, prior))
    return episode.typed_record()


def simulator_checks(
    clips: Sequence[Clip], simulator: str, options: SimOptions, *, model: Any = None, seed: int = 0, n_resamples: int = 10_000
) -> list[CheckResult]:
    """Every check of :data:`CHECKS` against the offline ``simulator`` on the episodes of ``clips``."""
    sim = offline_simulator(simulator, model)
    if sim is None:
        raise ValueError(f"the checks play an offline simulator, not {simulator!r}")
    opts = options.model_copy(update={"state": "none"})
    starts = [s for clip in clips for s in episode_starts(clip, opts)[0]]
    prior = StrategyPrior(clips)
    needed = {name for _, a, b, _ in CHECKS for name in (a, b)}
    runs = {name: [play_variant(s, VARIANTS[name], sim, opts, prior) for s in starts] for name in needed}
    out: list[CheckResult] = []
    for label, a, b, expect in CHECKS:
        ra, rb = runs[a], runs[b]
        compared = compare_runs(ra, rb, n_resamples=n_resamples, seed=seed)
        js = [(x, y) for ea, eb in zip(ra, rb) if (x := ea["metrics"]["J"]) is not None and (y := eb["metrics"]["J"]) is not None]
        differing = sum(abs(x - y) > TIE for x, y in js)
        if expect == "same":
            passed = differing == 0
            why = "no episode differs" if passed else f"{differing} of {len(js)} episodes differ (mean {compared['delta']:+.3f})"
        elif compared["delta"] is None:
            passed, why = False, "no episode to compare"
        else:
            passed = compared["delta"] > TIE and compared["b_wins"] == 0
            why = (
                f"{a} {compared['delta']:+.3f} J vs {b}; better in {compared['a_wins']}, worse in {compared['b_wins']} of {len(js)} "
                f"episodes; p = {compared['p_value']:.4f} over {compared['clips']} clips"
            )
        out.append({"check": label, "a": a, "b": b, "expect": expect, "episodes": compared["episodes"], "differing": differing,
                    "clips": compared["clips"], "delta": compared["delta"], "p_value": compared["p_value"],
                    "a_wins": compared["a_wins"], "b_wins": compared["b_wins"], "passed": passed, "why": why})
    return out
