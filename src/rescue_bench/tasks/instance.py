"""The benchmark instance and the pieces every task builder shares.

An :class:`Instance` is one decision the model must make. It carries the gold answer and everything
the model may see; what it may see is *projected* from the rows by cue mode, so annotation fields that
hold answers (emotions, viewpoints, strategies, relation patterns) can never reach a prompt.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rescue_bench.data.models import Clip, Row
from rescue_bench.labels import CUE_MODES, CueMode, Scenario, TaskName

T = TypeVar("T")


DEFAULT_CONTEXT: dict[str, int] = {"itp": 3, "rpp": -1, "stp": 3, "ssp": 3, "er": 3, "vp": 3}
"""Rows of context before the decision point, per task (-1 = all previous rows). SPEC section 4."""

DECISION_ROWS: dict[str, int] = {"itp": 1}
"""The newest context rows that are the decision itself, never left out of a prompt: ITP's last row
is the row k its question asks about. (ER and VP show their decision row as ``current``; RPP, STP and
SSP predict a row that is not shown.)"""

WORD_RE = re.compile(r"[A-Za-z0-9']+")


def word_count(text: str) -> int:
    """Words as the benchmark counts them: runs of ``[A-Za-z0-9']``."""
    return len(WORD_RE.findall(text or ""))


def pick_evenly(items: Sequence[T], limit: int) -> list[T]:
    """Keep at most ``limit`` items spread evenly over ``items``, deterministically.

    All items are kept when there are at most ``limit``. Otherwise the indices
    ``round(r * (n - 1) / (limit - 1))`` for ``r`` in ``0..limit-1`` are taken (Python's ``round``,
    half to even), de-duplicated, and topped up with the earliest unused items; the result keeps the
    input order. With ``limit == 1`` the middle item (index ``n // 2``, the upper middle for an even
    ``n``) is taken. ``limit <= 0`` keeps nothing.
    """
    n = len(items)
    if limit <= 0:
        return []
    if n <= limit:
        return list(items)
    if limit == 1:
        return [items[n // 2]]
    chosen: list[int] = []
    for r in range(limit):
        idx = round(r * (n - 1) / (limit - 1))
        if idx not in chosen:
            chosen.append(idx)
    for idx in range(n):
        if len(chosen) >= limit:
            break
        if idx not in chosen:
            chosen.append(idx)
    return [items[i] for i in sorted(chosen)]


def instance_id(task: str, sample_id: str, row: int) -> str:
    """A stable, neutral id: a hash of task, clip and row, so nothing in it hints at the answer."""
    digest = hashlib.sha256(f"{task}\x1f{sample_id}\x1f{row}".encode()).hexdigest()[:12]
    return f"{task}-{digest}"


@dataclass(frozen=True)
class LeftOut:
    """A would-be instance whose gold is outside its closed set or range (SPEC section 3 builds no
    instance of it): named, so it is never dropped silently. ``field`` is the row's field at fault
    (``relation_cycle_state``, ``support_strategy[0].strategy_type``, ``internal_emotion[1].intensity``)
    and ``reason`` the data layer's words (:mod:`rescue_bench.data.validate`)."""

    task: TaskName
    sample_id: str
    scenario: Scenario
    row: int
    """The 1-based row the instance would be about."""
    field: str
    reason: str

    @property
    def id(self) -> str:
        """The id the instance would have had."""
        return instance_id(self.task, self.sample_id, self.row)

    def __str__(self) -> str:
        return f"{self.task.upper()} instance left out: clip {self.sample_id}, row {self.row}, field {self.field}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        """The record ``run.json`` and ``summary.json`` name it by."""
        return {"id": self.id, "sample_id": self.sample_id, "scenario": self.scenario, "row": self.row, "field": self.field, "reason": self.reason}


class _Cue(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TalkView(_Cue):
    speaker: str
    target: list[str] = Field(default_factory=list)
    content: str


class PersonCueView(_Cue):
    person: str
    description: str


class InteractionView(_Cue):
    initiator: str
    target: list[str] = Field(default_factory=list)
    description: str


class RowView(_Cue):
    """What the model may see of one row under a cue mode. No annotation that carries a gold."""

    row_index: int
    speaker: str
    target: list[str] = Field(default_factory=list)
    text: str
    background: list[TalkView] = Field(default_factory=list)
    tone: str | None = None
    posture: list[PersonCueView] | None = None
    face: list[PersonCueView] | None = None
    self_directed: list[PersonCueView] | None = None
    interaction: list[InteractionView] | None = None


def _s(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _names(values: Any) -> list[str]:
    return [v.strip() for v in values or [] if isinstance(v, str) and v.strip()]


def _person_cues(items: Any) -> list[PersonCueView]:
    out = []
    for item in items or []:
        if _s(item.description):
            out.append(PersonCueView(person=_s(item.person), description=_s(item.description)))
    return out


def project_row(row: Row, position: int, mode: CueMode) -> RowView:
    """Project a row onto what the model may see under ``mode`` (SPEC section 4).

    ``dialogue``: speaker, target, text, background talk; ``audio`` adds the tone of voice; ``visual``
    adds posture, face, self-directed and interaction behaviour; ``audiovisual`` adds both.
    ``position`` (1-based) stands in for a missing ``row_index``.
    """
    if mode not in CUE_MODES:
        raise ValueError(f"unknown cue mode {mode!r}; expected one of {', '.join(CUE_MODES)}")
    view = RowView(
        row_index=row.row_index if row.row_index is not None else position,
        speaker=row.speaker,
        target=row.targets,
        text=row.text,
        background=[
            TalkView(speaker=_s(t.speaker), target=_names(t.target), content=_s(t.content))
            for t in row.background_dialogue or []
            if _s(t.content)
        ],
    )
    if mode in ("audio", "audiovisual"):
        view.tone = _s(row.tone_of_voice) or None
    if mode in ("visual", "audiovisual"):
        view.posture = _person_cues(row.body_posture)
        view.face = _person_cues(row.facial_expressions)
        view.self_directed = _person_cues(row.self_directed_behavior)
        view.interaction = [
            InteractionView(initiator=_s(i.initiator), target=_names(i.target), description=_s(i.description))
            for i in row.interaction_behavior or []
            if _s(i.description)
        ]
    return view


_VIEWS: ContextVar[dict[tuple[int, str], tuple[Sequence[Row], list[RowView | None]]] | None] = ContextVar(
    "rescue_row_views", default=None
)


@contextmanager
def shared_row_views() -> Iterator[None]:
    """Within this block each row is projected once per cue mode and its view shared by instances.

    RPP shows all previous rows, so without sharing a clip of n rows builds ~n^2/2 views (1.6M for
    10x the release). Scoped to one build, so rows edited in place later are projected afresh.
    """
    token = _VIEWS.set({})
    try:
        yield
    finally:
        _VIEWS.reset(token)


def context_rows(rows: Sequence[Row], end: int, window: int, mode: CueMode) -> list[RowView]:
    """Views of the rows before 0-based position ``end`` (exclusive), newest last.

    ``window`` is the number of rows kept (``-1`` = all previous rows, ``0`` = none).
    """
    start = 0 if window < 0 else max(0, end - window)
    cache = _VIEWS.get()
    if cache is None:
        return [project_row(rows[i], i + 1, mode) for i in range(start, end)]
    entry = cache.get((id(rows), mode))
    if entry is None or entry[0] is not rows:
        entry = cache[(id(rows), mode)] = (rows, [None] * len(rows))
    views = entry[1]
    out = []
    for i in range(start, end):
        view = views[i]
        if view is None:
            view = views[i] = project_row(rows[i], i + 1, mode)
        out.append(view)
    return out


class ModelInput(BaseModel):
    """What a prompt may show of an instance: everything but its gold, its id and its bookkeeping.

    :func:`rescue_bench.prompts.render` builds the prompt from this alone, so the gold (and the id,
    clip and row, which could hint at it) cannot reach the model through a prompt.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: TaskName
    scenario: Scenario
    candidates: list[str] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    mode: CueMode = "dialogue"
    context: list[RowView] = Field(default_factory=list)
    current: RowView | None = None
    client: str | None = None
    support_target: str | None = None


class Instance(BaseModel):
    """One benchmark decision: what the model sees, and the gold it is scored against.

    Gold formats: itp ``"yes"``/``"no"``; rpp, stp, ssp the label; er
    ``{"emotion": str, "intensity": int}``; vp a list of ``{"source", "target", "viewpoint"}``.
    ``row`` is the 1-based row the decision is about (ITP: row k, the last row before the
    boundary; all others: the row being predicted). ``n_rows`` is the clip's length, for
    position analyses.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    task: TaskName
    sample_id: str
    scenario: Scenario
    row: int
    n_rows: int
    gold: Any
    candidates: list[str] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    mode: CueMode = "dialogue"
    context: list[RowView] = Field(default_factory=list)
    current: RowView | None = None
    """ER/VP: the current client row, shown to the model."""
    client: str | None = None
    """ER/VP: the client whose emotion or viewpoints are asked for."""
    support_target: str | None = None
    """SSP: the known target of the therapist's next turn."""

    def droppable_rows(self) -> int:
        """How many of the oldest context rows a prompt may leave out: all but :data:`DECISION_ROWS`."""
        return max(0, len(self.context) - DECISION_ROWS.get(self.task, 0))

    def without_oldest_rows(self, rows: int) -> Instance:
        """The instance showing ``rows`` fewer of its oldest context rows (at most :meth:`droppable_rows`),
        for a prompt that must fit a model's context window; the decision row and the question stay."""
        dropped = max(0, min(rows, self.droppable_rows()))
        return self if dropped == 0 else self.model_copy(update={"context": self.context[dropped:]})

    def model_input(self) -> ModelInput:
        """Everything a prompt may use: the instance without its gold and bookkeeping fields.

        Row views are shared, not copied nor re-validated: about 6 us per instance on the real clips
        (pydantic's ``model_construct`` took 23 us), against about 100 us to render the prompt.
        """
        return ModelInput(**{name: getattr(self, name) for name in ModelInput.model_fields})


def make_instance(
    clip: Clip,
    task: TaskName,
    position: int,
    gold: Any,
    window: int,
    mode: CueMode,
    *,
    context_end: int | None = None,
    **fields: Any,
) -> Instance:
    """An instance of ``task`` about the row at 0-based ``position`` of ``clip``.

    Fills what every task shares (neutral id, clip, row, participants, cue mode, and as context the
    ``window`` rows before ``context_end``, which defaults to ``position``: the row itself is not
    shown); ``fields`` adds the task's own (candidates, current row, client, support target).
    """
    return Instance(
        id=instance_id(task, clip.sample_id, position + 1),
        task=task,
        sample_id=clip.sample_id,
        scenario=clip.scenario,
        row=position + 1,
        n_rows=len(clip.rows),
        gold=gold,
        participants=clip.clients,
        mode=mode,
        context=context_rows(clip.rows, position if context_end is None else context_end, window, mode),
        **fields,
    )
