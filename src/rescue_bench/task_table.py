"""The task table: each task's scoring rules, declared once (SPEC sections 4 and 5).

One :class:`TaskRule` per task says how its raw answer is parsed, which fields its result record
carries beyond the common ones, how its metrics are computed from records, which of them the
summary shows (and in what order), which one the paper puts first (its headline), which one is the
top-1 number compared with the majority-class share, whether a judge model scores it, and what a
progress display shows while a run is going. Scoring, the report and the agent read these rules
from :data:`TASK_TABLE` instead of testing ``task == "..."`` each on their own, so adding or
changing a task's rule is one edit here.

The module sits just above the parsers and the metrics (it imports both) and below
:mod:`rescue_bench.scoring`, which builds records and summaries with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rescue_bench.contract import JUDGE_SCALE, RANK_SIZE
from rescue_bench.labels import BINARY_TASKS, JUDGED_TASKS, RANKED_TASKS, TASKS, TaskName, patterns, strategies
from rescue_bench.metrics import binary_metrics, er_score, intensity_score, ranking_metrics, rpp_metrics
from rescue_bench.parse import ParsedAnswer, parse_er, parse_itp, parse_ranking, parse_vp
from rescue_bench.records import (
    AfterJudge,
    ERFields,
    ERRecord,
    ITPRecord,
    RecordBase,
    RPPRecord,
    SSPRecord,
    STPRecord,
    VPFields,
    VPRecord,
)

Record = Mapping[str, Any]
AnswerKind = Literal["yes_no", "ranking", "emotion", "viewpoints"]
"""What a task's answer is: yes or no (ITP), a ranking of labels (RPP, STP, SSP), an emotion with its
intensity (ER), or viewpoints of the other participants (VP)."""
MetricKind = Literal["pct", "judge", "bert"]
"""How a metric is shown: ``pct`` (a fraction shown x100), ``judge`` (1-5 scale), ``bert`` (BERTScore in [0, 1])."""

METRIC_TITLES: dict[str, str] = {
    "precision": "P",
    "recall": "R",
    "f1": "F1",
    "accuracy": "Acc",
    "balanced_accuracy": "BalAcc",
    "macro_f1": "MacroF1",
    "recall_at_1": "R@1",
    "recall_at_2": "R@2",
    "recall_at_3": "R@3",
    "mrr": "MRR",
    "judge": "Judge",
    "intensity": "Intensity",
    "score": "Score",
    "bertscore": "BERTScore",
    "judge_authors": "Judge(authors)",
}
"""The short column title of each metric in a console table (``summary.json`` keeps the names)."""


def metric_title(metric: str) -> str:
    """A metric's column title (:data:`METRIC_TITLES`; its name when it has none)."""
    return METRIC_TITLES.get(metric, metric)


INVALID_JUDGE_SCORE = JUDGE_SCALE.lo
"""The judge score (and ER intensity score) of an invalid answer: the scale's lowest value."""
INVALID_BERTSCORE = 0.0


