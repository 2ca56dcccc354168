"""The offline reference agents of the closed loop: they answer the agent chain's steps in its JSON.

``baseline/silent``  never takes the turn.
``baseline/group``   always addresses the whole group, with the scenario's most frequent strategy.
``baseline/attend``  addresses the client who *looks* most distressed in the transcript it is shown
                     (:func:`observed_distress`: negative minus positive words of the lexicon in each
                     client's latest turn; ties: the latest speaker), with the scenario's most
                     frequent strategy. It never reads the hidden state.
``baseline/distressed`` reads the hidden state: addresses the truly most distressed client with the
                     strategy most often used under the hidden pattern (the rule a careful reader of
                     the state might follow; the simulator decides whether it pays).
``baseline/oracle``  an upper reference that reads the hidden state *and* the offline simulator's own
                     step: of the moves the reference agents make (silence; each target it is
                     offered with each strategy, in the reference words) it takes the one whose next
                     state has the best reward (one step ahead; ties: silence, then the targets in
                     order, the strategy most used under the hidden pattern first). It does not plan
                     past the next step, so it is not the optimum, and nothing makes it beat the
                     constant policies: whether it does is a check of the simulator and the headline.
                     It needs an offline simulator (a model simulator has no step to look ahead with).
``baseline/<method>`` (majority, random, prior, supervised): the baseline chain of ``rescue agent
                     eval`` at the episode's real start point, replayed at every step (its methods
                     learn from annotated rows and cannot read simulated ones; an open-loop floor).

"Most frequent" counts the first strategy of every therapist row of the *other* clips of the run
(never the episode's own clip), ties alphabetical, ``track`` when there is none.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence

from rescue_bench.data.models import Clip
from rescue_bench.labels import is_baseline, strategies
from rescue_bench.sim.lexicon import NEGATIVE_WORDS, POSITIVE_WORDS, words
from rescue_bench.sim.state import HiddenState, most_distressed
from rescue_bench.tasks.instance import RowView
from rescue_bench.tasks.stp import strategy_type

REFERENCE_AGENTS: tuple[str, ...] = ("silent", "group", "attend", "distressed", "oracle")
LOOKAHEAD_AGENTS: tuple[str, ...] = ("oracle",)
"""The reference agents that look ahead with an offline simulator's step."""
FALLBACK_STRATEGY = "track"
TIE = 1e-9
"""Rewards closer than this are a tie (the oracle then takes the earlier move)."""
ATTEND_TURN = "{name}, I can see how much this is weighing on you right now. Can you tell me what is happening for you?"
GROUP_TURN = "I can see how hard this is for each of you. Let's slow down for a moment; I want to hear from each of you about what is happening right now."


def _ranked(counts: Counter[str]) -> str | None:
    return min(counts, key=lambda s: (-counts[s], s)) if counts else None


class StrategyPrior:
    """Strategy counts of the therapist rows per clip, overall and per co-occurring pattern."""

    def __init__(self, clips: Sequence[Clip]) -> None:
        self.overall: dict[str, Counter[str]] = {}
        self.by_pattern: dict[str, Counter[tuple[str, str]]] = {}
        self.scenario: dict[str, str] = {}
        for clip in clips:
            allowed = strategies(clip.scenario)
            self.scenario[clip.sample_id] = clip.scenario
            overall: Counter[str] = Counter()
            paired: Counter[tuple[str, str]] = Counter()
            for row in clip.rows:
                s = strategy_type(row) if row.is_therapist else ""
                if s in allowed:
                    overall[s] += 1
                    if row.cycle_state:
                        paired[(row.cycle_state, s)] += 1
            self.overall[clip.sample_id] = overall
            self.by_pattern[clip.sample_id] = paired

    def most_frequent(self, scenario: str, exclude: str, pattern: str | None = None) -> str:
        total: Counter[str] = Counter()
        for sid, counts in self.overall.items():
            if sid == exclude or self.scenario[sid] != scenario:
                continue
            if pattern is None:
                total.update(counts)
            else:
                total.update({s: n for (p, s), n in self.by_pattern[sid].items() if p == pattern})
        if pattern is not None and not total:
            return self.most_frequent(scenario, exclude)
        return _ranked(total) or FALLBACK_STRATEGY


