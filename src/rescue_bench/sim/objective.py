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
* ``interventions / steps`` and the invalid agent steps (a step with an unusable answer, or a turn
  taken with no words the clients hear) and invalid simulator steps;
* with a judge: ``judge_sum / judge_n``, the judge's 1-5 rating of each turn the agent took (does it
  carry out its own strategy toward its own target; an unusable turn scores 1).

Aggregates (:data:`METRICS`) are additive like the agent's: each episode contributes a numerator
and a denominator, so the cluster bootstrap over clips is one matrix product.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

import numpy as np

from rescue_bench.agent.metrics import leaves_out, whole_group
from rescue_bench.labels import SUMMARY_SCENARIOS, in_scenario
from rescue_bench.metrics import AdditiveStatistic, bootstrap_ci
from rescue_bench.sim.record import EpisodeBody, EpisodeMetrics, EpisodeRecord, EpisodeStep, Heard, StateJson
from rescue_bench.sim.state import HiddenState, is_repaired, max_distress, objective
from rescue_bench.summary import Interval, SimEntry

CLUSTER = "sample_id"
"""The records' field the intervals resample (clips)."""
SCENARIOS3: tuple[str, ...] = SUMMARY_SCENARIOS


def _heard(step: EpisodeStep) -> list[str]:
    """The clients a step's words reached (none: silence, or an empty or unusable turn)."""
    heard = step.get("heard")
    if heard is not None:
        return list(heard["recipients"])
    return list(step["action"]["recipients"]) if step["action"].get("intervened", True) else []


def _wordless(step: EpisodeStep) -> bool:
    """The agent took the turn and said nothing the clients hear (``"."``): heard as silence, and
    as unusable an answer as an empty turn."""
    heard = step.get("heard")
    return bool(step["action"].get("intervened") and heard is not None and heard["silent"])


def attention_balance(steps: Sequence[EpisodeStep], clients: Sequence[str]) -> float | None:
    """Normalised entropy of the attention the agent's turns gave each client (see the module doc)."""
    weights = dict.fromkeys(clients, 0.0)
    for step in steps:
        recipients = _heard(step)
        for c in recipients:
            weights[c] += 1 / len(recipients)
    total = sum(weights.values())
    if total == 0 or len(clients) < 2:
        return None
    h = -sum((w / total) * math.log(w / total) for w in weights.values() if w > 0)
    return h / math.log(len(clients))


def episode_metrics(record: EpisodeBody, *, gamma: float, lam: float) -> EpisodeMetrics:
    steps = record["steps"]
    clients = record["clients"]
    initial = HiddenState.model_validate(record["initial_state"])
    complete = not any(s.get("excluded") or s.get("state") is None for s in steps)
    states = [HiddenState.model_validate(s["state"]) for s in steps] if complete else []
    ref = record.get("reference")
    changeable = ref.get("changeable") if ref else None
    J = objective(states, gamma, lam) if complete else None
    scored = J is not None and changeable is not False
    neglect_hits = neglect_turns = group_turns = left_hits = left_steps = 0
    for s in steps:
        top = s["top_before"]
        if top is None:
            continue
        recipients = _heard(s)
        out = leaves_out(recipients, top, clients)
        left_steps += 1
        left_hits += out
        if recipients:
            neglect_turns += 1
            neglect_hits += out
            group_turns += whole_group(recipients, clients)
    started_repaired = is_repaired(initial.pattern)
    chains = [s["chain"] for s in steps]
    attempts = [s["simulator"].get("raw") or [] for s in steps]
    metrics: EpisodeMetrics = {
        "J": J,
        "scored": scored,
        "changeable": changeable,
        "regret": optimum - J if J is not None and scored and ref and (optimum := ref.get("optimum")) is not None else None,
        "floor_J": ref["floor"] if scored and ref else None,
        "optimum_J": ref["optimum"] if scored and ref else None,
        "worst_J": ref["worst"] if scored and ref else None,
        "gamma": gamma,
        "lambda": lam,
        "initial_max_distress": max_distress(initial),
        "final_max_distress": (max_distress(states[-1]) if states else max_distress(initial)) if complete else None,
        "peak_max_distress": (max(max_distress(s) for s in states) if states else max_distress(initial)) if complete else None,
        "initial_pattern": initial.pattern,
        "final_pattern": (states[-1].pattern if states else initial.pattern) if complete else None,
        "deescalated": None if started_repaired or not complete else bool(states and is_repaired(states[-1].pattern)),
        "neglect_hits": neglect_hits,
        "neglect_turns": neglect_turns,
        "group_turns": group_turns,
        "left_out_hits": left_hits,
        "left_out_steps": left_steps,
        "attention_balance": attention_balance(steps, clients),
        "interventions": sum(bool(s["action"]["intervened"]) for s in steps),
        "steps": len(steps),
        "excluded": not complete,
        "excluded_steps": sum(bool(s.get("excluded") or s.get("state") is None) for s in steps),
        "invalid_agent_steps": sum(any(not v["valid"] for v in c.values()) or not c or _wordless(s) for c, s in zip(chains, steps)),
        "agent_failed_steps": sum(bool(s.get("agent_failed")) for s in steps),
        "agent_calls": sum(v["raw"] is not None for c in chains for v in c.values()),
        "invalid_simulator_steps": sum(not s["simulator"].get("valid", True) for s in steps),
        "simulator_calls": sum(raw is not None for a in attempts for raw in a),
        "simulator_failed_calls": sum(raw is None for a in attempts for raw in a),
        "judge_sum": sum(s["judge_strategy"] for s in steps if s.get("judge_strategy") is not None),
        "judge_n": sum(s.get("judge_strategy") is not None for s in steps),
    }
    return metrics