@dataclass(frozen=True)
class TaskRule:
    """How one task is parsed, recorded, scored and shown."""

    name: TaskName
    label: str
    """The paper's short name (``ITP`` ...)."""
    parse: Callable[[str, Sequence[str], Sequence[str]], ParsedAnswer]
    """``(raw, candidates, participants) -> ParsedAnswer``."""
    extras: Callable[[Any, bool, Mapping[str, Any]], Mapping[str, Any]]
    """``(prediction, valid, instance) -> {field: value}``: the record's task-specific fields, before any judge."""
    metrics: Callable[[Sequence[Any]], dict[str, float | None]]
    """Records (at least one) of the task (:mod:`rescue_bench.records`) -> the task's metrics (fractions
    for classification metrics)."""
    headline: tuple[str, ...]
    """The metrics of the task in ``summary.json``, in display order."""
    headline_metric: str
    """The paper's first number for the task (ITP F1, RPP accuracy, STP/SSP Recall@1, ER/VP judge score)."""
    top1: str | None
    """The top-1 metric of a ranking task, shown beside the majority-class share; ``None`` otherwise."""
    live: str
    """The metric a progress display shows as records come in (see :func:`live_value`)."""
    closed_labels: Callable[[str], tuple[str, ...]] | None = None
    """A scenario -> the closed label set a gold comes from, in the SPEC's order (RPP patterns, SSP strategies)."""
    target_roles: bool = False
    """The gold names a person or the group (STP): its labels differ between clips, so shares and
    accuracies are also given per role (group label vs individual)."""
    paper_comparable: bool = True
    """The paper's numbers can be compared with a clean run (not ITP: the authors' prompts leaked the
    answer, in a field naming the candidate type and pos/neg in the instance id)."""
    after_judge: Callable[[Any, int | None], AfterJudge] | None = None
    """Judged tasks: ``(record, judge score) -> {field: value}``, the fields that follow the judge score."""
    bert_texts: Callable[[Any], tuple[str, str]] | None = None
    """Judged tasks: the (prediction, reference) texts BERTScore compares for a valid record."""
    answer: AnswerKind = "ranking"
    """What the answer is (:data:`AnswerKind`): what the baselines guess and how they guess it."""
    authors_rubric: bool = False
    """The authors' alternative judge rubric (``--vp-rubric authors``: target 0-2 plus viewpoint
    0-4, ``judge_authors``) scores this task too; VP only, as in the authors' scripts."""

    def sample_value(self, record: Mapping[str, Any]) -> float:
        """One number per record for inspect_ai's live display of a sample (the summary is computed
        from the records): 1/0 for a right/wrong label (ITP) or top-1 (ranked tasks), ER's
        combined score (its intensity score while the judge's is pending), else the judge score
        (0 before it arrives)."""
        if self.binary:
            return float(record["prediction"] == record["gold"])
        if self.ranked:
            return float(bool(record["prediction"]) and record["prediction"][0] == record["gold"])
        if self.after_judge is not None:  # ER: the judge's score combined with the intensity score
            return float(record["score"] if record["score"] is not None else record["intensity_score"])
        return float(record["judge_score"] or 0.0)

    @property
    def judged(self) -> bool:
        """Answered in free text and scored by a judge model (plus BERTScore): :data:`~rescue_bench.labels.JUDGED_TASKS`."""
        return self.name in JUDGED_TASKS

    @property
    def ranked(self) -> bool:
        """Answered with a ranked list of candidate labels: :data:`~rescue_bench.labels.RANKED_TASKS`."""
        return self.name in RANKED_TASKS

    @property
    def binary(self) -> bool:
        """Answered yes or no (scored with the positive class's precision, recall and F1): :data:`~rescue_bench.labels.BINARY_TASKS`."""
        return self.name in BINARY_TASKS

    def kind(self, metric: str) -> MetricKind:
        """How ``metric`` of this task is shown (see :data:`MetricKind`)."""
        if self.judged:
            return "bert" if metric == "bertscore" else "judge"
        return "pct"


def _mean(values: Iterable[float | None]) -> float | None:
    """The mean, or ``None`` when any value is missing (e.g. no judge was given) or there are none."""
    values = list(values)
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]


def _golds_preds(records: Sequence[RecordBase]) -> tuple[list[Any], list[Any]]:
    return [r["gold"] for r in records], [r["prediction"] for r in records]


def _itp_metrics(records: Sequence[ITPRecord]) -> dict[str, float | None]:
    return dict(binary_metrics(*_golds_preds(records), positive="yes"))


def _rpp_metrics(records: Sequence[RPPRecord]) -> dict[str, float | None]:
    return dict(rpp_metrics(*_golds_preds(records)))


def _ranking_metrics(records: Sequence[STPRecord | SSPRecord]) -> dict[str, float | None]:
    return dict(ranking_metrics(*_golds_preds(records)))


def _er_metrics(records: Sequence[ERRecord]) -> dict[str, float | None]:
    return {
        "judge": _mean(r["judge_score"] for r in records),
        "intensity": _mean(r["intensity_score"] for r in records),
        "score": _mean(r["score"] for r in records),
        "bertscore": _mean(r["bertscore"] for r in records),
    }


def _vp_metrics(records: Sequence[VPRecord]) -> dict[str, float | None]:
    out = {
        "judge": _mean(r["judge_score"] for r in records),
        "bertscore": _mean(r["bertscore"] for r in records),
    }
    if any("judge_authors" in r for r in records):
        out["judge_authors"] = _mean(r.get("judge_authors") for r in records)
    return out


def _no_extras(prediction: Any, valid: bool, instance: Mapping[str, Any]) -> Mapping[str, Any]:
    return {}


def _er_extras(prediction: Any, valid: bool, instance: Mapping[str, Any]) -> ERFields:
    # The intensity score needs no model (an invalid answer's is the scale's floor). The judge score,
    # ER's combined score and BERTScore wait for the judge and for BERTScore (None): an invalid answer
    # takes their floors only when they are part of the run (scoring.with_judge, with_bertscore_floor).
    return {
        "intensity_score": intensity_score(prediction["intensity"], instance["gold"]["intensity"]) if valid else float(INVALID_JUDGE_SCORE),
        "judge_score": None,
        "score": None,
        "bertscore": None,
    }


