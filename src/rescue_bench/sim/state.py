"""The hidden state of a closed-loop episode and the objective's two terms, U and d.

The state (the paper's Appendix B, Eq. 12-13) is explicit and closed:

* per client: an ``emotion`` (a short phrase), its ``valence`` (:data:`VALENCES`) and its
  ``intensity`` 0-10;
* per ordered pair of clients ``"A->B"``: A's ``stance`` toward B (:data:`STANCES`);
* the active relation ``pattern`` (a label of the scenario's set).

A state may be an **expected state** (what the ``fitted`` simulator plays): the intensity is then an
expectation (a real number 0-10), and ``valence_p`` / ``pattern_p`` hold the probability of each
valence and pattern; ``valence`` and ``pattern`` name the most likely one, for display. The
objective's terms are their expectations: no rounding stands between a step and its score. A state
without them (the cards' initial state, a model simulator's) is certain.

Definitions (docs/decisions.md, "Closed-loop evaluation"):

* distress ``d(s_i) = intensity / 10 * E[VALENCE_WEIGHT[valence]]`` (negative 1, neutral 0.25,
  positive 0), in [0, 1];
* group utility ``U(s, G) = 0.5 * mean over ordered pairs of STANCE_VALUE + 0.5 * E[PATTERN_VALUE]``,
  in [-1, 1] (no pair: the stance term is 0).
"""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.sim.record import StateJson

Valence = Literal["negative", "neutral", "positive"]
VALENCES: tuple[str, ...] = ("negative", "neutral", "positive")
VALENCE_WEIGHT: dict[str, float] = {"negative": 1.0, "neutral": 0.25, "positive": 0.0}
"""How much of a client's intensity counts as distress, by valence."""

STANCES: tuple[str, ...] = ("hostile", "guarded", "neutral", "warm")
"""A client's stance toward another, coldest first (the scripted simulator moves one step at a time)."""
STANCE_VALUE: dict[str, float] = {"hostile": -1.0, "guarded": -0.5, "neutral": 0.0, "warm": 1.0}

CONSTRUCTIVE = frozenset({"constructive_alignment", "cooperative_family_alliance"})
REPAIR = frozenset({"repair_softening"})
CONFLICT = frozenset({"attack_attack", "escalation_conflict"})
PATTERN_VALUE: dict[str, float] = {
    "constructive_alignment": 1.0,
    "cooperative_family_alliance": 1.0,
    "repair_softening": 0.5,
    "mixed_transition": 0.0,
    "pursue_withdraw": -0.5,
    "withdraw_withdraw": -0.5,
    "mutual_disengagement": -0.5,
    "cross_generational_coalition": -0.5,
    "boundary_hierarchy_strain": -0.5,
    "attack_attack": -1.0,
    "escalation_conflict": -1.0,
}
"""The pattern term of U: constructive/alliance 1, repair 0.5, mixed 0, distancing and coalition
patterns -0.5, escalating conflict -1."""


def pair_key(source: str, target: str) -> str:
    return f"{source}->{target}"


def pairs(clients: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for a in clients for b in clients if a != b]


def is_repaired(pattern: str) -> bool:
    """The pattern is a repair or constructive state (what de-escalation reaches)."""
    return pattern in REPAIR or pattern in CONSTRUCTIVE


class ClientState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    emotion: str
    valence: Valence
    """The valence (the most likely one in an expected state)."""
    intensity: float = Field(ge=0, le=10, allow_inf_nan=False)
    """0-10: an annotated or a model's integer, or an expectation."""
    valence_p: dict[str, float] | None = None
    """The probability of each valence of :data:`VALENCES` (an expected state); ``None``: certain."""

    def valence_weight(self) -> float:
        """The expected :data:`VALENCE_WEIGHT` of the client's valence."""
        if self.valence_p is None:
            return VALENCE_WEIGHT[self.valence]
        return sum(p * VALENCE_WEIGHT[v] for v, p in self.valence_p.items())


class HiddenState(BaseModel):
    """The environment's state of the group; never shown to the agent."""

    model_config = ConfigDict(extra="forbid")

    emotions: dict[str, ClientState]
    stances: dict[str, str]
    """``"A->B"`` -> one of :data:`STANCES`, for every ordered pair of clients."""
    pattern: str
    """The active pattern (the most likely one in an expected state)."""
    pattern_p: dict[str, float] | None = None
    """The probability of each pattern of the scenario's set (an expected state); ``None``: certain."""

    def pattern_value(self) -> float:
        """The expected :data:`PATTERN_VALUE` of the active pattern."""
        if self.pattern_p is None:
            return PATTERN_VALUE.get(self.pattern, 0.0)
        return sum(p * PATTERN_VALUE.get(k, 0.0) for k, p in self.pattern_p.items())

    def to_json(self) -> StateJson:
        return cast(StateJson, self.model_dump(mode="json", exclude_none=True))


def distress(client: ClientState) -> float:
    """``d(s_i)``: intensity / 10 weighted by the (expected) valence weight (see the module doc)."""
    return client.intensity / 10 * client.valence_weight()


def distresses(state: HiddenState) -> dict[str, float]:
    return {c: distress(s) for c, s in state.emotions.items()}


def max_distress(state: HiddenState) -> float:
    values = distresses(state).values()
    return max(values) if values else 0.0


def most_distressed(state: HiddenState, clients: list[str]) -> str | None:
    """The client with the highest distress (ties: the first in ``clients``), or ``None`` when no one
    is distressed at all."""
    best, top = 0.0, None
    for c in clients:
        if c in state.emotions and (value := distress(state.emotions[c])) > best:
            best, top = value, c
    return top


def utility(state: HiddenState) -> float:
    """``U(s, G)``: half the mean stance value over ordered pairs, half the pattern's (expected) value."""
    return stance_term(state) + 0.5 * state.pattern_value()


def stance_term(state: HiddenState) -> float:
    """The stance half of U: half the mean stance value over ordered pairs (0 without a pair)."""
    values = [STANCE_VALUE[v] for v in state.stances.values()]
    return 0.5 * sum(values) / len(values) if values else 0.0


def reward(state: HiddenState, lam: float) -> float:
    """One term of J before discounting: ``U(s, G) - lambda * max_i d(s_i)``."""
    return utility(state) - lam * max_distress(state)


def objective(states: list[HiddenState], gamma: float, lam: float) -> float:
    """``J = sum_{t=1..H} gamma^(t-1) (U(s_t, G) - lambda max_i d(s_t,i))`` over the states after each
    step (the initial state is the agent's starting point, not its doing, so it is not counted)."""
    return sum(gamma**t * reward(s, lam) for t, s in enumerate(states))
