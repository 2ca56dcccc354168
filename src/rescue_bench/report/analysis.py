"""The report's numbers: pure functions of result records (and, for data figures, of clips).

Nothing here renders or writes files. Every metric value goes through
:func:`rescue_bench.scoring.task_metrics`, the code path of ``summary.json``; confidence intervals and
paired tests use :mod:`rescue_bench.metrics` (cluster bootstrap / permutation over clips). For speed the
resampling uses the metrics module's additive statistics (one matrix product for all resamples), but
only after checking that the additive statistic gives exactly the ``task_metrics`` value on the very
records being resampled; otherwise the exact slow path ``task_metrics(task, resample)[metric]`` is used.

Choices where the SPEC is silent (also in the report's notes):

* Scenarios are ``couple``, ``family`` and ``both`` (pooled, micro), as in ``summary.json``.
* Confidence intervals: percentile cluster bootstrap over clips (``sample_id``), the same seed for every
  task and scenario (so results are reproducible from ``--seed``).
* Paired tests: :func:`rescue_bench.metrics.paired_permutation_test` (clips swapped between the two
  runs; exact when ``2**clips <= resamples``), on the instances both runs answered (aligned by record
  ``id``); Holm's correction over all pairs of runs for one task, metric and scenario.
* Relative position of a record: ``row / n_rows`` in ten bins ``((b-1)/10, b/10]``, computed in integers
  (``ceil(10 * row / n_rows)``) so a boundary never flips through floating-point error. The standard
  error of a bin's accuracy is the binomial ``sqrt(p (1 - p) / n)`` over its instances.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from itertools import combinations
from typing import Any, ClassVar, Final

import numpy as np
from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from rescue_bench.labels import GROUP_LABELS, POOLED, RANKED_TASKS, SCENARIOS, in_scenario, patterns
from rescue_bench.metrics import (
    AdditiveStatistic,
    benjamini_hochberg,
    binary_statistic,
    bootstrap_ci,
    chance_levels,
    holm,
    interval_available,
    macro_f1_statistic,
    majority_share,
    mean_statistic,
    paired_permutation_test,
    ranking_statistic,
    top1,
)
from rescue_bench.records import ResultRow
from rescue_bench.runinfo import RunInfo
from rescue_bench.scoring import HEADLINE, SUMMARY_SCENARIOS, summarize, task_metrics
from rescue_bench.summary import EvalSummary, RunSummary
from rescue_bench.task_table import TASK_TABLE, rule

Records = Sequence[ResultRow]
"""The result records of one task (:class:`~rescue_bench.records.ResultRow`)."""

CLUSTER_KEY: Final = "sample_id"
ID_KEY: Final = "id"
N_BINS = 10
TOP1_METRIC = {task: r.top1 for task, r in TASK_TABLE.items() if r.top1 is not None}
"""The paper's top-1 column of each ranking task (compared with the majority-class share), from the task table."""
JUDGED_FIELDS = {"judge": "judge_score", "intensity": "intensity_score", "score": "score", "bertscore": "bertscore"}


# ------------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------------


POOLED_SCENARIO = POOLED
"""The scenario that pools couple and family clips; its intervals resample within each scenario."""


def clean(value: Any) -> float | None:
    """A float, or ``None`` for a missing / NaN value (JSON has no NaN)."""
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _name(label: object) -> str | None:
    """A label as text (``None`` stays ``None``)."""
    return None if label is None else str(label)


def subset(records: Records, scenario: str) -> list[ResultRow]:
    """The records of one scenario (``both``: all of them)."""
    return in_scenario(records, scenario)


def clip_count(records: Iterable[ResultRow]) -> int:
    return len({r[CLUSTER_KEY] for r in records})


def clips_by_scenario(records: Iterable[ResultRow]) -> dict[str, int]:
    """Distinct clips among ``records`` per scenario and both."""
    records = list(records)
    return {s: clip_count(subset(records, s)) for s in SUMMARY_SCENARIOS}


