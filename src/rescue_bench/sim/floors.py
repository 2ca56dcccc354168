"""Floors and a ceiling for every episode of an offline simulator: what J is worth.

* **Constant policies** (:func:`constant_policies`): state-free policies that never look at the
  session: a targeting rule (:data:`RULES`: silence, always the group, always the first listed
  client, always the last listed client, the clients in turn) times a fixed strategy of the
  scenario, saying the reference agents' words (:data:`rescue_bench.sim.agents.ATTEND_TURN` to a
  client, :data:`rescue_bench.sim.agents.GROUP_TURN` to the group). Each is played on the episode
  exactly as an agent's steps are (:func:`rescue_bench.sim.hearing.hear`, the simulator's own step).
* **The optimum and the worst** (:func:`search`): the best and the worst J over every sequence of
  steps the simulator can tell apart: silence, or words to any set of clients (a turn reaches its
  declared target and every client it names) with each affect the simulator hears (``fitted``) or
  each strategy label (``scripted``). Exact: the hidden state's transition depends on the state
  and the step alone, so a search over states with memory enumerates every sequence.

Per episode (:func:`episode_reference`): J of every constant policy, the best of them (the floor
that needs no look at the session, chosen with hindsight for this episode), the optimum and the
worst. An episode whose optimum equals its worst is one no action can change. The run's floor is
the single constant policy with the best mean J over the run's episodes of a scenario
(:func:`run_floor`); the headline normalises J between that floor (0) and the optimum (1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from rescue_bench.labels import strategies
from rescue_bench.sim.agents import reference_turn
from rescue_bench.sim.fitted import NO_AFFECT, rewards, state_arrays
from rescue_bench.sim.hearing import REACHES, hear, heard_as, reach
from rescue_bench.sim.offline import Fitted, OfflineSimulator, client_sets
from rescue_bench.sim.reader import AFFECTS
from rescue_bench.sim.record import AgentAction, EpisodeBody, ReferenceJson
from rescue_bench.sim.state import HiddenState, reward, stance_term

RULES: tuple[str, ...] = ("silent", "group", "first", "last", "rotate")
"""The targeting rules of the constant policies."""
SILENT = "silent"
TIE = 1e-9
MAX_TRANSITIONS = 50_000
"""The search's budget for the ``scripted`` rules: an episode whose states need more transitions
than this gets no optimum (their moving stances make four-client families too many to search). The
``fitted`` simulator is searched on arrays, always in full."""


def constant_policies(scenario: str) -> list[str]:
    """Names ``<rule>+<strategy>`` (and ``silent``) of the scenario's constant policies."""
    return [SILENT] + [f"{rule}+{s}" for rule in RULES if rule != SILENT for s in strategies(scenario)]


def policy_action(policy: str, t: int, clients: Sequence[str], group: str) -> AgentAction:
    """The action record of ``policy`` at step ``t`` (1-based), as an agent's step would have it."""
    if policy == SILENT:
        return {"intervened": False, "whom": None, "how": None, "turn": None, "recipients": []}
    rule, strategy = policy.split("+", 1)
    whom = {"group": group, "first": clients[0], "last": clients[-1], "rotate": clients[(t - 1) % len(clients)]}[rule]
    recipients = list(clients) if whom == group else [whom]
    return {"intervened": True, "whom": whom, "how": strategy, "turn": reference_turn(whom, group), "recipients": recipients}


def play(
    sim: OfflineSimulator, initial: HiddenState, clients: Sequence[str], group: str, scenario: str, policy: str, *, horizon: int, gamma: float, lam: float
) -> float:
    """J of a constant policy on an episode."""
    state, total = initial, 0.0
    for t in range(1, horizon + 1):
        heard = hear(policy_action(policy, t, clients, group), clients, sim.read)
        state, _ = sim.step(state, heard, clients, scenario, t)
        total += gamma ** (t - 1) * reward(state, lam)
    return total


