"""The chain's metrics: one definition, used by ``summary.json``, the report's intervals and tests.

Every metric is *additive*: each chain record contributes a few numbers (components) and the metric
is a formula of their sums, so a summary is a sum over records and a cluster bootstrap over clips is
one matrix product (:class:`rescue_bench.metrics.AdditiveStatistic`). Most are ratios
``sum(hits) / sum(counted)``; the timing metrics use the four cells of ITP's confusion matrix and
follow :func:`rescue_bench.metrics.binary_metrics` exactly (an invalid answer is the opposite of the
gold; ill-defined precision/recall/F1 are 0). A ratio whose denominator is 0 (nothing to count in a
scenario) is undefined (``None``), as is a judged mean while a judge score is missing (no
``--judge``): ``NaN`` components propagate through the sums.

Metrics by group (``kind``: ``pct`` a fraction, ``judge`` a 1-5 score, ``bert`` BERTScore F1):

steps       ``when_precision/recall/f1/accuracy`` (as ITP, over all points);
            ``whom_recall_at_1`` (as STP, over points whose gold names a target; a point where the
            agent stays silent is a miss); ``how_recall_at_1`` (as SSP, the strategy the agent chose
            with *its own* target, over points whose gold names a strategy); ``how_given_gold_target``
            (the branch: told the gold target); ``joint`` (over points with complete gold: silent at
            a ``no``; at a ``yes``, speaking to the gold target with the gold strategy).
chain       where the chain breaks: ``whom_given_intervened``, ``how_given_intervened`` (points where
            the agent spoke), ``how_given_right_target`` (where it also chose the gold target).
state       ``pattern_accuracy`` (as RPP top-1), ``emotion_intensity/judge/score/bertscore`` (as ER,
            per client with gold), ``stance_judge/bertscore`` (as VP, per source client with gold).
turn        ``turn_judge_real`` (1-5 against the real therapist turn), ``turn_judge_strategy`` (1-5:
            does it do the gold strategy toward the gold target?), ``turn_bertscore`` (against the
            real turn); over points where the therapist spoke and the agent took the turn.
neglect     ``neglect_agent`` / ``neglect_therapist``: share of turns taken at points with a clearly
            most distressed client that leave that client out (see ``rescue_bench.agent.points``).
validity    ``invalid_<step>``: share of the step's answers that were unusable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from rescue_bench.labels import SUMMARY_SCENARIOS as LABEL_SUMMARY_SCENARIOS
from rescue_bench.labels import in_scenario
from rescue_bench.metrics import AdditiveStatistic

if TYPE_CHECKING:
    from rescue_bench.agent.record import AgentRecord, ChainPrediction

NAN = math.nan


def _ratio(sums: np.ndarray) -> np.ndarray:
    num, den = sums[..., 0], sums[..., 1]
    out = np.full(np.broadcast(num, den).shape, NAN)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _zero_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return np.where(np.isnan(num) | np.isnan(den), NAN, out)


def _when_cells(r: AgentRecord) -> list[float]:
    """tp, fp, fn, tn of the timing step; an unusable answer is the opposite of the gold (ITP)."""
    positive = r["gold"]["when"] == "yes"
    pred = r["prediction"]["when"]
    said_yes = (not positive) if pred not in ("yes", "no") else pred == "yes"
    return [positive and said_yes, (not positive) and said_yes, positive and not said_yes, (not positive) and not said_yes]


def _when_combine(metric: str) -> Callable[[np.ndarray], np.ndarray]:
    def combine(s: np.ndarray) -> np.ndarray:
        tp, fp, fn, tn = s[..., 0], s[..., 1], s[..., 2], s[..., 3]
        if metric == "precision":
            return _zero_div(tp, tp + fp)
        if metric == "recall":
            return _zero_div(tp, tp + fn)
        if metric == "f1":
            return _zero_div(2 * tp, 2 * tp + fp + fn)
        return _ratio(np.stack([tp + tn, tp + fp + fn + tn], axis=-1))

    return combine


def _p(r: AgentRecord, key: str) -> Any:
    return r["prediction"].get(key)


def _g(r: AgentRecord, key: str) -> Any:
    return r["gold"].get(key)


def _hit(pred: Any, gold: Any) -> float:
    return float(pred is not None and pred == gold)


def _intervened(r: AgentRecord) -> bool:
    return _p(r, "when") == "yes"


def _whom(r: AgentRecord) -> list[float]:
    g = _g(r, "whom")
    return [_hit(_p(r, "whom"), g), float(g is not None)]


def _how(r: AgentRecord) -> list[float]:
    g = _g(r, "how")
    return [_hit(_p(r, "how"), g), float(g is not None)]


def _how_gold(r: AgentRecord) -> list[float]:
    g = _g(r, "how")
    if g is None:
        return [0.0, 0.0]
    if not r.get("branch", True):  # the branch was switched off: not measured
        return [NAN, 1.0]
    return [_hit(_p(r, "how_given_gold"), g), 1.0]


def _joint_parts(r: AgentRecord) -> list[float]:
    """hit and count at a ``yes`` point with complete gold, then hit and count at a ``no`` point."""
    if _g(r, "when") == "no":
        return [0.0, 0.0, float(_p(r, "when") == "no"), 1.0]
    if _g(r, "whom") is None or _g(r, "how") is None:
        return [0.0, 0.0, 0.0, 0.0]
    ok = _intervened(r) and _p(r, "whom") == _g(r, "whom") and _p(r, "how") == _g(r, "how")
    return [float(ok), 1.0, 0.0, 0.0]


def _joint_balanced(s: np.ndarray) -> np.ndarray:
    """The mean of joint success where the therapist spoke and where they did not (undefined
    unless the points hold both kinds): a constant timing policy cannot win it."""
    yes = _ratio(s[..., 0:2])
    no = _ratio(s[..., 2:4])
    return (yes + no) / 2


def _joint_yes(s: np.ndarray) -> np.ndarray:
    return _ratio(s[..., 0:2])


def _joint_no(s: np.ndarray) -> np.ndarray:
    return _ratio(s[..., 2:4])


def _whom_given(r: AgentRecord) -> list[float]:
    g = _g(r, "whom")
    counted = _intervened(r) and g is not None
    return [_hit(_p(r, "whom"), g) if counted else 0.0, float(counted)]


def _how_given(r: AgentRecord) -> list[float]:
    g = _g(r, "how")
    counted = _intervened(r) and g is not None
    return [_hit(_p(r, "how"), g) if counted else 0.0, float(counted)]


def _how_given_right(r: AgentRecord) -> list[float]:
    g = _g(r, "how")
    counted = _intervened(r) and g is not None and _p(r, "whom") == _g(r, "whom")
    return [_hit(_p(r, "how"), g) if counted else 0.0, float(counted)]


def _pattern(r: AgentRecord) -> list[float]:
    item = r["scores"].get("pattern")
    return [0.0, 0.0] if item is None else [float(item["correct"]), 1.0]


def _mean_of(part: Literal["emotions", "stances"], key: str) -> Callable[[AgentRecord], list[float]]:
    def components(r: AgentRecord) -> list[float]:
        items = r["scores"][part] or []
        values = [NAN if (v := cast("dict[str, float | None]", i).get(key)) is None else float(v) for i in items]
        return [sum(values), float(len(values))]

    return components


def _turn(key: str) -> Callable[[AgentRecord], list[float]]:
    def components(r: AgentRecord) -> list[float]:
        turn = cast("dict[str, float | None] | None", r["scores"].get("turn"))
        if not turn or key not in turn:
            return [0.0, 0.0]
        return [NAN if (v := turn[key]) is None else float(v), 1.0]

    return components


def whole_group(recipients: Sequence[str], participants: Sequence[str]) -> bool:
    return len(participants) > 1 and set(recipients) >= set(participants)


def neglect_point(r: AgentRecord) -> bool:
    """A neglect point: a clearly most distressed client, the real therapist took the turn there and
    the clients they addressed are known. Agent and therapist are compared at exactly these points."""
    g = r["gold"]
    return g.get("distressed") is not None and g.get("when") == "yes" and g.get("recipients") is not None


def leaves_out(recipients: Sequence[str] | None, distressed: str, participants: Sequence[str]) -> bool:
    """Whether a turn to ``recipients`` (``None``: no turn) fails to attend ``distressed``: silence,
    someone else, an unusable target (no recipients) or the whole group all count as leaving out.
    The one neglect rule of ``rescue agent eval``, ``rescue sim`` and the practice page."""
    if not recipients:
        return True
    return distressed not in recipients or whole_group(recipients, participants)


def _neglect(who: str) -> Callable[[AgentRecord], list[float]]:
    def components(r: AgentRecord) -> list[float]:
        if not neglect_point(r):
            return [0.0, 0.0]
        g = r["gold"]
        recipients = g["recipients"] if who == "therapist" else (r["prediction"].get("recipients") if _intervened(r) else None)
        return [float(leaves_out(recipients, g["distressed"] or "", r.get("participants") or [])), 1.0]

    return components


def _group_address(who: str) -> Callable[[AgentRecord], list[float]]:
    def components(r: AgentRecord) -> list[float]:
        if not neglect_point(r):
            return [0.0, 0.0]
        recipients = r["gold"]["recipients"] if who == "therapist" else (r["prediction"].get("recipients") if _intervened(r) else None)
        return [float(bool(recipients) and whole_group(recipients or [], r.get("participants") or [])), 1.0]

    return components


def _invalid(step: str) -> Callable[[AgentRecord], list[float]]:
    def components(r: AgentRecord) -> list[float]:
        result = r["steps"].get(step)
        return [0.0, 0.0] if result is None else [float(not result["valid"]), 1.0]

    return components


@dataclass(frozen=True)
class ChainMetric:
    """One metric: per-record components, how their sums combine, and how it is shown."""

    name: str
    group: str
    kind: str
    components: Callable[[AgentRecord], list[float]]
    combine: Callable[[np.ndarray], np.ndarray] = _ratio
    label: str = ""

    @property
    def width(self) -> int:
        """How many components each record contributes."""
        return 4 if self.name.startswith(("when_", "joint")) else 2

    def support(self, sums: np.ndarray) -> int:
        """How many units the value is over (points, clients, turns)."""
        if self.name.startswith("when_"):
            return int(np.nansum(sums[:4]))
        if self.name == "joint":
            return int(sums[1] + sums[3])
        if self.name == "joint_no":
            return int(sums[3])
        return int(sums[1]) if not math.isnan(sums[1]) else 0

    def statistic(self) -> AdditiveStatistic:
        """The metric as an additive statistic for :mod:`rescue_bench.metrics` resampling."""

        def components(records: Sequence[AgentRecord]) -> np.ndarray:
            return np.array([self.components(r) for r in records], dtype=float).reshape(-1, self.width)

        return AdditiveStatistic(components, self.combine, f"agent_{self.name}")


METRICS: tuple[ChainMetric, ...] = (
    ChainMetric("when_precision", "steps", "pct", _when_cells, _when_combine("precision"), "when: precision (as ITP)"),
    ChainMetric("when_recall", "steps", "pct", _when_cells, _when_combine("recall"), "when: recall (as ITP)"),
    ChainMetric("when_f1", "steps", "pct", _when_cells, _when_combine("f1"), "when: F1 (as ITP)"),
    ChainMetric("when_accuracy", "steps", "pct", _when_cells, _when_combine("accuracy"), "when: accuracy"),
    ChainMetric("whom_recall_at_1", "steps", "pct", _whom, label="whom: Recall@1 (as STP)"),
    ChainMetric("how_recall_at_1", "steps", "pct", _how, label="how: Recall@1, own target (as SSP)"),
    ChainMetric("how_given_gold_target", "steps", "pct", _how_gold, label="how: Recall@1, given the gold target"),
    ChainMetric("joint", "steps", "pct", _joint_parts, _joint_balanced, "joint success, balanced (mean of the two below)"),
    ChainMetric("joint_yes", "steps", "pct", _joint_parts, _joint_yes, "joint | therapist spoke: spoke to the gold target with the gold strategy"),
    ChainMetric("joint_no", "steps", "pct", _joint_parts, _joint_no, "joint | therapist silent: stayed silent"),
    ChainMetric("whom_given_intervened", "chain", "pct", _whom_given, label="whom right | the agent spoke"),
    ChainMetric("how_given_intervened", "chain", "pct", _how_given, label="how right | the agent spoke"),
    ChainMetric("how_given_right_target", "chain", "pct", _how_given_right, label="how right | spoke to the gold target"),
    ChainMetric("pattern_accuracy", "state", "pct", _pattern, label="pattern: accuracy (as RPP)"),
    ChainMetric("emotion_intensity", "state", "judge", _mean_of("emotions", "intensity_score"), label="emotion: intensity score (as ER)"),
    ChainMetric("emotion_judge", "state", "judge", _mean_of("emotions", "judge_score"), label="emotion: judge (as ER)"),
    ChainMetric("emotion_score", "state", "judge", _mean_of("emotions", "score"), label="emotion: ER score"),
    ChainMetric("emotion_bertscore", "state", "bert", _mean_of("emotions", "bertscore"), label="emotion: BERTScore"),
    ChainMetric("stance_judge", "state", "judge", _mean_of("stances", "judge_score"), label="stances: judge (as VP)"),
    ChainMetric("stance_bertscore", "state", "bert", _mean_of("stances", "bertscore"), label="stances: BERTScore"),
    ChainMetric("turn_judge_real", "turn", "judge", _turn("judge_real"), label="turn: judge vs the real turn"),
    ChainMetric("turn_judge_strategy", "turn", "judge", _turn("judge_strategy"), label="turn: judge, gold strategy toward gold target"),
    ChainMetric("turn_bertscore", "turn", "bert", _turn("bertscore"), label="turn: BERTScore vs the real turn"),
    ChainMetric("neglect_agent", "neglect", "pct", _neglect("agent"), label="neglect rate: agent"),
    ChainMetric("neglect_therapist", "neglect", "pct", _neglect("therapist"), label="neglect rate: real therapist"),
    ChainMetric("group_address_agent", "neglect", "pct", _group_address("agent"), label="whole-group address: agent"),
    ChainMetric("group_address_therapist", "neglect", "pct", _group_address("therapist"), label="whole-group address: real therapist"),
    ChainMetric("invalid_state", "validity", "pct", _invalid("state"), label="invalid answers: state"),
    ChainMetric("invalid_when", "validity", "pct", _invalid("when"), label="invalid answers: when"),
    ChainMetric("invalid_whom_how", "validity", "pct", _invalid("whom_how"), label="invalid answers: whom and how"),
    ChainMetric("invalid_turn", "validity", "pct", _invalid("turn"), label="invalid answers: turn"),
)
"""Every chain metric, in display order."""

BY_NAME: dict[str, ChainMetric] = {m.name: m for m in METRICS}
GROUPS: tuple[str, ...] = ("steps", "chain", "state", "turn", "neglect", "validity")
GROUP_TITLES = {
    "steps": "Steps and joint success",
    "chain": "Where the chain breaks",
    "state": "State estimate",
    "turn": "The turn",
    "neglect": "Neglect of the most distressed client",
    "validity": "Invalid answers",
}
SUMMARY_SCENARIOS: tuple[str, ...] = LABEL_SUMMARY_SCENARIOS


def _clean(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def metric_value(metric: str | ChainMetric, records: Sequence[AgentRecord]) -> float | None:
    """One metric over ``records`` (``None`` when undefined)."""
    m = BY_NAME[metric] if isinstance(metric, str) else metric
    if not records:
        return None
    return _clean(m.statistic()(records))


def chain_metrics(records: Sequence[AgentRecord] | Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every metric over ``records``: ``{metric: value, ..., "n", "invalid_rate", "support": {metric: units}}``.

    ``records``: as the engine made them, or the lines of ``results/agent.jsonl`` as read."""
    records = chain_lines(records)
    out: dict[str, Any] = {}
    support: dict[str, int] = {}
    for m in METRICS:
        if not records:
            out[m.name] = None
            support[m.name] = 0
            continue
        sums = m.statistic().components(list(records)).sum(axis=0)
        out[m.name] = _clean(float(m.combine(sums)))
        support[m.name] = m.support(sums)
    out["n"] = len(records)
    out["invalid_rate"] = (sum(not r["valid"] for r in records) / len(records)) if records else None
    out["support"] = support
    return out


