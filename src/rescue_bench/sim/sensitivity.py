"""How a closed-loop ranking moves when the ``fitted`` simulator's assumptions move.

A ranking of agents under a simulator rests on what the simulator assumes (the words' effects,
:data:`rescue_bench.sim.fitted.ASSUMPTIONS`) and on what it learned within an interval. Each
**variant** (:func:`variants`) changes one of them:

* the words' assumed effects scaled by each of :data:`WORD_SCALES` (none to twice the default);
* each learned intensity weight at either end of its 95% interval (the others as fitted);
* a learned valence component replaced by its floor (no change).

Every episode is then played again under every variant (:func:`episode_sensitivity`): the agent's
own steps as the clients heard them (its recorded moves, replayed; a model agent is not asked again,
so a variant that would have changed what it saw is not followed), and every constant policy of the
floors. A run's or a comparison's order **holds** when it is the same in every variant: "A above B in
k of K variants".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rescue_bench.labels import SUMMARY_SCENARIOS, in_scenario
from rescue_bench.sim.fitted import AFFECTS, INTENSITY_FEATURES, NO_AFFECT, FittedModel, rewards, state_arrays
from rescue_bench.sim.hearing import REACHES, SILENCE, hear, move_of, reach
from rescue_bench.sim.record import EpisodeBody, EpisodeRecord, Heard, VariantJ
from rescue_bench.sim.state import HiddenState, stance_term
from rescue_bench.summary import OrderHolds, Sensitivity, VariantRow

WORD_SCALES: tuple[float, ...] = (0.0, 0.5, 2.0)
"""The words' assumed effects, times each of these (1 is the model as fitted)."""
FITTED_VARIANT = "as fitted"


def variants(model: FittedModel) -> list[FittedModel]:
    """The model as fitted, then each variant (see the module doc), named by ``variant``."""
    out = [model.model_copy(update={"variant": FITTED_VARIANT})]
    for scale in WORD_SCALES:
        scaled = [a.model_copy(update={"value": min(a.value * scale, 0.5) if a.component == "valence" else a.value * scale}) for a in model.assumptions]
        out.append(model.model_copy(update={"assumptions": scaled, "variant": f"words' effects x{scale:g}"}))
    if model.intensity.learned:
        effects = [e for e in model.effects if e.component == "intensity" and e.status == "learned"]
        for j, (feature, effect) in enumerate(zip(INTENSITY_FEATURES, effects)):
            if effect.ci is None:
                continue
            for end, value in zip(("low", "high"), effect.ci):
                coef = list(model.intensity.coef[0])
                coef[j] = value
                intensity = model.intensity.model_copy(update={"coef": [coef]})
                out.append(model.model_copy(update={"intensity": intensity, "variant": f"intensity {feature} at its {end} end ({value:+.2f})"}))
    if model.valence.learned:
        floor = model.valence.model_copy(update={"source": "floor", "coef": [], "intercept": []})
        out.append(model.model_copy(update={"valence": floor, "variant": "valence at its floor (no change)"}))
    return out


def play_many(
    model: FittedModel, initial: HiddenState, clients: Sequence[str], scenario: str, plays: Sequence[Sequence[Heard]], *, gamma: float, lam: float
) -> np.ndarray:
    """J of several sequences of steps (``plays``, each as the clients heard it) from ``initial``, all at once."""
    n, horizon = len(plays), max((len(p) for p in plays), default=0)
    x0, p0, q0 = state_arrays(initial, clients, scenario)
    x, p, q = np.repeat(x0[None], n, axis=0), np.repeat(p0[None], n, axis=0), np.repeat(q0[None], n, axis=0)
    stances = stance_term(initial)
    total = np.zeros(n)
    silent = SILENCE
    for t in range(horizon):
        steps = [play[t] if t < len(play) else silent for play in plays]
        reaches = np.array([[REACHES.index(reach(h, c, clients)) for c in clients] for h in steps])
        affect = np.array([NO_AFFECT if h["silent"] or h["affect"] is None else AFFECTS.index(h["affect"]) for h in steps])
        move = np.array([("silence", "one", "several").index(move_of(h)) for h in steps])
        x, p, q = model.step_arrays(x, p, q, reaches, affect, move, scenario)
        live = np.array([t < len(play) for play in plays])
        total += np.where(live, gamma**t * rewards(x, p, q, scenario, stances, lam), 0.0)
    return total


