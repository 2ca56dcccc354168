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

from rescue_bench.labels import strategies
from rescue_bench.sim.agents import reference_turn
from rescue_bench.sim.fitted import move_of
from rescue_bench.sim.hearing import hear
from rescue_bench.sim.offline import Fitted, OfflineSimulator
from rescue_bench.sim.record import AgentAction, EpisodeBody, ReferenceJson
from rescue_bench.sim.state import PATTERN_VALUE, STANCE_VALUE, VALENCE_WEIGHT, HiddenState, reward

RULES: tuple[str, ...] = ("silent", "group", "first", "last", "rotate")
"""The targeting rules of the constant policies."""
SILENT = "silent"
TIE = 1e-9
MAX_TRANSITIONS = 50_000
"""The search's budget for the ``scripted`` rules: an episode whose states need more transitions
than this gets no optimum (their moving stances make four-client families too many to search). The
``fitted`` simulator keeps stances and is searched on a compact state, always in full."""


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
    simulator on its compact state (the same numbers, faster)."""
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


def _search_fitted(
    sim: Fitted, initial: HiddenState, clients: Sequence[str], scenario: str, *, horizon: int, gamma: float, lam: float
) -> tuple[float, float]:
    """:func:`search` for the ``fitted`` simulator on a compact state (each client's valence and
    intensity, the pattern; its stances never move), through the model's own per-client step and
    pattern step: the same transition, without building a state per step."""
    model = sim.model
    plans = [
        (tuple(h.exposure(c) for c in clients), None if h.silent else h.affect, move_of(h))
        for h in sim.distinct_steps(initial, clients, scenario)
    ]
    stances = [STANCE_VALUE[v] for v in initial.stances.values()]
    stance_term = 0.5 * (sum(stances) / len(stances) if stances else 0.0)
    step_of: dict[tuple[Any, ...], tuple[str, int]] = {}

    def client(v: str, x: int, exposure: str, affect: str | None, t: int, i: int) -> tuple[str, int]:
        key = (v, x, exposure, affect, t, i)
        if key not in step_of:
            step_of[key] = model.client_step(v, x, exposure, affect if exposure in ("alone", "group") else None, t, i)
        return step_of[key]

    def reward_of(people: tuple[tuple[str, int], ...], pattern: str) -> float:
        top = max((x / 10 * VALENCE_WEIGHT[v] for v, x in people), default=0.0)
        return stance_term + 0.5 * PATTERN_VALUE.get(pattern, 0.0) - lam * top

    @cache
    def value(people: tuple[tuple[str, int], ...], pattern: str, t: int) -> tuple[float, float]:
        best, worst = -float("inf"), float("inf")
        for exposures, affect, move in plans:
            nxt = tuple(client(v, x, exposures[i], affect, t, i) for i, (v, x) in enumerate(people))
            p = model.next_pattern(pattern, move)
            r = reward_of(nxt, p)
            hi, lo = value(nxt, p, t + 1) if t < horizon else (0.0, 0.0)
            best = max(best, r + gamma * hi)
            worst = min(worst, r + gamma * lo)
        return best, worst

    start = tuple((initial.emotions[c].valence, initial.emotions[c].intensity) for c in clients)
    return value(start, initial.pattern, 1)


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
