"""The hidden state of a closed-loop episode and the objective's two terms, U and d.

The state (the paper's Appendix B, Eq. 12-13) is explicit and closed:

* per client: an ``emotion`` (a short phrase), its ``valence`` (:data:`VALENCES`) and its
  ``intensity`` 0-10;
* per ordered pair of clients ``"A->B"``: A's ``stance`` toward B (:data:`STANCES`);
* the active relation ``pattern`` (a label of the scenario's set).

Definitions (docs/decisions.md, "Closed-loop evaluation"):

* distress ``d(s_i) = intensity / 10 * VALENCE_WEIGHT[valence]`` (negative 1, neutral 0.25,
  positive 0), in [0, 1];
* group utility ``U(s, G) = 0.5 * mean over ordered pairs of STANCE_VALUE + 0.5 * PATTERN_VALUE``,
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
    intensity: int = Field(ge=0, le=10)


class HiddenState(BaseModel):
    """The environment's state of the group; never shown to the agent."""

    model_config = ConfigDict(extra="forbid")

    emotions: dict[str, ClientState]
    stances: dict[str, str]
    """``"A->B"`` -> one of :data:`STANCES`, for every ordered pair of clients."""
    pattern: str

    def to_json(self) -> StateJson:
        return cast(StateJson, self.model_dump(mode="json"))


def distress(client: ClientState) -> float:
    """``d(s_i)``: intensity / 10 weighted by valence (see the module doc)."""
    return client.intensity / 10 * VALENCE_WEIGHT[client.valence]


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
    """``U(s, G)``: half the mean stance value over ordered pairs, half the pattern's value."""
    values = [STANCE_VALUE[v] for v in state.stances.values()]
    stance_term = sum(values) / len(values) if values else 0.0
    return 0.5 * stance_term + 0.5 * PATTERN_VALUE.get(state.pattern, 0.0)


def reward(state: HiddenState, lam: float) -> float:
    """One term of J before discounting: ``U(s, G) - lambda * max_i d(s_i)``."""
    return utility(state) - lam * max_distress(state)


def objective(states: list[HiddenState], gamma: float, lam: float) -> float:
    """``J = sum_{t=1..H} gamma^(t-1) (U(s_t, G) - lambda max_i d(s_t,i))`` over the states after each
    step (the initial state is the agent's starting point, not its doing, so it is not counted)."""
    return sum(gamma**t * reward(s, lam) for t, s in enumerate(states))
