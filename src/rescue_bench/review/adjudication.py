"""Adjudication: an admin compares the annotators' copies of an independent segment and writes the
final copy, field by field; every choice goes to the audit log (action ``adjudicate``).

For each row the annotators' values are compared field by field (every editable field of the release
row, whole values: a list field such as ``internal_emotion`` is one value). A field on which all
annotator copies hold the same value is *agreed* and taken as is; a field on which they differ is a
*dispute*: the admin takes one annotator's value, the draft, or types a value. The final row is saved
with the version check of every other save (a stale adjudication is refused with 409) and marked
reviewed, which is what export reads first (:func:`rescue_bench.review.store.export_choice`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from rescue_bench.review.access import final_copy
from rescue_bench.review.edits import EDITABLE_FIELDS, RowState, StaleWrite, apply_save, plan_copy_save
from rescue_bench.review.errors import Conflict, Invalid, Locked, NotFound
from rescue_bench.review.models import Copy, RowValue, Segment, SegmentRow, User, dumps, utcnow

DRAFT_SOURCE = "draft"
"""The ``take`` source naming the imported draft."""

_ABSENT = "\x00absent"


def _key(row: dict[str, Any], name: str) -> str:
    """A comparable form of a field's value (a missing key differs from ``null``)."""
    return dumps(row[name]) if name in row else _ABSENT


@dataclass(frozen=True)
class AnnotatorCopy:
    """One annotator's copy of one row."""

    annotator: str
    row: dict[str, Any]
    """The whole row as their copy holds it (the draft while they saved nothing)."""
    reviewed: bool
    version: int


@dataclass(frozen=True)
class Option:
    """One distinct value of a disputed field and the annotators who gave it."""

    value: Any
    present: bool
    annotators: tuple[str, ...]


@dataclass(frozen=True)
class Dispute:
    field: str
    options: tuple[Option, ...]
    draft: Any
    final: Any


@dataclass
class RowComparison:
    """The annotators' copies of one row beside the final copy."""

    position: int
    draft: dict[str, Any]
    final: dict[str, Any]
    final_version: int
    adjudicated: bool
    """The final copy of this row is reviewed (adjudicated)."""
    copies: list[AnnotatorCopy]
    disputes: list[Dispute] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every annotator marked the row reviewed."""
        return bool(self.copies) and all(c.reviewed for c in self.copies)

    def agreed_value(self, name: str) -> tuple[bool, Any]:
        """``(present, value)`` of a field every annotator copy holds alike (callers check it is agreed)."""
        row = self.copies[0].row if self.copies else self.draft
        return (name in row, row.get(name))

    def to_api(self) -> RowComparisonOut:
        return RowComparisonOut(
            row_index=self.position,
            speaker=self.final.get("primary_speaker"),
            dialogue=self.final.get("dialogue_cleaned"),
            final=FinalOut(version=self.final_version, reviewed=self.adjudicated, row=self.final),
            draft=self.draft,
            annotators=[AnnotatorOut(name=c.annotator, reviewed=c.reviewed, version=c.version) for c in self.copies],
            complete=self.complete,
            disputes=[
                DisputeOut(
                    field=d.field,
                    options=[OptionOut(value=o.value, present=o.present, annotators=list(o.annotators)) for o in d.options],
                    draft=d.draft,
                    final=d.final,
                )
                for d in self.disputes
            ],
        )


class FinalOut(BaseModel):
    """The final copy of a row: its version, whether it is adjudicated, its row."""

    version: int
    reviewed: bool
    row: dict[str, Any]


class CopyOut(BaseModel):
    """Another copy of a row as the row page shows it: whose (an annotator, or ``final``), reviewed, its row."""

    name: str
    reviewed: bool
    row: dict[str, Any]


class AnnotatorOut(BaseModel):
    name: str
    reviewed: bool
    version: int


class OptionOut(BaseModel):
    """One distinct value of a disputed field (``present``: false when the key is absent) and who gave it."""

    value: Any
    present: bool
    annotators: list[str]


class DisputeOut(BaseModel):
    field: str
    options: list[OptionOut]
    draft: Any
    final: Any


class RowComparisonOut(BaseModel):
    """A row on the adjudication page: the final copy, the draft, the annotators' copies and the fields they dispute."""

    row_index: int
    speaker: Any
    dialogue: Any
    final: FinalOut
    draft: dict[str, Any]
    annotators: list[AnnotatorOut]
    complete: bool
    disputes: list[DisputeOut]