def observed_distress(transcript: Sequence[RowView], clients: Sequence[str]) -> str | None:
    """The client whose latest turn in ``transcript`` has the most negative minus positive lexicon
    words (ties: the later turn); ``None`` when no client has spoken."""
    latest: dict[str, tuple[int, int]] = {}
    for i, row in enumerate(transcript):
        if row.speaker in clients:
            ws = words(row.text)
            latest[row.speaker] = (sum(w in NEGATIVE_WORDS for w in ws) - sum(w in POSITIVE_WORDS for w in ws), i)
    return max(latest, key=lambda c: latest[c]) if latest else None


Move = tuple[str, str] | None
"""A reference agent's move: ``(target, strategy)``, or ``None`` for silence."""


def reference_turn(target: str, group: str) -> str:
    """The reference agents' words to ``target``."""
    return GROUP_TURN if target == group else ATTEND_TURN.format(name=target)


def reference_answer(
    name: str,
    step: str,
    *,
    clients: Sequence[str],
    group: str,
    scenario: str,
    sample_id: str,
    transcript: Sequence[RowView],
    hidden: HiddenState,
    prior: StrategyPrior,
    targets: Sequence[str] = (),
    ahead: Callable[[Move], float] | None = None,
) -> str:
    """The raw answer of reference agent ``name`` to chain ``step`` (state mode ``none``).

    ``targets``: the targets the agent is offered (default: the clients and the group); ``ahead``:
    the reward of the state one step after a move, by the offline simulator's own step (needed by
    :data:`LOOKAHEAD_AGENTS`)."""
    move = reference_move(
        name, clients=clients, group=group, scenario=scenario, sample_id=sample_id, transcript=transcript,
        hidden=hidden, prior=prior, targets=targets, ahead=ahead,
    )
    if step == "when":
        return json.dumps({"answer": "no" if move is None else "yes"})
    if move is None:
        raise ValueError(f"baseline/{name} stays silent here and answers no {step!r} step")
    target, strategy = move
    if step == "whom_how":
        return json.dumps({"target": target, "strategy": strategy})
    if step == "turn":
        return json.dumps({"turn": reference_turn(target, group)})
    raise ValueError(f"reference agents answer when, whom_how and turn, not {step!r}")


def reference_move(
    name: str, *, clients: Sequence[str], group: str, scenario: str, sample_id: str, transcript: Sequence[RowView],
    hidden: HiddenState, prior: StrategyPrior, targets: Sequence[str] = (), ahead: Callable[[Move], float] | None = None,
) -> Move:
    """The move of reference agent ``name`` (see the module doc)."""
    if name == "silent":
        return None
    if name == "group":
        return group, prior.most_frequent(scenario, sample_id)
    if name == "attend":
        return observed_distress(transcript, clients) or group, prior.most_frequent(scenario, sample_id)
    fitting = prior.most_frequent(scenario, sample_id, hidden.pattern)
    if name == "distressed":
        return most_distressed(hidden, list(clients)) or group, fitting
    if name == "oracle":
        if ahead is None:
            raise ValueError("baseline/oracle looks one step ahead with an offline simulator's own step; a model simulator has none")
        labels = [fitting, *(s for s in strategies(scenario) if s != fitting)]
        moves: list[Move] = [None, *((t, s) for t in (targets or [*clients, group]) for s in labels)]
        rewards = [ahead(m) for m in moves]
        best = max(rewards)
        return moves[next(i for i, r in enumerate(rewards) if r >= best - TIE)]
    raise ValueError(f"unknown reference agent {name!r}")


def agent_kind(model: str) -> tuple[str, str | None]:
    """``("reference", name)``, ``("baseline", method)`` or ``("model", None)`` for an agent name."""
    if is_baseline(model):
        name = model.split("/", 1)[1]
        return ("reference", name) if name in REFERENCE_AGENTS else ("baseline", name)
    return "model", None
