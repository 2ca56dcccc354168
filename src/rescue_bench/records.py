"""The fields of a result record (one line of ``results/<task>.jsonl``), typed per task.

Records stay plain dicts at run time (the JSON objects the files hold, written byte for byte as
before, with no conversion cost); these TypedDicts tell mypy which keys a record of each task has,
so code that reads a field is checked against one declaration. :class:`rescue_bench.scoring.ResultRecord`
is the run-time schema of the common part (it validates every line the report reads); the task
table (:mod:`rescue_bench.task_table`) fills the task's own fields.

- :class:`InvalidCause`: why an answer scores as wrong without being judged on its content (a
  record's ``cause``), the one vocabulary the parsers, the engine, the summary and the report share.
- :class:`RecordBase`: every task's fields (``id`` ... ``cause``), and those the engine adds to any
  record (a trimmed prompt's ``trimmed_rows``, a failed judge call's ``judge_failed``/``judge_error``).
- ITP, RPP, STP and SSP add nothing (:data:`ITPRecord` ... are the base).
- :class:`ERRecord` and :class:`VPRecord`: the judged tasks' scores (:class:`ERFields`,
  :class:`VPFields`, the task table's ``extras``), then the judge's flag and the authors' VP rubric.
- :class:`ResultRow`: a record of any task, every task's own field optional (code that handles all tasks).

No ``from __future__ import annotations`` here: the classes' required and optional keys are then
known at run time too (``__required_keys__``), which the tests compare with real records.
"""

from enum import StrEnum
from typing import Any, NotRequired, TypedDict


class InvalidCause(StrEnum):
    """Why a record's answer scores as wrong without being judged on its content: a result record's ``cause``.

    The parsers (:mod:`rescue_bench.parse`) name ``no_answer`` (an empty reply), ``no_json``,
    ``echo``, ``missing_key``, ``unknown_label`` and ``out_of_range`` for an answer they cannot use;
    the engine names ``no_answer`` for a call that returned no reply and ``context_overflow`` for a
    prompt the model refused as longer than its context window; ``judge_failed`` is a usable answer
    that no judge scored (its reply never fit the scale, or its call failed), so it got the floor.
    Every cause but ``judge_failed`` makes the answer invalid (``valid`` false). The scoring rule is
    the same for all of them: an unusable answer is wrong.
    """

    NO_ANSWER = "no_answer"
    """No reply, or an empty one."""
    CONTEXT_OVERFLOW = "context_overflow"
    """The prompt did not fit the model's context window (the provider refused it, or stopped at the window)."""
    NO_JSON = "no_json"
    """A reply without the JSON the contract asks for (and no bare answer the parser accepts); text
    copied from the transcript (its rows' numbers, ``[6]``) is no JSON."""
    ECHO = "echo"
    """A reply that only sends the prompt's answer template back: its alternatives side by side
    (``{"answer": "yes"} or {"answer": "no"}``) or its ``<placeholders>`` in place of an answer."""
    MISSING_KEY = "missing_key"
    """JSON without the contract's key, or with the key but no usable value under it (an empty emotion)."""
    UNKNOWN_LABEL = "unknown_label"
    """The key's value names no label of the closed set (yes/no, the candidates)."""
    OUT_OF_RANGE = "out_of_range"
    """A number that is no number, off the scale or not a whole one where the scale asks for it."""
    JUDGE_FAILED = "judge_failed"
    """A usable answer that the judge did not score."""


INVALID_CAUSES: tuple[InvalidCause, ...] = tuple(InvalidCause)
"""Every cause, in the order the summary and the tables show them."""

CAUSE_LABELS: dict[str, str] = {
    InvalidCause.NO_ANSWER: "no answer",
    InvalidCause.CONTEXT_OVERFLOW: "context overflow",
    InvalidCause.NO_JSON: "no JSON",
    InvalidCause.ECHO: "echoed template",
    InvalidCause.MISSING_KEY: "JSON without the key",
    InvalidCause.UNKNOWN_LABEL: "unknown label",
    InvalidCause.OUT_OF_RANGE: "out-of-range value",
    InvalidCause.JUDGE_FAILED: "judge failed",
}
"""How the tables name each cause."""


class Located(TypedDict):
    """Where a results line sits: the fields a task's record, an agent chain's record and a
    closed-loop episode's record all begin with."""

    id: str
    task: str
    sample_id: str
    scenario: str
    row: int


class RecordBase(Located):
    """The fields every result record has (:class:`rescue_bench.scoring.ResultRecord`)."""

    n_rows: int | None
    gold: Any
    candidates: list[str] | dict[str, list[str]]
    prediction: Any
    valid: bool
    error: str | None
    raw: str | None
    cause: InvalidCause | None
    """Why the answer scores as wrong without being judged on its content (``None``: a usable answer)."""
    trimmed_rows: NotRequired[int]
    """Context rows left out of the prompt so that it fits the model's window (``--on-overflow trim``)."""
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
"""``summary.json``: ``{task: {scenario: {metric: value, "n": int, "invalid_rate": float, "invalid_causes":
{cause: int}, "trimmed": int}}}``."""


class AfterJudge(TypedDict, total=False):
    """The fields that follow the judge score (ER's ``score``): the task table's ``after_judge``."""

    score: float | None
