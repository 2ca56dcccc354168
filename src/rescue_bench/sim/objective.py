"""The closed loop's objective and metrics: one definition for ``summary.json``, the report and tests.

Per episode (:func:`episode_metrics`, from the record alone):

* ``J``: :func:`rescue_bench.sim.state.objective` over the states after each step, with the run's
  ``gamma`` and ``lambda``;
* ``initial_max_distress``, ``final_max_distress``, ``peak_max_distress`` (the highest after any step);
* ``deescalated``: the final pattern is a repair or constructive state, for episodes that did not
  start in one (``None`` otherwise);
* neglect: at steps with a most distressed client (by the hidden state before the step),
  ``neglect_hits / neglect_turns`` counts the agent's turns that left them out (silence is not a
  turn, as in ``rescue agent eval``) and ``left_out_hits / left_out_steps`` counts every step that
  left them out, silence included;
* ``attention_balance``: the normalised entropy of attention over clients (a turn to k clients gives
  each 1/k), 1 = even, 0 = one client only; ``None`` without a turn to a client;
* ``interventions / steps`` and the invalid agent and simulator steps;
* with a judge: ``judge_sum / judge_n``, the judge's 1-5 rating of each turn the agent took (does it
  carry out its own strategy toward its own target; an unusable turn scores 1).

Aggregates (:data:`METRICS`) are additive like the agent's: each episode contributes a numerator
and a denominator, so the cluster bootstrap over clips is one matrix product.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rescue_bench.labels import SUMMARY_SCENARIOS, in_scenario
from rescue_bench.metrics import AdditiveStatistic, bootstrap_ci
from rescue_bench.sim.state import HiddenState, is_repaired, max_distress, objective

Record = dict[str, Any]
CLUSTER = "sample_id"
SCENARIOS3: tuple[str, ...] = SUMMARY_SCENARIOS


def attention_balance(steps: Sequence[Record], clients: Sequence[str]) -> float | None:
    """Normalised entropy of the attention the agent's turns gave each client (see the module doc)."""
    weights = dict.fromkeys(clients, 0.0)
    for step in steps:
        recipients = step["action"]["recipients"]
        for c in recipients:
            weights[c] += 1 / len(recipients)
    total = sum(weights.values())
    if total == 0 or len(clients) < 2:
        return None
    h = -sum((w / total) * math.log(w / total) for w in weights.values() if w > 0)
    return h / math.log(len(clients))


def episode_metrics(record: Record, *, gamma: float, lam: float) -> dict[str, Any]:
    steps = record["steps"]
    states = [HiddenState.model_validate(s["state"]) for s in steps]
    initial = HiddenState.model_validate(record["initial_state"])
    neglect_hits = neglect_turns = left_hits = left_steps = 0
    for s in steps:
        top = s["top_before"]
        if top is None:
            continue
        out = top not in s["action"]["recipients"]
        left_steps += 1
        left_hits += out
        if s["action"]["intervened"]:
            neglect_turns += 1
            neglect_hits += out
    started_repaired = is_repaired(initial.pattern)
    return {
        "J": objective(states, gamma, lam),
        "gamma": gamma,
        "lambda": lam,
        "initial_max_distress": max_distress(initial),
        "final_max_distress": max_distress(states[-1]) if states else max_distress(initial),
        "peak_max_distress": max(max_distress(s) for s in states) if states else max_distress(initial),
        "initial_pattern": initial.pattern,
        "final_pattern": states[-1].pattern if states else initial.pattern,
        "deescalated": None if started_repaired else bool(states and is_repaired(states[-1].pattern)),
        "neglect_hits": neglect_hits,
        "neglect_turns": neglect_turns,
        "left_out_hits": left_hits,
        "left_out_steps": left_steps,
        "attention_balance": attention_balance(steps, record["clients"]),
        "interventions": sum(bool(s["action"]["intervened"]) for s in steps),
        "steps": len(steps),
        "invalid_agent_steps": sum(any(not v["valid"] for v in s["chain"].values()) or not s["chain"] for s in steps),
        "invalid_simulator_steps": sum(not s["simulator"].get("valid", True) for s in steps),
        "judge_sum": sum(s["judge_strategy"] for s in steps if s.get("judge_strategy") is not None),
        "judge_n": sum(s.get("judge_strategy") is not None for s in steps),
    }


def _mean(key: str) -> Callable[[Record], list[float]]:
    def components(r: Record) -> list[float]:
        value = r["metrics"].get(key)
        return [0.0, 0.0] if value is None else [float(value), 1.0]

    return components


def _ratio(num: str, den: str) -> Callable[[Record], list[float]]:
    def components(r: Record) -> list[float]:
        return [float(r["metrics"][num]), float(r["metrics"][den])]

    return components


def _deescalated(r: Record) -> list[float]:
    value = r["metrics"]["deescalated"]
    return [0.0, 0.0] if value is None else [float(value), 1.0]