def _metric(r: EpisodeRecord, key: str) -> float | bool | None:
    """The metric called ``key`` of a record (``None`` when it has none): a :class:`SimMetric` names the one it reads."""
    return cast(dict[str, float | bool | None], r["metrics"]).get(key)


def _mean(key: str) -> Callable[[EpisodeRecord], list[float]]:
    def components(r: EpisodeRecord) -> list[float]:
        value = _metric(r, key)
        return [0.0, 0.0] if value is None else [float(value), 1.0]

    return components


def _scored(key: str) -> Callable[[EpisodeRecord], list[float]]:
    """The mean of ``key`` over the scored episodes (complete, and changeable by some action)."""

    def components(r: EpisodeRecord) -> list[float]:
        value = _metric(r, key)
        return [0.0, 0.0] if value is None or not r["metrics"].get("scored", True) else [float(value), 1.0]

    return components


def _ratio(num: str, den: str) -> Callable[[EpisodeRecord], list[float]]:
    def components(r: EpisodeRecord) -> list[float]:
        n, d = _metric(r, num), _metric(r, den)
        assert n is not None and d is not None  # the counts every episode has
        return [float(n), float(d)]

    return components


def _deescalated(r: EpisodeRecord) -> list[float]:
    value = r["metrics"]["deescalated"]
    return [0.0, 0.0] if value is None else [float(value), 1.0]


def _share(flag: str) -> Callable[[EpisodeRecord], list[float]]:
    def components(r: EpisodeRecord) -> list[float]:
        value = _metric(r, flag)
        return [0.0, 0.0] if value is None else [float(bool(value)), 1.0]

    return components


def _unchangeable(r: EpisodeRecord) -> list[float]:
    value = r["metrics"].get("changeable")
    return [0.0, 0.0] if value is None else [float(not value), 1.0]


TIE = 1e-9
"""Differences of J below this are sums' rounding, not room: an optimum this close to the floor is the floor."""


def _gain(r: EpisodeRecord) -> list[float]:
    """J above the run's floor, over the optimum above it (only where both are known)."""
    m = r["metrics"]
    floor, optimum, J = m.get("run_floor_J"), m.get("optimum_J"), m["J"]
    if floor is None or optimum is None:
        return [0.0, 0.0]
    assert J is not None  # an episode with an optimum is scored, so it has J
    room = optimum - floor
    gain = J - floor
    return [gain if abs(gain) > TIE else 0.0, room if room > TIE else 0.0]


def _room(r: EpisodeRecord) -> list[float]:
    """The optimum above the run's floor, over the optimum above the worst (only where all are known)."""
    m = r["metrics"]
    floor, optimum, worst = m.get("run_floor_J"), m.get("optimum_J"), m.get("worst_J")
    if floor is None or optimum is None or worst is None:
        return [0.0, 0.0]
    return [max(optimum - floor, 0.0), optimum - worst]


SMALL_ROOM = 0.10
"""Below this share of what actions can change, the room a constant policy leaves is small and a
normalised score is a large multiple of small differences of J: the command and the report say so."""


