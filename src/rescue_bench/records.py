"""The fields of a result record (one line of ``results/<task>.jsonl``), typed per task.

Records stay plain dicts at run time (the JSON objects the files hold, written byte for byte as
before, with no conversion cost); these TypedDicts tell mypy which keys a record of each task has,
so code that reads a field is checked against one declaration. :class:`rescue_bench.scoring.ResultRecord`
is the run-time schema of the common part (it validates every line the report reads); the task
table (:mod:`rescue_bench.task_table`) fills the task's own fields.

- :class:`RecordBase`: every task's fields (``id`` ... ``raw``), and those the engine adds to any
  record (a failed judge call's ``judge_failed``/``judge_error``).
- ITP, RPP, STP and SSP add nothing (:data:`ITPRecord` ... are the base).
- :class:`ERRecord` and :class:`VPRecord`: the judged tasks' scores (:class:`ERFields`,
  :class:`VPFields`, the task table's ``extras``), then the judge's flag and the authors' VP rubric.
- :class:`ResultRow`: a record of any task, every task's own field optional (code that handles all tasks).

No ``from __future__ import annotations`` here: the classes' required and optional keys are then
known at run time too (``__required_keys__``), which the tests compare with real records.
"""

from typing import Any, NotRequired, TypedDict


class RecordBase(TypedDict):
    """The fields every result record has (:class:`rescue_bench.scoring.ResultRecord`)."""

    id: str
    task: str
    sample_id: str
    scenario: str
    row: int
    n_rows: int | None
    gold: Any
    candidates: list[str] | dict[str, list[str]]
    prediction: Any
    valid: bool
    error: str | None
    raw: str | None
    judge_failed: NotRequired[bool]
    """A valid answer whose judge call failed (the run is then failed: ``run.json``'s counts)."""
    judge_error: NotRequired[str | None]


ITPRecord = RecordBase
RPPRecord = RecordBase
STPRecord = RecordBase
SSPRecord = RecordBase


class ERFields(TypedDict):
    """ER's own fields, set when the record is made (an invalid answer: the scale's floor, no judge call)."""

    intensity_score: float
    judge_score: int | None
    score: float | None
    bertscore: float | None


class VPFields(TypedDict):
    """VP's own fields, set when the record is made."""

    judge_score: int | None
    bertscore: float | None


class JudgedFields(TypedDict, total=False):
    """What the judge adds to a judged record: its flag (a reply that needed the re-ask or never fit)."""

    judge_flagged: bool | None


class ERRecord(RecordBase, ERFields, JudgedFields):
    """A result record of ER."""


class VPRecord(RecordBase, VPFields, JudgedFields):
    """A result record of VP; ``judge_authors`` (0-6) and its parts with the authors' rubric."""

    judge_authors: NotRequired[int | None]
    """``None`` when the judge call failed."""
    judge_authors_parts: NotRequired[dict[str, int] | None]


class ResultRow(RecordBase, total=False):
    """A result record of any task: the common fields, and every task's own fields as optional."""

    intensity_score: float
    judge_score: int | None
    score: float | None
    bertscore: float | None
    judge_flagged: bool | None
    judge_authors: int | None
    judge_authors_parts: dict[str, int] | None


Summary = dict[str, dict[str, dict[str, Any]]]
"""``summary.json``: ``{task: {scenario: {metric: value, "n": int, "invalid_rate": float}}}``."""


class AfterJudge(TypedDict, total=False):
    """The fields that follow the judge score (ER's ``score``): the task table's ``after_judge``."""

    score: float | None