def _key(state: HiddenState) -> tuple[Any, ...]:
    return (
        tuple((c, e.valence, e.intensity) for c, e in state.emotions.items()),
        tuple(sorted(state.stances.items())),
        state.pattern,
    )


def search(
    sim: OfflineSimulator, initial: HiddenState, clients: Sequence[str], scenario: str, *, horizon: int, gamma: float, lam: float,
    budget: int = MAX_TRANSITIONS, compact: bool = True,
) -> tuple[float, float] | None:
    """``(optimum, worst)``: the highest and the lowest J over every sequence of distinguishable steps;
    ``None`` when that takes more than ``budget`` transitions. ``compact``: search the ``fitted``
    simulator on arrays (:func:`_search_fitted`: the same numbers, far faster)."""
    if compact and isinstance(sim, Fitted):
        return _search_fitted(sim, initial, clients, scenario, horizon=horizon, gamma=gamma, lam=lam)
    spent = [0]
    successors: dict[tuple[tuple[Any, ...], int], list[tuple[tuple[Any, ...], float]]] = {}
    states: dict[tuple[Any, ...], HiddenState] = {}

    def after(key: tuple[Any, ...], t: int) -> list[tuple[tuple[Any, ...], float]]:
        """The distinct states step ``t`` can lead to from ``key``, with their reward."""
        if (key, t) not in successors:
            state = states[key]
            found: dict[tuple[Any, ...], float] = {}
            steps = sim.distinct_steps(state, clients, scenario)
            spent[0] += len(steps)
            if spent[0] > budget:  # over budget: expand nothing more; the result is dropped below
                return []
            for heard in steps:
                nxt, _ = sim.step(state, heard, clients, scenario, t)
                k = _key(nxt)
                states.setdefault(k, nxt)
                found[k] = reward(nxt, lam)
            successors[(key, t)] = list(found.items())
        return successors[(key, t)]

    @cache
    def value(key: tuple[Any, ...], t: int) -> tuple[float, float]:
        best, worst = -float("inf"), float("inf")
        for k, r in after(key, t):
            hi, lo = value(k, t + 1) if t < horizon else (0.0, 0.0)
            best = max(best, r + gamma * hi)
            worst = min(worst, r + gamma * lo)
        return (best, worst) if best > -float("inf") else (0.0, 0.0)

    states[_key(initial)] = initial
    found = value(_key(initial), 1)
    return None if spent[0] > budget else found


CHUNK = 200_000
"""Most states the search of the ``fitted`` simulator steps at once (it splits larger levels)."""