def _combine(sums: np.ndarray) -> np.ndarray:
    num, den = sums[..., 0], sums[..., 1]
    out = np.full(np.broadcast(num, den).shape, math.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


@dataclass(frozen=True)
class SimMetric:
    name: str
    kind: str
    """``score`` (J, a signed number), ``distress`` (0-1), ``pct`` (a share), ``balance`` (0-1), ``judge`` (1-5)."""
    components: Callable[[Record], list[float]]
    label: str
    higher_is_better: bool = True

    def statistic(self) -> AdditiveStatistic:
        def components(records: Sequence[Record]) -> np.ndarray:
            return np.array([self.components(r) for r in records], dtype=float).reshape(-1, 2)

        return AdditiveStatistic(components, _combine, f"sim_{self.name}")


METRICS: tuple[SimMetric, ...] = (
    SimMetric("J", "score", _mean("J"), "J (discounted utility minus lambda x max distress)"),
    SimMetric("final_max_distress", "distress", _mean("final_max_distress"), "final max distress", False),
    SimMetric("peak_max_distress", "distress", _mean("peak_max_distress"), "peak max distress", False),
    SimMetric("initial_max_distress", "distress", _mean("initial_max_distress"), "initial max distress (the start)", False),
    SimMetric("deescalation_rate", "pct", _deescalated, "de-escalation (ends in repair/constructive)"),
    SimMetric("neglect_rate", "pct", _ratio("neglect_hits", "neglect_turns"), "neglect: turns leaving the most distressed out", False),
    SimMetric("left_out_rate", "pct", _ratio("left_out_hits", "left_out_steps"), "left out: steps (silence too) leaving them out", False),
    SimMetric("attention_balance", "balance", _mean("attention_balance"), "balance of attention (normalised entropy)"),
    SimMetric("intervention_rate", "pct", _ratio("interventions", "steps"), "intervention rate"),
    SimMetric("turn_judge", "judge", _ratio("judge_sum", "judge_n"), "turn judge: own strategy toward own target (1-5)"),
    SimMetric("invalid_agent_rate", "pct", _ratio("invalid_agent_steps", "steps"), "invalid agent steps", False),
    SimMetric("invalid_simulator_rate", "pct", _ratio("invalid_simulator_steps", "steps"), "invalid simulator steps", False),
)
BY_NAME = {m.name: m for m in METRICS}


def _clean(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def subset(records: Sequence[Record], scenario: str) -> list[Record]:
    return in_scenario(records, scenario)


def summarize(records: Sequence[Record], *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """``{scenario: {"episodes", "clips", metric: {"value", "ci_low", "ci_high", "n"}}}`` with
    percentile cluster-bootstrap intervals over clips."""
    out: dict[str, Any] = {}
    for scenario in SCENARIOS3:
        chosen = subset(records, scenario)
        entry: dict[str, Any] = {"episodes": len(chosen), "clips": len({r[CLUSTER] for r in chosen})}
        for m in METRICS:
            if not chosen:
                entry[m.name] = {"value": None, "ci_low": None, "ci_high": None, "n": 0}
                continue
            stat = m.statistic()
            sums = stat.components(chosen).sum(axis=0)
            low, high = bootstrap_ci(chosen, stat, CLUSTER, n_resamples=n_resamples, confidence=confidence, seed=seed)
            entry[m.name] = {"value": _clean(stat(chosen)), "ci_low": _clean(low), "ci_high": _clean(high), "n": int(sums[1])}
        out[scenario] = entry
    return out


def manipulation_check(a: Sequence[Record], b: Sequence[Record], *, n_resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """J of run ``a`` against run ``b`` on the same episodes: the mean difference and the two-sided
    p-value of the paired permutation test swapping clips (:func:`rescue_bench.metrics.paired_permutation_test`)."""
    from rescue_bench.metrics import paired_permutation_test

    stat = BY_NAME["J"].statistic()
    ids = {r["id"] for r in a} & {r["id"] for r in b}
    a2 = [r for r in a if r["id"] in ids]
    b2 = [r for r in b if r["id"] in ids]
    if not a2:
        return {"episodes": 0, "delta": None, "p_value": None, "a_wins": 0, "b_wins": 0}
    by_b = {r["id"]: r for r in b2}
    delta = _clean(stat(a2) - stat(b2))
    p = paired_permutation_test(a2, b2, stat, CLUSTER, n_resamples=n_resamples, seed=seed, id_key="id")
    wins = [r["metrics"]["J"] - by_b[r["id"]]["metrics"]["J"] for r in a2]
    return {
        "episodes": len(a2),
        "clips": len({r[CLUSTER] for r in a2}),
        "delta": delta,
        "p_value": _clean(p),
        "a_wins": sum(w > 0 for w in wins),
        "b_wins": sum(w < 0 for w in wins),
    }