def small_room_warning(rooms: Mapping[str, float | None], where: str) -> str | None:
    """One warning for a run whose ``room`` (the metric, per scenario) is under :data:`SMALL_ROOM` in
    any scenario, naming each such scenario and its room; ``None`` when every known room is larger."""
    small = {s: r for s, r in rooms.items() if r is not None and r < SMALL_ROOM}
    if not small:
        return None
    shares = ", ".join(f"{s} {100 * r:.1f}%" for s, r in small.items())
    none = all(r <= TIE for r in small.values())
    what = "a constant policy is the optimum, so the normalised score is empty" if none else (
        "normalised scores are large multiples of small differences of J")
    return (
        f"{where}: little to win: the run's best constant policy lies within {shares} of the optimum, on the span of J from the "
        f"worst to the optimum; {what}"
    )


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
    components: Callable[[EpisodeRecord], list[float]]
    label: str
    higher_is_better: bool = True

    def statistic(self) -> AdditiveStatistic:
        def components(records: Sequence[EpisodeRecord]) -> np.ndarray:
            return np.array([self.components(r) for r in records], dtype=float).reshape(-1, 2)

        return AdditiveStatistic(components, _combine, f"sim_{self.name}")


HEADLINE = "normalised"
METRICS: tuple[SimMetric, ...] = (
    SimMetric(HEADLINE, "ratio", _gain, "normalised J (headline): 0 = the run's best constant policy, 1 = the optimum"),
    SimMetric("J", "score", _scored("J"), "J (discounted utility minus lambda x max distress)"),
    SimMetric("run_floor_J", "score", _mean("run_floor_J"), "floor: J of the run's best constant policy"),
    SimMetric("floor_J", "score", _mean("floor_J"), "floor: J of each episode's best constant policy (hindsight)"),
    SimMetric("optimum_J", "score", _mean("optimum_J"), "ceiling: J of the optimum"),
    SimMetric("regret", "score", _mean("regret"), "regret: the optimum's J minus J", False),
    SimMetric("room", "pct", _room, "room: the optimum above the run's floor, of the optimum above the worst"),
    SimMetric("final_max_distress", "distress", _mean("final_max_distress"), "final max distress", False),
    SimMetric("peak_max_distress", "distress", _mean("peak_max_distress"), "peak max distress", False),
    SimMetric("initial_max_distress", "distress", _mean("initial_max_distress"), "initial max distress (the start)", False),
    SimMetric("deescalation_rate", "pct", _deescalated, "de-escalation (ends in repair/constructive)"),
    SimMetric("neglect_rate", "pct", _ratio("neglect_hits", "neglect_turns"), "neglect: turns leaving the most distressed out (the group too)", False),
    SimMetric("group_address_rate", "pct", _ratio("group_turns", "neglect_turns"), "of those turns: to the whole group"),
    SimMetric("left_out_rate", "pct", _ratio("left_out_hits", "left_out_steps"), "left out: steps (silence too) leaving them out", False),
    SimMetric("attention_balance", "balance", _mean("attention_balance"), "balance of attention (normalised entropy)"),
    SimMetric("intervention_rate", "pct", _ratio("interventions", "steps"), "intervention rate"),
    SimMetric("turn_judge", "judge", _ratio("judge_sum", "judge_n"), "turn judge: own strategy toward own target (1-5)"),
    SimMetric("invalid_agent_rate", "pct", _ratio("invalid_agent_steps", "steps"), "invalid agent steps", False),
    SimMetric("invalid_simulator_rate", "pct", _ratio("invalid_simulator_steps", "steps"), "invalid simulator steps", False),
    SimMetric("excluded_rate", "pct", _share("excluded"), "episodes excluded (a step without a usable answer)", False),
    SimMetric("unchangeable_rate", "pct", _unchangeable, "episodes no action can change (excluded from J)", False),
)
BY_NAME = {m.name: m for m in METRICS}
MIN_CLIPS_FOR_INTERVAL = 3
"""Fewest clips a closed-loop interval is computed from: with two, a percentile interval over clips
covers a 95% target about half the time (``bench/bootstrap_coverage.py --kind score``)."""