def summarize_chain(records: Sequence[AgentRecord]) -> dict[str, dict[str, Any]]:
    """``{scenario: chain_metrics}`` for couple, family and both (the ``agent`` entry of summary.json)."""
    return {
        s: chain_metrics(in_scenario(records, s))
        for s in SUMMARY_SCENARIOS
    }


# --------------------------------------------------------------------------------------------------
# reference rows: constant policies and the real therapist on the same points, from the gold alone
# --------------------------------------------------------------------------------------------------

REFERENCE_POLICIES: tuple[tuple[str, str], ...] = (
    ("always_silent", "always silent"),
    ("always_group", "always address the group"),
    ("therapist", "the real therapist"),
)
"""The reference rows printed beside every agent: ``(key, label)``."""

REFERENCE_METRICS: tuple[str, ...] = (
    "joint", "joint_yes", "joint_no", "when_f1", "when_accuracy", "neglect_agent", "group_address_agent",
)
"""The metrics a reference row is shown on (timing, joint success and neglect; no model text)."""


def _group_label(r: AgentRecord) -> str | None:
    participants = set(r.get("participants") or [])
    candidates = r.get("candidates")
    targets = (candidates.get("targets") or []) if candidates else []
    return next((t for t in targets if t not in participants), None)


def reference_records(records: Sequence[AgentRecord], policy: str) -> list[AgentRecord]:
    """``records`` with the prediction of a reference ``policy`` in place of the agent's.

    ``always_silent`` never takes the turn; ``always_group`` takes every turn, addressed to the
    group label (every client) with no strategy; ``therapist`` does what the real therapist did
    (gold timing, target, strategy and addressed clients). No model is called; scores that need a
    model's text (state, turn) are dropped.
    """
    out = []
    for r in records:
        g = r["gold"]
        if policy == "always_silent":
            when, whom, how, recipients = "no", None, None, None
        elif policy == "always_group":
            when, whom, how, recipients = "yes", _group_label(r), None, list(r.get("participants") or [])
        elif policy == "therapist":
            spoke = g.get("when") == "yes"
            when = g.get("when")
            whom, how, recipients = (g.get("whom"), g.get("how"), g.get("recipients")) if spoke else (None, None, None)
        else:
            raise ValueError(f"unknown reference policy {policy!r}")
        pred: ChainPrediction = {
            "when": when, "whom": whom, "how": how, "recipients": recipients, "how_given_gold": None, "pattern": None, "turn": None,
        }
        reference: AgentRecord = {
            **r, "prediction": pred, "steps": {}, "scores": {"emotions": [], "stances": []}, "valid": True, "error": None,
        }
        out.append(reference)
    return out


def reference_metrics(records: Sequence[AgentRecord] | Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{policy: summarize_chain(...)}`` of every reference policy on the points of ``records`` (as
    :func:`chain_metrics` takes them)."""
    return {key: summarize_chain(reference_records(chain_lines(records), key)) for key, _ in REFERENCE_POLICIES}


def chain_lines(lines: Sequence[object]) -> list[AgentRecord]:
    """The lines of ``results/agent.jsonl`` (plain dicts), typed: they are what
    :func:`rescue_bench.agent.record.chain_record` made."""
    return [cast("AgentRecord", r) for r in lines]