def predicted_top1(record: ResultRow) -> str | None:
    """Top-1 label of a ranking task's record; ``None`` for an invalid answer."""
    pred = record.get("prediction")
    if not record.get("valid") or not pred:
        return None
    label = pred[0]  # None where the first position held an invalid label
    return None if label is None else str(label)


# ------------------------------------------------------------------------------------------------
# records of the report's values (their JSON form is report.json's)
# ------------------------------------------------------------------------------------------------


class _DropUnset(BaseModel):
    """A record whose optional fields in :attr:`_optional` are left out of its JSON form unless set."""

    _optional: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data: dict[str, object] = handler(self)
        for key in self._optional:
            if key not in self.model_fields_set:
                data.pop(key, None)
        return data


class TaskCounts(BaseModel):
    """Instances, clips, invalid answers (rate and by cause) and trimmed prompts of one task and scenario."""

    n: int = 0
    clips: int = 0
    invalid_rate: float | None = None
    invalid_causes: dict[str, int] = Field(default_factory=dict)
    trimmed: int = 0


class MajorityShare(_DropUnset):
    """The most frequent gold label and its share; STP also the most frequent target role's."""

    _optional: ClassVar[tuple[str, ...]] = ("role", "role_share")

    label: str | None = None
    share: float | None = None
    role: str | None = None
    role_share: float | None = None


class LabelAccuracy(BaseModel):
    """Top-1 accuracy on the instances of one gold label (or role)."""

    n: int
    accuracy: float | None = None


class Confusion(BaseModel):
    """Counts of gold (rows, ``labels``) vs top-1 prediction (``columns``)."""

    labels: list[str]
    columns: list[str]
    matrix: list[list[int]]


class PositionAccuracy(BaseModel):
    """RPP top-1 accuracy per relative-position bin, with its binomial standard error."""

    n: list[int]
    accuracy: list[float | None]
    se: list[float | None]
    skipped: int


class PositionDistribution(BaseModel):
    """Gold label counts and shares (bins x labels) per relative-position bin."""

    labels: list[str]
    counts: list[list[int]]
    shares: list[list[float]]
    n: list[int]


class TransitionMatrix(BaseModel):
    """Counts and row-normalised probabilities of transitions between consecutive labels."""

    labels: list[str]
    counts: list[list[int]]
    probabilities: list[list[float]]


class LabelDistribution(BaseModel):
    """One scenario's label counts (from :func:`rescue_bench.data.stats.dataset_stats`) and its clips."""

    relation_patterns: dict[str, int]
    strategies: dict[str, int]
    target_kinds: dict[str, int]
    targets: dict[str, int]
    utterance_types: dict[str, int]
    emotion_intensities: dict[str, int]
    samples: int


class PairedTest(BaseModel):
    """A paired permutation test of two runs on one task, scenario and metric, with its adjusted p-values."""

    metric: str
    task: str
    scenario: str
    a: str
    b: str
    p_value: float | None
    p_holm: float | None = None
    """Holm over the run pairs of one task, metric and scenario."""
    n: int
    clips: int
    value_a: float
    value_b: float
    diff: float
    p_report_holm: float | None = None
    """Holm over every test of the report."""
    p_report_bh: float | None = None
    """Benjamini-Hochberg over every test of the report."""


# ------------------------------------------------------------------------------------------------
# point values (the summary.json code path)
# ------------------------------------------------------------------------------------------------