def _vp_extras(prediction: Any, valid: bool, instance: Mapping[str, Any]) -> VPFields:
    return {"judge_score": None, "bertscore": None}


def _er_after_judge(record: ERRecord, judge_score: int | None) -> AfterJudge:
    return {"score": None if judge_score is None else er_score(judge_score, record["intensity_score"])}


def _er_texts(record: ERRecord) -> tuple[str, str]:
    return record["prediction"]["emotion"], record["gold"]["emotion"]


def _vp_texts(record: VPRecord) -> tuple[str, str]:
    # the viewpoint descriptions joined in order, predicted and gold the same way
    return "; ".join(v["viewpoint"] for v in record["prediction"]), "; ".join(v["viewpoint"] for v in record["gold"])


def _parse_itp(raw: str, candidates: Sequence[str], participants: Sequence[str]) -> ParsedAnswer:
    return parse_itp(raw)


def _parse_ranking(raw: str, candidates: Sequence[str], participants: Sequence[str]) -> ParsedAnswer:
    return parse_ranking(raw, list(candidates), k=RANK_SIZE, keep_positions=True)


def _parse_er(raw: str, candidates: Sequence[str], participants: Sequence[str]) -> ParsedAnswer:
    return parse_er(raw)


def _parse_vp(raw: str, candidates: Sequence[str], participants: Sequence[str]) -> ParsedAnswer:
    return parse_vp(raw, list(participants))


_RANKING_HEADLINE = ("recall_at_1", "recall_at_2", "recall_at_3", "mrr")

TASK_TABLE: dict[str, TaskRule] = {
    "itp": TaskRule(
        "itp", "ITP", _parse_itp, _no_extras, _itp_metrics,
        headline=("precision", "recall", "f1", "accuracy", "balanced_accuracy"),
        headline_metric="f1", top1=None, live="f1", paper_comparable=False, answer="yes_no",
    ),
    "rpp": TaskRule(
        "rpp", "RPP", _parse_ranking, _no_extras, _rpp_metrics,
        headline=("accuracy", "macro_f1", "recall_at_3", "mrr"),
        headline_metric="accuracy", top1="accuracy", live="accuracy",
        closed_labels=patterns,
    ),
    "stp": TaskRule(
        "stp", "STP", _parse_ranking, _no_extras, _ranking_metrics,
        headline=_RANKING_HEADLINE, headline_metric="recall_at_1", top1="recall_at_1", live="recall_at_1",
        target_roles=True,
    ),
    "ssp": TaskRule(
        "ssp", "SSP", _parse_ranking, _no_extras, _ranking_metrics,
        headline=_RANKING_HEADLINE, headline_metric="recall_at_1", top1="recall_at_1", live="recall_at_1",
        closed_labels=strategies,
    ),
    "er": TaskRule(
        "er", "ER", _parse_er, _er_extras, _er_metrics,
        headline=("judge", "intensity", "score", "bertscore"),
        headline_metric="judge", top1=None, live="judge",
        after_judge=_er_after_judge, bert_texts=_er_texts, answer="emotion",
    ),
    "vp": TaskRule(
        "vp", "VP", _parse_vp, _vp_extras, _vp_metrics,
        headline=("judge", "bertscore"), headline_metric="judge", top1=None, live="judge",
        bert_texts=_vp_texts, authors_rubric=True, answer="viewpoints",
    ),
}
"""The six tasks' rules, in the paper's order (keys equal :data:`~rescue_bench.labels.TASKS`)."""


def rule(task: str) -> TaskRule:
    """The rule of ``task``; ``ValueError`` naming it for an unknown task."""
    try:
        return TASK_TABLE[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}") from None


def live_value(task: str, records: Sequence[Record]) -> float | None:
    """The task's :attr:`~TaskRule.live` metric over the records scored so far.

    For a judged task that is the records whose judge score has arrived (a valid answer waits for
    the judge while the run goes on); ``None`` before any record counts.
    """
    r = rule(task)
    chosen = [x for x in records if x.get("judge_score") is not None] if r.judged else list(records)
    if not chosen:
        return None
    return r.metrics(chosen).get(r.live)


assert tuple(TASK_TABLE) == TASKS, "the task table must list the tasks of labels.TASKS, in their order"
assert all(r.binary == (r.answer == "yes_no") and r.ranked == (r.answer == "ranking") for r in TASK_TABLE.values()), \
    "a task's answer kind must agree with labels.BINARY_TASKS and labels.RANKED_TASKS"