def episode_sensitivity(record: EpisodeBody, models: Sequence[FittedModel], *, gamma: float, lam: float) -> dict[str, VariantJ]:
    """The episode under every variant of ``models`` (:func:`variants`, which share one reader of the
    words): its recorded steps replayed (``None`` when a step has no state: an excluded episode) and
    every constant policy played."""
    from rescue_bench.sim.floors import constant_policies, policy_action

    clients, group, scenario = record["clients"], record["group"], record["scenario"]
    initial = HiddenState.model_validate(record["initial_state"])
    steps = record["steps"]
    complete = all(s.get("state") is not None and not s.get("excluded") for s in steps)
    agent = [s.get("heard") or SILENCE for s in steps]
    policies = constant_policies(scenario)
    read = models[0].read
    plays = [[hear(policy_action(pol, t, clients, group), clients, read) for t in range(1, record["horizon"] + 1)] for pol in policies]
    out: dict[str, VariantJ] = {}
    for model in models:
        js = play_many(model, initial, clients, scenario, [agent, *plays], gamma=gamma, lam=lam)
        out[model.variant] = {
            "J": round(float(js[0]), 6) if complete else None,
            "constant": {pol: round(float(j), 6) for pol, j in zip(policies, js[1:])},
        }
    return out


TIE = 1e-9
"""Mean J closer than this is a tie: neither run is above the other."""


def order(a: Sequence[float | None], b: Sequence[float | None]) -> OrderHolds | None:
    """In how many variants ``a`` lies above ``b`` and below it (each a mean J per variant); the order
    holds when it is the same in every variant: above in all, below in all, or tied in all (the same
    moves played, as a constant policy and the oracle that chose its moves); ``None`` when either is
    missing in a variant."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if not pairs or len(pairs) != len(a):
        return None
    above = sum(x > y + TIE for x, y in pairs)
    below = sum(y > x + TIE for x, y in pairs)
    return OrderHolds(above=above, below=below, variants=len(pairs), holds=len(pairs) in (above, below) or above == below == 0)


def compare_variants(a: Sequence[EpisodeRecord], b: Sequence[EpisodeRecord]) -> OrderHolds | None:
    """In how many variants run ``a``'s mean J lies above run ``b``'s, over the episodes both have
    under every variant (``None`` when the runs carry no sensitivity, or different variants)."""
    by_b = {r["id"]: r for r in b if r.get("sensitivity")}
    pairs = [(r["sensitivity"], by_b[r["id"]]["sensitivity"]) for r in a if r.get("sensitivity") and r["id"] in by_b]
    if not pairs or any(list(x) != list(pairs[0][0]) or list(y) != list(pairs[0][0]) for x, y in pairs):
        return None
    names = list(pairs[0][0])
    both = [(x, y) for x, y in pairs if all(x[v]["J"] is not None and y[v]["J"] is not None for v in names)]
    if not both:
        return None

    def mean(side: int, v: str) -> float:
        return sum(float(p[side][v]["J"] or 0.0) for p in both) / len(both)

    return order([mean(0, v) for v in names], [mean(1, v) for v in names])


def add_sensitivity(records: Sequence[EpisodeRecord], sim: object, *, gamma: float, lam: float) -> None:
    """Give every record its ``sensitivity`` (:func:`episode_sensitivity`) when ``sim`` is the
    ``fitted`` simulator that played them (other simulators have no stated assumptions to vary)."""
    from rescue_bench.sim.offline import Fitted

    if not isinstance(sim, Fitted):
        return
    models = variants(sim.model)
    for r in records:
        r["sensitivity"] = episode_sensitivity(r, models, gamma=gamma, lam=lam)


def summarize_sensitivity(records: Sequence[EpisodeRecord]) -> dict[str, Sensitivity | None]:
    """Per scenario (couple, family, both): each variant's mean J of the agent and of the best
    constant policy of the scenario over the episodes both are known on (the pooled floor is each
    scenario's best policy on its episodes, as the headline's); ``None`` without sensitivity in the records."""
    with_sens = [r for r in records if r.get("sensitivity") and r["metrics"].get("scored", True)]
    if not with_sens:
        return dict.fromkeys(SUMMARY_SCENARIOS)
    names = list(with_sens[0]["sensitivity"])
    out: dict[str, Sensitivity | None] = {}
    for scenario in SUMMARY_SCENARIOS:
        chosen = [r for r in in_scenario(with_sens, scenario) if all(r["sensitivity"][v]["J"] is not None for v in names if v in r["sensitivity"])]
        if not chosen:
            out[scenario] = None
            continue
        rows: list[VariantRow] = []
        for v in names:
            js = [r["sensitivity"][v]["J"] for r in chosen]
            floor = 0.0
            policies: list[str] = []
            for s in ("couple", "family"):
                part = [r["sensitivity"][v]["constant"] for r in chosen if r["scenario"] == s]
                if not part:
                    continue
                means = {p: sum(c[p] for c in part) / len(part) for p in part[0]}
                best = max(means, key=lambda p: (means[p], -list(means).index(p)))
                policies.append(best)
                floor += means[best] * len(part)
            rows.append(VariantRow(variant=v, J=sum(j for j in js if j is not None) / len(js), floor_J=floor / len(chosen),
                                   floor_policy=" / ".join(policies) or None))
        out[scenario] = Sensitivity(variants=rows, above_floor=order([r.J for r in rows], [r.floor_J for r in rows]))
    return out


__all__ = ["FITTED_VARIANT", "WORD_SCALES", "add_sensitivity", "compare_variants", "episode_sensitivity", "order", "play_many", "summarize_sensitivity", "variants"]