class SummaryOut(BaseModel):
    """Counts for the adjudication page: rows, adjudicated, disputed, ready to accept, incomplete."""

    rows: int
    adjudicated: int
    disputed: int
    agreed: int
    incomplete: int


class OthersOut(BaseModel):
    copies: list[CopyOut] = Field(description="the other annotators' values (and the final one): name, reviewed, row")
    fields: list[str] = Field(description="fields where any of them differs from your copy")
    adjudicated: bool


def _disputes(item: RowComparison) -> list[Dispute]:
    out = []
    for name in EDITABLE_FIELDS:
        groups: dict[str, list[AnnotatorCopy]] = {}
        for c in item.copies:
            groups.setdefault(_key(c.row, name), []).append(c)
        if len(groups) < 2:
            continue
        options = tuple(
            Option(members[0].row.get(name), name in members[0].row, tuple(m.annotator for m in members)) for members in groups.values()
        )
        out.append(Dispute(name, options, item.draft.get(name), item.final.get(name)))
    return out


def compare_segment(session: Session, segment: Segment, positions: list[int] | None = None) -> list[RowComparison]:
    """Every row of ``segment`` (or those at ``positions``): its annotator copies beside the final copy."""
    query = (
        select(Copy.kind, Copy.owner_id, User.username, SegmentRow.position, SegmentRow.draft_json, RowValue.value_json, RowValue.reviewed, RowValue.version)
        .join(RowValue, RowValue.copy_id == Copy.id)
        .join(SegmentRow, SegmentRow.id == RowValue.row_id)
        .outerjoin(User, User.id == Copy.owner_id)
        .where(Copy.segment_id == segment.id)
        .order_by(SegmentRow.position, User.username)
    )
    if positions is not None:
        query = query.where(SegmentRow.position.in_(positions))
    rows: dict[int, RowComparison] = {}
    for kind, _owner, username, position, draft_json, value_json, reviewed, version in session.execute(query):
        draft = json.loads(draft_json)
        value = json.loads(value_json) if value_json is not None else draft
        item = rows.get(position)
        if item is None:
            item = rows[position] = RowComparison(position, draft, draft, 0, False, [])
        if kind == "final":
            item.final, item.final_version, item.adjudicated = value, version, reviewed
        else:
            item.copies.append(AnnotatorCopy(username or "?", value, reviewed, version))
    out = [rows[p] for p in sorted(rows)]
    for item in out:
        item.disputes = _disputes(item)
    return out


def compare_row(session: Session, segment: Segment, position: int) -> RowComparison:
    found = compare_segment(session, segment, [position])
    if not found:
        raise NotFound(f"segment has no row {position}")
    return found[0]


def _require_independent(segment: Segment) -> None:
    if segment.review_mode != "independent":
        raise Invalid("this segment is reviewed in shared mode (one copy): there is nothing to adjudicate", "mode")