def point_metrics(records_by_task: dict[str, Records]) -> dict[str, dict[str, dict[str, float | None]]]:
    """``{task: {scenario: {metric: value}}}`` via :func:`task_metrics` (None where undefined)."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for task, records in records_by_task.items():
        out[task] = {}
        for scenario in SUMMARY_SCENARIOS:
            values = task_metrics(task, subset(records, scenario))
            out[task][scenario] = {m: clean(values.get(m)) for m in HEADLINE[task]}
    return out


def counts(records_by_task: dict[str, Records]) -> dict[str, dict[str, TaskCounts]]:
    """``{task: {scenario: TaskCounts}}`` (all but the clips from :func:`summarize`: the invalid
    answers by cause, the prompts trimmed to fit the window)."""
    out: dict[str, dict[str, TaskCounts]] = {}
    for task, records in records_by_task.items():
        summary = summarize(list(records)).get(task, {})
        out[task] = {}
        for scenario in SUMMARY_SCENARIOS:
            s = summary.get(scenario, {})
            out[task][scenario] = TaskCounts(
                n=s.get("n", 0),
                clips=clip_count(subset(records, scenario)),
                invalid_rate=clean(s.get("invalid_rate")),
                invalid_causes=s.get("invalid_causes", {}),
                trimmed=s.get("trimmed", 0),
            )
    return out


def summary_mismatches(
    points: dict[str, dict[str, dict[str, float | None]]], summary: RunSummary, tol: float = 1e-9
) -> list[str]:
    """Where a run's ``summary.json`` disagrees with the metrics recomputed from its records (a
    summary of another kind than ``rescue eval``'s has none of the tasks)."""
    tasks = summary.root if isinstance(summary, EvalSummary) else {}
    problems = []
    for task, per in points.items():
        for scenario, metrics in per.items():
            stored = (tasks.get(task) or {}).get(scenario)
            if stored is None:
                problems.append(f"{task}/{scenario} missing from summary.json")
                continue
            for metric, value in metrics.items():
                other = clean(stored.metric(metric))
                if (value is None) != (other is None) or (
                    value is not None and other is not None and abs(value - other) > tol
                ):
                    problems.append(f"{task}/{scenario}/{metric}: summary.json {other} vs records {value}")
    return problems


# ------------------------------------------------------------------------------------------------
# statistics for resampling
# ------------------------------------------------------------------------------------------------


def exact_statistic(task: str, metric: str) -> Callable[[Sequence[ResultRow]], float]:
    """``records -> task_metrics(task, records)[metric]`` (NaN when undefined): the reference path."""

    def statistic(records: Sequence[ResultRow]) -> float:
        value = clean(task_metrics(task, list(records)).get(metric))
        return math.nan if value is None else value

    statistic.__name__ = f"{task}_{metric}"
    return statistic


def additive_statistic(task: str, metric: str) -> AdditiveStatistic | None:
    """The metrics module's vectorisable twin of ``task_metrics(task, .)[metric]``, if there is one."""
    if rule(task).binary:
        return binary_statistic(metric, "gold", "prediction")
    if rule(task).ranked:
        if metric == "macro_f1":
            return macro_f1_statistic("gold", lambda r: top1(r["prediction"]))
        name = "recall_at_1" if metric == "accuracy" else metric
        return ranking_statistic(name, "gold", "prediction")
    field = JUDGED_FIELDS.get(metric)
    if field is None:
        return None
    return mean_statistic(lambda r: r[field], f"{task}_{metric}")


def statistic_for(
    task: str, metric: str, records: Records, *, expected: float | None = None, tol: float = 1e-9
) -> Callable[[Sequence[ResultRow]], float]:
    """The fast statistic when it reproduces ``task_metrics`` on ``records``, else the exact one.

    ``expected`` is ``task_metrics(task, records)[metric]`` when the caller already has it.
    """
    exact = exact_statistic(task, metric)
    fast = additive_statistic(task, metric)
    if fast is None or not records:
        return exact
    try:
        got = fast(list(records))
    except (TypeError, ValueError, KeyError):
        return exact
    want = exact(records) if expected is None else expected
    if want is None or math.isnan(want):
        return fast if math.isnan(got) else exact
    if math.isnan(got) or abs(got - want) > tol:
        return exact
    return fast


# ------------------------------------------------------------------------------------------------
# confidence intervals
# ------------------------------------------------------------------------------------------------


