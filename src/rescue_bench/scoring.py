"""From a raw answer to a scored record, and from records to the summary (SPEC section 5).

Pure functions shared by the inspect_ai scorer, the report and any user script: the per-instance
record written to ``results/<task>.jsonl`` and ``summary.json`` are both defined here, so a summary
always recomputes exactly from its records.

Rules: an answer that cannot be parsed or names no valid label is *invalid*, counted as wrong and
reported in ``invalid_rate`` and, by cause (:class:`~rescue_bench.records.InvalidCause`), in
``invalid_causes``; it is never dropped nor filled from the gold. For ER an invalid answer gets the
intensity score 1 (no model needed). Its judge score 1 (and ER's combined score 1) and its BERTScore
0 are the floors of the judge and of BERTScore: given without a call when the judge
(:func:`with_judge`) or BERTScore (:func:`with_bertscore_floor`) is part of the run, and left
``None`` when it is not, so a score nobody computed is never shown.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.contract import TARGET_SCALE, VIEWPOINT_SCALE
from rescue_bench.labels import SUMMARY_SCENARIOS, TASKS, Scenario, in_scenario
from rescue_bench.parse import ParsedAnswer
from rescue_bench.records import INVALID_CAUSES, InvalidCause, ResultRow, Summary
from rescue_bench.task_table import INVALID_BERTSCORE, INVALID_JUDGE_SCORE, TASK_TABLE, rule

__all__ = [
    "AUTHORS_RUBRIC_MAX",
    "HEADLINE",
    "INVALID_BERTSCORE",
    "INVALID_JUDGE_SCORE",
    "PARSE_CAUSES",
    "SUMMARY_SCENARIOS",
    "AnswerCounts",
    "ResultRecord",
    "ResultRow",
    "Summary",
    "answer_counts",
    "base_record",
    "bertscore_pairs",
    "cause_counts",
    "overflow_counts",
    "parse_answer",
    "summarize",
    "task_metrics",
    "with_authors_judge",
    "with_bertscore_floor",
    "with_judge",
]

HEADLINE: dict[str, tuple[str, ...]] = {task: r.headline for task, r in TASK_TABLE.items()}
"""The metrics of each task in ``summary.json``, in display order (from the task table)."""


class ResultRecord(BaseModel):
    """The schema of a result record, one line of ``results/<task>.jsonl``.

    :func:`base_record` makes every record through it and the report validates every line it reads
    with it, so a record has one definition. Records travel as the JSON objects the files hold
    (``model_dump()``); the fields after ``raw`` depend on the task and the run (ER: ``intensity_score``,
    ``judge_score``, ``score``, ``bertscore``; VP: ``judge_score``, ``bertscore``; with a judge:
    ``judge_flagged``; the authors' VP rubric: ``judge_authors``, ``judge_authors_parts``) and are
    kept as extra fields, in the order they were set. :mod:`rescue_bench.records` types the fields of
    each task's records for mypy (the records stay these dicts).
    """

    model_config = ConfigDict(extra="allow", strict=True)

    id: str
    task: str
    """A task name, or ``agent`` for the support agent's chain records."""
    sample_id: str
    scenario: Scenario
    row: int
    n_rows: int | None = Field(default=None, ge=1)
    gold: Any
    candidates: list[str] | dict[str, list[str]] = Field(default_factory=list)
    """The labels offered (the support agent's chain records: per kind, targets, strategies, patterns)."""
    prediction: Any = None
    valid: bool
    error: str | None = None
    raw: str | None = None
    cause: InvalidCause | None = Field(default=None, strict=False)
    """Why the answer scores as wrong without being judged on its content (``None``: usable; absent in
    records of earlier versions). Read from the file's string."""


def parse_answer(task: str, raw: str | None, candidates: Sequence[str], participants: Sequence[str]) -> ParsedAnswer:
    """The parsed raw answer for ``task`` (see :mod:`rescue_bench.parse`); ``None``: no answer."""
    if raw is None:
        return ParsedAnswer(None, False, "no answer", InvalidCause.NO_ANSWER)
    return rule(task).parse(raw, candidates, participants)


def base_record(
    instance: Mapping[str, Any], raw: str | None, *, cause: InvalidCause | None = None, error: str | None = None
) -> ResultRow:
    """The judge-free part of a result record for ``instance`` (an ``Instance`` dump) and its raw answer.

    A call that returned no answer (``raw`` ``None``) may say why: its ``cause`` (default
    ``no_answer``; ``context_overflow`` for a prompt the model refused as too long) and ``error``.
    """
    task = instance["task"]
    if raw is None and (cause is not None or error is not None):
        parsed = ParsedAnswer(None, False, error or "no answer", cause or InvalidCause.NO_ANSWER)
    else:
        parsed = parse_answer(task, raw, instance.get("candidates", []), instance.get("participants", []))
    prediction, valid = (parsed.prediction if parsed.valid else None), parsed.valid
    extra = rule(task).extras(prediction, valid, instance)
    record = ResultRecord(
        id=instance["id"],
        task=task,
        sample_id=instance["sample_id"],
        scenario=instance["scenario"],
        row=instance["row"],
        n_rows=instance.get("n_rows"),
        gold=instance["gold"],
        candidates=instance.get("candidates", []),
        prediction=prediction,
        valid=valid,
        error=parsed.error,
        raw=raw,
        cause=parsed.cause,
        **extra,
    ).model_dump()
    return cast(ResultRow, record)


def with_judge(record: ResultRow, judge_score: int | None, flagged: bool = False) -> ResultRow:
    """``record`` with its judge score set, in a run that has a judge; ER's ``score`` follows.

    A valid answer gets ``judge_score`` (``flagged``: the judge's reply never fit the scale, so the
    score is the floor and the record's cause ``judge_failed``); an invalid one gets the judge's
    floor, :data:`INVALID_JUDGE_SCORE`, without a call (``judge_score`` is ignored)."""
    if not record["valid"]:
        out: ResultRow = {**record, "judge_score": INVALID_JUDGE_SCORE}
        floor = rule(out["task"]).after_judge
        if floor is not None:
            out.update(floor(out, INVALID_JUDGE_SCORE))
        return out
    out = {**record, "judge_score": judge_score, "judge_flagged": flagged}
    if flagged:
        out["cause"] = InvalidCause.JUDGE_FAILED
    follow = rule(out["task"]).after_judge
    if follow is not None:
        out.update(follow(out, judge_score))
    return out


def with_bertscore_floor(record: ResultRow) -> ResultRow:
    """``record`` (of a run that computes BERTScore) with BERTScore's floor, :data:`INVALID_BERTSCORE`,
    when it is an invalid ER/VP answer (there is no text to compare); any other record as it is."""
    if record["valid"] or not rule(record["task"]).judged:
        return record
    return {**record, "bertscore": INVALID_BERTSCORE}


AUTHORS_RUBRIC_MAX = TARGET_SCALE.hi + VIEWPOINT_SCALE.hi
"""The authors' VP rubric: target correctness 0-2 plus viewpoint correctness 0-4."""


def with_authors_judge(record: ResultRow, parts: dict[str, int] | None, flagged: bool = False) -> ResultRow:
    """``record`` scored with the authors' VP rubric: ``judge_authors`` = target + viewpoint (0-6).

    Invalid answers and judge replies that never fit the rubric score 0, the rubric's lowest value
    (a valid answer's cause is then ``judge_failed``).
    """
    if not record["valid"]:
        return {**record, "judge_authors": 0, "judge_authors_parts": None, "judge_flagged": flagged or None}
    if parts is None:
        return {**record, "judge_authors": 0, "judge_authors_parts": None, "judge_flagged": flagged or None, "cause": InvalidCause.JUDGE_FAILED}
    total = parts["target_score"] + parts["viewpoint_score"]
    return {**record, "judge_authors": total, "judge_authors_parts": parts, "judge_flagged": flagged}


def bertscore_pairs(record: ResultRow) -> tuple[str, str] | None:
    """The (prediction, reference) texts BERTScore compares for a valid ER/VP record, else ``None``.

    ER compares the emotion descriptions; VP compares the predicted viewpoint descriptions, joined in
    order, with the gold ones joined the same way.
    """
    texts = TASK_TABLE[record["task"]].bert_texts if record["task"] in TASK_TABLE else None
    if not record["valid"] or texts is None:
        return None
    return texts(record)


def task_metrics(task: str, records: Sequence[ResultRow]) -> dict[str, float | None]:
    """The task's headline metrics over ``records`` (fractions for classification metrics).

    Generation metrics are ``None`` when any record lacks the score (e.g. no judge was given).
    """
    if not records:
        return {m: None for m in HEADLINE[task]}
    return rule(task).metrics(records)


def cause_counts(records: Sequence[ResultRow]) -> dict[str, int]:
    """Records per cause (:data:`~rescue_bench.records.INVALID_CAUSES`, every cause, zeros included).

    The causes of invalid answers add up to the invalid ones; ``judge_failed`` counts valid answers
    that no judge scored. Records of earlier versions carry no cause and count in none."""
    out = {str(cause): 0 for cause in INVALID_CAUSES}
    for r in records:
        cause = r.get("cause")
        if cause is not None and cause in out:
            out[str(cause)] += 1
    return out


PARSE_CAUSES: tuple[InvalidCause, ...] = tuple(
    c for c in INVALID_CAUSES if c not in (InvalidCause.CONTEXT_OVERFLOW, InvalidCause.JUDGE_FAILED)
)
"""Why a reply the model sent is unusable (an empty reply is ``no_answer``): the causes of
:func:`answer_counts`'s ``invalid``."""


class AnswerCounts(BaseModel):
    """What became of every instance of a run, in counts that add up (:func:`answer_counts`):
    ``instances = answered + overflow + without_answer`` and ``answered = usable + sum(invalid)``."""

    instances: int
    answered: int
    """The call returned: the model's reply was parsed (usable, or unusable by cause)."""
    usable: int
    invalid: dict[str, int]
    """The unusable replies by cause (:data:`PARSE_CAUSES`, zeros included)."""
    overflow: int
    """Prompts the model refused as longer than its context window: no reply, and no call left to make."""
    without_answer: int
    """Calls that failed after their retries: no reply (the run is failed)."""
    judge_failures: int
    """Usable answers whose judge call failed (counted among the usable ones; the run is failed)."""


def answer_counts(records: Sequence[ResultRow], without_answer: Collection[str] = ()) -> AnswerCounts:
    """What became of each record's instance (:class:`AnswerCounts`): the one count of answers that
    ``run.json``, ``summary.json`` (per task and scenario), ``rescue eval`` and the report give.

    ``without_answer``: the ids of the instances whose call failed after its retries (the engine
    knows them; a finished run has none)."""
    failed = [r for r in records if r["id"] in without_answer]
    overflow = [r for r in records if r["id"] not in without_answer and r.get("cause") == InvalidCause.CONTEXT_OVERFLOW]
    answered = [r for r in records if r["id"] not in without_answer and r.get("cause") != InvalidCause.CONTEXT_OVERFLOW]
    invalid = {str(c): 0 for c in PARSE_CAUSES}
    for r in answered:
        cause = r.get("cause")
        if not r["valid"] and cause is not None and str(cause) in invalid:
            invalid[str(cause)] += 1
    return AnswerCounts(
        instances=len(records),
        answered=len(answered),
        usable=sum(1 for r in answered if r["valid"]),
        invalid=invalid,
        overflow=len(overflow),
        without_answer=len(failed),
        judge_failures=sum(1 for r in records if r.get("judge_failed")),
    )


def overflow_counts(records: Sequence[ResultRow]) -> dict[str, dict[str, dict[str, int]]]:
    """``{task: {scenario: {"instances", "overflow", "trimmed"}}}`` for couple, family and both: the
    instances whose prompt did not fit the model's context window (scored as wrong), and those whose
    prompt was trimmed to fit (``--on-overflow trim``)."""
    by_task: dict[str, list[ResultRow]] = {}
    for r in records:
        by_task.setdefault(r["task"], []).append(r)
    out: dict[str, dict[str, dict[str, int]]] = {}
    for task in sorted(by_task, key=lambda t: TASKS.index(t) if t in TASKS else len(TASKS)):
        out[task] = {}
        for scenario in SUMMARY_SCENARIOS:
            chosen = in_scenario(by_task[task], scenario)
            out[task][scenario] = {
                "instances": len(chosen),
                "overflow": sum(1 for r in chosen if r.get("cause") == InvalidCause.CONTEXT_OVERFLOW),
                "trimmed": sum(1 for r in chosen if r.get("trimmed_rows")),
            }
    return out


def summarize(records: Sequence[ResultRow]) -> Summary:
    """``{task: {scenario: {metric: value, "n": int, "answered": int, "invalid_rate": float, "invalid_causes":
    {cause: int}, "trimmed": int}}}`` for couple, family, both (``answered``: replies the model sent, usable or
    not, as :func:`answer_counts` counts them; ``trimmed``: prompts shortened to fit the model's window)."""
    by_task: dict[str, list[ResultRow]] = {}
    for r in records:
        by_task.setdefault(r["task"], []).append(r)
    out: Summary = {}
    for task in sorted(by_task, key=lambda t: TASKS.index(t) if t in TASKS else len(TASKS)):
        items = by_task[task]
        out[task] = {}
        for scenario in SUMMARY_SCENARIOS:
            chosen = in_scenario(items, scenario)
            values = task_metrics(task, chosen)
            metrics: dict[str, Any] = {m: values.get(m) for m in (*HEADLINE[task], *(k for k in values if k not in HEADLINE[task]))}
            metrics["n"] = len(chosen)
            metrics["answered"] = answer_counts(chosen).answered
            metrics["invalid_rate"] = (sum(not r["valid"] for r in chosen) / len(chosen)) if chosen else None
            metrics["invalid_causes"] = cause_counts(chosen)
            metrics["trimmed"] = sum(1 for r in chosen if r.get("trimmed_rows"))
            out[task][scenario] = metrics
    return out