def adjudicate_row(
    session: Session,
    admin: User,
    segment: Segment,
    position: int,
    *,
    version: int,
    take: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> RowState:
    """Write the final value of one row and mark it reviewed (adjudicated), in the caller's transaction.

    ``take`` maps a field to the annotator whose value is kept (or ``"draft"``); ``values`` gives a
    field's value typed by the admin. Agreed fields are taken as they are unless named. Every disputed
    field must be decided (:class:`Invalid` names the first one that is not). ``version`` is the final
    copy's version the admin saw (:class:`Conflict` when someone adjudicated since). Every decided
    field gets an ``adjudicate`` audit entry noting where its value came from, changed or not.
    """
    _require_independent(segment)
    take, values = dict(take or {}), dict(values or {})
    now = now or utcnow()
    item = compare_row(session, segment, position)
    if not item.copies:
        raise Invalid("no annotator has a copy of this segment yet", "annotators")
    if item.final_version != version:
        raise Conflict(_final_state(session, segment, item).to_api())
    by_name = {c.annotator: c for c in item.copies}
    disputed = {d.field for d in item.disputes}
    for name in [*take, *values]:
        if name not in EDITABLE_FIELDS:
            raise Invalid(f"unknown field {name!r}", name)
    composed: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for name in EDITABLE_FIELDS:
        if name in values:
            composed[name], notes[name] = values[name], f"edited by {admin.username}"
            continue
        if name in take:
            source = take[name]
            if source == DRAFT_SOURCE:
                row, notes[name] = item.draft, "from the draft"
            elif source in by_name:
                row = by_name[source].row
                same = [c.annotator for c in item.copies if _key(c.row, name) == _key(row, name)]
                notes[name] = "from " + ", ".join(same)
            else:
                raise Invalid(f"{name}: no annotator {source!r} on this segment (choose one of {', '.join(by_name)} or draft)", name)
            if name in row:
                composed[name] = row[name]
            continue
        if name in disputed:
            raise Invalid(f"{name}: the annotators differ; choose a value", name)
        # an agreed value fills the final row only where the final copy still holds the draft's: a
        # value the admin already set there (an earlier adjudication, an edit) is not overwritten
        present, value = item.agreed_value(name)
        if present and _key(item.final, name) == _key(item.draft, name) and _key(item.final, name) != dumps(value):
            composed[name], notes[name] = value, "agreed by " + ", ".join(c.annotator for c in item.copies)
    fields = {k: v for k, v in composed.items() if _key(item.final, k) != dumps(v)}
    decided = tuple(sorted((disputed | set(take) | set(values)) - set(fields)))
    copy_id = final_copy(session, segment).id
    plan = plan_copy_save(
        session, admin, segment, copy_id, position, version=version, fields=fields, reviewed=True, now=now,
        action="adjudicate", notes=notes, always_audit=decided,
    )
    if isinstance(plan, RowState):
        return plan
    try:
        return apply_save(session, plan)
    except StaleWrite:
        session.refresh(segment)
        if segment.status == "discarded":
            raise Locked("this segment is discarded; restore it before editing") from None
        raise Conflict(_final_state(session, segment, compare_row(session, segment, position)).to_api()) from None


def _final_state(session: Session, segment: Segment, item: RowComparison) -> RowState:
    return RowState(
        position=item.position,
        row=item.final,
        draft=item.draft,
        version=item.final_version,
        reviewed=item.adjudicated,
        edited=dumps(item.final) != dumps(item.draft),
        updated_by=None,
        updated_at=None,
        reviewed_by=None,
        segment_status=segment.status,
    )


def accept_agreed(session: Session, admin: User, segment: Segment, *, now: datetime | None = None) -> int:
    """Adjudicate every row that every annotator reviewed and on which they all agree (not yet
    adjudicated); returns how many. Rows with a dispute or a missing review are left for a person."""
    _require_independent(segment)
    now = now or utcnow()
    done = 0
    for item in compare_segment(session, segment):
        if item.adjudicated or not item.complete or item.disputes:
            continue
        adjudicate_row(session, admin, segment, item.position, version=item.final_version, now=now)
        done += 1
    return done


def summary(rows: list[RowComparison]) -> SummaryOut:
    """Counts for the adjudication page: rows, adjudicated, disputed, ready to accept, incomplete."""
    return SummaryOut(
        rows=len(rows),
        adjudicated=sum(r.adjudicated for r in rows),
        disputed=sum(1 for r in rows if r.disputes and not r.adjudicated),
        agreed=sum(1 for r in rows if r.complete and not r.disputes and not r.adjudicated),
        incomplete=sum(1 for r in rows if not r.complete and not r.adjudicated),
    )


def other_copies(session: Session, user: User, segment: Segment, position: int) -> OthersOut | None:
    """The other copies of a row as the row page shows them: ``None`` when ``user`` may not see them
    (:func:`~rescue_bench.review.access.may_see_others`) or the segment has a single copy; else the
    other annotators' values and the final one, and the fields where any of them differs from the
    copy ``user`` is looking at."""
    from rescue_bench.review.access import may_see_others
    from rescue_bench.review.copies import copy_for
    from rescue_bench.review.edits import read_row

    if segment.review_mode != "independent" or not may_see_others(session, user, segment):
        return None
    item = compare_row(session, segment, position)
    copy = copy_for(session, user, segment)
    mine = read_row(session, user, segment, position, copy=copy).row
    reads_final = copy.kind == "final"  # admins, unless they annotate it themselves
    copies = [CopyOut(name=c.annotator, reviewed=c.reviewed, row=c.row) for c in item.copies if reads_final or c.annotator != user.username]
    if not reads_final:
        copies.append(CopyOut(name="final", reviewed=item.adjudicated, row=item.final))
    differs = [name for name in EDITABLE_FIELDS if any(_key(c.row, name) != _key(mine, name) for c in copies)]
    return OthersOut(copies=copies, fields=differs, adjudicated=item.adjudicated)