class MetricCI(BaseModel):
    """A headline metric of a run with its interval over clips, and the level chance gives it."""

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    clips: int | None = None
    """Clips the value is over (fewer than the interval needs: no interval)."""
    chance: float | None = None
    constant: dict[str, float | None] | None = None
    """ITP's F1 only: the F1 of always "yes" and of always "no" (absent elsewhere)."""

    @model_serializer(mode="wrap")
    def _without_absent_constant(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data: dict[str, object] = handler(self)
        if self.constant is None:
            data.pop("constant", None)
        return data


Headline = dict[str, dict[str, dict[str, MetricCI]]]
"""``{task: {scenario: {metric: MetricCI}}}``: :func:`headline_cis`."""


def headline_cis(
    records_by_task: dict[str, Records],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Headline:
    """``{task: {scenario: {metric: MetricCI}}}`` for every headline metric.

    ``value`` is ``task_metrics``'s; the interval is the cluster-bootstrap percentile interval over
    clips (for ``both`` resampled within each scenario), ``None`` from fewer clips than :data:`~rescue_bench.metrics.MIN_CLUSTERS_FOR_INTERVAL`
    (``clips`` says how many). Undefined values (no records, missing judge scores) give ``None`` for
    all three. ``chance`` is the level the task design fixes (:func:`~rescue_bench.metrics.chance_levels`,
    ``None`` where there is none); ITP's F1 also carries ``constant``: the F1 of always "yes" / "no".
    """
    out: Headline = {}
    for task, records in records_by_task.items():
        out[task] = {}
        for scenario in SUMMARY_SCENARIOS:
            chosen = subset(records, scenario)
            values = task_metrics(task, chosen)
            n_clips = clip_count(chosen)
            chance = chance_levels(task, chosen)
            out[task][scenario] = {}
            for metric in HEADLINE[task]:
                value = clean(values.get(metric))
                low = high = None
                if value is not None and interval_available(n_clips):
                    stat = statistic_for(task, metric, chosen, expected=value)
                    strata = "scenario" if scenario == POOLED_SCENARIO else None  # the pooled number keeps each scenario's clips
                    lo, hi = bootstrap_ci(chosen, stat, CLUSTER_KEY, n_resamples, confidence, seed, strata=strata)
                    low, high = clean(lo), clean(hi)
                entry = MetricCI(value=value, ci_low=low, ci_high=high, clips=n_clips, chance=clean(chance.get(metric)))
                if rule(task).binary and metric == "f1":
                    entry.constant = {"yes": clean(chance.get("f1_always_yes")), "no": clean(chance.get("f1_always_no"))}
                out[task][scenario][metric] = entry
    return out


def majority_shares(records_by_task: dict[str, Records]) -> dict[str, dict[str, MajorityShare]]:
    """``{task: {scenario: MajorityShare}}`` of the gold labels of RPP, STP and SSP.

    For STP the gold names differ between clips, so the share of the most frequent *role*
    (group label vs an individual) is given too, as ``role`` / ``role_share``.
    """
    out: dict[str, dict[str, MajorityShare]] = {}
    for task in RANKED_TASKS:
        records = records_by_task.get(task)
        if not records:
            continue
        out[task] = {}
        for scenario in SUMMARY_SCENARIOS:
            golds = [r["gold"] for r in subset(records, scenario)]
            label, share = majority_share(golds)
            entry = MajorityShare(label=_name(label), share=clean(share))
            if rule(task).target_roles:
                roles = [target_role(r["gold"], r["scenario"]) for r in subset(records, scenario)]
                role, role_share = majority_share(roles)
                entry = MajorityShare(label=_name(label), share=clean(share), role=_name(role), role_share=clean(role_share))
            out[task][scenario] = entry
    return out


# ------------------------------------------------------------------------------------------------
# paired significance tests
# ------------------------------------------------------------------------------------------------


def _overlap(a: Records, b: Records) -> tuple[list[ResultRow], list[ResultRow]]:
    ids_b = {r[ID_KEY] for r in b}
    common = {r[ID_KEY] for r in a} & ids_b
    return [r for r in a if r[ID_KEY] in common], [r for r in b if r[ID_KEY] in common]


def paired_tests(
    runs: Sequence[tuple[str, dict[str, Records]]],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
) -> list[PairedTest]:
    """Paired permutation tests between every two runs, per task, scenario and headline metric.

    ``runs`` is a list of ``(name, {task: records})``. Records are aligned by ``id``; pairs with no
    common instance are skipped, as are metrics undefined for either run. ``p_holm`` of each
    :class:`PairedTest` is Holm-adjusted over all pairs of one (task, metric, scenario).
    """
    tests: list[PairedTest] = []
    for (name_a, recs_a), (name_b, recs_b) in combinations(runs, 2):
        for task in HEADLINE:
            if not recs_a.get(task) or not recs_b.get(task):
                continue
            for scenario in SUMMARY_SCENARIOS:
                a, b = _overlap(subset(recs_a[task], scenario), subset(recs_b[task], scenario))
                if not a:
                    continue
                va, vb = task_metrics(task, a), task_metrics(task, b)
                for metric in HEADLINE[task]:
                    x, y = clean(va.get(metric)), clean(vb.get(metric))
                    if x is None or y is None:
                        continue
                    fa = statistic_for(task, metric, a, expected=x)
                    fb = statistic_for(task, metric, b, expected=y)
                    fast = isinstance(fa, AdditiveStatistic) and isinstance(fb, AdditiveStatistic)
                    stat = fa if fast else exact_statistic(task, metric)
                    p = paired_permutation_test(a, b, stat, CLUSTER_KEY, n_resamples, seed, id_key=ID_KEY)
                    tests.append(
                        PairedTest(
                            metric=metric,
                            task=task,
                            scenario=scenario,
                            a=name_a,
                            b=name_b,
                            p_value=clean(p),
                            n=len(a),
                            clips=clip_count(a),
                            value_a=x,
                            value_b=y,
                            diff=x - y,
                        )
                    )
    families: dict[tuple[str, str, str], list[int]] = {}
    for i, t in enumerate(tests):
        if t.p_value is not None:
            families.setdefault((t.task, t.metric, t.scenario), []).append(i)
    for members in families.values():
        adjusted = holm({i: pv for i in members if (pv := tests[i].p_value) is not None})
        for i, adj in adjusted.items():
            tests[i].p_holm = float(adj)
    adjust_report_wide(tests)
    return tests


CORRECTIONS: dict[str, tuple[str, str]] = {
    "pairs": ("p_holm", "Holm over the run pairs of each task, metric and scenario"),
    "holm": ("p_report_holm", "Holm over all {n} tests of the report (family-wise error)"),
    "bh": ("p_report_bh", "Benjamini-Hochberg over all {n} tests of the report (false discovery rate)"),
}
"""``--correction``: the p-value key shown in the significance tables and how it was adjusted."""


def adjust_report_wide(tests: list[PairedTest]) -> None:
    """Set ``p_report_holm`` and ``p_report_bh`` of every test: the p-value adjusted over *every*
    test of the report (all pairs, tasks, metrics and scenarios), ``None`` where ``p_value`` is."""
    defined = {i: t.p_value for i, t in enumerate(tests) if t.p_value is not None}
    by_holm, by_bh = holm(defined), benjamini_hochberg(defined)
    for i, t in enumerate(tests):
        t.p_report_holm = float(by_holm[i]) if i in by_holm else None
        t.p_report_bh = float(by_bh[i]) if i in by_bh else None


# ------------------------------------------------------------------------------------------------
# per label: accuracy, confusion, roles
# ------------------------------------------------------------------------------------------------

INVALID_LABEL = "(invalid)"
OTHER_LABEL = "(other)"


def target_role(label: str | None, scenario: str) -> str:
    """``group`` for the scenario's group label, ``individual`` for a person, ``(invalid)`` for none."""
    if label is None:
        return INVALID_LABEL
    return "group" if label == GROUP_LABELS[scenario] else "individual"


def label_order(task: str, scenario: str, golds: Iterable[str]) -> list[str]:
    """Gold labels in display order: the closed set's order, then labels found outside it."""
    found = list(dict.fromkeys(golds))
    r = rule(task)
    closed = r.closed_labels
    if closed is not None:
        base = list(closed(scenario)) if scenario in SCENARIOS else list(dict.fromkeys([*closed("couple"), *closed("family")]))
    elif r.target_roles:
        groups = [GROUP_LABELS[scenario]] if scenario in SCENARIOS else list(GROUP_LABELS.values())
        base = [g for g in groups if g in found] + sorted(x for x in found if x not in groups)
    else:
        base = []
    return [x for x in base if x in found] + [x for x in found if x not in base]


def per_label_accuracy(task: str, records: Records, scenario: str) -> dict[str, LabelAccuracy]:
    """``{gold label: LabelAccuracy}``: top-1 accuracy on the instances of each gold label.

    The accuracy is ``task_metrics(task, those instances)`` (RPP ``accuracy``, STP/SSP
    ``recall_at_1``), i.e. the recall of that label.
    """
    chosen = subset(records, scenario)
    metric = TOP1_METRIC[task]
    by_label: dict[str, list[ResultRow]] = {}
    for r in chosen:
        by_label.setdefault(r["gold"], []).append(r)
    out = {}
    for label in label_order(task, scenario, by_label):
        items = by_label[label]
        out[label] = LabelAccuracy(n=len(items), accuracy=clean(task_metrics(task, items).get(metric)))
    return out


def per_role_accuracy(records: Records, scenario: str) -> dict[str, LabelAccuracy]:
    """STP top-1 accuracy by the gold's role (group label vs individual)."""
    chosen = subset(records, scenario)
    by_role: dict[str, list[ResultRow]] = {}
    for r in chosen:
        by_role.setdefault(target_role(r["gold"], r["scenario"]), []).append(r)
    return {
        role: LabelAccuracy(n=len(by_role[role]), accuracy=clean(task_metrics("stp", by_role[role]).get("recall_at_1")))
        for role in ("group", "individual")
        if role in by_role
    }


def confusion(
    task: str, records: Records, scenario: str, *, by_role: bool = False
) -> Confusion:
    """Confusion counts of gold vs top-1 prediction.

    Rows are the gold labels (display order), columns the same labels, then ``(other)`` (a valid
    label that is not among the golds) and ``(invalid)`` (no valid answer). With ``by_role`` (STP)
    labels are mapped to ``group`` / ``individual`` first.
    """
    chosen = subset(records, scenario)
    if by_role:
        pairs = [
            (target_role(r["gold"], r["scenario"]), target_role(predicted_top1(r), r["scenario"]))
            for r in chosen
        ]
        labels = [x for x in ("group", "individual") if any(g == x for g, _ in pairs)]
    else:
        pairs = [(r["gold"], predicted_top1(r) or INVALID_LABEL) for r in chosen]
        labels = label_order(task, scenario, [g for g, _ in pairs])
    columns = [*labels, OTHER_LABEL, INVALID_LABEL]
    index = {c: i for i, c in enumerate(columns)}
    matrix = [[0] * len(columns) for _ in labels]
    rows = {label: i for i, label in enumerate(labels)}
    for gold, pred in pairs:
        col = index.get(pred, index[OTHER_LABEL])
        matrix[rows[gold]][col] += 1
    return Confusion(labels=labels, columns=columns, matrix=matrix)


# ------------------------------------------------------------------------------------------------
# relative position (Figs. 4 and 5)
# ------------------------------------------------------------------------------------------------


def position_bin(row: int, n_rows: int, n_bins: int = N_BINS) -> int:
    """0-based bin of the relative position ``row / n_rows`` in ``n_bins`` equal bins of (0, 1]."""
    if n_rows < 1:
        raise ValueError("n_rows must be positive")
    b = -(-n_bins * row // n_rows)  # ceil(n_bins * row / n_rows) in integers
    return min(max(b, 1), n_bins) - 1


def position_accuracy(records: Records, scenario: str, n_bins: int = N_BINS) -> PositionAccuracy:
    """RPP top-1 accuracy per relative-position bin.

    ``accuracy`` of a bin is ``task_metrics("rpp", its records)["accuracy"]``; ``se`` is the binomial
    standard error. Records without ``n_rows`` are counted in ``skipped``.
    """
    bins: list[list[ResultRow]] = [[] for _ in range(n_bins)]
    skipped = 0
    for r in subset(records, scenario):
        n_rows = r.get("n_rows")
        if not n_rows:
            skipped += 1
            continue
        bins[position_bin(r["row"], n_rows, n_bins)].append(r)
    acc: list[float | None] = []
    se: list[float | None] = []
    for items in bins:
        p = clean(task_metrics("rpp", items).get("accuracy")) if items else None
        acc.append(p)
        se.append(math.sqrt(p * (1 - p) / len(items)) if p is not None else None)
    return PositionAccuracy(n=[len(b) for b in bins], accuracy=acc, se=se, skipped=skipped)


def position_distribution(items: Iterable[tuple[str, int, int]], labels: Sequence[str], n_bins: int = N_BINS) -> PositionDistribution:
    """Gold label shares per relative-position bin from ``(label, row, n_rows)`` triples.

    ``counts`` and ``shares`` are bins x labels (a row of shares sums to 1 or 0); labels outside
    ``labels`` are appended in order of appearance.
    """
    items = list(items)
    labels = list(labels) + [x for x in dict.fromkeys(i[0] for i in items) if x not in labels]
    index = {x: i for i, x in enumerate(labels)}
    counts_ = np.zeros((n_bins, len(labels)), dtype=int)
    for label, row, n_rows in items:
        counts_[position_bin(row, n_rows, n_bins), index[label]] += 1
    totals = counts_.sum(axis=1, keepdims=True)
    shares = np.divide(counts_, totals, out=np.zeros(counts_.shape, dtype=float), where=totals > 0)
    return PositionDistribution(labels=labels, counts=counts_.tolist(), shares=shares.tolist(), n=totals.ravel().tolist())


# ------------------------------------------------------------------------------------------------
# from the clips (Figs. 3, 5-9)
# ------------------------------------------------------------------------------------------------


def pattern_sequences(clips: Iterable[Any], scenario: str) -> list[list[str]]:
    """Per clip of ``scenario``: the non-empty ``relation_cycle_state`` labels of its therapist rows,
    in row order, keeping only labels of the scenario's set (those are the RPP golds)."""
    allowed = set(patterns(scenario))
    out = []
    for clip in clips:
        if clip.scenario != scenario:
            continue
        out.append([r.cycle_state for r in clip.rows if r.is_therapist and r.cycle_state in allowed])
    return out


def transition_matrix(sequences: Iterable[Sequence[str]], labels: Sequence[str]) -> TransitionMatrix:
    """Row-normalised transitions between consecutive labels within each sequence (paper Fig. 3).

    A label never followed by another has a row of zeros in ``probabilities``.
    """
    labels = list(labels)
    index = {x: i for i, x in enumerate(labels)}
    counts_ = np.zeros((len(labels), len(labels)), dtype=int)
    for seq in sequences:
        for a, b in zip(seq, seq[1:]):
            if a in index and b in index:
                counts_[index[a], index[b]] += 1
    totals = counts_.sum(axis=1, keepdims=True)
    probs = np.divide(counts_, totals, out=np.zeros(counts_.shape, dtype=float), where=totals > 0)
    return TransitionMatrix(labels=labels, counts=counts_.tolist(), probabilities=probs.tolist())


def gold_positions_from_clips(clips: Iterable[Any], scenario: str) -> list[tuple[str, int, int]]:
    """``(label, row, n_rows)`` of every RPP gold (therapist row with a label of the scenario's set)."""
    allowed = set(patterns(scenario))
    out = []
    for clip in clips:
        if clip.scenario != scenario:
            continue
        n = len(clip.rows)
        for position, row in enumerate(clip.rows, start=1):
            if row.is_therapist and row.cycle_state in allowed:
                out.append((row.cycle_state, row.row_index or position, n))
    return out


def gold_positions_from_records(records: Records, scenario: str) -> list[tuple[str, int, int]]:
    """``(label, row, n_rows)`` of RPP records (fallback when the clips are not available)."""
    return [(r["gold"], r["row"], n_rows) for r in subset(records, scenario) if (n_rows := r.get("n_rows"))]


def label_distributions(clips: Sequence[Any]) -> dict[str, LabelDistribution]:
    """Per scenario: counts of patterns, strategies, targets (by role), utterance types and emotion
    intensities, from :func:`rescue_bench.data.stats.dataset_stats`."""
    from rescue_bench.data.stats import dataset_stats

    stats = dataset_stats(clips)
    keys = ("relation_patterns", "strategies", "target_kinds", "targets", "utterance_types", "emotion_intensities")
    return {s: LabelDistribution.model_validate({k: dict(stats[s][k]) for k in keys} | {"samples": stats[s]["samples"]}) for s in SCENARIOS}


# ------------------------------------------------------------------------------------------------
# usage
# ------------------------------------------------------------------------------------------------


class UsageRow(BaseModel):
    """One row of the usage table: a run's role (or model), its tokens and cost, and what was estimated."""

    run: str
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    total_cost: float | None = None
    estimated_calls: int | None = None
    estimated_prompt_tokens: int | None = None
    estimated_prompt_tokens_unusable: int | None = None
    """The prompt tokens if no answer is usable (the other end of the estimate)."""
    max_output_tokens: int | None = None


def usage_rows(name: str, info: RunInfo) -> list[UsageRow]:
    """Token counts and cost from ``run.json``: per role (``usage_by_role``) beside the estimate made
    before the run (``estimate``), else per model (``usage``, files without roles); empty when absent."""
    rows: list[UsageRow] = []
    estimate = info.estimate.by_role if info.estimate is not None else {}
    by_role = info.usage_by_role
    for who, u in (by_role if by_role else info.usage or {}).items():
        e = estimate.get(who) if by_role else None
        rows.append(
            UsageRow(
                run=name,
                model=who,
                input_tokens=u.input_tokens if "input_tokens" in u.model_fields_set else None,
                output_tokens=u.output_tokens if "output_tokens" in u.model_fields_set else None,
                total_tokens=u.total_tokens if "total_tokens" in u.model_fields_set else None,
                total_cost=u.total_cost,
                estimated_calls=e.calls if e is not None else None,
                estimated_prompt_tokens=e.prompt_tokens if e is not None else None,
                estimated_prompt_tokens_unusable=e.unusable_prompt_tokens if e is not None else None,
                max_output_tokens=e.max_output_tokens if e is not None else None,
            )
        )
    return rows


def per_label_union(per_run: Sequence[tuple[str, dict[str, LabelAccuracy]]]) -> tuple[list[str], dict[str, int]]:
    """Gold labels across runs' per-label results, in first-seen order, with each label's instance count."""
    labels: list[str] = []
    n: dict[str, int] = {}
    for _, per in per_run:
        for label, entry in per.items():
            if label not in n:
                labels.append(label)
                n[label] = entry.n
    return labels, n