def _clean(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def subset(records: Sequence[EpisodeRecord], scenario: str) -> list[EpisodeRecord]:
    return in_scenario(records, scenario)


def with_run_floor(records: Sequence[EpisodeRecord]) -> tuple[list[EpisodeRecord], dict[str, str | None]]:
    """Copies of ``records`` whose metrics carry ``run_floor_J`` (J of the run's best constant policy
    of the episode's scenario on that episode, :func:`rescue_bench.sim.floors.run_floor`, over the
    scored episodes), and that policy per scenario."""
    from rescue_bench.sim.floors import run_floor

    policies: dict[str, str | None] = {}
    for scenario in ("couple", "family"):
        scored = [r for r in records if r["scenario"] == scenario and r["metrics"].get("scored") and r.get("reference")]
        policies[scenario] = run_floor(scored)[0]
    out: list[EpisodeRecord] = []
    for r in records:
        policy = policies.get(r["scenario"])
        ref = r.get("reference")
        floor = ref["constant"].get(policy) if r["metrics"].get("scored") and ref and policy else None
        metrics: EpisodeMetrics = {**r["metrics"], "run_floor_J": floor}
        out.append({**r, "metrics": metrics})
    return out, policies


def interval_note(clips: int, confidence: float) -> str:
    """Why a number has no interval, or how often its interval covers (measured)."""
    from rescue_bench.metrics import level_text, measured_coverage

    if clips < MIN_CLIPS_FOR_INTERVAL:
        return f"no interval: {clips} clip{'s' if clips != 1 else ''} (an interval needs {MIN_CLIPS_FOR_INTERVAL})"
    share = measured_coverage(clips, confidence, kind="score")
    return f"{level_text(confidence)} CI covers ~{round(100 * share)}% at {clips} clips" if share is not None else "coverage not measured"


def summarize(
    records: Sequence[EpisodeRecord] | Sequence[dict[str, Any]], *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> dict[str, SimEntry]:
    """Per scenario: ``episodes``, ``clips``, ``floor_policy``, ``interval``, every metric of
    :data:`METRICS` with its percentile cluster-bootstrap interval over clips (the pooled ones
    resample within each scenario; none below :data:`MIN_CLIPS_FOR_INTERVAL` clips) and, under a
    ``fitted`` simulator, ``sensitivity`` (:func:`rescue_bench.sim.sensitivity.summarize_sensitivity`).
    ``records``: the episodes' records as the engine made them, or the lines of ``results/sim.jsonl`` as read."""
    from rescue_bench.sim.sensitivity import summarize_sensitivity

    typed, policies = with_run_floor(_typed(records))
    sensitivity = summarize_sensitivity(typed)
    out: dict[str, SimEntry] = {}
    for scenario in SCENARIOS3:
        chosen = subset(typed, scenario)
        clips = len({r["sample_id"] for r in chosen})
        floor = policies.get(scenario) if scenario in policies else " / ".join(f"{k}: {v}" for k, v in policies.items() if v)
        entry: dict[str, Any] = {"episodes": len(chosen), "clips": clips, "floor_policy": floor or None,
                                 "interval": interval_note(clips, confidence)}
        for m in METRICS:
            if not chosen:
                entry[m.name] = Interval(value=None, ci_low=None, ci_high=None, n=0)
                continue
            stat = m.statistic()
            sums = stat.components(chosen).sum(axis=0)
            low = high = None
            if clips >= MIN_CLIPS_FOR_INTERVAL:
                strata = "scenario" if scenario not in policies else None  # the pooled number keeps each scenario's clips
                lo, hi = bootstrap_ci(chosen, stat, CLUSTER, n_resamples=n_resamples, confidence=confidence, seed=seed, strata=strata)
                low, high = _clean(lo), _clean(hi)
            entry[m.name] = Interval(value=_clean(stat(chosen)), ci_low=low, ci_high=high, n=int(sums[1]))
        if sensitivity.get(scenario) is not None:
            entry["sensitivity"] = sensitivity[scenario]
        out[scenario] = SimEntry.model_validate(entry)
    return out


def _typed(lines: Sequence[object]) -> list[EpisodeRecord]:
    """The lines of ``results/sim.jsonl`` (plain dicts), typed: they are what :meth:`rescue_bench.sim.Episode.record` wrote."""
    return [cast(EpisodeRecord, r) for r in lines]


class PairedComparison(TypedDict):
    episodes: int
    clips: int
    delta: float | None
    p_value: float | None
    a_wins: int
    b_wins: int


def paired_comparison(
    a_records: Sequence[dict[str, Any]], b_records: Sequence[dict[str, Any]], *, n_resamples: int = 10_000, seed: int = 0
) -> PairedComparison:
    """:func:`compare_runs` of two runs' lines of ``results/sim.jsonl``."""
    return compare_runs(_typed(a_records), _typed(b_records), n_resamples=n_resamples, seed=seed)


def compare_runs(a: Sequence[EpisodeRecord], b: Sequence[EpisodeRecord], *, n_resamples: int = 10_000, seed: int = 0) -> PairedComparison:
    """J of run ``a`` against run ``b`` on the episodes both scored: the mean difference and the
    two-sided p-value of the paired permutation test swapping clips
    (:func:`rescue_bench.metrics.paired_permutation_test`)."""
    from rescue_bench.metrics import paired_permutation_test

    stat = BY_NAME["J"].statistic()
    ids = {r["id"] for r in a if r["metrics"].get("scored", True)} & {r["id"] for r in b if r["metrics"].get("scored", True)}
    a2 = [r for r in a if r["id"] in ids]
    b2 = [r for r in b if r["id"] in ids]
    if not a2:
        return {"episodes": 0, "clips": 0, "delta": None, "p_value": None, "a_wins": 0, "b_wins": 0}
    by_b = {r["id"]: r for r in b2}
    delta = _clean(stat(a2) - stat(b2))
    p = paired_permutation_test(a2, b2, stat, CLUSTER, n_resamples=n_resamples, seed=seed, id_key="id")
    wins = [cast(float, r["metrics"]["J"]) - cast(float, by_b[r["id"]]["metrics"]["J"]) for r in a2]
    return {
        "episodes": len(a2),
        "clips": len({r["sample_id"] for r in a2}),
        "delta": delta,
        "p_value": _clean(p),
        "a_wins": sum(w > 1e-9 for w in wins),
        "b_wins": sum(w < -1e-9 for w in wins),
    }


class Feeling(TypedDict):
    valence: str
    intensity: float


class StepBreakdown(TypedDict):
    """One step of :func:`breakdown`."""

    t: int
    most_distressed: str | None
    their_distress: float | None
    spoke: bool
    whom: str | None
    how: str | None
    turn: str | None
    heard: Heard
    wordless: bool
    left_out: bool | None
    group_address: bool
    distress_before: dict[str, float]
    distress_after: dict[str, float] | None
    feeling_before: dict[str, Feeling]
    feeling_after: dict[str, Feeling] | None
    pattern_before: str
    pattern_after: str | None
    utility: float | None
    reward: float | None


def breakdown(episode: dict[str, Any]) -> list[StepBreakdown]:
    """The episode step by step, for a person to read after it (the practice page). Per step:

    * ``most_distressed`` before it (by the hidden state, ``None`` when no one is) and
      ``their_distress``;
    * the move: ``spoke`` (the agent took the turn), ``whom``, ``how`` (the declared strategy) and
      ``turn`` (the words);
    * ``heard``: how the clients heard it (``silent``, ``recipients``, ``affect``, ``named``);
      ``wordless``: the agent took the turn with no words the clients hear (heard as silence);
    * ``left_out``: the step left the most distressed client out by the one neglect rule
      (:func:`rescue_bench.agent.metrics.leaves_out`: silence, someone else, or the whole group;
      ``None`` without a most distressed client) and ``group_address``: the words reached every client;
    * what it did: each client's distress, feeling (valence and intensity: never the emotion's
      words, which may come from annotations) and the pattern before and after, the relational
      utility after and the step's reward (``None`` after a step without a usable simulator answer).
    """
    from rescue_bench.sim.state import distresses

    def feelings(state: StateJson) -> dict[str, Feeling]:
        return {c: {"valence": e["valence"], "intensity": e["intensity"]} for c, e in state["emotions"].items()}

    record = cast(EpisodeRecord, episode)
    clients = record["clients"]
    initial = HiddenState.model_validate(record["initial_state"])
    before, pattern, feeling = distresses(initial), initial.pattern, feelings(record["initial_state"])
    out: list[StepBreakdown] = []
    for step in record["steps"]:
        action = step["action"]
        recipients = _heard(step)
        heard: Heard = step.get("heard") or {"recipients": recipients, "affect": None, "named": [], "silent": not recipients}
        after = step.get("distress")
        state = step.get("state")
        top = step["top_before"]
        out.append(
            {
                "t": step["t"],
                "most_distressed": top,
                "their_distress": before.get(top) if top else None,
                "spoke": bool(action.get("intervened")),
                "whom": action.get("whom"),
                "how": action.get("how"),
                "turn": action.get("turn"),
                "heard": heard,
                "wordless": _wordless(step),
                "left_out": None if top is None else leaves_out(recipients, top, clients),
                "group_address": whole_group(recipients, clients),
                "distress_before": dict(before),
                "distress_after": after,
                "feeling_before": feeling,
                "feeling_after": feelings(state) if state else None,
                "pattern_before": pattern,
                "pattern_after": state["pattern"] if state else None,
                "utility": step.get("utility"),
                "reward": step.get("reward"),
            }
        )
        before = after if after is not None else before
        pattern = state["pattern"] if state else pattern
        feeling = feelings(state) if state else feeling
    return out