def _search_fitted(
    sim: Fitted, initial: HiddenState, clients: Sequence[str], scenario: str, *, horizon: int, gamma: float, lam: float
) -> tuple[float, float]:
    """:func:`search` for the ``fitted`` simulator: every sequence of steps played at once on arrays
    (:meth:`rescue_bench.sim.fitted.FittedModel.step_arrays`, the very step an episode takes), its
    expected states never rounded. When the model is monotone
    (:attr:`rescue_bench.sim.fitted.FittedModel.monotone`: warm >= neutral >= hostile for every client
    the words reach, and a calmer state never leads to a less calm one), the optimum says warm words
    and the worst hostile ones to every set of clients: the same optimum and worst as a search over
    every affect (``tests/sim/test_sim_floors.py`` checks it), in far fewer steps; otherwise every
    affect is searched."""
    model = sim.model
    n = len(clients)
    said = [a for a in AFFECTS] if not model.monotone else []
    plans = [(g, a) for g in client_sets(clients) for a in (said or [""])]
    reaches = np.array([[REACHES.index("silence")] * n] + [[REACHES.index(reach(heard_as(g), c, clients)) for c in clients] for g, _ in plans])
    move = np.array([0] + [1 if len(g) == 1 else 2 for g, _ in plans])
    x0, p0, q0 = state_arrays(initial, clients, scenario)
    stances = stance_term(initial)

    def extreme(affect: str, best: bool) -> float:
        affects = np.array([NO_AFFECT] + [AFFECTS.index(a or affect) for _, a in plans])
        b = len(affects)

        def go(x: np.ndarray, p: np.ndarray, q: np.ndarray, total: np.ndarray, t: int) -> float:
            if t > horizon:
                return float(total.max() if best else total.min())
            if len(total) * b > CHUNK and len(total) > 1:
                size = max(1, CHUNK // b)
                parts = [go(x[i : i + size], p[i : i + size], q[i : i + size], total[i : i + size], t) for i in range(0, len(total), size)]
                return max(parts) if best else min(parts)
            m = len(total)
            x2, p2, q2 = model.step_arrays(
                np.repeat(x, b, axis=0), np.repeat(p, b, axis=0), np.repeat(q, b, axis=0),
                np.tile(reaches, (m, 1)), np.tile(affects, m), np.tile(move, m), scenario,
            )
            return go(x2, p2, q2, np.repeat(total, b) + gamma ** (t - 1) * rewards(x2, p2, q2, scenario, stances, lam), t + 1)

        return go(x0[None], p0[None], q0[None], np.zeros(1), 1)

    return extreme("warm", True), extreme("hostile", False)


@dataclass(frozen=True)
class Reference:
    """An episode's floors and ceiling (see the module doc); no optimum when the search is too large."""

    constant: dict[str, float]
    floor: float
    floor_policy: str
    optimum: float | None
    worst: float | None

    @property
    def changeable(self) -> bool | None:
        return None if self.optimum is None or self.worst is None else self.optimum - self.worst > TIE

    def to_json(self) -> ReferenceJson:
        return {
            "constant": self.constant, "floor": self.floor, "floor_policy": self.floor_policy,
            "optimum": self.optimum, "worst": self.worst, "changeable": self.changeable,
        }


_CACHE: dict[tuple[Any, ...], Reference] = {}


def episode_reference(
    sim: OfflineSimulator, initial: HiddenState, clients: Sequence[str], group: str, scenario: str, *, horizon: int, gamma: float, lam: float,
    key: tuple[Any, ...] | None = None,
) -> Reference:
    """J of every constant policy, the best of them, the optimum and the worst on one episode
    (remembered under ``key`` when given: the episode's start, simulator and objective)."""
    if key is not None and key in _CACHE:
        return _CACHE[key]
    constant = {p: play(sim, initial, clients, group, scenario, p, horizon=horizon, gamma=gamma, lam=lam) for p in constant_policies(scenario)}
    best = max(constant, key=lambda p: (constant[p], -list(constant).index(p)))
    found = search(sim, initial, clients, scenario, horizon=horizon, gamma=gamma, lam=lam)
    optimum, worst = found if found is not None else (None, None)
    if optimum is not None and worst is not None:
        # every constant policy is a sequence the search covers: a bound it misses by a float's last
        # bits (the search sums its rewards in another order) is the policy's
        optimum, worst = max(optimum, max(constant.values())), min(worst, min(constant.values()))
    ref = Reference(constant=constant, floor=constant[best], floor_policy=best, optimum=optimum, worst=worst)
    if key is not None:
        _CACHE[key] = ref
    return ref


def run_floor(records: Sequence[EpisodeBody]) -> tuple[str | None, dict[str, float]]:
    """The constant policy with the best mean J over ``records`` (episodes of one scenario, each with
    its reference), and every policy's mean J; ``(None, {})`` without references."""
    refs = [ref for r in records if (ref := r.get("reference"))]
    if not refs:
        return None, {}
    names = [p for p in refs[0]["constant"] if all(p in ref["constant"] for ref in refs)]
    means = {p: sum(ref["constant"][p] for ref in refs) / len(refs) for p in names}
    best = max(names, key=lambda p: (means[p], -names.index(p)))
    return best, means
